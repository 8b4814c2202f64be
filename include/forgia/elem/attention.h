/* Attention's arithmetic (forgia/attention.h states the order), shared by the CPU launcher
 * (cpu/cpu_attention.c), the CUDA kernel (cuda/kernels/attention.cu) and the tests' scalar
 * reference. A NaN anywhere makes the row's max NaN and every output NaN; outputs are
 * stored as the canonical NaN, since the NaN a CPU and a GPU produce differ in their bits.
 * The max propagates NaN, so it does not depend on the order it visits the scores in. */
#ifndef FORGIA_ELEM_ATTENTION_H
#define FORGIA_ELEM_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/fmath.h"
#include "forgia/elem/hd.h"

/* One validated call (device/attention.c builds it from fg_attention_args). */
typedef struct fg_attention_call {
  size_t n_tok, n_head, n_kv_head, head_dim, n_seq, n_ctx, window;
  const float *q, *k, *v;
  const int32_t *seq, *pos; /* seq may be NULL: sequence 0 */
  float scale;
  float *out, *lse; /* lse may be NULL */
} fg_attention_call;

static inline FG_HD float fg_attn_canon(float v) { return v != v ? fg_bits_f32(0x7fc00000u) : v; }

/* max(a, b) with NaN winning (the canonical NaN): the same result in any visiting order. */
static inline FG_HD float fg_attn_max(float a, float b) {
  if (a != a || b != b) return fg_bits_f32(0x7fc00000u);
  return a > b ? a : b;
}

/* Token t's keys: the rows lo .. hi (inclusive) of the cache block at element offset *kv of
 * k and v for head h. Returns 0 when t's seq or pos is out of range (a NaN row). */
static inline FG_HD int fg_attn_span(const fg_attention_call *c, size_t t, size_t h, size_t *lo, size_t *hi,
                                     size_t *kv) {
  const int32_t sq = c->seq ? c->seq[t] : 0, p = c->pos[t];
  if (sq < 0 || (size_t)sq >= c->n_seq || p < 0 || (size_t)p >= c->n_ctx) return 0;
  const size_t kvh = h / (c->n_head / c->n_kv_head);
  *hi = (size_t)p;
  *lo = c->window && *hi + 1 > c->window ? *hi + 1 - c->window : 0;
  *kv = ((size_t)sq * c->n_kv_head + kvh) * c->n_ctx * c->head_dim;
  return 1;
}

/* s_j = scale * dot(q, k), the dot in d order from +0. */
static inline FG_HD float fg_attn_score(const float *q, const float *k, size_t n, float scale) {
  float acc = 0.0f;
  for (size_t d = 0; d < n; d++) acc = acc + q[d] * k[d];
  return scale * acc;
}

static inline FG_HD float fg_attn_p(float s, float m) { return fg_exp_f32(s - m); }

static inline FG_HD float fg_attn_out(float acc, float l) { return fg_attn_canon(acc / l); }

static inline FG_HD float fg_attn_lse(float m, float l) {
  return fg_attn_canon((float)((double)m + fg_log_f64((double)l)));
}

#endif
