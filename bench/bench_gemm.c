/* GEMM: GFLOP/s (2mnk per call) of forgia's fast and exact modes, each against the library
 * called directly on the same operands in the same run, on every device present:
 *   CPU   cblas_sgemm of the OpenBLAS that forgia's fast mode loads, on the whole problem with
 *         OpenBLAS's own threads, as many as forgia's OpenMP team (--threads);
 *   CUDA  cublasSgemm (cublasGemmEx for bf16 inputs, as forgia's fast mode calls it) on the
 *         same device buffers forgia's GEMM reads and writes.
 * fast/limit is what forgia adds around the library (on the CPU: rows of C cut over its
 * OpenMP team of single-threaded OpenBLAS calls, bf16 operands widened per call); exact/limit
 * is the price of bit-reproducibility. For bf16 inputs the CPU limit runs on the operands
 * widened to f32 once, outside the timing (OpenBLAS's SGEMM is what the fast mode runs).
 * Shapes: squares, and Muon's Gram matrix X X^T of a 1024 x 3072 X (m = n = 1024, k = 3072,
 * trans_b), in f32 and with bf16 inputs. Every forgia figure of a device is measured before
 * any of its limits, so OpenBLAS's worker threads, which spin a while after a call, never run
 * beside forgia's.
 * Flags: the harness's (--reps, --warmup, --threads), --max N (skip shapes with a side > N). */
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if FORGIA_BENCH_CUBLAS
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

#include "forgia/forgia.h"
#include "harness.h"

typedef struct {
  const char *name;
  size_t m, n, k;
  bool tb;
  fg_dtype t;
} shape;

static const shape shapes[] = {
  {"256", 256, 256, 256, false, FG_F32},
  {"1024", 1024, 1024, 1024, false, FG_F32},
  {"2048", 2048, 2048, 2048, false, FG_F32},
  {"muon_1024x3072_gram", 1024, 1024, 3072, true, FG_F32},
  {"1024_bf16", 1024, 1024, 1024, false, FG_BF16},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* One shape's operands on one device: a and b in the shape's type, c (f32), and for a bf16
 * shape on the CPU, a32 and b32, the same values widened to f32 for the CBLAS limit. */
typedef struct {
  fg_device *dev;
  fg_gemm_mode mode;
  const shape *sh;
  void *a, *b, *a32, *b32;
  float *c;
} gemm_ctx;

static void die(const char *what, const char *why) {
  fprintf(stderr, "bench_gemm: %s: %s\n", what, why);
  exit(1);
}

static void run_forgia(void *p) {
  gemm_ctx *g = p;
  const shape *s = g->sh;
  if (fg_gemm(g->dev, g->mode, false, s->tb, s->m, s->n, s->k, 1.0f, g->a, s->t, s->k, g->b, s->t, s->tb ? s->k : s->n,
              0.0f, g->c, s->n, NULL))
    die("fg_gemm", fg_last_error());
}

/* ---- CBLAS. The bench opens the OpenBLAS forgia has already loaded (same path list as
 * cpu/openblas_lazy.c, so dlopen hands back that instance) instead of linking it: linked, it
 * would be loaded at start-up and choose its kernels from the CPU's model number before forgia
 * could name the core, so on CPUs OpenBLAS misreads forgia's own fast figure would change. */
typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                         const float *, blasint, const float *, blasint, float, float *, blasint);
static struct {
  sgemm_fn sgemm;
  void (*set_threads)(int);
  int (*get_threads)(void);
  char *(*corename)(void);
} blas;

static void open_blas(void) {
  static const char *const paths[] = {FORGIA_BENCH_OPENBLAS_PATH, "libopenblas.so.0", "libopenblas.so"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !h; i++)
    if (paths[i][0]) h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) die("cannot open OpenBLAS", dlerror());
  *(void **)&blas.sgemm = dlsym(h, "cblas_sgemm");
  *(void **)&blas.set_threads = dlsym(h, "openblas_set_num_threads");
  *(void **)&blas.get_threads = dlsym(h, "openblas_get_num_threads");
  *(void **)&blas.corename = dlsym(h, "openblas_get_corename");
  if (!blas.sgemm || !blas.set_threads || !blas.get_threads || !blas.corename)
    die("OpenBLAS", "lacks cblas_sgemm or openblas_{set,get}_num_threads or openblas_get_corename");
}

static void run_cblas(void *p) {
  gemm_ctx *g = p;
  const shape *s = g->sh;
  const float *a = g->a32 ? g->a32 : g->a, *b = g->b32 ? g->b32 : g->b;
  blas.sgemm(CblasRowMajor, CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, (blasint)s->m, (blasint)s->n,
             (blasint)s->k, 1.0f, a, (blasint)s->k, b, (blasint)(s->tb ? s->k : s->n), 0.0f, g->c, (blasint)s->n);
}

/* ---- cuBLAS, linked: row-major C = A op(B) is column-major C^T = op(B)^T A^T. */
#if FORGIA_BENCH_CUBLAS
static cublasHandle_t cublas;

static void cuda_check(cudaError_t e, const char *what) {
  if (e != cudaSuccess) die(what, cudaGetErrorString(e));
}
static void cublas_check(cublasStatus_t st, const char *what) {
  if (st != CUBLAS_STATUS_SUCCESS) die(what, cublasGetStatusString(st));
}

static void run_cublas(void *p) {
  gemm_ctx *g = p;
  const shape *s = g->sh;
  const float one = 1.0f, zero = 0.0f;
  const cublasOperation_t opb = s->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = (int)s->m, n = (int)s->n, k = (int)s->k, ldb = (int)(s->tb ? s->k : s->n);
  if (s->t == FG_BF16)
    cublas_check(cublasGemmEx(cublas, opb, CUBLAS_OP_N, n, m, k, &one, g->b, CUDA_R_16BF, ldb, g->a, CUDA_R_16BF, k,
                              &zero, g->c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  else
    cublas_check(cublasSgemm(cublas, opb, CUBLAS_OP_N, n, m, k, &one, g->b, ldb, g->a, k, &zero, g->c, n),
                 "cublasSgemm");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}
#endif

static void *dev_alloc(fg_device *dev, size_t bytes) {
  void *p;
  if (fg_device_mem_alloc(dev, bytes, &p)) die("fg_device_mem_alloc", fg_last_error());
  return p;
}

/* The operands of one shape: values in [-1, 1), so products and sums stay far from overflow
 * and subnormals. */
static gemm_ctx make_operands(fg_device *dev, const shape *sh, bool widen) {
  const size_t es = sh->t == FG_F32 ? 4 : 2, na = sh->m * sh->k, nb = sh->k * sh->n, nmax = na > nb ? na : nb;
  gemm_ctx g = {dev, FG_GEMM_FAST, sh, NULL, NULL, NULL, NULL, NULL};
  float *host = malloc(nmax * 4);
  if (!host) die("malloc", "out of memory");
  for (size_t i = 0; i < nmax; i++) host[i] = (float)((i * 2654435761u) % 2048) / 1024.0f - 1.0f;
  void *conv = dev_alloc(dev, nmax * 4);
  g.a = dev_alloc(dev, na * es);
  g.b = dev_alloc(dev, nb * es);
  g.c = dev_alloc(dev, sh->m * sh->n * 4);
  if (fg_device_copy(dev, conv, host, nmax * 4, FG_COPY_H2D) || fg_convert(dev, g.a, sh->t, conv, FG_F32, na, NULL) ||
      fg_convert(dev, g.b, sh->t, conv, FG_F32, nb, NULL))
    die("operands", fg_last_error());
  if (widen && sh->t != FG_F32) {
    g.a32 = dev_alloc(dev, na * 4);
    g.b32 = dev_alloc(dev, nb * 4);
    if (fg_convert(dev, g.a32, FG_F32, g.a, sh->t, na, NULL) || fg_convert(dev, g.b32, FG_F32, g.b, sh->t, nb, NULL))
      die("operands", fg_last_error());
  }
  fg_device_mem_free(dev, conv);
  free(host);
  return g;
}

static void bench_device(const fg_bench *b, const char *spec, size_t max_side) {
  const bool cuda = strncmp(spec, "cuda", 4) == 0;
#if !FORGIA_BENCH_CUBLAS
  if (cuda) {
    fprintf(stderr, "bench_gemm: %s skipped: built without cuBLAS\n", spec);
    return;
  }
#endif
  fg_device *dev;
  if (fg_device_open(spec, &dev)) die(spec, fg_last_error());
  gemm_ctx g[NSHAPES];
  double flop[NSHAPES], fast[NSHAPES], exact[NSHAPES], limit[NSHAPES];
  size_t ns = 0;
  for (size_t s = 0; s < NSHAPES; s++) {
    const shape *sh = &shapes[s];
    if (sh->m > max_side || sh->n > max_side || sh->k > max_side) continue;
    g[ns] = make_operands(dev, sh, !cuda);
    flop[ns] = 2.0 * (double)sh->m * (double)sh->n * (double)sh->k;
    g[ns].mode = FG_GEMM_FAST;
    fast[ns] = flop[ns] / fg_bench_time(b, run_forgia, &g[ns]) / 1e9;
    g[ns].mode = FG_GEMM_EXACT;
    exact[ns] = flop[ns] / fg_bench_time(b, run_forgia, &g[ns]) / 1e9;
    ns++;
  }
  if (cuda) {
#if FORGIA_BENCH_CUBLAS
    cuda_check(cudaSetDevice(atoi(spec + 5)), "cudaSetDevice");
    cublas_check(cublasCreate(&cublas), "cublasCreate");
    for (size_t i = 0; i < ns; i++) limit[i] = flop[i] / fg_bench_time(b, run_cublas, &g[i]) / 1e9;
    cublas_check(cublasDestroy(cublas), "cublasDestroy");
#endif
  } else {
    open_blas();
    const int was = blas.get_threads();
    blas.set_threads(b->threads > 0 ? b->threads : omp_get_max_threads());
    fprintf(stderr, "bench_gemm: cblas_sgemm limit: OpenBLAS %s, %d threads\n", blas.corename(), blas.get_threads());
    for (size_t i = 0; i < ns; i++) limit[i] = flop[i] / fg_bench_time(b, run_cblas, &g[i]) / 1e9;
    blas.set_threads(was); /* forgia calls OpenBLAS from each of its threads, one thread each */
  }
  for (size_t i = 0; i < ns; i++) {
    const char *lim = !cuda ? "cblas_sgemm" : g[i].sh->t == FG_BF16 ? "cublasGemmEx" : "cublasSgemm";
    char fig[96];
    snprintf(fig, sizeof fig, "%s_fast_%s", cuda ? "cuda" : "cpu", g[i].sh->name);
    fg_bench_report(b, fig, fast[i], "GFLOP/s", lim, limit[i]);
    snprintf(fig, sizeof fig, "%s_exact_%s", cuda ? "cuda" : "cpu", g[i].sh->name);
    fg_bench_report(b, fig, exact[i], "GFLOP/s", lim, limit[i]);
    void *bufs[] = {g[i].a, g[i].b, g[i].a32, g[i].b32, g[i].c};
    for (size_t j = 0; j < sizeof bufs / sizeof bufs[0]; j++)
      if (bufs[j]) fg_device_mem_free(dev, bufs[j]);
  }
  fg_device_close(dev);
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("gemm", 0, argc, argv);
  size_t max_side = (size_t)-1;
  for (int i = 1; i + 1 < argc; i += 2)
    if (strcmp(argv[i], "--max") == 0) max_side = (size_t)strtoull(argv[i + 1], NULL, 10);
  bench_device(&b, "cpu", max_side);
  if (fg_cuda_device_count() > 0) bench_device(&b, "cuda:0", max_side);
  return 0;
}
