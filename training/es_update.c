/* The ES update (Fucina's src/es.zig update): statistics, coefficients, the antithetic fold, then
 * the float update, the ternary moves and anchored weight decay, in that order. Everything
 * that can fail on the host runs before the first parameter byte changes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/es.h"
#include "training/es_internal.h"

/* f64 statistics with ddof 0, summed in member order (never a reduction tree: the order is
 * part of the contract). */
static void fg_es_stats_of(const float *r, size_t n, fg_es_stats *st) {
  double sum = 0.0;
  float lo = r[0], hi = r[0];
  for (size_t i = 0; i < n; i++) {
    sum += (double)r[i];
    if (r[i] < lo) lo = r[i];
    if (r[i] > hi) hi = r[i];
  }
  const double mean = sum / (double)n;
  double var = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double d = (double)r[i] - mean;
    var += d * d;
  }
  var /= (double)n;
  st->mean_reward = mean;
  st->std_reward = sqrt(var);
  st->min_reward = lo;
  st->max_reward = hi;
}

/* Ascending by (reward, member index): ties break by the lower index, a total order. */
typedef struct fg_es_ranked {
  float r;
  size_t i;
} fg_es_ranked;

static int fg_es_rank_cmp(const void *pa, const void *pb) {
  const fg_es_ranked *a = pa, *b = pb;
  if (a->r < b->r) return -1;
  if (a->r > b->r) return 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

static fg_status fg_es_coefficients(const fg_es *es, const float *r, size_t n, const fg_es_stats *st, float *c) {
  switch (es->cfg.reward_norm) {
    case FG_ES_REWARD_Z_SCORE:
      for (size_t i = 0; i < n; i++) c[i] = (float)(((double)r[i] - st->mean_reward) / (st->std_reward + 1e-8));
      return FG_OK;
    case FG_ES_REWARD_CENTERED_RANKS: {
      fg_es_ranked *o = malloc(n * sizeof *o);
      if (!o) return fg_fail(FG_ERR_NOMEM, "es update: out of memory");
      for (size_t i = 0; i < n; i++) o[i] = (fg_es_ranked){r[i], i};
      qsort(o, n, sizeof *o, fg_es_rank_cmp);
      const float denom = (float)(n - 1);
      for (size_t k = 0; k < n; k++) c[o[k].i] = (float)k / denom - 0.5f;
      free(o);
      return FG_OK;
    }
    case FG_ES_REWARD_NONE:
      memcpy(c, r, n * sizeof *c);
      return FG_OK;
  }
  return fg_fail(FG_ERR_INVALID_ARG, "es update: unknown reward normalisation %d", (int)es->cfg.reward_norm);
}

fg_status fg_es_update(fg_es *es, const float *rewards, size_t n, fg_es_stats *stats) {
  if (!es || (!rewards && n)) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_update: NULL argument");
  if (n != es->cfg.population)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_es_update: %zu rewards for a population of %llu", n,
                   (unsigned long long)es->cfg.population);
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "fg_es_update: member %lld is still applied; restore it first",
                   (long long)es->active);
  if (!es->nslots && !es->ntslots) return fg_fail(FG_ERR_NOT_FOUND, "fg_es_update: no parameter is registered");
  if (es->cfg.anchor_decay != FG_ES_ANCHOR_NONE && es->nslots && !es->anchor)
    return fg_fail(FG_ERR_STATE, "fg_es_update: %s anchor decay needs an anchor (call fg_es_capture_anchor)",
                   fg_es_anchor_decay_name(es->cfg.anchor_decay));
  for (size_t i = 0; i < n; i++)
    if (!isfinite(rewards[i]))
      return fg_fail(FG_ERR_NONFINITE, "fg_es_update: reward %zu of iteration %llu is %g (rewards must be finite)", i,
                     (unsigned long long)es->iteration, (double)rewards[i]);

  fg_es_stats st;
  fg_es_stats_of(rewards, n, &st);
  const uint64_t S = fg_es_stream_count(es);
  float *c = malloc(n * sizeof *c);
  if (!c) return fg_fail(FG_ERR_NOMEM, "fg_es_update: out of memory");
  fg_status rc = fg_es_coefficients(es, rewards, n, &st, c);
  if (!rc && es->cfg.antithetic)
    for (uint64_t k = 0; k < S; k++) c[k] = c[2 * k] - c[2 * k + 1];
  const float scale = es->alpha / (float)es->cfg.population;

  fg_es_ternary_plan plan;
  memset(&plan, 0, sizeof plan);
  if (!rc && es->ntslots) rc = fg_es_ternary_plan_make(es, c, S, &plan);
  /* The cache must hold every stream before the first parameter changes (generation can
   * fail); fg_es_float_update then only reads it. */
  if (!rc && es->cfg.cache_streams)
    for (uint64_t s = 0; s < S && !rc; s++) {
      const float *eps;
      for (size_t k = 0; k < es->nslots && !rc; k++) rc = fg_es_cache_get(es, s, k, &eps);
    }
  if (!rc) rc = fg_es_float_update(es, c, S, scale);
  if (!rc && es->ntslots) rc = fg_es_ternary_plan_apply(es, &plan);
  if (!rc) rc = fg_es_float_anchor(es);
  fg_es_ternary_plan_free(&plan);
  free(c);
  if (rc) return rc;
  es->iteration++;
  if (stats) *stats = st;
  return FG_OK;
}
