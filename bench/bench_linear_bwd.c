/* The linear layer's input gradient (forgia/linear.h: fg_linear_backward_x) on the CPU, on
 * SmolLM2-135M's shapes: the vocabulary projection (dy n_tok x 49152 through W 49152 x 576)
 * and the FFN's down projection (dy n_tok x 576 through W 576 x 1536), with f32, bf16 and
 * Q8_0 weights, in the exact and fast modes. GFLOP/s (2 n_tok n_in n_out per call), next to
 * forgia's fast GEMM of the same product on W decoded to f32 beforehand, measured in the
 * same run (what decoding tile by tile, and the exact mode's order, cost against it).
 * Flags: the harness's (--reps, --warmup, --threads), --tok N (tokens per step, 128). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

typedef struct {
  const char *name;
  size_t n_out, n_in;
} shape;

static const shape shapes[] = {{"vocab_49152x576", 49152, 576}, {"ffn_down_576x1536", 576, 1536}};
static const fg_dtype types[] = {FG_F32, FG_BF16, FG_Q8_0};

typedef struct {
  fg_device *dev;
  fg_gemm_mode mode;
  size_t n_tok, n_in, n_out;
  const float *dy, *w32;
  const void *w;
  fg_dtype t;
  float *dx;
} bwd_ctx;

static void die(const char *what) {
  fprintf(stderr, "bench_linear_bwd: %s: %s\n", what, fg_last_error());
  exit(1);
}

static void run_bwd(void *p) {
  bwd_ctx *c = p;
  if (fg_linear_backward_x(c->dev, c->mode, c->dy, c->n_tok, c->n_out, c->w, c->t, c->n_in, c->dx, false, NULL))
    die("fg_linear_backward_x");
}

static void run_gemm(void *p) {
  bwd_ctx *c = p;
  if (fg_gemm(c->dev, FG_GEMM_FAST, false, false, c->n_tok, c->n_in, c->n_out, 1.0f, c->dy, FG_F32, c->n_out, c->w32,
              FG_F32, c->n_in, 0.0f, c->dx, c->n_in, NULL))
    die("fg_gemm");
}

static float *uniform(size_t n, uint32_t seed) {
  float *v = malloc(n * 4);
  if (!v) die("malloc");
  for (size_t i = 0; i < n; i++) v[i] = (float)(((i + seed) * 2654435761u) % 2048) / 1024.0f - 1.0f;
  return v;
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("linear_bwd", 0, argc, argv);
  size_t n_tok = 128;
  for (int i = 1; i + 1 < argc; i += 2)
    if (strcmp(argv[i], "--tok") == 0) n_tok = (size_t)strtoull(argv[i + 1], NULL, 10);
  fg_device *dev;
  if (fg_device_open("cpu", &dev)) die("cpu");
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const shape *sh = &shapes[s];
    const size_t nw = sh->n_out * sh->n_in;
    float *w32 = uniform(nw, 1), *dy = uniform(n_tok * sh->n_out, 2), *dx = malloc(n_tok * sh->n_in * 4);
    if (!dx) die("malloc");
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
      const fg_dtype t = types[k];
      const fg_dtype_traits *tr = fg_dtype_info(t);
      const size_t wbytes = nw / tr->block_elems * tr->block_bytes;
      void *w = malloc(wbytes);
      float *wdq = malloc(nw * 4);
      if (!w || !wdq) die("malloc");
      if (fg_quant_encode_rows(t, w32, (int64_t)sh->n_out, (int64_t)sh->n_in, w, wbytes) ||
          fg_quant_decode_rows(t, w, wbytes, wdq, (int64_t)sh->n_out, (int64_t)sh->n_in))
        die("quantize");
      bwd_ctx c = {dev, FG_GEMM_FAST, n_tok, sh->n_in, sh->n_out, dy, wdq, w, t, dx};
      const double flop = 2.0 * (double)n_tok * (double)nw;
      double v[2];
      for (int m = 0; m < 2; m++) {
        c.mode = m ? FG_GEMM_EXACT : FG_GEMM_FAST;
        v[m] = flop / fg_bench_time(&b, run_bwd, &c) / 1e9;
      }
      const double peer = flop / fg_bench_time(&b, run_gemm, &c) / 1e9;
      for (int m = 0; m < 2; m++) {
        char fig[128];
        snprintf(fig, sizeof fig, "tok%zu_%s_%s_%s", n_tok, m ? "exact" : "fast", sh->name, tr->name);
        fg_bench_report(&b, fig, v[m], "GFLOP/s", "gemm_fast_f32", peer);
      }
      free(w);
      free(wdq);
    }
    free(w32);
    free(dy);
    free(dx);
  }
  fg_device_close(dev);
  return 0;
}
