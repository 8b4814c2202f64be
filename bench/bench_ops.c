/* The op layer at memory bandwidth: the AdamW op (read param, grad, m, v; write param, m, v:
 * 28 bytes of traffic per f32 element) over one tensor of 1M, 16M and 64M elements, and over
 * a list of 1,000 tensors of 4K elements (multi-tensor apply), as GB/s of traffic.
 *
 * Limits measured in the same run: memcpy's traffic (a copy reads and writes each byte, so
 * its traffic is twice the bytes copied) on the CPU, a device-to-device copy's on CUDA
 * (targets: >= 0.8 of it at 16M and 64M); the list's figure is also given as a ratio to
 * the 16M single-tensor figure (target >= 0.5). With `--peer PYTHON` (a Python with torch),
 * torch.optim.AdamW (fused where torch has it) runs the 16M and the list shapes on the same
 * device in the same run (bench_ops_peer.py), and the figures are also given against it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

#define LIST_TENSORS 1000

/* torch's GB/s for the 16M tensor and the 1,000-tensor list; 0 when no peer ran. */
typedef struct {
  double big16, list;
} peer_figs;

static peer_figs run_peer(const char *python, const char *dev, int threads, int reps) {
  peer_figs f = {0, 0};
  if (!python) return f;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' '%s/bench_ops_peer.py' %s %d %d", python, FORGIA_BENCH_DIR, dev, threads, reps);
  FILE *p = popen(cmd, "r");
  if (!p) return f;
  char name[64];
  double v;
  while (fscanf(p, "%63s %lf", name, &v) == 2) {
    if (strcmp(name, "adamw_16M") == 0) f.big16 = v;
    if (strcmp(name, "adamw_1000x4K") == 0) f.list = v;
  }
  if (pclose(p) != 0 || f.big16 <= 0) fprintf(stderr, "ops: the torch peer gave no figures (%s)\n", cmd);
  return f;
}
#define LIST_ELEMS 4096

typedef struct {
  fg_device *dev;
  fg_op_args *list;
  size_t count;
  fg_op_params p;
} op_ctx;

static void run(void *arg) {
  op_ctx *c = arg;
  if (fg_op_run(c->dev, FG_OP_ADAMW, &c->p, c->list, c->count, NULL)) {
    fprintf(stderr, "bench_ops: %s\n", fg_last_error());
    exit(1);
  }
}

/* Four streams of n f32 on dev, filled with small values (finite updates throughout). */
static float *streams_alloc(fg_device *dev, size_t n, float *host) {
  void *p;
  if (fg_device_mem_alloc(dev, 4 * n * sizeof(float), &p)) {
    fprintf(stderr, "bench_ops: %s\n", fg_last_error());
    exit(1);
  }
  for (int k = 0; k < 4; k++) fg_device_copy(dev, (float *)p + (size_t)k * n, host, n * sizeof(float), FG_COPY_H2D);
  return p;
}

static fg_op_args args_of(float *base, size_t n, size_t off, size_t len) {
  fg_op_args a;
  memset(&a, 0, sizeof a);
  for (int k = 0; k < 4; k++) {
    a.ptr[k] = base + (size_t)k * n + off;
    a.dtype[k] = FG_F32;
  }
  a.n = len;
  return a;
}

static double adamw_gbs(const fg_bench *b, op_ctx *c, size_t elems) {
  double t = fg_bench_time(b, run, c);
  return 28.0 * (double)elems / t / 1e9;
}

static void bench_device(const fg_bench *b, fg_device *dev, const char *tag, double limit, const char *limit_name,
                         float *host, peer_figs peer) {
  static const size_t sizes[3] = {1u << 20, 16u << 20, 64u << 20};
  const char *names[3] = {"1M", "16M", "64M"};
  fg_op_params p;
  memset(&p, 0, sizeof p);
  p.f[0] = 0.99999f, p.f[1] = 0.1f, p.f[2] = 0.999f, p.f[3] = 0.001f, p.f[4] = 1e-3f, p.f[5] = 0.5f, p.f[6] = 1e-8f;
  double big16 = 0;
  char fig[64];
  for (int s = 0; s < 3; s++) {
    float *base = streams_alloc(dev, sizes[s], host);
    fg_op_args a = args_of(base, sizes[s], 0, sizes[s]);
    op_ctx c = {dev, &a, 1, p};
    double gbs = adamw_gbs(b, &c, sizes[s]);
    if (s == 1) big16 = gbs;
    snprintf(fig, sizeof fig, "%s_adamw_%s_traffic", tag, names[s]);
    fg_bench_report(b, fig, gbs, "GB/s", limit_name, limit);
    if (s == 1 && peer.big16 > 0) fg_bench_report(b, fig, gbs, "GB/s", "torch_adamw_16M", peer.big16);
    fg_device_mem_free(dev, base);
  }
  const size_t n = (size_t)LIST_TENSORS * LIST_ELEMS;
  float *base = streams_alloc(dev, n, host);
  fg_op_args *list = malloc(LIST_TENSORS * sizeof *list);
  if (!list) exit(1);
  for (size_t t = 0; t < LIST_TENSORS; t++) list[t] = args_of(base, n, t * LIST_ELEMS, LIST_ELEMS);
  op_ctx c = {dev, list, LIST_TENSORS, p};
  snprintf(fig, sizeof fig, "%s_adamw_1000x4K_traffic", tag);
  const double list_gbs = adamw_gbs(b, &c, n);
  fg_bench_report(b, fig, list_gbs, "GB/s", "same_op_16M_single_tensor", big16);
  if (peer.list > 0) fg_bench_report(b, fig, list_gbs, "GB/s", "torch_adamw_1000x4K", peer.list);
  free(list);
  fg_device_mem_free(dev, base);
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("ops", (size_t)256 << 20, argc, argv);
  const char *python = NULL;
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--peer") == 0) python = argv[i + 1];
  const size_t maxn = 64u << 20;
  float *host = malloc(maxn * sizeof(float));
  if (!host) return 1;
  for (size_t i = 0; i < maxn; i++) host[i] = (float)(i % 977) * 1e-3f;
  /* The copy's traffic: bytes read plus bytes written. */
  const double memcpy_traffic = 2.0 * fg_bench_memcpy_gbs(&b, b.size, b.threads);
  fg_device *cpu;
  if (fg_device_open("cpu", &cpu)) return 1;
  bench_device(&b, cpu, "cpu", memcpy_traffic, "memcpy_traffic", host, run_peer(python, "cpu", b.threads, b.reps));
  fg_device_close(cpu);
  if (fg_cuda_device_count() > 0) {
    fg_device *gpu;
    if (fg_device_open("cuda:0", &gpu)) return 1;
    const double d2d_traffic = fg_bench_d2d_traffic_gbs(gpu, b.size);
    bench_device(&b, gpu, "cuda", d2d_traffic, "d2d_copy_traffic", host, run_peer(python, "cuda", 0, b.reps));
    fg_device_close(gpu);
  }
  free(host);
  return 0;
}
