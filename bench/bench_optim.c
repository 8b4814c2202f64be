/* Whole optimizer steps (fg_optim_step, the public API) at memory bandwidth and against torch.
 *
 * AdamW (reads param, grad, m, v; writes param, m, v: 28 bytes of traffic per f32 element)
 * and SGD with momentum (param, grad, buf read; param, buf written: 20 bytes) on one tensor of
 * 1M, 16M and 64M elements and on 1,000 tensors of 4K elements, as GB/s of state traffic next
 * to memcpy's traffic in the same run (a device-to-device copy's on CUDA; target >= 0.8 at 16M
 * and 64M). Muon on square matrices (1024^2 on the CPU; also 4096^2 and 8192^2 on CUDA) as
 * seconds per step, next to the time of the 15 fast GEMMs its Newton-Schulz iteration needs,
 * measured alone in the same run (the step's floor).
 *
 * With `--peer PYTHON` (a Python with torch), bench_optim_peer.py steps torch.optim.AdamW and
 * SGD with foreach=True and with fused=True (where torch has the fused kernel on the device)
 * and torch.optim.Muon on the same shapes, on the same device, in the same run, and every
 * figure is also given as a ratio to torch's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

#define LIST_TENSORS 1000
#define LIST_ELEMS 4096
#define MAX_PEER 64

typedef struct {
  char name[64];
  double v;
} peer_fig;

typedef struct {
  peer_fig f[MAX_PEER];
  int n;
} peer_figs;

static peer_figs run_peer(const char *python, const char *dev, int threads, int reps) {
  peer_figs p;
  memset(&p, 0, sizeof p);
  if (!python) return p;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' '%s/bench_optim_peer.py' %s %d %d", python, FORGIA_BENCH_DIR, dev, threads, reps);
  FILE *f = popen(cmd, "r");
  if (!f) return p;
  while (p.n < MAX_PEER && fscanf(f, "%63s %lf", p.f[p.n].name, &p.f[p.n].v) == 2) p.n++;
  if (pclose(f) != 0 || p.n == 0) fprintf(stderr, "optim: the torch peer gave no figures (%s)\n", cmd);
  return p;
}

static double peer_get(const peer_figs *p, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (strcmp(p->f[i].name, name) == 0) return p->f[i].v;
  return 0.0;
}

static void die(const char *what) {
  fprintf(stderr, "bench_optim: %s: %s\n", what, fg_last_error());
  exit(1);
}

typedef struct {
  fg_optim *o;
} step_ctx;

static void step(void *arg) {
  if (fg_optim_step(((step_ctx *)arg)->o, NULL)) die("step");
}

/* count f32 tensors of n elements (rows x cols when cols > 1) with gradients, registered with
 * an optimizer of config c. Values are small so thousands of steps stay finite. */
static fg_optim *make_optim(fg_device *dev, const fg_optim_config *c, size_t count, uint64_t rows, uint64_t cols,
                            fg_tensor **ts, const float *host) {
  fg_optim *o;
  if (fg_optim_create(dev, c, &o)) die("create");
  const size_t n = (size_t)(rows * cols);
  for (size_t i = 0; i < count; i++) {
    const uint64_t shape[2] = {rows, cols};
    if (fg_tensor_create(dev, NULL, FG_F32, cols > 1 ? 2 : 1, shape, &ts[i])) die("tensor");
    if (fg_tensor_upload(ts[i], host, n * sizeof(float), NULL) || fg_tensor_grad_alloc(ts[i])) die("upload");
    if (fg_device_copy(dev, ts[i]->grad, host + 1, n * sizeof(float), FG_COPY_H2D)) die("grad");
    if (fg_optim_add(o, ts[i], NULL)) die("add");
  }
  return o;
}

static double time_steps(const fg_bench *b, fg_optim *o) {
  step_ctx c = {o};
  return fg_bench_time(b, step, &c);
}

static void free_all(fg_optim *o, fg_tensor **ts, size_t count) {
  fg_optim_free(o);
  for (size_t i = 0; i < count; i++) fg_tensor_free(ts[i]);
}

/* AdamW or SGD-momentum: traffic GB/s for the sizes and the list. */
static void bench_elementwise(const fg_bench *b, fg_device *dev, const char *tag, fg_optim_kind kind, double limit,
                              const char *limit_name, const float *host, const peer_figs *peer) {
  static const size_t sizes[3] = {1u << 20, 16u << 20, 64u << 20};
  static const char *names[3] = {"1M", "16M", "64M"};
  fg_optim_config c = fg_optim_defaults(kind);
  const char *kname = kind == FG_OPTIM_ADAMW ? "adamw" : "sgd_momentum";
  if (kind == FG_OPTIM_SGD) c.momentum = 0.9f;
  const double bytes_per = kind == FG_OPTIM_ADAMW ? 28.0 : 20.0;
  char fig[96], pname[96];
  fg_tensor **ts = malloc(LIST_TENSORS * sizeof *ts);
  if (!ts) exit(1);
  for (int s = 0; s <= 3; s++) {
    const bool list = s == 3;
    const size_t count = list ? LIST_TENSORS : 1, n = list ? LIST_ELEMS : sizes[s];
    const char *sz = list ? "1000x4K" : names[s];
    fg_optim *o = make_optim(dev, &c, count, n, 1, ts, host);
    const double gbs = bytes_per * (double)(n * count) / time_steps(b, o) / 1e9;
    snprintf(fig, sizeof fig, "%s_%s_%s_traffic", tag, kname, sz);
    fg_bench_report(b, fig, gbs, "GB/s", limit_name, limit);
    for (int fused = 0; fused < 2; fused++) {
      snprintf(pname, sizeof pname, "%s_%s_%s", kname, fused ? "fused" : "foreach", sz);
      const double pv = peer_get(peer, pname);
      char lim[112];
      snprintf(lim, sizeof lim, "torch_%s", pname);
      if (pv > 0) fg_bench_report(b, fig, gbs, "GB/s", lim, pv);
    }
    free_all(o, ts, count);
  }
  free(ts);
}

typedef struct {
  fg_device *dev;
  size_t r;
  float *x, *a, *bb;
} gemm_ctx;

/* The GEMMs of 5 Newton-Schulz iterations on an r x r matrix: A = X X^T, B = A A, X' = B X. */
static void ns_gemms(void *arg) {
  gemm_ctx *g = arg;
  const size_t r = g->r;
  for (int it = 0; it < 5; it++) {
    if (fg_gemm(g->dev, FG_GEMM_FAST, false, true, r, r, r, 1.0f, g->x, FG_F32, r, g->x, FG_F32, r, 0.0f, g->a, r, NULL) ||
        fg_gemm(g->dev, FG_GEMM_FAST, false, false, r, r, r, 1.0f, g->a, FG_F32, r, g->a, FG_F32, r, 0.0f, g->bb, r, NULL) ||
        fg_gemm(g->dev, FG_GEMM_FAST, false, false, r, r, r, 1.0f, g->bb, FG_F32, r, g->x, FG_F32, r, 0.0f, g->a, r, NULL))
      die("gemm");
  }
}

static void bench_muon(const fg_bench *b, fg_device *dev, const char *tag, const float *host, const peer_figs *peer,
                       int nsizes) {
  static const size_t dims[3] = {1024, 4096, 8192};
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_MUON);
  char fig[96], pname[64];
  for (int s = 0; s < nsizes; s++) {
    const size_t r = dims[s];
    fg_tensor *t;
    fg_optim *o = make_optim(dev, &c, 1, r, r, &t, host);
    const double step_s = time_steps(b, o);
    free_all(o, &t, 1);
    gemm_ctx g = {dev, r, NULL, NULL, NULL};
    if (fg_device_mem_alloc(dev, r * r * 4, (void **)&g.x) || fg_device_mem_alloc(dev, r * r * 4, (void **)&g.a) ||
        fg_device_mem_alloc(dev, r * r * 4, (void **)&g.bb))
      die("alloc");
    fg_device_copy(dev, g.x, host, r * r * 4, FG_COPY_H2D);
    const double gemm_s = fg_bench_time(b, ns_gemms, &g);
    fg_device_mem_free(dev, g.x);
    fg_device_mem_free(dev, g.a);
    fg_device_mem_free(dev, g.bb);
    /* Reported as steps per second so that a ratio above 1 means faster than the limit. */
    snprintf(fig, sizeof fig, "%s_muon_%zux%zu_steps", tag, r, r);
    fg_bench_report(b, fig, 1.0 / step_s, "step/s", "its_15_fast_gemms_alone", 1.0 / gemm_s);
    snprintf(pname, sizeof pname, "muon_%zu", r);
    const double pv = peer_get(peer, pname);
    if (pv > 0) fg_bench_report(b, fig, 1.0 / step_s, "step/s", "torch_muon", pv);
  }
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("optim", (size_t)256 << 20, argc, argv);
  const char *python = NULL;
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--peer") == 0) python = argv[i + 1];
  const size_t maxn = (64u << 20) + 1;
  float *host = malloc(maxn * sizeof(float));
  if (!host) return 1;
  for (size_t i = 0; i < maxn; i++) host[i] = (float)((int)(i % 977) - 488) * 1e-5f;
  const double memcpy_traffic = 2.0 * fg_bench_memcpy_gbs(&b, b.size, b.threads);
  fg_device *cpu;
  if (fg_device_open("cpu", &cpu)) return 1;
  peer_figs peer = run_peer(python, "cpu", b.threads, b.reps);
  bench_elementwise(&b, cpu, "cpu", FG_OPTIM_ADAMW, memcpy_traffic, "memcpy_traffic", host, &peer);
  bench_elementwise(&b, cpu, "cpu", FG_OPTIM_SGD, memcpy_traffic, "memcpy_traffic", host, &peer);
  bench_muon(&b, cpu, "cpu", host, &peer, 1);
  fg_device_close(cpu);
  if (fg_cuda_device_count() > 0) {
    fg_device *gpu;
    if (fg_device_open("cuda:0", &gpu)) return 1;
    const double d2d = fg_bench_d2d_traffic_gbs(gpu, b.size);
    peer = run_peer(python, "cuda", 0, b.reps);
    bench_elementwise(&b, gpu, "cuda", FG_OPTIM_ADAMW, d2d, "d2d_copy_traffic", host, &peer);
    bench_elementwise(&b, gpu, "cuda", FG_OPTIM_SGD, d2d, "d2d_copy_traffic", host, &peer);
    bench_muon(&b, gpu, "cuda", host, &peer, 3);
    fg_device_close(gpu);
  }
  free(host);
  return 0;
}
