#include "util_threads.h"

#include <omp.h>

int fg_cli_threads(const fg_cli_spec *s, const char *value, unsigned *out) {
  return fg_cli_threads_as(s, "--threads", value, out);
}

int fg_cli_threads_as(const fg_cli_spec *s, const char *what, const char *value, unsigned *out) {
  if (!value) return FG_CLI_GO;
  uint64_t n = 0;
  if (!fg_cli_parse_u64(value, 10, &n) || n == 0 || n > 1024)
    return fg_cli_usage_error(s, what, "'%s': expected a thread count 1..1024", value);
  omp_set_num_threads((int)n);
  if (out) *out = (unsigned)n;
  return FG_CLI_GO;
}
