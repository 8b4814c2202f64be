/* The linear layer (forgia/linear.h) on the CPU, on SmolLM2-135M's shapes: the FFN's down
 * projection (576 outputs x 1536 inputs) and the vocabulary projection (49152 x 576), with
 * Q4_1 and Q8_0 weights, in the exact and fast modes.
 *   generation (1 token)   GB/s of weight bytes read, next to memcpy's bandwidth on a buffer
 *                          of the same size (the bound of a matrix-vector product);
 *   prompt (128 tokens)    GFLOP/s (2 n_tok n_in n_out per call), next to forgia's fast GEMM
 *                          on the same weights dequantized to f32 beforehand (what decoding
 *                          tile by tile costs against keeping an f32 copy).
 * Flags: the harness's (--reps, --warmup, --threads), --tok N (the prompt's token count). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

typedef struct {
  const char *name;
  size_t n_out, n_in;
} shape;

static const shape shapes[] = {{"ffn_down_576x1536", 576, 1536}, {"vocab_49152x576", 49152, 576}};
static const fg_dtype types[] = {FG_Q4_1, FG_Q8_0};

typedef struct {
  fg_device *dev;
  fg_gemm_mode mode;
  size_t n_tok, n_in, n_out;
  const float *x, *w32;
  const void *w;
  fg_dtype t;
  float *y;
} lin_ctx;

static void die(const char *what) {
  fprintf(stderr, "bench_linear: %s: %s\n", what, fg_last_error());
  exit(1);
}

static void run_linear(void *p) {
  lin_ctx *c = p;
  if (fg_linear(c->dev, c->mode, c->x, c->n_tok, c->n_in, c->w, c->t, c->n_out, c->y, false, NULL)) die("fg_linear");
}

static void run_gemm(void *p) {
  lin_ctx *c = p;
  if (fg_gemm(c->dev, FG_GEMM_FAST, false, true, c->n_tok, c->n_out, c->n_in, 1.0f, c->x, FG_F32, c->n_in, c->w32,
              FG_F32, c->n_in, 0.0f, c->y, c->n_out, NULL))
    die("fg_gemm");
}

static float *uniform(size_t n, uint32_t seed) {
  float *v = malloc(n * 4);
  if (!v) die("malloc");
  for (size_t i = 0; i < n; i++) v[i] = (float)(((i + seed) * 2654435761u) % 2048) / 1024.0f - 1.0f;
  return v;
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("linear", 0, argc, argv);
  size_t prompt = 128;
  for (int i = 1; i + 1 < argc; i += 2)
    if (strcmp(argv[i], "--tok") == 0) prompt = (size_t)strtoull(argv[i + 1], NULL, 10);
  fg_device *dev;
  if (fg_device_open("cpu", &dev)) die("cpu");
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const shape *sh = &shapes[s];
    const size_t nw = sh->n_out * sh->n_in;
    float *w32 = uniform(nw, 1), *x = uniform(prompt * sh->n_in, 2), *y = malloc(prompt * sh->n_out * 4);
    if (!y) die("malloc");
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
      lin_ctx c = {dev, FG_GEMM_FAST, 1, sh->n_in, sh->n_out, x, wdq, w, t, y};
      char fig[128];
      const double copy = fg_bench_memcpy_gbs(&b, wbytes, b.threads);
      for (int m = 0; m < 2; m++) {
        c.mode = m ? FG_GEMM_EXACT : FG_GEMM_FAST;
        c.n_tok = 1;
        const double gen = (double)wbytes / fg_bench_time(&b, run_linear, &c) / 1e9;
        snprintf(fig, sizeof fig, "gen_%s_%s_%s", m ? "exact" : "fast", sh->name, tr->name);
        fg_bench_report(&b, fig, gen, "GB/s", "memcpy", copy);
      }
      const double flop = 2.0 * (double)prompt * (double)nw;
      c.n_tok = prompt;
      double pp[2];
      for (int m = 0; m < 2; m++) {
        c.mode = m ? FG_GEMM_EXACT : FG_GEMM_FAST;
        pp[m] = flop / fg_bench_time(&b, run_linear, &c) / 1e9;
      }
      const double peer = flop / fg_bench_time(&b, run_gemm, &c) / 1e9;
      for (int m = 0; m < 2; m++) {
        snprintf(fig, sizeof fig, "prompt%zu_%s_%s_%s", prompt, m ? "exact" : "fast", sh->name, tr->name);
        fg_bench_report(&b, fig, pp[m], "GFLOP/s", "gemm_fast_f32", peer);
      }
      free(w);
      free(wdq);
    }
    free(w32);
    free(x);
    free(y);
  }
  fg_device_close(dev);
  return 0;
}
