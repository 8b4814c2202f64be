/* GEMM: GFLOP/s (2mnk per call) of the exact mode against the fast mode (CBLAS / cuBLAS)
 * measured in the same run, on every device present. The ratio exact/fast is the price of
 * bit-reproducibility. Shapes: squares, and Muon's Gram matrix X X^T of a 1024 x 3072 X
 * (m = n = 1024, k = 3072, trans_b), in f32 and with bf16 inputs.
 * Flags: the harness's (--reps, --warmup, --threads), --max N (skip shapes with a side > N). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

typedef struct {
  fg_device *dev;
  fg_gemm_mode mode;
  size_t m, n, k;
  bool tb;
  fg_dtype t;
  const void *a, *b;
  float *c;
} gemm_ctx;

static void run(void *p) {
  gemm_ctx *g = p;
  size_t lda = g->k, ldb = g->tb ? g->k : g->n;
  if (fg_gemm(g->dev, g->mode, false, g->tb, g->m, g->n, g->k, 1.0f, g->a, g->t, lda, g->b, g->t, ldb, 0.0f, g->c,
              g->n, NULL)) {
    fprintf(stderr, "gemm: %s\n", fg_last_error());
    exit(1);
  }
}

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

static void bench_device(const fg_bench *b, const char *spec, size_t max_side) {
  fg_device *dev;
  if (fg_device_open(spec, &dev)) {
    fprintf(stderr, "%s: %s\n", spec, fg_last_error());
    exit(1);
  }
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const shape *sh = &shapes[s];
    if (sh->m > max_side || sh->n > max_side || sh->k > max_side) continue;
    size_t es = sh->t == FG_F32 ? 4 : 2, na = sh->m * sh->k, nb = sh->k * sh->n, nc = sh->m * sh->n;
    float *host = malloc((na > nb ? na : nb) * 4);
    void *a, *bb, *c, *conv = NULL;
    if (!host || fg_device_mem_alloc(dev, na * es, &a) || fg_device_mem_alloc(dev, nb * es, &bb) ||
        fg_device_mem_alloc(dev, nc * 4, &c) || fg_device_mem_alloc(dev, (na > nb ? na : nb) * 4, &conv)) {
      fprintf(stderr, "%s: %s\n", spec, fg_last_error());
      exit(1);
    }
    /* Values in [-1, 1): products and sums stay far from overflow and subnormals. */
    for (size_t i = 0; i < (na > nb ? na : nb); i++) host[i] = (float)((i * 2654435761u) % 2048) / 1024.0f - 1.0f;
    fg_device_copy(dev, conv, host, (na > nb ? na : nb) * 4, FG_COPY_H2D);
    fg_convert(dev, a, sh->t, conv, FG_F32, na, NULL);
    fg_convert(dev, bb, sh->t, conv, FG_F32, nb, NULL);
    double flop = 2.0 * (double)sh->m * (double)sh->n * (double)sh->k;
    gemm_ctx g = {dev, FG_GEMM_FAST, sh->m, sh->n, sh->k, sh->tb, sh->t, a, bb, c};
    double fast = flop / fg_bench_time(b, run, &g) / 1e9;
    g.mode = FG_GEMM_EXACT;
    double exact = flop / fg_bench_time(b, run, &g) / 1e9;
    char fig[96];
    bool cuda = strncmp(spec, "cuda", 4) == 0;
    snprintf(fig, sizeof fig, "%s_fast_%s", cuda ? "cuda" : "cpu", sh->name);
    fg_bench_report(b, fig, fast, "GFLOP/s", cuda ? "cublas" : "cblas", fast);
    snprintf(fig, sizeof fig, "%s_exact_%s", cuda ? "cuda" : "cpu", sh->name);
    fg_bench_report(b, fig, exact, "GFLOP/s", cuda ? "cublas" : "cblas", fast);
    fg_device_mem_free(dev, a);
    fg_device_mem_free(dev, bb);
    fg_device_mem_free(dev, c);
    fg_device_mem_free(dev, conv);
    free(host);
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
