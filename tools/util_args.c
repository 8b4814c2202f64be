#include "util_args.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util_report.h"

int fg_cli_usage_error(const fg_cli_spec *s, const char *what, const char *fmt, ...) {
  char problem[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(problem, sizeof problem, fmt, ap);
  va_end(ap);
  fg_cli_fail(s->cmd, what, "%s (usage: %s; see forgia help %s)", problem, s->synopsis, s->cmd);
  return 2;
}

static const fg_cli_opt *find(const fg_cli_spec *s, const char *arg, const char **inline_value) {
  *inline_value = NULL;
  for (size_t j = 0; j < s->n_opts; j++) {
    const char *n = s->opts[j].name;
    size_t l = strlen(n);
    if (strncmp(arg, n, l) != 0) continue;
    if (arg[l] == '\0') return &s->opts[j];
    if (arg[l] == '=') {
      *inline_value = arg + l + 1;
      return &s->opts[j];
    }
  }
  return NULL;
}

int fg_cli_parse(const fg_cli_spec *s, int argc, char **argv) {
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      s->help(stdout);
      return 0;
    }
  }
  /* which value options were given: a second one is an error, not a silent override */
  bool seen[64] = {false};
  size_t npos = 0;
  bool options_done = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!options_done && strcmp(a, "--") == 0) {
      options_done = true;
      continue;
    }
    if (options_done || a[0] != '-' || a[1] == '\0') {
      if (npos == s->n_pos) return fg_cli_usage_error(s, a, "unexpected argument");
      if (a[0] == '\0' && !(npos < 32 && (s->pos_may_be_empty >> npos & 1u)))
        return fg_cli_usage_error(s, s->pos_names[npos], "empty");
      s->pos[npos++] = a;
      continue;
    }
    const char *val;
    const fg_cli_opt *o = find(s, a, &val);
    if (!o) return fg_cli_usage_error(s, a, "unknown option");
    if (o->flag) {
      if (val) return fg_cli_usage_error(s, o->name, "takes no value");
      *o->flag = true;
      continue;
    }
    size_t k = (size_t)(o - s->opts);
    if (k < sizeof seen / sizeof seen[0]) {
      if (seen[k]) return fg_cli_usage_error(s, o->name, "given twice");
      seen[k] = true;
    }
    if (!val) {
      /* "--out --dry-run" forgot the value: an option is not taken for one */
      if (i + 1 >= argc || (argv[i + 1][0] == '-' && argv[i + 1][1] == '-'))
        return fg_cli_usage_error(s, o->name, "needs a value");
      val = argv[++i];
    }
    if (!*val) return fg_cli_usage_error(s, o->name, "empty value");
    *o->value = val;
  }
  if (npos + s->n_pos_optional < s->n_pos) return fg_cli_usage_error(s, s->pos_names[npos], "missing");
  return FG_CLI_GO;
}

bool fg_cli_parse_u64(const char *s, int base, uint64_t *out) {
  if (!s || !isdigit((unsigned char)*s)) return false;
  char *end;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, base);
  if (errno || *end) return false;
  *out = (uint64_t)v;
  return true;
}

bool fg_cli_flag_is(const char *arg, const char *name, const char **value) {
  const size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0 || (arg[n] != 0 && arg[n] != '=')) return false;
  *value = arg[n] == '=' ? arg + n + 1 : NULL;
  return true;
}
