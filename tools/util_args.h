/* CLI helper: one argument parser for every subcommand, so that the same mistake gets the
 * same answer everywhere: exit 2 and one line `forgia CMD: ARG: PROBLEM (usage: ...)` for an
 * unknown option, a value option given twice, a missing or empty value, a value given to a
 * flag, a missing or extra positional argument. `--help`/`-h` anywhere prints the command's
 * help to stdout instead. Values come as `--name VALUE` or `--name=VALUE`; `--` ends the
 * options; a lone `-` is a positional argument. */
#ifndef FORGIA_TOOLS_UTIL_ARGS_H
#define FORGIA_TOOLS_UTIL_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>

typedef struct fg_cli_opt {
  const char *name;     /* "--out" */
  const char **value;   /* a value option: where its value goes (left alone when absent) */
  bool *flag;           /* a flag: set when given (giving it twice is harmless) */
} fg_cli_opt;

typedef struct fg_cli_spec {
  const char *cmd;                /* "export" */
  const char *synopsis;           /* "forgia export --out OUT ... [options]", one line */
  void (*help)(FILE *f);          /* the text of `forgia help CMD` */
  const fg_cli_opt *opts;
  size_t n_opts;
  const char *const *pos_names;   /* positional arguments ("PATH") */
  const char **pos;               /* where they go */
  size_t n_pos;
  size_t n_pos_optional;          /* how many of the last ones may be left out (0: all required) */
  unsigned pos_may_be_empty;      /* bit i: positional i may be "" (else an empty one is bad usage) */
} fg_cli_spec;

#define FG_CLI_GO (-1)

/* FG_CLI_GO when the arguments are well-formed, 0 after printing help, 2 after reporting. */
int fg_cli_parse(const fg_cli_spec *s, int argc, char **argv);
/* A u64 written exactly (base 10, or 0 for C's 0x / 0 prefixes): no sign, no spaces, nothing
 * after it, no overflow. */
bool fg_cli_parse_u64(const char *s, int base, uint64_t *out);
/* Whether arg is the flag name, alone ("--x": *value NULL) or with a value ("--x=V": *value
 * points at V); for the commands that take flags out of argv before fg_cli_parse. */
bool fg_cli_flag_is(const char *arg, const char *name, const char **value);
/* Reports bad usage found after parsing (a bad value) the same way; returns 2. */
int fg_cli_usage_error(const fg_cli_spec *s, const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
