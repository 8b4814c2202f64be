/* LoRA adapters: creation, the forward pass and its explicit backward (forgia/lora.h). The
 * GEMMs go through fg_gemm; the elementwise steps are the op layer's LoRA ops. */
#include "forgia/lora.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/dtype.h"
#include "forgia/ops.h"
#include "forgia/rng.h"
#include "training/lora_internal.h"

fg_status fg_lora_create(fg_device *dev, uint64_t in, uint64_t out, const fg_lora_config *c, uint64_t seed,
                         fg_lora **res) {
  if (!dev || !c || !res) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_create: NULL argument");
  *res = NULL;
  const uint64_t lim = in < out ? in : out;
  if (c->rank < 1 || c->rank > lim)
    return fg_fail(FG_ERR_INVALID_ARG, "lora: rank %u outside 1..min(in %llu, out %llu)", c->rank,
                   (unsigned long long)in, (unsigned long long)out);
  if (!(c->dropout_p >= 0.0f && c->dropout_p < 1.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "lora: dropout %g outside [0, 1)", (double)c->dropout_p);
  if (!isfinite(c->alpha)) return fg_fail(FG_ERR_NONFINITE, "lora: alpha %g is not finite", (double)c->alpha);
  fg_lora *l = calloc(1, sizeof *l);
  if (!l) return fg_fail(FG_ERR_NOMEM, "lora: out of memory");
  l->dev = dev;
  l->in = in;
  l->out = out;
  l->rank = c->rank;
  l->scale = c->alpha / (float)c->rank;
  l->dropout_p = c->dropout_p;
  l->gemm = FG_GEMM_DEFAULT;
  const uint64_t sa[2] = {c->rank, in}, sb[2] = {out, c->rank};
  fg_status st = fg_tensor_create(dev, "lora_a", FG_F32, 2, sa, &l->a);
  if (!st) st = fg_tensor_create(dev, "lora_b", FG_F32, 2, sb, &l->b); /* zero-filled */
  if (!st) st = fg_tensor_grad_alloc(l->a);
  if (!st) st = fg_tensor_grad_alloc(l->b);
  if (!st) {
    fg_rng_spec r = {.kind = FG_RNG_KAIMING, .seed = seed, .fan_in = in};
    st = fg_rng_fill_tensor(l->a, &r, NULL);
  }
  if (st) {
    fg_lora_free(l);
    return fg_fail_prefix(st, "lora: ");
  }
  *res = l;
  return FG_OK;
}

void fg_lora_free(fg_lora *l) {
  if (!l) return;
  fg_tensor_free(l->a);
  fg_tensor_free(l->b);
  free(l);
}

/* ---- scratch ------------------------------------------------------------------------------ */

fg_status fg_lora_scratch(fg_lora_work *w, size_t slot, uint64_t count, float **out) {
  if (count > SIZE_MAX / sizeof(float))
    return fg_fail(FG_ERR_OVERFLOW, "lora: a scratch buffer of %llu floats", (unsigned long long)count);
  fg_status st = fg_device_mem_alloc(w->dev, (size_t)(count ? count : 1) * sizeof(float), &w->buf[slot]);
  if (st) return st;
  *out = w->buf[slot];
  return FG_OK;
}

/* Waits for the stream, then frees: the scratch may still be read by queued work. */
fg_status fg_lora_work_end(fg_lora_work *w, fg_stream *s, fg_status st) {
  fg_status sync = s ? fg_stream_sync(s) : fg_device_sync(w->dev);
  for (size_t i = 0; i < FG_LORA_SCRATCH; i++) fg_device_mem_free(w->dev, w->buf[i]);
  return st ? st : sync;
}

/* ---- argument checks -------------------------------------------------------------------- */

static fg_status mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
  *out = 0;
  if (a && b > UINT64_MAX / a) return fg_fail(FG_ERR_OVERFLOW, "lora: %llu x %llu elements overflow",
                                              (unsigned long long)a, (unsigned long long)b);
  *out = a * b;
  return FG_OK;
}

fg_status fg_lora_check_base(const fg_lora *l, const fg_tensor *w, const char *what) {
  if (w->dev != l->dev)
    return fg_fail(FG_ERR_INVALID_ARG, "lora %s: base '%s' lives on %s, the adapter on %s", what, w->name,
                   fg_device_spec(w->dev), fg_device_spec(l->dev));
  if (w->ndim != 2 || w->shape[0] != l->out || w->shape[1] != l->in)
    return fg_fail(FG_ERR_BAD_SHAPE, "lora %s: base '%s' must be [out %llu, in %llu]", what, w->name,
                   (unsigned long long)l->out, (unsigned long long)l->in);
  return FG_OK;
}

/* The base as something the GEMM takes: f32 and bf16 as they are, the rest dequantized. */
static fg_status base_operand(fg_lora_work *wk, const fg_tensor *w, fg_stream *s, const void **p, fg_dtype *dt) {
  if (w->dtype == FG_F32 || w->dtype == FG_BF16) {
    *p = w->data;
    *dt = w->dtype;
    return FG_OK;
  }
  float *f = NULL;
  fg_status st = fg_lora_scratch(wk, 4, w->numel, &f);
  if (!st) st = fg_convert(w->dev, f, FG_F32, w->data, w->dtype, (size_t)w->numel, s);
  if (st) return fg_fail_prefix(st, "lora: base '%s' (%s) to f32: ", w->name, fg_dtype_name(w->dtype));
  *p = f;
  *dt = FG_F32;
  return FG_OK;
}

/* The dropout slots (cutoff, 1 / (1 - p)) of a call: p = 0 (keep everything, times 1) in eval. */
static fg_status dropout_params(const fg_lora *l, const uint64_t *seed, fg_op_params *p) {
  fg_rng_spec r = {.kind = FG_RNG_KEEP_MASK, .seed = seed ? *seed : 0, .p = seed ? l->dropout_p : 0.0f};
  memset(p, 0, sizeof *p);
  return fg_rng_op_params(&r, NULL, p);
}

static fg_status run1(fg_device *dev, fg_op_kind op, const fg_op_params *p, void *s0, const void *s1,
                      const void *s2, uint64_t n, uint64_t seed, fg_stream *s) {
  fg_op_args a;
  memset(&a, 0, sizeof a);
  a.ptr[0] = s0;
  a.ptr[1] = (void *)s1;
  a.ptr[2] = (void *)s2;
  for (int k = 0; k < 3; k++) a.dtype[k] = FG_F32;
  a.n = (size_t)n;
  a.seed = seed;
  return fg_op_run(dev, op, p, &a, 1, s);
}

fg_status fg_lora_add_op(fg_device *dev, float scale, void *out, fg_dtype out_dt, const void *base, fg_dtype base_dt,
                         const float *t, uint64_t n, fg_stream *s) {
  fg_op_params p;
  memset(&p, 0, sizeof p);
  p.f[0] = scale;
  fg_op_args a;
  memset(&a, 0, sizeof a);
  a.ptr[0] = out;
  a.ptr[1] = (void *)base;
  a.ptr[2] = (void *)t;
  a.dtype[0] = out_dt;
  a.dtype[1] = base_dt;
  a.dtype[2] = FG_F32;
  a.n = (size_t)n;
  return fg_op_run(dev, FG_OP_LORA_ADD, &p, &a, 1, s);
}

/* xd = dropout(x) when a seed and p > 0 ask for it, else x itself; then h = xd A^T. */
static fg_status input_side(const fg_lora *l, fg_lora_work *wk, const float *x, uint64_t batch, const uint64_t *seed,
                            const float **xd, float **h, fg_stream *s) {
  uint64_t nx = 0, nh = 0;
  fg_status st;
  if ((st = mul_ok(batch, l->in, &nx)) || (st = mul_ok(batch, l->rank, &nh))) return st;
  *xd = x;
  if (seed && l->dropout_p > 0.0f) {
    fg_op_params p;
    float *d = NULL;
    if ((st = dropout_params(l, seed, &p)) || (st = fg_lora_scratch(wk, 0, nx, &d)) ||
        (st = run1(l->dev, FG_OP_DROPOUT, &p, d, x, NULL, nx, *seed, s)))
      return st;
    *xd = d;
  }
  if ((st = fg_lora_scratch(wk, 1, nh, h))) return st;
  return fg_gemm(l->dev, l->gemm, false, true, batch, l->rank, l->in, 1.0f, *xd, FG_F32, l->in, l->a->data, FG_F32,
                 l->in, 0.0f, *h, l->rank, s);
}

static fg_status check_call(const fg_lora *l, const fg_tensor *w, const void *x, const void *y, const char *what) {
  if (!l || !x || !y) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_%s: NULL argument", what);
  return w ? fg_lora_check_base(l, w, what) : FG_OK;
}

fg_status fg_lora_forward(const fg_lora *l, const fg_tensor *w, const float *x, uint64_t batch,
                          const uint64_t *dropout_seed, float *y, fg_stream *s) {
  fg_status st = check_call(l, w, x, y, "forward");
  if (st || batch == 0) return st;
  uint64_t ny = 0;
  if ((st = mul_ok(batch, l->out, &ny))) return st;
  fg_lora_work wk = {.dev = l->dev};
  const float *xd = NULL;
  float *h = NULL, *t = NULL;
  st = input_side(l, &wk, x, batch, dropout_seed, &xd, &h, s);
  if (!st) st = fg_lora_scratch(&wk, 2, ny, &t);
  if (!st)
    st = fg_gemm(l->dev, l->gemm, false, true, batch, l->out, l->rank, 1.0f, h, FG_F32, l->rank, l->b->data, FG_F32,
                 l->rank, 0.0f, t, l->out, s);
  if (!st && w) {
    const void *wp;
    fg_dtype wt;
    st = base_operand(&wk, w, s, &wp, &wt);
    if (!st)
      st = fg_gemm(l->dev, l->gemm, false, true, batch, l->out, l->in, 1.0f, x, FG_F32, l->in, wp, wt, l->in, 0.0f,
                   y, l->out, s);
  }
  if (!st) st = fg_lora_add_op(l->dev, l->scale, y, FG_F32, y, FG_F32, t, ny, s);
  return fg_lora_work_end(&wk, s, st);
}

fg_status fg_lora_backward(fg_lora *l, const fg_tensor *w, const float *x, uint64_t batch,
                           const uint64_t *dropout_seed, const float *dy, float *dx, fg_stream *s) {
  fg_status st = check_call(l, w, x, dy, "backward");
  if (st || batch == 0) return st;
  if (!l->a->grad || !l->b->grad) return fg_fail(FG_ERR_STATE, "lora backward: the adapter's gradients are freed");
  uint64_t ny = 0, nx = 0, nh = 0;
  if ((st = mul_ok(batch, l->out, &ny)) || (st = mul_ok(batch, l->in, &nx)) || (st = mul_ok(batch, l->rank, &nh)))
    return st;
  fg_lora_work wk = {.dev = l->dev};
  const float *xd = NULL;
  float *h = NULL, *g = NULL, *gh = NULL;
  fg_op_params p;
  memset(&p, 0, sizeof p);
  p.f[0] = l->scale;
  st = input_side(l, &wk, x, batch, dropout_seed, &xd, &h, s);
  /* g = scale * dy: the gradient of t = h B^T (PEFT's y = base + t * scaling) */
  if (!st) st = fg_lora_scratch(&wk, 2, ny, &g);
  if (!st) st = run1(l->dev, FG_OP_LORA_SCALE, &p, g, dy, NULL, ny, 0, s);
  /* dB += g^T h;  gh = g B;  dA += gh^T xd */
  if (!st)
    st = fg_gemm(l->dev, l->gemm, true, false, l->out, l->rank, batch, 1.0f, g, FG_F32, l->out, h, FG_F32, l->rank,
                 1.0f, l->b->grad, l->rank, s);
  if (!st) st = fg_lora_scratch(&wk, 3, nh, &gh);
  if (!st)
    st = fg_gemm(l->dev, l->gemm, false, false, batch, l->rank, l->out, 1.0f, g, FG_F32, l->out, l->b->data, FG_F32,
                 l->rank, 0.0f, gh, l->rank, s);
  if (!st)
    st = fg_gemm(l->dev, l->gemm, true, false, l->rank, l->in, batch, 1.0f, gh, FG_F32, l->rank, xd, FG_F32, l->in,
                 1.0f, l->a->grad, l->in, s);
  if (!st && dx) {
    /* gxd = gh A; with a base, dx = dy W first, then the adapter's part is added */
    float *gxd = NULL;
    st = fg_lora_scratch(&wk, 5, nx, &gxd);
    if (!st)
      st = fg_gemm(l->dev, l->gemm, false, false, batch, l->in, l->rank, 1.0f, gh, FG_F32, l->rank, l->a->data,
                   FG_F32, l->in, 0.0f, gxd, l->in, s);
    if (!st && w) {
      const void *wp;
      fg_dtype wt;
      st = base_operand(&wk, w, s, &wp, &wt);
      if (!st)
        st = fg_gemm(l->dev, l->gemm, false, false, batch, l->in, l->out, 1.0f, dy, FG_F32, l->out, wp, wt, l->in,
                     0.0f, dx, l->in, s);
    }
    fg_op_params dp;
    if (!st) st = dropout_params(l, dropout_seed, &dp);
    if (!st)
      st = run1(l->dev, FG_OP_LORA_DROPOUT_ADD, &dp, dx, gxd, NULL, nx, dropout_seed ? *dropout_seed : 0, s);
  }
  return fg_lora_work_end(&wk, s, st);
}
