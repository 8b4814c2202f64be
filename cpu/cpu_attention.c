/* Attention on the CPU (forgia/attention.h): OpenMP over the (token, head) pairs, each
 * computed whole by one thread in the contract's order, so the bits do not depend on the
 * thread count and equal CUDA's. The scores of a pair live in a per-thread scratch row. */
#include <stdlib.h>

#include "device/backend.h"
#include "forgia/elem/attention.h"

/* Keys whose scores are computed together: their dots run side by side over d (each one
 * still in d order), over a transposed copy of the keys, so the loop over them vectorizes. */
#define FG_CPU_AT_JB 8

typedef struct fg_cpu_at_scratch {
  float *sc;  /* the span's scores, then its p_j */
  float *acc; /* head_dim output sums */
  float *kt;  /* head_dim x FG_CPU_AT_JB transposed keys */
} fg_cpu_at_scratch;

static void fg_cpu_at_scores(const fg_attention_call *c, const float *q, const float *K, size_t n, float *kt,
                             float *sc) {
  const size_t D = c->head_dim;
  size_t j = 0;
  for (; j + FG_CPU_AT_JB <= n; j += FG_CPU_AT_JB) {
    for (size_t b = 0; b < FG_CPU_AT_JB; b++)
      for (size_t d = 0; d < D; d++) kt[d * FG_CPU_AT_JB + b] = K[(j + b) * D + d];
    float a[FG_CPU_AT_JB] = {0};
    for (size_t d = 0; d < D; d++) {
      const float qd = q[d];
      for (size_t b = 0; b < FG_CPU_AT_JB; b++) a[b] = a[b] + qd * kt[d * FG_CPU_AT_JB + b];
    }
    for (size_t b = 0; b < FG_CPU_AT_JB; b++) sc[j + b] = c->scale * a[b];
  }
  for (; j < n; j++) sc[j] = fg_attn_score(q, K + j * D, D, c->scale);
}

static void fg_cpu_at_pair(const fg_attention_call *c, size_t t, size_t h, const fg_cpu_at_scratch *w) {
  const size_t D = c->head_dim, row = t * c->n_head + h;
  float *o = c->out + row * D;
  size_t lo = 0, hi = 0, kv = 0;
  if (!fg_attn_span(c, t, h, &lo, &hi, &kv)) {
    for (size_t d = 0; d < D; d++) o[d] = fg_bits_f32(0x7fc00000u);
    if (c->lse) c->lse[row] = fg_bits_f32(0x7fc00000u);
    return;
  }
  const size_t n = hi - lo + 1;
  const float *K = c->k + kv + lo * D, *V = c->v + kv + lo * D;
  fg_cpu_at_scores(c, c->q + row * D, K, n, w->kt, w->sc);
  float m = fg_bits_f32(0xff800000u);
  for (size_t j = 0; j < n; j++) m = fg_attn_max(m, w->sc[j]);
  float l = 0.0f;
  for (size_t j = 0; j < n; j++) {
    w->sc[j] = fg_attn_p(w->sc[j], m);
    l = l + w->sc[j];
  }
  for (size_t d = 0; d < D; d++) w->acc[d] = 0.0f;
  for (size_t j = 0; j < n; j++) {
    const float p = w->sc[j], *vr = V + j * D;
    for (size_t d = 0; d < D; d++) w->acc[d] = w->acc[d] + p * vr[d];
  }
  for (size_t d = 0; d < D; d++) o[d] = fg_attn_out(w->acc[d], l);
  if (c->lse) c->lse[row] = fg_attn_lse(m, l);
}

fg_status fg_cpu_attention(fg_device *dev, const fg_attention_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  const size_t span = c->window && c->window < c->n_ctx ? c->window : c->n_ctx;
  const long long pairs = (long long)(c->n_tok * c->n_head);
  int failed = 0;
#pragma omp parallel if (c->n_tok * c->n_head * span * c->head_dim > 65536) reduction(| : failed)
  {
    fg_cpu_at_scratch w = {malloc(span * sizeof(float)), malloc(c->head_dim * sizeof(float)),
                           malloc(c->head_dim * FG_CPU_AT_JB * sizeof(float))};
    const int ok = w.sc && w.acc && w.kt;
    failed |= !ok;
    /* A thread without scratch takes no pairs; the others still finish the loop, then the
     * call fails as a whole. */
#pragma omp for schedule(dynamic, 4)
    for (long long i = 0; i < pairs; i++)
      if (ok) fg_cpu_at_pair(c, (size_t)i / c->n_head, (size_t)i % c->n_head, &w);
    free(w.sc), free(w.acc), free(w.kt);
  }
  if (failed)
    return fg_fail(FG_ERR_NOMEM, "attention: no scratch for %zu scores and %zu outputs per thread", span, c->head_dim);
  return FG_OK;
}
