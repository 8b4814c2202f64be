/* Ternary genome slots of the ES trainer (forgia/es.h; Fucina's src/es.zig ternary genomes,
 * docs/design.md, Training): registration, the "es_trits" seeds, perturb and restore through the
 * device's trit calls (forgia/es_trits.h), the vote-and-threshold update and replicas.
 *
 * The update's votes are computed on the host: a member's flips are a pure function of the
 * seeds, so regenerating them costs a few hashes per flip and no device traffic, and the
 * votes are f32 sums whose order (stream, then flip) is the contract. Only the chosen moves
 * go to the device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/elem/es_trits.h"
#include "forgia/es_trits.h"
#include "training/es_internal.h"

static const char *fg_es_tname(const fg_tensor *t, const char *name) {
  return name ? name : (t && t->name ? t->name : "");
}

/* Wrapping u64 arithmetic, as Fucina's counter. */
uint64_t fg_es_ternary_member_seed(const fg_es *es, uint64_t member) {
  if (!es) return 0;
  return fg_rng_at(es->cfg.seed ^ FG_RNG_DOMAIN_ES_TRITS, es->iteration * es->cfg.population + member);
}

uint64_t fg_es_ternary_slot_stream_seed(uint64_t member_seed, uint64_t slot) {
  return fg_rng_at(member_seed ^ FG_RNG_DOMAIN_ES_TRITS, slot);
}

/* max(1, round_half_away(f64(rate) * f64(len))); rate <= 1, so at most len. */
uint64_t fg_es_ternary_flip_count(const fg_es *es, uint64_t len) {
  if (!es) return 0;
  const double raw = round((double)es->cfg.ternary_flip_rate * (double)len);
  return raw < 1.0 ? 1 : (uint64_t)raw;
}

/* The first code 3 of a genome's bytes, as FG_ERR_INVALID_ARG naming block and element. */
static fg_status fg_es_check_codes(const char *nm, const uint8_t *bytes, uint64_t nblocks) {
  for (uint64_t b = 0; b < nblocks; b++) {
    const uint8_t *qs = bytes + b * FG_TRIT_BLOCK_BYTES;
    for (unsigned i = 0; i < 64; i++) {
      if (!fg_trit_byte_invalid(qs[i])) continue;
      unsigned lane = 0;
      while (((qs[i] >> (2 * lane)) & 3u) != 3u) lane++;
      const uint64_t e = b * FG_TRIT_BLOCK_ELEMS + (i / 32) * 128 + lane * 32 + i % 32;
      return fg_fail(FG_ERR_INVALID_ARG,
                     "fg_es_add_ternary '%s': block %llu holds code 3 (element %llu, qs byte %u = 0x%02x); "
                     "a TQ2_0 genome's codes must be 0, 1 or 2",
                     nm, (unsigned long long)b, (unsigned long long)e, i, qs[i]);
    }
  }
  return FG_OK;
}

/* Everything fg_es_add_ternary checks before it changes anything. */
static fg_status fg_es_check_ternary(const fg_es *es, const fg_tensor *t, const char *nm) {
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "fg_es_add_ternary '%s': member %lld is applied; restore it before registering", nm,
                   (long long)es->active);
  if (t->dtype != FG_TQ2_0)
    return fg_fail(FG_ERR_TYPE, "fg_es_add_ternary '%s': dtype %s, expected tq2_0", nm,
                   fg_dtype_name(t->dtype) ? fg_dtype_name(t->dtype) : "(invalid)");
  if (t->readonly)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add_ternary '%s': the tensor is read-only (a file mapping)", nm);
  if (!t->dev || !t->data) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add_ternary '%s': the tensor has no data", nm);
  if (es->dev && t->dev != es->dev)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add_ternary '%s': the tensor is on %s, the trainer's slots on %s", nm,
                   fg_device_spec(t->dev), fg_device_spec(es->dev));
  if (t->numel == 0 || t->numel % FG_TRIT_BLOCK_ELEMS)
    return fg_fail(FG_ERR_BAD_SHAPE, "fg_es_add_ternary '%s': %llu elements, expected a positive multiple of %u", nm,
                   (unsigned long long)t->numel, FG_TRIT_BLOCK_ELEMS);
  if (t->nbytes != t->numel / FG_TRIT_BLOCK_ELEMS * FG_TRIT_BLOCK_BYTES)
    return fg_fail(FG_ERR_BAD_SHAPE, "fg_es_add_ternary '%s': %llu bytes for %llu elements, expected %llu", nm,
                   (unsigned long long)t->nbytes, (unsigned long long)t->numel,
                   (unsigned long long)(t->numel / FG_TRIT_BLOCK_ELEMS * FG_TRIT_BLOCK_BYTES));
  if (fg_es_holds(es, t))
    return fg_fail(FG_ERR_DUPLICATE, "fg_es_add_ternary '%s': the tensor is already registered", nm);
  return FG_OK;
}

fg_status fg_es_add_ternary(fg_es *es, fg_tensor *t, const char *name) {
  if (!es) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add_ternary: NULL trainer");
  if (!t) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add_ternary: NULL tensor");
  const char *nm = fg_es_tname(t, name);
  fg_status st = fg_es_check_ternary(es, t, nm);
  if (st) return st;
  /* The codes are read once here, so that no flip or vote ever meets a code 3. */
  uint8_t *host = malloc((size_t)t->nbytes);
  if (!host) return fg_fail(FG_ERR_NOMEM, "fg_es_add_ternary '%s': out of memory", nm);
  st = fg_tensor_download(t, host, (size_t)t->nbytes, NULL);
  if (!st) st = fg_es_check_codes(nm, host, t->numel / FG_TRIT_BLOCK_ELEMS);
  free(host);
  if (st) return st;

  /* The undo log holds one member's flips, a fixed count per slot. */
  fg_es_tslot ts = {.t = t, .len = t->numel};
  const uint64_t flips = fg_es_ternary_flip_count(es, ts.len);
  ts.name = strdup(nm);
  if (!ts.name) return fg_fail(FG_ERR_NOMEM, "fg_es_add_ternary '%s': out of memory", nm);
  st = fg_device_mem_alloc(t->dev, (size_t)flips * sizeof(uint64_t), (void **)&ts.undo_idx);
  if (!st) st = fg_device_mem_alloc(t->dev, (size_t)flips, (void **)&ts.undo_code);
  if (!st && es->ntslots == es->tslots_cap) {
    const size_t cap = es->tslots_cap ? 2 * es->tslots_cap : 4;
    fg_es_tslot *grown = realloc(es->tslots, cap * sizeof *grown);
    if (!grown) {
      st = fg_fail(FG_ERR_NOMEM, "fg_es_add_ternary '%s': out of memory", nm);
    } else {
      es->tslots = grown;
      es->tslots_cap = cap;
    }
  }
  if (st) {
    if (ts.undo_idx) fg_device_mem_free(t->dev, ts.undo_idx);
    if (ts.undo_code) fg_device_mem_free(t->dev, ts.undo_code);
    free(ts.name);
    return st;
  }
  es->dev = t->dev;
  es->tslots[es->ntslots++] = ts;
  return FG_OK;
}

void fg_es_tslot_free(fg_es *es, fg_es_tslot *ts) {
  if (!ts) return;
  if (es && es->dev) {
    if (ts->undo_idx) fg_device_mem_free(es->dev, ts->undo_idx);
    if (ts->undo_code) fg_device_mem_free(es->dev, ts->undo_code);
  }
  free(ts->name);
  memset(ts, 0, sizeof *ts);
}

/* The flip stream of ternary slot k for member: the even twin's under antithetic. */
static uint64_t fg_es_tslot_seed(const fg_es *es, uint64_t member, size_t k) {
  const uint64_t twin = es->cfg.antithetic ? member & ~(uint64_t)1 : member;
  return fg_es_ternary_slot_stream_seed(fg_es_ternary_member_seed(es, twin), k);
}

fg_status fg_es_ternary_perturb(fg_es *es, uint64_t member) {
  const bool mirrored = es->cfg.antithetic && (member & 1u);
  for (size_t k = 0; k < es->ntslots; k++) {
    fg_es_tslot *ts = &es->tslots[k];
    const uint64_t flips = fg_es_ternary_flip_count(es, ts->len);
    ts->undo_n = 0;
    fg_status st = fg_es_trits_flip(es->dev, ts->t->data, ts->len, fg_es_tslot_seed(es, member, k), flips, mirrored,
                                    ts->undo_idx, ts->undo_code, NULL);
    if (st) {
      /* Leave no slot perturbed: the member is not applied after an error. */
      for (size_t j = k; j-- > 0;) {
        fg_es_tslot *done = &es->tslots[j];
        if (!fg_es_trits_undo(es->dev, done->t->data, done->len, done->undo_idx, done->undo_code, done->undo_n, NULL))
          done->undo_n = 0;
      }
      return st;
    }
    ts->undo_n = flips;
  }
  return FG_OK;
}

/* Replaying a log only writes the codes it recorded, so a retry after a failure (the
 * member stays applied) restores the slots that succeeded to the same bytes again. */
fg_status fg_es_ternary_restore(fg_es *es) {
  fg_status first = FG_OK;
  for (size_t k = es->ntslots; k-- > 0;) {
    fg_es_tslot *ts = &es->tslots[k];
    fg_status st = fg_es_trits_undo(es->dev, ts->t->data, ts->len, ts->undo_idx, ts->undo_code, ts->undo_n, NULL);
    if (!st)
      ts->undo_n = 0;
    else if (!first)
      first = st;
  }
  return first;
}

/* ---- the update: votes, top-K, moves ---- */

typedef struct fg_es_vote {
  uint64_t index; /* UINT64_MAX: an empty cell of the table */
  float vote;
} fg_es_vote;

/* |vote| descending, then index ascending: a total order over distinct indices. */
static int fg_es_vote_cmp(const void *pa, const void *pb) {
  const fg_es_vote *a = pa, *b = pb;
  const float x = fabsf(a->vote), y = fabsf(b->vote);
  if (x != y) return x > y ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* The votes of ternary slot k, sorted, nonzero only: vote[index] = (...((0 + C_s0 * d) + ...)
 * in f32, stream by stream and flip by flip, each stream's flips unmirrored (the antithetic
 * fold already negated the odd member in C). Open addressing keeps each index's sum in that
 * order. */
static fg_status fg_es_slot_votes(const fg_es *es, size_t k, const float *coef, uint64_t nstreams, fg_es_vote **out,
                                  size_t *nout) {
  const fg_es_tslot *ts = &es->tslots[k];
  const uint64_t flips = fg_es_ternary_flip_count(es, ts->len);
  *out = NULL;
  *nout = 0;
  if (nstreams && flips > UINT64_MAX / nstreams)
    return fg_fail(FG_ERR_OVERFLOW, "es update: %llu streams x %llu flips of slot '%s' overflow",
                   (unsigned long long)nstreams, (unsigned long long)flips, ts->name);
  const uint64_t touched = nstreams * flips < ts->len ? nstreams * flips : ts->len;
  size_t cap = 16;
  while (cap < 2 * touched) {
    if (cap > SIZE_MAX / 2 / sizeof(fg_es_vote))
      return fg_fail(FG_ERR_OVERFLOW, "es update: the vote table of slot '%s' is too large", ts->name);
    cap *= 2;
  }
  fg_es_vote *table = malloc(cap * sizeof *table);
  if (!table) return fg_fail(FG_ERR_NOMEM, "es update: out of memory for the votes of slot '%s'", ts->name);
  for (size_t i = 0; i < cap; i++) table[i].index = UINT64_MAX;
  for (uint64_t s = 0; s < nstreams; s++) {
    const uint64_t seed = fg_es_tslot_seed(es, es->cfg.antithetic ? 2 * s : s, k);
    const float c = coef[s];
    for (uint64_t i = 0; i < flips; i++) {
      const uint64_t e = fg_trit_flip_index(seed, i, ts->len);
      const float d = (float)fg_trit_flip_delta(seed, i, 0);
      size_t h = (size_t)fg_rng_mix(e) & (cap - 1);
      while (table[h].index != e && table[h].index != UINT64_MAX) h = (h + 1) & (cap - 1);
      if (table[h].index == UINT64_MAX) table[h] = (fg_es_vote){.index = e, .vote = 0.0f};
      table[h].vote = table[h].vote + c * d;
    }
  }
  /* Compact the nonzero votes to the front; a NaN (coefficients that overflowed to
   * opposite infinities) has no place in the order, so it is refused before any change. */
  size_t n = 0;
  for (size_t i = 0; i < cap; i++) {
    if (table[i].index == UINT64_MAX || table[i].vote == 0.0f) continue;
    if (isnan(table[i].vote)) {
      const uint64_t e = table[i].index;
      free(table);
      return fg_fail(FG_ERR_NONFINITE, "es update: the vote of element %llu of ternary slot '%s' is NaN",
                     (unsigned long long)e, ts->name);
    }
    table[n++] = table[i];
  }
  qsort(table, n, sizeof *table, fg_es_vote_cmp);
  *out = table;
  *nout = n;
  return FG_OK;
}

void fg_es_ternary_plan_free(fg_es_ternary_plan *plan) {
  if (!plan) return;
  for (size_t k = 0; k < plan->n; k++) {
    if (plan->idx) free(plan->idx[k]);
    if (plan->dir) free(plan->dir[k]);
  }
  free(plan->idx);
  free(plan->dir);
  free(plan->k);
  free(plan->moves_off);
  if (plan->moves && plan->dev) fg_device_mem_free(plan->dev, plan->moves);
  memset(plan, 0, sizeof *plan);
}

/* Slot k's top K of sorted votes into the plan. */
static fg_status fg_es_plan_slot(fg_es_ternary_plan *plan, size_t k, const fg_es_vote *v, size_t nv, double eff,
                                 uint64_t len) {
  const double want = round(eff * (double)len);
  const uint64_t cap = want < 1.0 ? 1 : (uint64_t)want;
  const uint64_t K = nv < cap ? nv : cap;
  plan->k[k] = K;
  if (!K) return FG_OK;
  plan->idx[k] = malloc((size_t)K * sizeof(uint64_t));
  plan->dir[k] = malloc((size_t)K);
  if (!plan->idx[k] || !plan->dir[k]) return fg_fail(FG_ERR_NOMEM, "es update: out of memory for the ternary plan");
  for (uint64_t j = 0; j < K; j++) {
    plan->idx[k][j] = v[j].index;
    plan->dir[k][j] = v[j].vote > 0.0f ? 1 : -1;
  }
  return FG_OK;
}

/* One device buffer for every slot's moves: indices (8-byte aligned), then directions. */
static fg_status fg_es_plan_upload(fg_es_ternary_plan *plan) {
  size_t total = 0;
  for (size_t k = 0; k < plan->n; k++) {
    plan->moves_off[k] = total;
    total += (size_t)plan->k[k] * 9u;
    total = (total + 7u) & ~(size_t)7u;
  }
  if (!total) return FG_OK;
  fg_status st = fg_device_mem_alloc(plan->dev, total, &plan->moves);
  for (size_t k = 0; k < plan->n && !st; k++) {
    if (!plan->k[k]) continue;
    uint8_t *at = (uint8_t *)plan->moves + plan->moves_off[k];
    const size_t K = (size_t)plan->k[k];
    st = fg_device_copy(plan->dev, at, plan->idx[k], K * sizeof(uint64_t), FG_COPY_H2D);
    if (!st) st = fg_device_copy(plan->dev, at + K * sizeof(uint64_t), plan->dir[k], K, FG_COPY_H2D);
  }
  return st;
}

fg_status fg_es_ternary_plan_make(const fg_es *es, const float *coef, uint64_t nstreams, fg_es_ternary_plan *plan) {
  memset(plan, 0, sizeof *plan);
  const size_t n = es->ntslots;
  if (!n) return FG_OK;
  plan->n = n;
  plan->dev = es->dev;
  plan->idx = calloc(n, sizeof *plan->idx);
  plan->dir = calloc(n, sizeof *plan->dir);
  plan->k = calloc(n, sizeof *plan->k);
  plan->moves_off = calloc(n, sizeof *plan->moves_off);
  fg_status st = FG_OK;
  if (!plan->idx || !plan->dir || !plan->k || !plan->moves_off)
    st = fg_fail(FG_ERR_NOMEM, "es update: out of memory for the ternary plan");
  /* The iteration before this update's increment. */
  const double eff = (double)es->cfg.ternary_update_fraction /
                     (1.0 + (double)es->cfg.ternary_update_decay * (double)es->iteration);
  for (size_t k = 0; k < n && !st; k++) {
    fg_es_vote *v;
    size_t nv;
    st = fg_es_slot_votes(es, k, coef, nstreams, &v, &nv);
    if (!st) st = fg_es_plan_slot(plan, k, v, nv, eff, es->tslots[k].len);
    free(v);
  }
  if (!st) st = fg_es_plan_upload(plan);
  if (st) fg_es_ternary_plan_free(plan);
  return st;
}

fg_status fg_es_ternary_plan_apply(fg_es *es, const fg_es_ternary_plan *plan) {
  if (plan->n != es->ntslots)
    return fg_fail(FG_ERR_STATE, "es update: a ternary plan of %zu slots for %zu slots", plan->n, es->ntslots);
  for (size_t k = 0; k < plan->n; k++) {
    if (!plan->k[k]) continue;
    const fg_es_tslot *ts = &es->tslots[k];
    const uint8_t *at = (const uint8_t *)plan->moves + plan->moves_off[k];
    fg_status st = fg_es_trits_move(es->dev, ts->t->data, ts->len, (const uint64_t *)(const void *)at,
                                    (const int8_t *)(at + plan->k[k] * sizeof(uint64_t)), plan->k[k], NULL);
    if (st) return st;
  }
  return FG_OK;
}

/* ---- replicas ---- */

fg_status fg_es_materialize_ternary(const fg_es *es, uint64_t member, fg_tensor *const *dst, size_t n) {
  const char *what = "fg_es_materialize_ternary";
  if (!es || (n && !dst)) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL argument", what);
  if (member >= es->cfg.population)
    return fg_fail(FG_ERR_RANGE, "%s: member %llu of a population of %llu", what, (unsigned long long)member,
                   (unsigned long long)es->cfg.population);
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "%s: member %lld is applied to the genomes; restore it first", what,
                   (long long)es->active);
  if (n != es->ntslots)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu replica tensors for %zu ternary slots", what, n, es->ntslots);
  for (size_t k = 0; k < n; k++) {
    const fg_es_tslot *ts = &es->tslots[k];
    const fg_tensor *d = dst[k];
    if (!d) return fg_fail(FG_ERR_INVALID_ARG, "%s: replica %zu is NULL", what, k);
    if (d->dtype != FG_TQ2_0)
      return fg_fail(FG_ERR_TYPE, "%s: replica %zu ('%s') is %s, ternary slot '%s' is tq2_0", what, k, d->name,
                     fg_dtype_name(d->dtype) ? fg_dtype_name(d->dtype) : "(invalid)", ts->name);
    if (d->numel != ts->len || d->nbytes != ts->t->nbytes)
      return fg_fail(FG_ERR_BAD_SHAPE, "%s: replica %zu ('%s') has %llu elements, ternary slot '%s' %llu", what, k,
                     d->name, (unsigned long long)d->numel, ts->name, (unsigned long long)ts->len);
    if (d->dev != es->dev)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: replica %zu is on %s, the slots on %s", what, k, fg_device_spec(d->dev),
                     fg_device_spec(es->dev));
    if (d->readonly || !d->data || d->data == ts->t->data)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: replica %zu is read-only, empty or the slot itself", what, k);
  }
  const bool mirrored = es->cfg.antithetic && (member & 1u);
  fg_status st = FG_OK;
  for (size_t k = 0; k < n && !st; k++) {
    const fg_es_tslot *ts = &es->tslots[k];
    st = fg_device_copy(es->dev, dst[k]->data, ts->t->data, (size_t)ts->t->nbytes, FG_COPY_D2D);
    if (!st)
      st = fg_es_trits_flip(es->dev, dst[k]->data, ts->len, fg_es_tslot_seed(es, member, k),
                            fg_es_ternary_flip_count(es, ts->len), mirrored, NULL, NULL, NULL);
  }
  return st;
}
