/* Attention on the CPU (forgia/attention.h): OpenMP over (token, kv head) items, each item
 * computing whole, in the contract's order, the query heads that share that kv head (or a
 * part of them, when there are fewer items than threads), so the bits do not depend on the
 * thread count and equal CUDA's. Taking the group together reads each key and value row
 * once for all its heads (the caches are the memory traffic), and the dots of several keys
 * run side by side for instruction-level parallelism. */
#include <omp.h>
#include <stdlib.h>

#include "device/backend.h"
#include "forgia/elem/attention.h"

/* Per-thread scratch for one item: G = n_head / n_kv_head heads. */
typedef struct fg_cpu_at_scratch {
  float *sc;  /* G x span: the scores, then the p_j */
  float *acc; /* G x head_dim output sums, then G sums l of the p_j */
} fg_cpu_at_scratch;

/* Scores of query head rows q (G of them, head_dim apart) against keys K[0 .. n): four keys
 * at a time, each dot in d order. */
static void fg_cpu_at_scores(const fg_attention_call *c, const float *q, size_t G, const float *K, size_t n, float *sc,
                             size_t span) {
  const size_t D = c->head_dim;
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float *k0 = K + j * D, *k1 = k0 + D, *k2 = k1 + D, *k3 = k2 + D;
    for (size_t g = 0; g < G; g++) {
      const float *qg = q + g * D;
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      for (size_t d = 0; d < D; d++) {
        const float qd = qg[d];
        a0 = a0 + qd * k0[d];
        a1 = a1 + qd * k1[d];
        a2 = a2 + qd * k2[d];
        a3 = a3 + qd * k3[d];
      }
      float *s = sc + g * span + j;
      s[0] = c->scale * a0, s[1] = c->scale * a1, s[2] = c->scale * a2, s[3] = c->scale * a3;
    }
  }
  for (; j < n; j++)
    for (size_t g = 0; g < G; g++) sc[g * span + j] = fg_attn_score(q + g * D, K + j * D, D, c->scale);
}

/* Query heads h0 .. h0 + G - 1 of token t, all reading one kv head. */
static void fg_cpu_at_item(const fg_attention_call *c, size_t t, size_t h0, size_t G, size_t span,
                           const fg_cpu_at_scratch *w) {
  const size_t D = c->head_dim, row0 = t * c->n_head + h0;
  float *o = c->out + row0 * D;
  size_t lo = 0, hi = 0, kv = 0;
  if (!fg_attn_span(c, t, h0, &lo, &hi, &kv)) {
    for (size_t i = 0; i < G * D; i++) o[i] = fg_bits_f32(0x7fc00000u);
    if (c->lse)
      for (size_t g = 0; g < G; g++) c->lse[row0 + g] = fg_bits_f32(0x7fc00000u);
    return;
  }
  const size_t n = hi - lo + 1;
  const float *K = c->k + kv + lo * D, *V = c->v + kv + lo * D;
  fg_cpu_at_scores(c, c->q + row0 * D, G, K, n, w->sc, span);
  for (size_t g = 0; g < G; g++) {
    float *p = w->sc + g * span, m = fg_bits_f32(0xff800000u), l = 0.0f;
    for (size_t j = 0; j < n; j++) m = fg_attn_max(m, p[j]);
    for (size_t j = 0; j < n; j++) {
      p[j] = fg_attn_p(p[j], m);
      l = l + p[j];
    }
    if (c->lse) c->lse[row0 + g] = fg_attn_lse(m, l);
    w->acc[G * D + g] = l;
  }
  float *acc = w->acc;
  for (size_t i = 0; i < G * D; i++) acc[i] = 0.0f;
  for (size_t j = 0; j < n; j++) {
    const float *vr = V + j * D;
    for (size_t g = 0; g < G; g++) {
      const float p = w->sc[g * span + j];
      float *a = acc + g * D;
      for (size_t d = 0; d < D; d++) a[d] = a[d] + p * vr[d];
    }
  }
  for (size_t g = 0; g < G; g++)
    for (size_t d = 0; d < D; d++) o[g * D + d] = fg_attn_out(acc[g * D + d], w->acc[G * D + g]);
}

fg_status fg_cpu_attention(fg_device *dev, const fg_attention_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  const size_t span = c->window && c->window < c->n_ctx ? c->window : c->n_ctx;
  /* Items of G heads: a whole group, or a part of it when there are fewer groups than
   * threads (a decoded token of a model with few kv heads). */
  size_t G = c->n_head / c->n_kv_head;
  const size_t threads = (size_t)omp_get_max_threads();
  while (G % 2 == 0 && c->n_tok * (c->n_head / G) < threads) G /= 2;
  const size_t per_tok = c->n_head / G;
  const long long items = (long long)(c->n_tok * per_tok);
  int failed = 0;
#pragma omp parallel if (c->n_tok * c->n_head * span * c->head_dim > 65536) reduction(| : failed)
  {
    fg_cpu_at_scratch w = {malloc(G * span * sizeof(float)), malloc(G * (c->head_dim + 1) * sizeof(float))};
    const int ok = w.sc && w.acc;
    failed |= !ok;
    /* A thread without scratch takes no items; the others still finish the loop, then the
     * call fails as a whole. */
#pragma omp for schedule(dynamic, 1)
    for (long long i = 0; i < items; i++)
      if (ok) fg_cpu_at_item(c, (size_t)i / per_tok, (size_t)i % per_tok * G, G, span, &w);
    free(w.sc), free(w.acc);
  }
  if (failed)
    return fg_fail(FG_ERR_NOMEM, "attention: no scratch for %zu x %zu scores and outputs per thread", G, span);
  return FG_OK;
}
