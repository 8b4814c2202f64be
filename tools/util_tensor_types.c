/* --tensor-type and --tensor-type-file (see util_tensor_types.h). */
#include "util_tensor_types.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool fg_cli_ggml_type(const char *name, fg_dtype *out) {
  for (int t = 0; t < FG_GGML_TYPE_COUNT; t++) {
    if (!fg_dtype_valid((fg_dtype)t)) continue;
    if (strcasecmp(name, fg_dtype_name((fg_dtype)t)) == 0) {
      *out = (fg_dtype)t;
      return true;
    }
  }
  return false;
}

static int add_rule(const fg_cli_spec *spec, const char *flag, const char *text, size_t len, fg_tensor_types_cli *c) {
  const char *eq = memchr(text, '=', len);
  if (!eq) return fg_cli_usage_error(spec, flag, "'%.*s': expected PATTERN=TYPE", (int)len, text);
  const size_t plen = (size_t)(eq - text);
  if (plen == 0) return fg_cli_usage_error(spec, flag, "'%.*s': missing tensor name pattern", (int)len, text);
  char tname[32];
  const size_t tlen = len - plen - 1;
  if (tlen == 0 || tlen >= sizeof tname)
    return fg_cli_usage_error(spec, flag, "'%.*s': missing or unknown type", (int)len, text);
  memcpy(tname, eq + 1, tlen);
  tname[tlen] = 0;
  fg_dtype t;
  if (!fg_cli_ggml_type(tname, &t))
    return fg_cli_usage_error(spec, flag, "'%s' is not a ggml type (q4_K, q8_0, f16, ...)", tname);
  fg_export_tensor_rule *r = realloc(c->rules, (c->n + 1) * sizeof *r);
  char *pat = malloc(plen + 1);
  if (!r || !pat) {
    free(pat);
    if (r) c->rules = r;
    return fg_cli_usage_error(spec, flag, "out of memory");
  }
  c->rules = r;
  for (size_t i = 0; i < plen; i++) pat[i] = (char)tolower((unsigned char)text[i]);
  pat[plen] = 0;
  r[c->n++] = (fg_export_tensor_rule){pat, t};
  return FG_CLI_GO;
}

static int add_file(const fg_cli_spec *spec, const char *path, fg_tensor_types_cli *c) {
  FILE *f = fopen(path, "r");
  if (!f) return fg_cli_usage_error(spec, "--tensor-type-file", "cannot open '%s'", path);
  char line[4096];
  int rc = FG_CLI_GO;
  while (rc == FG_CLI_GO && fgets(line, sizeof line, f)) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (n) rc = add_rule(spec, "--tensor-type-file", line, n, c);
  }
  fclose(f);
  return rc;
}

int fg_tensor_types_cli_take(const fg_cli_spec *spec, int *argc, char **argv, fg_tensor_types_cli *c) {
  memset(c, 0, sizeof *c);
  int kept = 1, rc = FG_CLI_GO;
  bool done = false;
  for (int i = 1; i < *argc && rc == FG_CLI_GO; i++) {
    const char *a = argv[i], *v;
    if (done || strcmp(a, "--") == 0) {
      done = true;
      argv[kept++] = argv[i];
      continue;
    }
    const bool file = fg_cli_flag_is(a, "--tensor-type-file", &v);
    if (file || fg_cli_flag_is(a, "--tensor-type", &v)) {
      const char *flag = file ? "--tensor-type-file" : "--tensor-type";
      if (!v && i + 1 < *argc) v = argv[++i];
      if (!v) rc = fg_cli_usage_error(spec, flag, "missing value");
      else rc = file ? add_file(spec, v, c) : add_rule(spec, flag, v, strlen(v), c);
    } else {
      argv[kept++] = argv[i];
    }
  }
  if (rc != FG_CLI_GO) {
    fg_tensor_types_cli_free(c);
    return rc;
  }
  *argc = kept;
  argv[kept] = NULL;
  return FG_CLI_GO;
}

void fg_tensor_types_cli_free(fg_tensor_types_cli *c) {
  for (size_t i = 0; c && i < c->n; i++) free((char *)c->rules[i].pattern);
  if (c) free(c->rules);
  if (c) *c = (fg_tensor_types_cli){0};
}
