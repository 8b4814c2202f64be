#include "harness.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_ops.h"

fg_bench fg_bench_begin(const char *name, size_t default_size, int argc, char **argv) {
  fg_bench b = {name, 9, 2, 0, default_size};
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

double fg_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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
    double t0 = fg_bench_now();
    fn(ctx);
    t[i] = fg_bench_now() - t0;
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
  void *dst;
  const void *src;
  size_t n;
} memcpy_ctx;

static void run_memcpy(void *p) {
  memcpy_ctx *c = p;
  fg_cpu_memcpy(c->dst, c->src, c->n);
}

double fg_bench_memcpy_gbs(const fg_bench *b, size_t bytes, int threads) {
  int saved = omp_get_max_threads();
  if (threads > 0) omp_set_num_threads(threads);
  void *src = malloc(bytes), *dst = malloc(bytes);
  double gbs = 0.0;
  if (src && dst) {
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    memcpy_ctx c = {dst, src, bytes};
    gbs = (double)bytes / fg_bench_time(b, run_memcpy, &c) / 1e9;
  }
  free(src);
  free(dst);
  omp_set_num_threads(saved);
  return gbs;
}
