/* The key/value cache: one allocation, per layer K then V, each [n_seq][n_kv_head][n_ctx]
 * [head_dim] f32 (forgia/attention.h's layout). Zeroed at creation and where truncated, so
 * new rows are written by adding to zero (runtime/lm_forward.c). */
#include <stdlib.h>

#include "runtime/lm_internal.h"

fg_status fg_lm_cache_create(fg_lm *lm, size_t n_seq, size_t n_ctx, fg_lm_cache **out) {
  if (!lm || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_cache_create: NULL argument");
  if (!n_seq || !n_ctx || n_seq > 65536 || n_ctx > ((size_t)1 << 24))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_cache_create: %zu sequences of %zu positions, expected 1..65536 of "
                   "1..16777216", n_seq, n_ctx);
  const fg_lm_config *c = &lm->cfg;
  const size_t row = c->n_kv_head * c->head_dim;
  const size_t per = n_seq * n_ctx * row;
  if (per / n_seq / n_ctx != row || per > (SIZE_MAX / 8) / c->n_layer)
    return fg_fail(FG_ERR_OVERFLOW, "fg_lm_cache_create: %zu x %zu positions overflow", n_seq, n_ctx);
  fg_status st = fg_lm_rope_tables(lm, n_ctx);
  if (st) return st;
  fg_lm_cache *k = calloc(1, sizeof *k);
  if (k) k->len = calloc(n_seq, sizeof *k->len);
  if (!k || !k->len) {
    if (k) free(k->len);
    free(k);
    return fg_fail(FG_ERR_NOMEM, "fg_lm_cache_create: out of memory");
  }
  const size_t bytes = per * 2 * c->n_layer * sizeof(float);
  st = fg_device_mem_alloc(lm->dev, bytes, (void **)&k->kv);
  if (st) {
    free(k->len);
    free(k);
    return fg_fail(st, "fg_lm_cache_create: %zu sequences x %zu positions need %.1f MiB of device memory: %s", n_seq,
                   n_ctx, (double)bytes / 1048576.0, fg_last_error());
  }
  st = fg_device_memset(lm->dev, k->kv, 0, bytes);
  if (st) {
    fg_device_mem_free(lm->dev, k->kv);
    free(k->len);
    free(k);
    return st;
  }
  k->lm = lm;
  k->n_seq = n_seq;
  k->n_ctx = n_ctx;
  k->per_tensor = per;
  *out = k;
  return FG_OK;
}

void fg_lm_cache_free(fg_lm_cache *c) {
  if (!c) return;
  fg_device_mem_free(c->lm->dev, c->kv);
  free(c->len);
  free(c);
}

size_t fg_lm_cache_len(const fg_lm_cache *c, size_t seq) { return c && seq < c->n_seq ? c->len[seq] : 0; }

size_t fg_lm_cache_ctx(const fg_lm_cache *c) { return c ? c->n_ctx : 0; }

fg_status fg_lm_cache_truncate(fg_lm_cache *c, size_t seq, size_t n) {
  if (!c) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_cache_truncate: NULL cache");
  if (seq >= c->n_seq) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_cache_truncate: sequence %zu of %zu", seq, c->n_seq);
  if (n > c->len[seq])
    return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_cache_truncate: sequence %zu holds %zu positions, cannot keep %zu", seq,
                   c->len[seq], n);
  const fg_lm_config *cf = &c->lm->cfg;
  const size_t hd = cf->head_dim, tail = (c->len[seq] - n) * hd;
  if (tail)
    for (size_t t = 0; t < 2 * cf->n_layer; t++)
      for (size_t h = 0; h < cf->n_kv_head; h++) {
        float *p = c->kv + t * c->per_tensor + ((seq * cf->n_kv_head + h) * c->n_ctx + n) * hd;
        fg_status st = fg_device_memset(c->lm->dev, p, 0, tail * sizeof(float));
        if (st) return st;
      }
  c->len[seq] = n;
  return FG_OK;
}
