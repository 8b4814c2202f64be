/* The ES trainer's state, shared by its files (training/es*.c). Not installed. */
#ifndef FORGIA_TRAINING_ES_INTERNAL_H
#define FORGIA_TRAINING_ES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/es.h"
#include "forgia/ops.h"

/* A float slot: a borrowed f32/f16/bf16 tensor. */
typedef struct fg_es_slot {
  fg_tensor *t;
  char *name;       /* owned */
  void *snapshot;   /* device copy of the bytes while a member is applied (snapshot mode) */
} fg_es_slot;

/* A ternary slot: a borrowed TQ2_0 tensor of len elements (len / 256 blocks). The undo log
 * of the applied member lives on the device: flips record (index, old code) in order. */
typedef struct fg_es_tslot {
  fg_tensor *t;
  char *name;
  uint64_t len;
  uint64_t *undo_idx; /* device, flip_count entries */
  uint8_t *undo_code; /* device, flip_count entries */
  uint64_t undo_n;    /* entries the applied member wrote */
} fg_es_tslot;

struct fg_es {
  fg_es_config cfg;
  float alpha;
  uint64_t iteration;
  int64_t active; /* the applied member, -1 when none */
  fg_device *dev; /* the first slot's */
  fg_es_slot *slots;
  size_t nslots, slots_cap;
  fg_es_tslot *tslots;
  size_t ntslots, tslots_cap;
  uint64_t float_elems; /* elements of the float slots */
  void *anchor;         /* device: the float slots' bytes concatenated, NULL until captured */
  size_t *anchor_off;   /* byte offset of slot k in anchor */
  /* cache_streams: stream s of slot k at cache[s * nslots + k] (f32 noise, device), valid
   * for cache_iter; cache_ok[s] says whether stream s was generated this iteration. */
  float **cache;
  bool *cache_ok;
  uint64_t cache_iter;
  size_t cache_streams; /* streams the cache holds (population, or half under antithetic) */
};

/* Streams of one update: population, or half of it under antithetic. */
static inline uint64_t fg_es_stream_count(const fg_es *es) {
  return es->cfg.antithetic ? es->cfg.population / 2 : es->cfg.population;
}

/* The float ops over the slots (training/es_apply.c): every float slot, grouped by dtype so
 * that the in-op narrowing of the noise term matches the slot. sign is +1 (perturb) or -1
 * (regenerate-restore). */
fg_status fg_es_float_perturb(fg_es *es, uint64_t member, float sign);
fg_status fg_es_float_update(fg_es *es, const float *coef, uint64_t nstreams, float scale);
fg_status fg_es_float_anchor(fg_es *es);
/* The noise of stream s (member seed of member s, or 2s under antithetic) for slot k from the
 * cache, generating it first when this iteration has not (NULL when caching is off). */
fg_status fg_es_cache_get(fg_es *es, uint64_t stream, size_t slot, const float **eps);
void fg_es_cache_free(fg_es *es);

/* Ternary slots (training/es_ternary.c). perturb applies member's flips to every ternary
 * slot recording the undo logs; restore replays them in reverse. The update is two-phase so
 * that the float update can run between the check and the commit: plan computes the votes
 * and the top-K moves of every slot on the host (nothing changes; may fail), apply moves the
 * codes (device op; cannot fail for a valid plan except on a device error). */
typedef struct fg_es_ternary_plan {
  uint64_t **idx; /* per ternary slot: the K indices to move */
  int8_t **dir;   /* +1 / -1 */
  uint64_t *k;
  size_t n;
  /* The moves uploaded by plan_make, so that apply allocates and copies nothing: on dev,
   * slot k's K indices at moves + moves_off[k], its K directions right after them. */
  fg_device *dev;
  void *moves;
  size_t *moves_off;
} fg_es_ternary_plan;
fg_status fg_es_ternary_perturb(fg_es *es, uint64_t member);
fg_status fg_es_ternary_restore(fg_es *es);
fg_status fg_es_ternary_plan_make(const fg_es *es, const float *coef, uint64_t nstreams, fg_es_ternary_plan *plan);
fg_status fg_es_ternary_plan_apply(fg_es *es, const fg_es_ternary_plan *plan);
void fg_es_ternary_plan_free(fg_es_ternary_plan *plan);
void fg_es_tslot_free(fg_es *es, fg_es_tslot *ts);

/* Whether tensor t (or its storage) is a registered slot, float or ternary. */
bool fg_es_holds(const fg_es *es, const fg_tensor *t);

#endif
