/* forgia detokenize: the text of token ids, with a checkpoint's own tokenizer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/tokenizer.h"
#include "util_args.h"
#include "util_report.h"

const char fg_cmd_detokenize_summary[] = "print the text of token ids, with the tokenizer a GGUF or HF folder carries";

static const char synopsis[] = "forgia detokenize PATH (ID... | --file F) [--skip-special]";

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s\n\n"
          "PATH is a GGUF file or a Hugging Face folder, as for forgia tokenize. Writes the text\n"
          "of the ids (decimal, as tokenize prints them; a single argument may hold several\n"
          "separated by spaces) to stdout as its bytes, then one \\n. Added tokens give their own\n"
          "text; a SentencePiece tokenizer drops the space it put before the text.\n"
          "  --file F        every line of F holds the ids of one text (an empty line: none); each\n"
          "                  gives one line on stdout, the text as a JSON string (\\\" \\\\ \\n and\n"
          "                  \\u00XX for the other control bytes escaped, every other byte as it\n"
          "                  is), so texts with newlines stay one line each. - reads stdin\n"
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

/* Appends the ids of one space-separated list; false when it is not one. */
static bool parse_ids(const char *a, int32_t **ids, size_t *n, size_t *cap) {
  for (const char *p = a; *p;) {
    while (*p == ' ') p++;
    if (!*p) break;
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || (*end && *end != ' ') || errno || v < 0 || v > INT32_MAX || *p == '+' || *p == '-') return false;
    if (*n == *cap) {
      size_t c = *cap ? *cap * 2 : 64;
      int32_t *q = realloc(*ids, c * sizeof *q);
      if (!q) return false;
      *ids = q;
      *cap = c;
    }
    (*ids)[(*n)++] = (int32_t)v;
    p = end;
  }
  return true;
}

/* The text as one JSON string line, escaped as llama.cpp's reference tool writes it so the
 * two outputs compare byte for byte. */
static void json_line(const char *s, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c == '\n')
      fputs("\\n", stdout);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  fputs("\"\n", stdout);
}

/* Decodes ids (minus the special ones when asked) into *text. */
static fg_status decode(const fg_tokenizer *t, int32_t *ids, size_t n, bool skip_special, char **text, size_t *len) {
  if (skip_special) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
      if (!fg_tokenizer_is_special(t, ids[i])) ids[k++] = ids[i];
    n = k;
  }
  return fg_tokenizer_decode(t, ids, n, text, len);
}

/* --file: one JSON string line per line of ids. */
static int run_file(const fg_tokenizer *t, const char *path, const char *file, bool skip_special) {
  FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
  if (!f) {
    fg_cli_fail("detokenize", file, "cannot open: %s", strerror(errno));
    return 1;
  }
  char *line = NULL;
  size_t lcap = 0, cap = 0, lineno = 0;
  int32_t *ids = NULL;
  ssize_t got;
  int rc = 0;
  while (!rc && (got = getline(&line, &lcap, f)) >= 0) {
    lineno++;
    if (got && line[got - 1] == '\n') line[--got] = 0;
    if (got && line[got - 1] == '\r') line[--got] = 0;
    size_t n = 0;
    if (strlen(line) != (size_t)got || !parse_ids(line, &ids, &n, &cap)) {
      fg_cli_fail("detokenize", file, "line %zu: not a list of token ids (decimal integers 0 .. 2147483647)", lineno);
      rc = 1;
      break;
    }
    char *text = NULL;
    size_t len = 0;
    if (decode(t, ids, n, skip_special, &text, &len)) {
      fg_cli_fail("detokenize", path, "%s: line %zu: %s", file, lineno, fg_last_error());
      rc = 1;
    } else {
      json_line(text, len);
    }
    fg_tokenizer_free_text(text);
  }
  if (!rc && ferror(f)) {
    fg_cli_fail("detokenize", file, "read error: %s", strerror(errno));
    rc = 1;
  }
  free(line);
  free(ids);
  if (f != stdin) fclose(f);
  return rc;
}

int fg_cmd_detokenize(int argc, char **argv) {
  const char *path = NULL, *file = NULL;
  size_t n = 0, cap = 0;
  int32_t *ids = NULL;
  bool opts_done = false, skip_special = false;
  int n_id_args = 0;
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!opts_done && strcmp(a, "--") == 0) {
      opts_done = true;
      continue;
    }
    if (!opts_done && strcmp(a, "--skip-special") == 0) {
      skip_special = true;
      continue;
    }
    if (!opts_done && (strcmp(a, "--file") == 0 || strncmp(a, "--file=", 7) == 0)) {
      const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
      if (file) {
        free(ids);
        return bad("--file", "given twice");
      }
      if (!v || !*v) {
        free(ids);
        return bad("--file", "missing value");
      }
      file = v;
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
    if (!parse_ids(a, &ids, &n, &cap)) {
      free(ids);
      return bad(a, "not a list of token ids (decimal integers 0 .. 2147483647)");
    }
  }
  if (!path || (!n_id_args && !file)) {
    free(ids);
    return bad(path ? "ID" : "PATH", "missing argument");
  }
  if (file && n_id_args) {
    free(ids);
    return bad("--file", "give ids as arguments or --file, not both");
  }
  fg_tokenizer *t = NULL;
  int rc = 0;
  char *text = NULL;
  size_t len = 0;
  if (fg_tokenizer_open(path, &t)) {
    fg_cli_report("detokenize", path);
    rc = 1;
  } else if (file) {
    rc = run_file(t, path, file, skip_special);
  } else if (decode(t, ids, n, skip_special, &text, &len)) {
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
