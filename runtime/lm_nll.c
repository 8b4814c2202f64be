/* fg_lm_nll: the per-token negative log-likelihood of a text in one causal pass, computed on
 * the device by the softmax family (f64 per row), chunked so the logits of a chunk stay
 * within a bounded buffer whatever the vocabulary. */
#include <stdlib.h>

#include "forgia/softmax.h"
#include "runtime/lm_internal.h"

/* Logits bytes per chunk: 64 MiB bounds Gemma's 262,144-column rows to 64 tokens, so the logits
 * stay a fraction of the weights and cache in memory. */
#define FG_LM_NLL_LOGIT_BYTES ((size_t)64 << 20)

fg_status fg_lm_nll(fg_lm *lm, const int32_t *ids, size_t n, size_t chunk, double *nll) {
  if (!lm || !ids || !nll) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_nll: NULL argument");
  if (n < 2) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_nll: %zu tokens, expected at least 2", n);
  const size_t V = lm->cfg.n_vocab;
  if (!chunk) chunk = 512;
  const size_t by_mem = FG_LM_NLL_LOGIT_BYTES / (V * sizeof(float));
  if (chunk > by_mem) chunk = by_mem ? by_mem : 1;
  if (chunk > n - 1) chunk = n - 1;
  fg_lm_cache *c = NULL;
  fg_status st = fg_lm_cache_create(lm, 1, n - 1, &c);
  if (st) return st;
  int32_t *tg = NULL;
  double *dn = NULL;
  st = fg_device_mem_alloc(lm->dev, chunk * sizeof(int32_t), (void **)&tg);
  if (!st) st = fg_device_mem_alloc(lm->dev, chunk * sizeof(double), (void **)&dn);
  for (size_t i0 = 0; i0 < n - 1 && !st; i0 += chunk) {
    const size_t m = n - 1 - i0 < chunk ? n - 1 - i0 : chunk;
    const fg_lm_batch b = {.n_tok = m, .ids = ids + i0};
    const float *logits = NULL;
    size_t rows = 0;
    st = fg_lm_forward(lm, c, &b, &logits, &rows);
    if (!st) st = fg_device_copy(lm->dev, tg, ids + i0 + 1, m * sizeof(int32_t), FG_COPY_H2D);
    if (!st) st = fg_softmax_nll(lm->dev, logits, m, V, tg, dn, NULL);
    if (!st) st = fg_device_copy(lm->dev, nll + i0, dn, m * sizeof(double), FG_COPY_D2H);
  }
  fg_device_mem_free(lm->dev, tg);
  fg_device_mem_free(lm->dev, dn);
  fg_lm_cache_free(c);
  return st;
}
