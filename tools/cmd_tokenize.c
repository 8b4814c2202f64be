/* forgia tokenize: the token ids a checkpoint's own tokenizer gives a text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/tokenizer.h"
#include "util_args.h"
#include "util_file.h"
#include "util_report.h"

const char fg_cmd_tokenize_summary[] = "print the token ids of a text, with the tokenizer a GGUF or HF folder carries";

static const char synopsis[] = "forgia tokenize PATH (--text T | --file F) [--no-bos]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "PATH is a GGUF file (its metadata alone is read) or a Hugging Face folder holding\n"
          "tokenizer.json (and tokenizer_config.json). Prints the ids of T, separated by single\n"
          "spaces, on one line; with --file F, one such line for every line of F (the line\n"
          "without its \\n). The BOS id comes first when the tokenizer adds one (GGUF\n"
          "tokenizer.ggml.add_bos_token, tokenizer_config.json add_bos_token); --no-bos leaves it\n"
          "out. Added tokens (<|im_start|>, <think>, ...) written in the text are matched whole.\n",
          synopsis);
}

static int print_ids(const fg_tokenizer *t, const char *text, size_t len, bool bos) {
  int32_t *ids = NULL;
  size_t n = 0;
  if (fg_tokenizer_encode(t, text, len, bos, &ids, &n)) return 1;
  for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
  putchar('\n');
  fg_tokenizer_free_ids(ids);
  return 0;
}

int fg_cmd_tokenize(int argc, char **argv) {
  const char *text = NULL, *file = NULL, *path = NULL;
  bool no_bos = false;
  const fg_cli_opt opts[] = {{"--text", &text, NULL}, {"--file", &file, NULL}, {"--no-bos", NULL, &no_bos}};
  const char *const pos_names[] = {"PATH"};
  fg_cli_spec spec = {"tokenize", synopsis, usage, opts, 3, pos_names, &path, 1};
  int prc = fg_cli_parse(&spec, argc, argv);
  if (prc != FG_CLI_GO) return prc;
  if (!text == !file) return fg_cli_usage_error(&spec, text ? "--file" : "--text", "give exactly one of --text and --file");
  fg_tokenizer *t = NULL;
  if (fg_tokenizer_open(path, &t)) {
    fg_cli_report("tokenize", path);
    return 1;
  }
  bool bos = fg_tokenizer_add_bos(t) && !no_bos;
  int rc = 0;
  if (text) {
    rc = print_ids(t, text, strlen(text), bos);
    if (rc) fg_cli_report("tokenize", path);
  } else {
    uint8_t *buf = NULL;
    size_t len = 0;
    if (fg_cli_read_file(file, 0, &buf, &len)) {
      fg_cli_report("tokenize", file);
      rc = 1;
    }
    for (size_t at = 0; !rc && at < len;) {
      const uint8_t *nl = memchr(buf + at, '\n', len - at);
      size_t end = nl ? (size_t)(nl - buf) : len;
      if ((rc = print_ids(t, (const char *)buf + at, end - at, bos)) != 0) fg_cli_report("tokenize", file);
      at = end + 1;
    }
    free(buf);
  }
  fg_tokenizer_free(t);
  return rc;
}
