/* Reductions on the fixed grid (Fucina's sumSquares grid; clip norms, Muon, APOLLO): GB/s of
 * values read, for the sum of squares of one f32 tensor of 1M, 16M and 64M values, the sum
 * and max-abs of 64M, the sum of squares of 64M bf16 values, and of a list of 1,000 tensors
 * of 4K values (one call).
 *
 * Limit measured in the same run: memcpy's traffic on the CPU, a device-to-device copy's on
 * CUDA (a copy reads and writes each byte, so its traffic is twice the bytes copied; a
 * reduction's traffic is what it reads, so a ratio of 1.0 means the reduction moves bytes as
 * fast as a copy does). On CUDA each timed run queues 20 reductions on a stream and waits
 * once, so the figure is the kernels' rate, not the host's synchronisation latency. */
#include <stdio.h>
#include <stdlib.h>

#include "forgia/forgia.h"
#include "harness.h"

#define LIST_TENSORS 1000
#define LIST_ELEMS 4096
#define CUDA_BATCH 20

typedef struct {
  fg_device *dev;
  fg_stream *s; /* NULL: synchronous calls */
  fg_reduce_op op;
  const void **xs;
  fg_dtype *dts;
  size_t *ns;
  size_t count;
  double *out; /* device memory */
} red_ctx;

static void die(void) {
  fprintf(stderr, "bench_reduce: %s\n", fg_last_error());
  exit(1);
}

static void run(void *p) {
  red_ctx *c = p;
  const int k = c->s ? CUDA_BATCH : 1;
  for (int i = 0; i < k; i++)
    if (fg_reduce_list(c->dev, c->op, c->xs, c->dts, c->ns, c->count, NULL, c->out, c->s)) die();
  if (c->s && fg_stream_sync(c->s)) die();
}

static double gbs(const fg_bench *b, red_ctx *c, double bytes) {
  const double t = fg_bench_time(b, run, c) / (c->s ? CUDA_BATCH : 1);
  return bytes / t / 1e9;
}

static void bench_device(const fg_bench *b, fg_device *dev, fg_stream *s, const char *tag, double limit,
                         const char *limit_name, const float *host, size_t maxn) {
  void *x, *out;
  if (fg_device_mem_alloc(dev, maxn * sizeof(float), &x) || fg_device_mem_alloc(dev, sizeof(double), &out)) die();
  if (fg_device_copy(dev, x, host, maxn * sizeof(float), FG_COPY_H2D)) die();
  const void *xs[1] = {x};
  fg_dtype dts[1] = {FG_F32};
  size_t ns[1];
  red_ctx c = {dev, s, FG_REDUCE_SUMSQ, xs, dts, ns, 1, out};
  char fig[64];
  static const size_t sizes[3] = {1u << 20, 16u << 20, 64u << 20};
  static const char *names[3] = {"1M", "16M", "64M"};
  for (int i = 0; i < 3 && sizes[i] <= maxn; i++) {
    ns[0] = sizes[i];
    snprintf(fig, sizeof fig, "%s_sumsq_f32_%s_read", tag, names[i]);
    fg_bench_report(b, fig, gbs(b, &c, 4.0 * (double)ns[0]), "GB/s", limit_name, limit);
  }
  ns[0] = maxn;
  const fg_reduce_op others[2] = {FG_REDUCE_SUM, FG_REDUCE_MAXABS};
  for (int i = 0; i < 2; i++) {
    c.op = others[i];
    snprintf(fig, sizeof fig, "%s_%s_f32_%zuM_read", tag, fg_reduce_op_name(others[i]), maxn >> 20);
    fg_bench_report(b, fig, gbs(b, &c, 4.0 * (double)maxn), "GB/s", limit_name, limit);
  }
  /* bf16: the same memory holds 2 * maxn values (their bits do not matter for speed). */
  c.op = FG_REDUCE_SUMSQ;
  dts[0] = FG_BF16;
  ns[0] = 2 * maxn;
  snprintf(fig, sizeof fig, "%s_sumsq_bf16_%zuM_read", tag, (2 * maxn) >> 20);
  fg_bench_report(b, fig, gbs(b, &c, 4.0 * (double)maxn), "GB/s", limit_name, limit);
  /* A list of 1,000 small tensors in one call (multi-tensor shape). */
  if ((size_t)LIST_TENSORS * LIST_ELEMS <= maxn) {
    const void **lx = malloc(LIST_TENSORS * sizeof *lx);
    fg_dtype *ld = malloc(LIST_TENSORS * sizeof *ld);
    size_t *ln = malloc(LIST_TENSORS * sizeof *ln);
    if (!lx || !ld || !ln) exit(1);
    for (size_t t = 0; t < LIST_TENSORS; t++)
      lx[t] = (const float *)x + t * LIST_ELEMS, ld[t] = FG_F32, ln[t] = LIST_ELEMS;
    red_ctx l = {dev, s, FG_REDUCE_SUMSQ, lx, ld, ln, LIST_TENSORS, out};
    snprintf(fig, sizeof fig, "%s_sumsq_f32_1000x4K_read", tag);
    fg_bench_report(b, fig, gbs(b, &l, 4.0 * LIST_TENSORS * LIST_ELEMS), "GB/s", limit_name, limit);
    free(lx), free(ld), free(ln);
  }
  fg_device_mem_free(dev, x);
  fg_device_mem_free(dev, out);
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("reduce", (size_t)256 << 20, argc, argv);
  const size_t maxn = b.size / sizeof(float);
  float *host = malloc(maxn * sizeof(float));
  if (!host) return 1;
  for (size_t i = 0; i < maxn; i++) host[i] = (float)(i % 977) * 0.01f - 4.0f;
  const double memcpy_traffic = 2.0 * fg_bench_memcpy_gbs(&b, b.size, b.threads);
  fg_device *cpu;
  if (fg_device_open("cpu", &cpu)) die();
  bench_device(&b, cpu, NULL, "cpu", memcpy_traffic, "memcpy_traffic", host, maxn);
  fg_device_close(cpu);
  if (fg_cuda_device_count() > 0) {
    fg_device *gpu;
    fg_stream *s;
    if (fg_device_open("cuda:0", &gpu) || fg_stream_create(gpu, &s)) die();
    const double d2d_traffic = fg_bench_d2d_traffic_gbs(gpu, b.size);
    bench_device(&b, gpu, s, "cuda", d2d_traffic, "d2d_copy_traffic", host, maxn);
    fg_stream_free(s);
    fg_device_close(gpu);
  }
  free(host);
  return 0;
}
