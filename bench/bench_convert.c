/* f32 -> bf16 (and f16) conversion throughput, as a ratio to memcpy of the same input
 * bytes measured in the same run. On a GPU the limit is a device-to-device copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

typedef struct {
  fg_device *dev;
  void *dst;
  const void *src;
  size_t n;
  fg_dtype dt;
} cvt_ctx;

static void run_convert(void *p) {
  cvt_ctx *c = p;
  if (fg_convert(c->dev, c->dst, c->dt, c->src, FG_F32, c->n, NULL) != FG_OK) {
    fprintf(stderr, "convert: %s\n", fg_last_error());
    exit(1);
  }
}

static void run_d2d(void *p) {
  cvt_ctx *c = p;
  fg_device_copy(c->dev, c->dst, c->src, c->n * 4, FG_COPY_D2D);
  fg_device_sync(c->dev);
}

static int bench_device(const fg_bench *b, const char *spec) {
  fg_device *dev;
  if (fg_device_open(spec, &dev) != FG_OK) return 0;
  size_t n = b->size / 4;
  void *src, *dst, *dst2;
  if (fg_device_mem_alloc(dev, n * 4, &src) || fg_device_mem_alloc(dev, n * 4, &dst) || fg_device_mem_alloc(dev, n * 4, &dst2)) {
    fprintf(stderr, "%s: %s\n", spec, fg_last_error());
    return 1;
  }
  float *h = malloc(n * 4);
  for (size_t i = 0; i < n; i++) h[i] = (float)(i % 1000) * 0.001f - 0.5f;
  fg_device_copy(dev, src, h, n * 4, FG_COPY_H2D);
  free(h);
  cvt_ctx c = {dev, dst2, src, n, FG_F32};
  double limit = (double)(n * 4) / fg_bench_time(b, run_d2d, &c) / 1e9;
  const char *limit_name = fg_device_kind_of(dev) == FG_DEVICE_CPU ? "memcpy" : "d2d_copy";
  char fig[64];
  fg_dtype types[] = {FG_BF16, FG_F16};
  for (int i = 0; i < 2; i++) {
    c.dst = dst;
    c.dt = types[i];
    double t = fg_bench_time(b, run_convert, &c);
    snprintf(fig, sizeof fig, "%s_f32_to_%s_input", spec, fg_dtype_name(types[i]));
    fg_bench_report(b, fig, (double)(n * 4) / t / 1e9, "GB/s", limit_name, limit);
  }
  fg_device_mem_free(dev, src);
  fg_device_mem_free(dev, dst);
  fg_device_mem_free(dev, dst2);
  fg_device_close(dev);
  return 0;
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("convert", (size_t)256 << 20, argc, argv);
  int rc = bench_device(&b, "cpu");
  if (fg_cuda_device_count() > 0) rc |= bench_device(&b, "cuda:0");
  return rc;
}
