/* The ES drivers: the in-place step, member replicas and their threaded evaluation, and the
 * es_* fields of trainer_state.json. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/es.h"
#include "forgia/ops.h"
#include "training/es_internal.h"

fg_status fg_es_step(fg_es *es, fg_es_eval_fn eval, void *ctx, fg_es_stats *stats) {
  if (!es || !eval) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_step: NULL argument");
  const size_t n = (size_t)es->cfg.population;
  float *r = malloc(n * sizeof *r);
  if (!r) return fg_fail(FG_ERR_NOMEM, "fg_es_step: out of memory");
  fg_status st = FG_OK;
  for (size_t m = 0; m < n && !st; m++) {
    st = fg_es_perturb(es, m);
    if (st) break;
    fg_status ev = eval(ctx, m, &r[m]);
    /* Restore before anything else, even when eval failed: the parameters must not stay
     * perturbed. The evaluator's status wins over a restore failure's. */
    st = fg_es_restore(es, m);
    if (ev) st = ev;
  }
  if (!st) st = fg_es_update(es, r, n, stats);
  free(r);
  return st;
}

fg_status fg_es_materialize(const fg_es *es, uint64_t member, fg_tensor *const *dst, size_t n) {
  if (!es || (n && !dst)) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_materialize: NULL argument");
  if (member >= es->cfg.population)
    return fg_fail(FG_ERR_RANGE, "fg_es_materialize: member %llu of a population of %llu", (unsigned long long)member,
                   (unsigned long long)es->cfg.population);
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "fg_es_materialize %llu: member %lld is applied to the shared parameters",
                   (unsigned long long)member, (long long)es->active);
  if (n != es->nslots)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_es_materialize: %zu replica tensors for %zu float slots", n, es->nslots);
  for (size_t k = 0; k < n; k++) {
    const fg_tensor *s = es->slots[k].t, *d = dst[k];
    if (!d) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_materialize: replica %zu is NULL", k);
    if (d->dtype != s->dtype)
      return fg_fail(FG_ERR_TYPE, "fg_es_materialize: replica %zu ('%s') is %s, slot '%s' is %s", k, d->name,
                     fg_dtype_name(d->dtype) ? fg_dtype_name(d->dtype) : "(invalid)", es->slots[k].name,
                     fg_dtype_name(s->dtype));
    if (d->numel != s->numel)
      return fg_fail(FG_ERR_BAD_SHAPE, "fg_es_materialize: replica %zu ('%s') has %llu elements, slot '%s' %llu", k,
                     d->name, (unsigned long long)d->numel, es->slots[k].name, (unsigned long long)s->numel);
    if (d->dev != es->dev)
      return fg_fail(FG_ERR_INVALID_ARG, "fg_es_materialize: replica %zu is on %s, the slots on %s", k,
                     fg_device_spec(d->dev), fg_device_spec(es->dev));
    if (d->readonly || d->data == s->data)
      return fg_fail(FG_ERR_INVALID_ARG, "fg_es_materialize: replica %zu is read-only or the slot itself", k);
  }
  if (!n) return FG_OK;
  fg_op_args *a = calloc(n, sizeof *a);
  if (!a) return fg_fail(FG_ERR_NOMEM, "fg_es_materialize: out of memory");
  float nsign = 1.0f;
  (void)fg_es_slot_stream_seed(es, member, 0, &nsign);
  const float scaled = nsign * es->cfg.sigma;
  static const fg_dtype dts[3] = {FG_F32, FG_F16, FG_BF16};
  fg_status st = FG_OK;
  /* Regenerated, never from the stream cache: replicas are made from many threads at once
   * and the cache is not theirs to fill (the values are the same bits either way). */
  for (int d = 0; d < 3 && !st; d++) {
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
      const fg_tensor *s = es->slots[k].t;
      if (s->dtype != dts[d] || !s->numel) continue;
      a[m++] = (fg_op_args){.ptr = {dst[k]->data, s->data}, .dtype = {s->dtype, s->dtype}, .n = (size_t)s->numel,
                            .seed = fg_es_slot_stream_seed(es, member, k, NULL)};
    }
    if (!m) continue;
    const fg_op_params p = {.f = {scaled}, .u = {0, (uint64_t)dts[d]}};
    st = fg_op_run(es->dev, FG_OP_ES_MATERIALIZE, &p, a, m, NULL);
  }
  free(a);
  return st;
}

/* ---- member-parallel evaluation ---- */

typedef struct fg_es_pool {
  const fg_es *es;
  fg_es_member_fn eval;
  void *ctx;
  float *rewards;
  uint64_t population;
  atomic_uint_fast64_t next;
  atomic_int failed;
  pthread_mutex_t lock;
  fg_status first; /* the first error, under lock */
  char msg[512];
} fg_es_pool;

typedef struct fg_es_worker {
  fg_es_pool *pool;
  size_t index;
} fg_es_worker;

static void *fg_es_worker_run(void *arg) {
  fg_es_worker *w = arg;
  fg_es_pool *p = w->pool;
  while (!atomic_load(&p->failed)) {
    const uint64_t m = atomic_fetch_add(&p->next, 1);
    if (m >= p->population) break;
    fg_status st = p->eval(p->ctx, w->index, m, &p->rewards[m]);
    if (st) {
      pthread_mutex_lock(&p->lock);
      if (!p->first) {
        p->first = st;
        /* fg_last_error is per thread: carry the message to the caller's thread. */
        snprintf(p->msg, sizeof p->msg, "%s", fg_last_error());
      }
      pthread_mutex_unlock(&p->lock);
      atomic_store(&p->failed, 1);
      break;
    }
  }
  return NULL;
}

fg_status fg_es_evaluate_members(const fg_es *es, fg_es_member_fn eval, void *ctx, float *rewards, size_t n,
                                 size_t workers) {
  if (!es || !eval || !rewards) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_evaluate_members: NULL argument");
  if (n != es->cfg.population)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_es_evaluate_members: %zu reward slots for a population of %llu", n,
                   (unsigned long long)es->cfg.population);
  size_t cap = n < 64 ? n : 64;
  if (workers < 1) workers = 1;
  if (workers > cap) workers = cap;
  fg_es_pool pool = {.es = es, .eval = eval, .ctx = ctx, .rewards = rewards, .population = n, .first = FG_OK};
  atomic_init(&pool.next, 0);
  atomic_init(&pool.failed, 0);
  pthread_mutex_init(&pool.lock, NULL);
  fg_es_worker w[64];
  pthread_t th[64];
  size_t started = 0;
  for (size_t i = 1; i < workers; i++) {
    w[i] = (fg_es_worker){&pool, i};
    if (pthread_create(&th[i], NULL, fg_es_worker_run, &w[i])) break;
    started = i;
  }
  /* The caller's thread is worker 0. */
  w[0] = (fg_es_worker){&pool, 0};
  fg_es_worker_run(&w[0]);
  for (size_t i = 1; i <= started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&pool.lock);
  if (pool.first) return fg_fail(pool.first, "%s", pool.msg);
  return FG_OK;
}

/* ---- trainer_state.json ---- */

fg_status fg_es_to_trainer_state(const fg_es *es, fg_trainer_state *s) {
  if (!es || !s) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_to_trainer_state: NULL argument");
  s->seed = es->cfg.seed;
  FG_TRAINER_STATE_SET(*s, es_sigma, (double)es->cfg.sigma);
  FG_TRAINER_STATE_SET(*s, es_alpha, (double)es->alpha);
  FG_TRAINER_STATE_SET(*s, es_population, es->cfg.population);
  FG_TRAINER_STATE_SET(*s, es_noise, (uint64_t)es->cfg.noise);
  FG_TRAINER_STATE_SET(*s, es_antithetic, es->cfg.antithetic ? 1u : 0u);
  FG_TRAINER_STATE_SET(*s, es_anchor_decay, (uint64_t)es->cfg.anchor_decay);
  FG_TRAINER_STATE_SET(*s, es_anchor_lambda, (double)es->cfg.anchor_lambda);
  if (es->ntslots) {
    FG_TRAINER_STATE_SET(*s, es_ternary_flip_rate, (double)es->cfg.ternary_flip_rate);
    FG_TRAINER_STATE_SET(*s, es_ternary_update_fraction, (double)es->cfg.ternary_update_fraction);
    FG_TRAINER_STATE_SET(*s, es_ternary_update_decay, (double)es->cfg.ternary_update_decay);
  }
  FG_TRAINER_STATE_SET(*s, es_iteration, es->iteration);
  return FG_OK;
}

static fg_status fg_es_mismatch_f(const char *field, double saved, double live) {
  return fg_fail(FG_ERR_FRAME_CONFIG_MISMATCH, "trainer state: %s is %.9g in the checkpoint, %.9g in the trainer",
                 field, saved, live);
}
static fg_status fg_es_mismatch_u(const char *field, uint64_t saved, uint64_t live) {
  return fg_fail(FG_ERR_FRAME_CONFIG_MISMATCH, "trainer state: %s is %llu in the checkpoint, %llu in the trainer",
                 field, (unsigned long long)saved, (unsigned long long)live);
}

fg_status fg_es_from_trainer_state(fg_es *es, const fg_trainer_state *s) {
  if (!es || !s) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_from_trainer_state: NULL argument");
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "fg_es_from_trainer_state: member %lld is applied", (long long)es->active);
  const char *missing = !s->es_sigma.set        ? "es_sigma"
                        : !s->es_alpha.set      ? "es_alpha"
                        : !s->es_population.set ? "es_population"
                        : !s->es_noise.set      ? "es_noise"
                        : !s->es_iteration.set  ? "es_iteration"
                                                : NULL;
  if (missing) return fg_fail(FG_ERR_NOT_FOUND, "trainer state: no %s (not an ES checkpoint?)", missing);
  /* The f32 config values were widened when written: compare after narrowing back. */
  if ((float)s->es_sigma.v != es->cfg.sigma) return fg_es_mismatch_f("es_sigma", s->es_sigma.v, es->cfg.sigma);
  if ((float)s->es_alpha.v != es->alpha) return fg_es_mismatch_f("es_alpha", s->es_alpha.v, es->alpha);
  if (s->es_population.v != es->cfg.population)
    return fg_es_mismatch_u("es_population", s->es_population.v, es->cfg.population);
  if (s->es_noise.v != (uint64_t)es->cfg.noise) return fg_es_mismatch_u("es_noise", s->es_noise.v, es->cfg.noise);
  const uint64_t anti = s->es_antithetic.set ? s->es_antithetic.v : 0;
  if (anti != (es->cfg.antithetic ? 1u : 0u)) return fg_es_mismatch_u("es_antithetic", anti, es->cfg.antithetic);
  if (s->seed != es->cfg.seed) return fg_es_mismatch_u("seed", s->seed, es->cfg.seed);
  const uint64_t decay = s->es_anchor_decay.set ? s->es_anchor_decay.v : 0;
  if (decay != (uint64_t)es->cfg.anchor_decay)
    return fg_es_mismatch_u("es_anchor_decay", decay, (uint64_t)es->cfg.anchor_decay);
  if (s->es_anchor_lambda.set && es->cfg.anchor_decay != FG_ES_ANCHOR_NONE &&
      (float)s->es_anchor_lambda.v != es->cfg.anchor_lambda)
    return fg_es_mismatch_f("es_anchor_lambda", s->es_anchor_lambda.v, es->cfg.anchor_lambda);
  if (s->es_ternary_flip_rate.set && (float)s->es_ternary_flip_rate.v != es->cfg.ternary_flip_rate)
    return fg_es_mismatch_f("es_ternary_flip_rate", s->es_ternary_flip_rate.v, es->cfg.ternary_flip_rate);
  if (s->es_ternary_update_fraction.set &&
      (float)s->es_ternary_update_fraction.v != es->cfg.ternary_update_fraction)
    return fg_es_mismatch_f("es_ternary_update_fraction", s->es_ternary_update_fraction.v,
                            es->cfg.ternary_update_fraction);
  if (s->es_ternary_update_decay.set && (float)s->es_ternary_update_decay.v != es->cfg.ternary_update_decay)
    return fg_es_mismatch_f("es_ternary_update_decay", s->es_ternary_update_decay.v, es->cfg.ternary_update_decay);
  es->iteration = s->es_iteration.v;
  return FG_OK;
}
