/* The language-model runtime end to end: prompt processing (one batch of --pp tokens from an
 * empty cache, logits for the last) and generation (--tg single-token steps, logits each),
 * in tokens/s, as llama-bench measures pp and tg (bench/lm_vs_llamacpp.sh runs both on one
 * file). Limits measured in the same run:
 *   tg  against memory bandwidth / weight bytes: every generated token reads every weight
 *       once (on a GPU, device-to-device traffic)
 *   pp  against the device's f32 GEMM (fg_gemm fast mode) on the model's own projection
 *       shapes for --pp rows, as tokens/s: the rate of the matrix products alone
 *
 *   bench_lm MODEL [--pp N] [--tg N] [--reps N] [--threads N] [--device D] [--mode exact|fast]
 * Also prints `pp<N> <tok/s>` and `tg<N> <tok/s>` lines for scripts. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

typedef struct run {
  fg_lm *lm;
  size_t pp, tg;
  int32_t *ids;
  fg_status st;
} run;

static void do_pp(void *p) {
  run *r = p;
  fg_lm_cache *c = NULL;
  if ((r->st = fg_lm_cache_create(r->lm, 1, r->pp, &c))) return;
  uint8_t *want = calloc(r->pp, 1);
  want[r->pp - 1] = 1;
  const fg_lm_batch b = {r->pp, r->ids, NULL, want};
  const float *lg = NULL;
  size_t rows = 0;
  r->st = fg_lm_forward(r->lm, c, &b, &lg, &rows);
  free(want);
  fg_lm_cache_free(c);
}

static void do_tg(void *p) {
  run *r = p;
  fg_lm_cache *c = NULL;
  if ((r->st = fg_lm_cache_create(r->lm, 1, r->tg, &c))) return;
  for (size_t i = 0; i < r->tg && !r->st; i++) {
    const fg_lm_batch b = {1, r->ids + i, NULL, NULL};
    const float *lg = NULL;
    size_t rows = 0;
    r->st = fg_lm_forward(r->lm, c, &b, &lg, &rows);
  }
  fg_lm_cache_free(c);
}

typedef struct gemm_run {
  fg_device *dev;
  size_t m, n, k;
  float *a, *b, *c;
} gemm_run;

static void do_gemm(void *p) {
  gemm_run *g = p;
  fg_gemm(g->dev, FG_GEMM_FAST, false, true, g->m, g->n, g->k, 1.0f, g->a, FG_F32, g->k, g->b, FG_F32, g->k, 0.0f, g->c,
          g->n, NULL);
}

int main(int argc, char **argv) {
  const char *path = NULL, *device = "cpu", *mode = "fast";
  size_t pp = 512, tg = 128;
  fg_bench b = {.name = "lm", .reps = 3, .warmup = 1, .threads = 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      printf("usage: bench_lm MODEL [--pp N] [--tg N] [--reps N] [--threads N] [--device D] [--mode exact|fast]\n"
             "Prompt processing and generation tokens/s of the runtime, against memory bandwidth over the\n"
             "weights (tg) and the device's f32 GEMM on the model's projections (pp).\n");
      return 0;
    }
    if (!strcmp(a, "--pp") && v) pp = (size_t)strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--tg") && v) tg = (size_t)strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--reps") && v) b.reps = atoi(argv[++i]);
    else if (!strcmp(a, "--threads") && v) b.threads = atoi(argv[++i]);
    else if (!strcmp(a, "--device") && v) device = argv[++i];
    else if (!strcmp(a, "--mode") && v) mode = argv[++i];
    else if (a[0] != '-' && !path) path = a;
    else {
      fprintf(stderr, "usage: bench_lm MODEL [--pp N] [--tg N] [--reps N] [--threads N] [--device D] [--mode exact|fast]\n");
      return 2;
    }
  }
  if (!path || pp < 1 || tg < 1 || b.reps < 1) {
    fprintf(stderr, "usage: bench_lm MODEL [--pp N] [--tg N] [--reps N] [--threads N] [--device D] [--mode exact|fast]\n");
    return 2;
  }
  if (b.threads > 0) omp_set_num_threads(b.threads);
  fg_device *dev = NULL;
  if (fg_device_open(device, &dev)) {
    fprintf(stderr, "bench_lm: %s\n", fg_last_error());
    return 1;
  }
  fg_lm_options o = {.mode = strcmp(mode, "exact") ? FG_GEMM_FAST : FG_GEMM_EXACT};
  run r = {.pp = pp, .tg = tg};
  if (fg_lm_open(path, dev, &o, &r.lm)) {
    fprintf(stderr, "bench_lm: %s\n", fg_last_error());
    fg_device_close(dev);
    return 1;
  }
  const fg_lm_config *c = fg_lm_get_config(r.lm);
  const size_t n_ids = pp > tg ? pp : tg;
  r.ids = malloc(n_ids * sizeof *r.ids);
  for (size_t i = 0; i < n_ids; i++) r.ids[i] = (int32_t)((i * 7919 + 13) % c->n_vocab);
  char fig[64];
  const double t_pp = fg_bench_time(&b, do_pp, &r);
  if (r.st) goto fail;
  const double t_tg = fg_bench_time(&b, do_tg, &r);
  if (r.st) goto fail;
  const uint64_t wbytes = fg_lm_weight_bytes(r.lm);
  /* tg's limit: every weight byte read once per token. */
  double bw = fg_device_kind_of(dev) == FG_DEVICE_CPU ? fg_bench_memcpy_gbs(&b, (size_t)256 << 20, b.threads)
                                                        : fg_bench_d2d_traffic_gbs(dev, (size_t)256 << 20) / 2.0;
  snprintf(fig, sizeof fig, "tg%zu_%s", tg, mode);
  fg_bench_report(&b, fig, (double)tg / t_tg, "tok/s", "bandwidth/weight_bytes", bw * 1e9 / (double)wbytes);
  /* pp's limit: the projections as f32 GEMMs of pp rows on this device. */
  const size_t E = c->n_embd, Q = c->n_head * c->head_dim, KV = c->n_kv_head * c->head_dim, F = c->n_ff;
  const size_t shapes[5][2] = {{Q, E}, {2 * KV, E}, {E, Q}, {2 * F, E}, {E, F}};
  double t_gemm = 0.0;
  for (int s = 0; s < 5; s++) {
    gemm_run g = {.dev = dev, .m = pp, .n = shapes[s][0], .k = shapes[s][1]};
    if (fg_device_mem_alloc(dev, g.m * g.k * 4, (void **)&g.a) || fg_device_mem_alloc(dev, g.n * g.k * 4, (void **)&g.b) ||
        fg_device_mem_alloc(dev, g.m * g.n * 4, (void **)&g.c))
      goto fail;
    fg_device_memset(dev, g.a, 0, g.m * g.k * 4);
    fg_device_memset(dev, g.b, 0, g.n * g.k * 4);
    t_gemm += fg_bench_time(&b, do_gemm, &g) * (double)c->n_layer;
    fg_device_mem_free(dev, g.a);
    fg_device_mem_free(dev, g.b);
    fg_device_mem_free(dev, g.c);
  }
  snprintf(fig, sizeof fig, "pp%zu_%s", pp, mode);
  fg_bench_report(&b, fig, (double)pp / t_pp, "tok/s", "f32_gemm_of_the_projections", (double)pp / t_gemm);
  printf("pp%zu %.2f\ntg%zu %.2f\n", pp, (double)pp / t_pp, tg, (double)tg / t_tg);
  fprintf(stderr, "bench_lm: %s, %s, weights %.1f MiB, %s mode, %d threads\n", path, c->arch_name,
          (double)wbytes / 1048576.0, mode, b.threads > 0 ? b.threads : omp_get_max_threads());
  free(r.ids);
  fg_lm_free(r.lm);
  fg_device_close(dev);
  return 0;
fail:
  fprintf(stderr, "bench_lm: %s\n", fg_last_error());
  free(r.ids);
  fg_lm_free(r.lm);
  fg_device_close(dev);
  return 1;
}
