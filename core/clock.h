/* The one monotonic clock, header-only so that the library, the CLI and the benchmarks
 * (which may link a shared libforgia that exports only the public API) share it. */
#ifndef FORGIA_CORE_CLOCK_H
#define FORGIA_CORE_CLOCK_H

#include <time.h>

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC: never jumps with the wall
 * clock, so differences are durations). */
static inline double fg_clock_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
