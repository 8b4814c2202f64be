/* The float kernels of the ES trainer over its slots: perturb / regenerate-restore, the
 * update, anchored weight decay, and the stream cache. Each is one op-layer launch per
 * parameter dtype present (elem/op_es.h rounds intermediates to that dtype), never one per
 * slot. */
#include <stdlib.h>
#include <string.h>

#include "forgia/es.h"
#include "forgia/ops.h"
#include "forgia/rng.h"
#include "training/es_internal.h"

static const fg_dtype fg_es_dtypes[3] = {FG_F32, FG_F16, FG_BF16};

static fg_op_args *fg_es_args_alloc(size_t n) { return calloc(n ? n : 1, sizeof(fg_op_args)); }

/* ---- the stream cache ---- */

void fg_es_cache_free(fg_es *es) {
  if (es->cache) {
    for (size_t i = 0; i < es->cache_streams * es->nslots; i++)
      if (es->cache[i]) fg_device_mem_free(es->dev, es->cache[i]);
  }
  free(es->cache);
  free(es->cache_ok);
  es->cache = NULL;
  es->cache_ok = NULL;
  es->cache_streams = 0;
}

fg_status fg_es_cache_get(fg_es *es, uint64_t stream, size_t slot, const float **eps) {
  *eps = NULL;
  if (!es->cfg.cache_streams) return FG_OK;
  if (!es->cache) {
    const size_t ns = (size_t)fg_es_stream_count(es);
    es->cache = calloc(ns * es->nslots > 0 ? ns * es->nslots : 1, sizeof *es->cache);
    es->cache_ok = calloc(ns ? ns : 1, sizeof *es->cache_ok);
    if (!es->cache || !es->cache_ok) {
      fg_es_cache_free(es);
      return fg_fail(FG_ERR_NOMEM, "es stream cache: out of memory");
    }
    es->cache_streams = ns;
    es->cache_iter = es->iteration;
  }
  if (es->cache_iter != es->iteration) {
    memset(es->cache_ok, 0, es->cache_streams * sizeof *es->cache_ok);
    es->cache_iter = es->iteration;
  }
  if (!es->cache_ok[stream]) {
    const uint64_t member = es->cfg.antithetic ? 2 * stream : stream;
    for (size_t k = 0; k < es->nslots; k++) {
      float **c = &es->cache[stream * es->nslots + k];
      const size_t n = (size_t)es->slots[k].t->numel;
      if (!n) continue;
      fg_status st = FG_OK;
      if (!*c) st = fg_device_mem_alloc(es->dev, n * sizeof(float), (void **)c);
      if (st) return st;
      const fg_rng_spec r = {.kind = FG_RNG_GAUSS_FAST, .seed = fg_es_slot_stream_seed(es, member, k, NULL),
                             .scale = 1.0f};
      st = fg_rng_fill(es->dev, &r, *c, FG_F32, n, NULL);
      if (st) return st;
    }
    es->cache_ok[stream] = true;
  }
  *eps = es->cache[stream * es->nslots + slot];
  return FG_OK;
}

/* ---- perturb and regenerate-restore ---- */

fg_status fg_es_float_perturb(fg_es *es, uint64_t member, float sign) {
  if (!es->nslots) return FG_OK;
  fg_op_args *a = fg_es_args_alloc(es->nslots);
  if (!a) return fg_fail(FG_ERR_NOMEM, "es perturb: out of memory");
  const uint64_t stream = es->cfg.antithetic ? member / 2 : member;
  fg_status st = FG_OK;
  /* The signed scale depends on the member alone (the noise sign), not on the slot. */
  float nsign = 1.0f;
  (void)fg_es_slot_stream_seed(es, member, 0, &nsign);
  const float scaled = (sign * nsign) * es->cfg.sigma;
  for (int d = 0; d < 3 && !st; d++) {
    size_t n = 0;
    for (size_t k = 0; k < es->nslots && !st; k++) {
      fg_tensor *t = es->slots[k].t;
      if (t->dtype != fg_es_dtypes[d] || !t->numel) continue;
      const float *eps = NULL;
      st = fg_es_cache_get(es, stream, k, &eps);
      a[n] = (fg_op_args){.ptr = {t->data, (void *)eps}, .dtype = {t->dtype, FG_F32}, .n = (size_t)t->numel,
                          .seed = fg_es_slot_stream_seed(es, member, k, NULL)};
      n++;
    }
    if (!n || st) continue;
    const fg_op_params p = {.f = {scaled}, .u = {0, (uint64_t)fg_es_dtypes[d]}};
    st = fg_op_run(es->dev, es->cfg.cache_streams ? FG_OP_ES_PERTURB_CACHED : FG_OP_ES_PERTURB, &p, a, n, NULL);
  }
  free(a);
  return st;
}

/* ---- the update ---- */

/* Without the cache: per dtype, one es_update launch whose table holds the coefficients and,
 * per slot of the list, the S stream seeds of that slot. Every table is built and uploaded
 * before the first launch, so a failure leaves the parameters as they were. */
static fg_status fg_es_update_fused(fg_es *es, const float *coef, uint64_t S, float scale) {
  fg_op_args *a = fg_es_args_alloc(es->nslots);
  void *table[3] = {NULL, NULL, NULL};
  size_t rows[3] = {0, 0, 0}, first[3] = {0, 0, 0};
  fg_status st = FG_OK;
  if (!a) return fg_fail(FG_ERR_NOMEM, "es update: out of memory");
  size_t r = 0;
  for (int d = 0; d < 3 && !st; d++) {
    first[d] = r;
    for (size_t k = 0; k < es->nslots; k++) {
      fg_tensor *t = es->slots[k].t;
      if (t->dtype != fg_es_dtypes[d] || !t->numel) continue;
      a[r] = (fg_op_args){.ptr = {t->data}, .dtype = {t->dtype}, .n = (size_t)t->numel, .seed = rows[d]++};
      r++;
    }
    if (!rows[d]) continue;
    const size_t bytes = (size_t)fg_es_table_bytes(S, rows[d]);
    void *host = calloc(1, bytes);
    if (!host) {
      st = fg_fail(FG_ERR_NOMEM, "es update: out of memory for the stream table");
      break;
    }
    memcpy(host, coef, (size_t)S * sizeof(float));
    size_t row = 0;
    for (size_t k = 0; k < es->nslots; k++) {
      const fg_tensor *t = es->slots[k].t;
      if (t->dtype != fg_es_dtypes[d] || !t->numel) continue;
      uint64_t *seeds = (uint64_t *)fg_es_table_seeds(host, S, row++);
      for (uint64_t s = 0; s < S; s++)
        seeds[s] = fg_es_slot_stream_seed(es, es->cfg.antithetic ? 2 * s : s, k, NULL);
    }
    st = fg_device_mem_alloc(es->dev, bytes, &table[d]);
    if (!st) st = fg_device_copy(es->dev, table[d], host, bytes, FG_COPY_H2D);
    free(host);
  }
  for (int d = 0; d < 3 && !st; d++) {
    if (!rows[d]) continue;
    const fg_op_params p = {.f = {scale}, .u = {S, (uint64_t)fg_es_dtypes[d]}, .dtable = table[d]};
    st = fg_op_run(es->dev, FG_OP_ES_UPDATE, &p, a + first[d], rows[d], NULL);
  }
  for (int d = 0; d < 3; d++)
    if (table[d]) fg_device_mem_free(es->dev, table[d]);
  free(a);
  return st;
}

/* With the cache: acc (f32, every slot) += coef[s] * eps_s one stream at a time over the
 * whole slot list, then p += N(scale * acc) per dtype; the same operations per element. */
static fg_status fg_es_update_cached(fg_es *es, const float *coef, uint64_t S, float scale) {
  float *acc = NULL;
  fg_op_args *a = fg_es_args_alloc(es->nslots);
  if (!a) return fg_fail(FG_ERR_NOMEM, "es update: out of memory");
  fg_status st = fg_device_mem_alloc(es->dev, (size_t)(es->float_elems ? es->float_elems : 1) * sizeof(float), (void **)&acc);
  if (!st) st = fg_device_memset(es->dev, acc, 0, (size_t)es->float_elems * sizeof(float));
  for (uint64_t s = 0; s < S && !st; s++) {
    size_t n = 0, off = 0;
    for (size_t k = 0; k < es->nslots && !st; k++) {
      const size_t len = (size_t)es->slots[k].t->numel;
      if (len) {
        const float *eps = NULL;
        st = fg_es_cache_get(es, s, k, &eps);
        a[n++] = (fg_op_args){.ptr = {acc + off, (void *)eps}, .dtype = {FG_F32, FG_F32}, .n = len};
      }
      off += len;
    }
    if (st || !n) continue;
    const fg_op_params p = {.f = {coef[s]}};
    st = fg_op_run(es->dev, FG_OP_ES_ACC_CACHED, &p, a, n, NULL);
  }
  for (int d = 0; d < 3 && !st; d++) {
    size_t n = 0, off = 0;
    for (size_t k = 0; k < es->nslots; k++) {
      fg_tensor *t = es->slots[k].t;
      if (t->dtype == fg_es_dtypes[d] && t->numel)
        a[n++] = (fg_op_args){.ptr = {t->data, acc + off}, .dtype = {t->dtype, FG_F32}, .n = (size_t)t->numel};
      off += (size_t)t->numel;
    }
    if (!n) continue;
    const fg_op_params p = {.f = {scale}, .u = {0, (uint64_t)fg_es_dtypes[d]}};
    st = fg_op_run(es->dev, FG_OP_ES_APPLY, &p, a, n, NULL);
  }
  if (acc) fg_device_mem_free(es->dev, acc);
  free(a);
  return st;
}

fg_status fg_es_float_update(fg_es *es, const float *coef, uint64_t nstreams, float scale) {
  if (!es->nslots || !es->float_elems) return FG_OK;
  return es->cfg.cache_streams ? fg_es_update_cached(es, coef, nstreams, scale)
                               : fg_es_update_fused(es, coef, nstreams, scale);
}

/* ---- anchored weight decay ---- */

fg_status fg_es_float_anchor(fg_es *es) {
  if (es->cfg.anchor_decay == FG_ES_ANCHOR_NONE || !es->nslots) return FG_OK;
  fg_op_args *a = fg_es_args_alloc(es->nslots);
  if (!a) return fg_fail(FG_ERR_NOMEM, "es anchor decay: out of memory");
  const float step = es->alpha * es->cfg.anchor_lambda;
  const bool l2 = es->cfg.anchor_decay == FG_ES_ANCHOR_L2;
  fg_status st = FG_OK;
  for (int d = 0; d < 3 && !st; d++) {
    size_t n = 0;
    for (size_t k = 0; k < es->nslots; k++) {
      fg_tensor *t = es->slots[k].t;
      if (t->dtype == fg_es_dtypes[d] && t->numel)
        a[n++] = (fg_op_args){.ptr = {t->data, (char *)es->anchor + es->anchor_off[k]},
                              .dtype = {t->dtype, t->dtype},
                              .n = (size_t)t->numel};
    }
    if (!n) continue;
    const fg_op_params p = {.f = {l2 ? 1.0f - step : step}, .u = {0, (uint64_t)fg_es_dtypes[d]}};
    st = fg_op_run(es->dev, l2 ? FG_OP_ES_ANCHOR_L2 : FG_OP_ES_ANCHOR_L1, &p, a, n, NULL);
  }
  free(a);
  return st;
}
