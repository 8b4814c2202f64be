#include "harness.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forgia/device.h"

fg_bench fg_bench_begin(const char *name, size_t default_size, int argc, char **argv) {
  fg_bench b = {name, 9, 2, 0, default_size};
  /* a benchmark can run for minutes: asking for help must not start it */
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: bench_%s [--reps N] [--warmup N] [--size BYTES] [--threads N] [this benchmark's own\n"
             "       flags, which the comment at the top of bench/bench_%s.c lists]\n"
             "prints one JSON line per figure: its value, and the limit or peer it is measured against\n",
             name, name);
      exit(0);
    }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--reps") == 0) b.reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0) b.warmup = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--size") == 0) b.size = (size_t)strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--threads") == 0) b.threads = atoi(argv[i + 1]);
  }
  if (b.reps < 1) b.reps = 1;
  if (b.threads > 0) omp_set_num_threads(b.threads);
  return b;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double fg_bench_time(const fg_bench *b, void (*fn)(void *), void *ctx) {
  for (int i = 0; i < b->warmup; i++) fn(ctx);
  double *t = malloc(sizeof *t * (size_t)b->reps);
  if (!t) return 0.0;
  for (int i = 0; i < b->reps; i++) {
    double t0 = fg_clock_seconds();
    fn(ctx);
    t[i] = fg_clock_seconds() - t0;
  }
  qsort(t, (size_t)b->reps, sizeof *t, cmp_double);
  double med = (b->reps % 2) ? t[b->reps / 2] : 0.5 * (t[b->reps / 2 - 1] + t[b->reps / 2]);
  free(t);
  return med;
}

void fg_bench_report(const fg_bench *b, const char *figure, double value, const char *unit, const char *limit_name,
                     double limit_value) {
  printf("{\"bench\":\"%s\",\"figure\":\"%s\",\"value\":%.4g,\"unit\":\"%s\",\"limit\":\"%s\",\"limit_value\":%.4g,"
         "\"ratio\":%.4f,\"threads\":%d,\"reps\":%d}\n",
         b->name, figure, value, unit, limit_name, limit_value, limit_value > 0 ? value / limit_value : 0.0,
         b->threads > 0 ? b->threads : omp_get_max_threads(), b->reps);
  fflush(stdout);
}

typedef struct {
  fg_device *cpu;
  void *dst;
  const void *src;
  size_t n;
} memcpy_ctx;

/* A copy on the CPU device is the library's threaded memcpy, reached through the public
 * device API like any user would. */
static void run_memcpy(void *p) {
  memcpy_ctx *c = p;
  (void)fg_device_copy(c->cpu, c->dst, c->src, c->n, FG_COPY_D2D);
}

double fg_bench_memcpy_gbs(const fg_bench *b, size_t bytes, int threads) {
  int saved = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
  void *src = malloc(bytes), *dst = malloc(bytes);
  fg_device *cpu = NULL;
  double gbs = 0.0;
  if (src && dst && fg_device_open("cpu", &cpu) == FG_OK) {
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    memcpy_ctx c = {cpu, dst, src, bytes};
    gbs = (double)bytes / fg_bench_time(b, run_memcpy, &c) / 1e9;
  }
  fg_device_close(cpu);
  free(src);
  free(dst);
  omp_set_num_threads(saved);
  return gbs;
}

double fg_bench_d2d_traffic_gbs(fg_device *dev, size_t bytes) {
  void *dx = NULL, *dy = NULL;
  double gbs = 0.0;
  if (fg_device_mem_alloc(dev, bytes, &dx) == FG_OK && fg_device_mem_alloc(dev, bytes, &dy) == FG_OK) {
    fg_device_copy(dev, dy, dx, bytes, FG_COPY_D2D); /* warm-up */
    fg_device_sync(dev);
    const double t0 = fg_clock_seconds();
    for (int i = 0; i < 10; i++) fg_device_copy(dev, dy, dx, bytes, FG_COPY_D2D);
    fg_device_sync(dev);
    gbs = 2.0 * 10.0 * (double)bytes / (fg_clock_seconds() - t0) / 1e9;
  }
  fg_device_mem_free(dev, dx);
  fg_device_mem_free(dev, dy);
  return gbs;
}
