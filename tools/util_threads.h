/* CLI helper: `--threads N`, the one spelling of the worker count on every command that
 * computes. The result never depends on it (the library's sums have a fixed order). */
#ifndef FORGIA_TOOLS_UTIL_THREADS_H
#define FORGIA_TOOLS_UTIL_THREADS_H

#include "util_args.h"

/* value NULL: leaves OpenMP's default (OMP_NUM_THREADS, else the cores). Otherwise an
 * integer 1..1024 becomes the OpenMP thread count and *out (when not NULL) gets it.
 * FG_CLI_GO, or 2 after reporting a bad value. */
int fg_cli_threads(const fg_cli_spec *s, const char *value, unsigned *out);
/* The same, the value named what in the message (export's positional NTHREADS). */
int fg_cli_threads_as(const fg_cli_spec *s, const char *what, const char *value, unsigned *out);

#endif
