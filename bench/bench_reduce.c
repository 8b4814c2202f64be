/* Fixed-grid sum + sum of squares (gradient norms, ES reward statistics): GB/s of f32 read,
 * as a ratio to memcpy measured in the same run (a reduction reads each byte once, a copy
 * reads and writes it, so 1.0 means the reduction streams as fast as memcpy copies). */
#include <stdio.h>
#include <stdlib.h>

#include "forgia/forgia.h"
#include "harness.h"

typedef struct {
  fg_device *dev;
  const float *x;
  size_t n;
  double s, q;
} red_ctx;

static void run(void *p) {
  red_ctx *c = p;
  if (fg_reduce_sum_sumsq(c->dev, c->x, c->n, &c->s, &c->q)) {
    fprintf(stderr, "reduce: %s\n", fg_last_error());
    exit(1);
  }
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("reduce", (size_t)256 << 20, argc, argv);
  size_t n = b.size / 4;
  float *x = malloc(n * 4);
  if (!x) return 1;
  for (size_t i = 0; i < n; i++) x[i] = (float)(i % 977) * 0.01f - 4.0f;
  double memcpy_gbs = fg_bench_memcpy_gbs(&b, b.size, b.threads);
  fg_device *cpu;
  if (fg_device_open("cpu", &cpu)) return 1;
  red_ctx c = {cpu, x, n, 0, 0};
  double t = fg_bench_time(&b, run, &c);
  fg_bench_report(&b, "cpu_sum_sumsq_read", (double)b.size / t / 1e9, "GB/s", "memcpy", memcpy_gbs);
  fg_device_close(cpu);
  if (fg_cuda_device_count() > 0) {
    fg_device *gpu;
    void *dx, *dy;
    if (fg_device_open("cuda:0", &gpu) || fg_device_alloc(gpu, b.size, &dx) || fg_device_alloc(gpu, b.size, &dy)) return 1;
    fg_device_copy(gpu, dx, x, b.size, FG_COPY_H2D);
    double t0 = fg_clock_seconds();
    for (int i = 0; i < 5; i++) fg_device_copy(gpu, dy, dx, b.size, FG_COPY_D2D);
    fg_device_sync(gpu);
    double d2d = 5.0 * (double)b.size / (fg_clock_seconds() - t0) / 1e9;
    red_ctx g = {gpu, dx, n, 0, 0};
    t = fg_bench_time(&b, run, &g);
    fg_bench_report(&b, "cuda_sum_sumsq_read", (double)b.size / t / 1e9, "GB/s", "d2d_copy", d2d);
    fg_device_free(gpu, dx);
    fg_device_free(gpu, dy);
    fg_device_close(gpu);
  }
  free(x);
  return 0;
}
