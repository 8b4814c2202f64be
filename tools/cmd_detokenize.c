/* forgia detokenize: the text of token ids, with a checkpoint's own tokenizer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/tokenizer.h"
#include "util_args.h"
#include "util_report.h"

const char fg_cmd_detokenize_summary[] = "print the text of token ids, with the tokenizer a GGUF or HF folder carries";

static const char synopsis[] = "forgia detokenize PATH ID... [--skip-special]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "PATH is a GGUF file or a Hugging Face folder, as for forgia tokenize. Writes the text\n"
          "of the ids (decimal, as tokenize prints them; a single argument may hold several\n"
          "separated by spaces) to stdout as its bytes, then one \\n. Added tokens give their own\n"
          "text; a SentencePiece tokenizer drops the space it put before the text.\n"
          "  --skip-special  leave the special tokens out (BOS, EOS, <|im_start|>, ...): a GGUF's\n"
          "                  tokens of type control or unknown, as llama.cpp's detokenize with\n"
          "                  special false; a Hugging Face folder's added tokens marked special,\n"
          "                  as decode(ids, skip_special_tokens=True). The text is that of the ids\n"
          "                  left, so the SentencePiece space is dropped from the first of them\n"
          "                  (llama.cpp keeps it where a BOS came first; Hugging Face drops it).\n",
          synopsis);
}

static int bad(const char *what, const char *problem) {
  fg_cli_fail("detokenize", what, "%s (usage: %s; see forgia help detokenize)", problem, synopsis);
  return 2;
}

int fg_cmd_detokenize(int argc, char **argv) {
  const char *path = NULL;
  /* An argument of k bytes holds at most k / 2 + 1 ids. */
  size_t n = 0, cap = 1;
  for (int i = 1; i < argc; i++) cap += strlen(argv[i]) / 2 + 1;
  int32_t *ids = malloc(cap * sizeof *ids);
  bool opts_done = false, skip_special = false;
  int n_id_args = 0;
  if (!ids) return bad(NULL, "out of memory");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!opts_done && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
      usage(stdout);
      free(ids);
      return 0;
    }
    if (!opts_done && strcmp(a, "--") == 0) {
      opts_done = true;
      continue;
    }
    if (!opts_done && strcmp(a, "--skip-special") == 0) {
      skip_special = true;
      continue;
    }
    if (!opts_done && a[0] == '-' && a[1] == '-') {
      free(ids);
      return bad(a, "unknown option");
    }
    if (!path) {
      path = a;
      continue;
    }
    n_id_args++;
    /* Ids: decimal integers separated by spaces. */
    for (const char *p = a; *p;) {
      while (*p == ' ') p++;
      if (!*p) break;
      char *end;
      errno = 0;
      long v = strtol(p, &end, 10);
      if (end == p || (*end && *end != ' ') || errno || v < 0 || v > INT32_MAX || *p == '+' || *p == '-') {
        free(ids);
        return bad(a, "not a list of token ids (decimal integers 0 .. 2147483647)");
      }
      ids[n++] = (int32_t)v;
      p = end;
    }
  }
  if (!path || !n_id_args) {
    free(ids);
    return bad(path ? "ID" : "PATH", "missing argument");
  }
  fg_tokenizer *t = NULL;
  int rc = 0;
  char *text = NULL;
  size_t len = 0;
  if (fg_tokenizer_open(path, &t) == FG_OK && skip_special) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (!fg_tokenizer_is_special(t, ids[i])) ids[k++] = ids[i];
    n = k;
  }
  if (!t || fg_tokenizer_decode(t, ids, n, &text, &len)) {
    fg_cli_report("detokenize", path);
    rc = 1;
  } else {
    fwrite(text, 1, len, stdout);
    putchar('\n');
  }
  fg_tokenizer_free_text(text);
  fg_tokenizer_close(t);
  free(ids);
  return rc;
}
