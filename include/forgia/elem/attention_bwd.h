/* Attention backward's arithmetic (forgia/attention.h states the order), shared by the CPU
 * launcher (cpu/cpu_attention_bwd.c), the CUDA kernels (cuda/kernels/attention_bwd.cu) and
 * the tests' scalar reference. Stored gradients are canonical NaN where NaN, since the NaN a
 * CPU and a GPU produce differ in their bits. */
#ifndef FORGIA_ELEM_ATTENTION_BWD_H
#define FORGIA_ELEM_ATTENTION_BWD_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/attention.h"

/* One validated call (device/attention.c builds it): f is the forward's call, its out and lse
 * read as the forward wrote them (lse never NULL here). */
typedef struct fg_attention_bwd_call {
  fg_attention_call f;
  const float *dout;
  float *dq, *dk, *dv;
} fg_attention_bwd_call;

/* dot(a, b) in d order from +0: the D term and dp_j. */
static inline FG_HD float fg_attn_dot(const float *a, const float *b, size_t n) {
  float acc = 0.0f;
  for (size_t d = 0; d < n; d++) acc = acc + a[d] * b[d];
  return acc;
}

/* ds_j = p_j * (dp_j - D). */
static inline FG_HD float fg_attn_ds(float p, float dp, float dterm) { return p * (dp - dterm); }

/* dq_d and dk[j]_d from their sums; dv[j]_d is its sum, stored through fg_attn_canon. */
static inline FG_HD float fg_attn_dscaled(float scale, float acc) { return fg_attn_canon(scale * acc); }

/* Whether token t attends slot j of sequence sq's cache (of every kv head: each token has
 * query heads in every group): t in range, in sequence sq, and lo <= j <= pos[t]
 * (fg_attn_span, which also fills lo and hi). */
static inline FG_HD int fg_attn_attends(const fg_attention_call *c, size_t t, size_t sq, size_t j, size_t *lo,
                                        size_t *hi) {
  size_t kv = 0;
  const int32_t s = c->seq ? c->seq[t] : 0;
  if (s < 0 || (size_t)s != sq || !fg_attn_span(c, t, 0, lo, hi, &kv)) return 0;
  return *lo <= j && j <= *hi;
}

#endif
