/* Benchmark harness: warm-up, repetitions, median, one JSON line per figure.
 *
 *   fg_bench b = fg_bench_begin("convert_f32_bf16", argc, argv);
 *   double t = fg_bench_time(&b, fn, ctx);           // median seconds of b.reps runs
 *   fg_bench_report(&b, "f32_to_bf16", bytes / t / 1e9, "GB/s", "memcpy", limit_gbs);
 *
 * Every figure is printed next to a limit measured in the same run (or a peer), as a ratio:
 * {"bench":..., "figure":..., "value":..., "unit":..., "limit":..., "limit_value":..., "ratio":...}.
 * Flags understood by fg_bench_begin: --reps N, --warmup N, --size BYTES, --threads N. */
#ifndef FORGIA_BENCH_HARNESS_H
#define FORGIA_BENCH_HARNESS_H

#include "core/clock.h"

#include <stddef.h>

typedef struct fg_bench {
  const char *name;
  int reps, warmup, threads;
  size_t size;
} fg_bench;

fg_bench fg_bench_begin(const char *name, size_t default_size, int argc, char **argv);
/* Runs fn(ctx) warmup times untimed, then reps times; returns the median seconds. */
double fg_bench_time(const fg_bench *b, void (*fn)(void *), void *ctx);
void fg_bench_report(const fg_bench *b, const char *figure, double value, const char *unit, const char *limit_name,
                     double limit_value);
/* Memory copy bandwidth in GB/s (bytes copied / s) for a buffer of `bytes`, with `threads`
 * threads (0 = OpenMP default): the limit most host-side figures are compared with. */
double fg_bench_memcpy_gbs(const fg_bench *b, size_t bytes, int threads);
/* A device-to-device copy's traffic in GB/s (bytes read + bytes written per second) for a
 * buffer of `bytes` on dev: the limit of streaming kernels on a GPU. 0 when it cannot run. */
struct fg_device;
double fg_bench_d2d_traffic_gbs(struct fg_device *dev, size_t bytes);

#endif

