/* The ES trainer: configuration, registration, the pinned seed mappings, and perturb /
 * restore of one member (forgia/es.h). The float kernels are in es_apply.c, the update in
 * es_update.c, the drivers in es_eval.c, ternary slots in es_ternary.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/es.h"
#include "forgia/rng.h"
#include "training/es_internal.h"

fg_es_config fg_es_defaults(void) {
  fg_es_config c;
  memset(&c, 0, sizeof c);
  c.sigma = 0.001f;
  c.population = 30;
  c.noise = FG_ES_NOISE_IID;
  c.restore_mode = FG_ES_RESTORE_REGENERATE;
  c.anchor_decay = FG_ES_ANCHOR_NONE;
  c.reward_norm = FG_ES_REWARD_Z_SCORE;
  c.ternary_flip_rate = 0.001f;
  c.ternary_update_fraction = 0.005f;
  c.ternary_update_decay = 0.0f;
  c.seed = 42;
  return c;
}

static float fg_es_alpha_of(const fg_es_config *c) { return c->has_alpha ? c->alpha : c->sigma / 2.0f; }

fg_status fg_es_config_check(const fg_es_config *c) {
  if (!c) return fg_fail(FG_ERR_INVALID_ARG, "es config: NULL");
  if (!(isfinite(c->sigma) && c->sigma > 0.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "es config: sigma %g must be positive and finite", (double)c->sigma);
  if (c->has_alpha && !(isfinite(c->alpha) && c->alpha > 0.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "es config: alpha %g must be positive and finite", (double)c->alpha);
  if (c->population < 2)
    return fg_fail(FG_ERR_INVALID_ARG, "es config: population %llu must be at least 2",
                   (unsigned long long)c->population);
  if (c->antithetic && (c->population & 1u))
    return fg_fail(FG_ERR_INVALID_ARG, "es config: antithetic pairs need an even population, not %llu",
                   (unsigned long long)c->population);
  if ((unsigned)c->noise > FG_ES_NOISE_CORRELATED)
    return fg_fail(FG_ERR_INVALID_ARG, "es config: unknown noise scheme %d", (int)c->noise);
  if ((unsigned)c->restore_mode > FG_ES_RESTORE_SNAPSHOT)
    return fg_fail(FG_ERR_INVALID_ARG, "es config: unknown restore mode %d", (int)c->restore_mode);
  if ((unsigned)c->reward_norm > FG_ES_REWARD_NONE)
    return fg_fail(FG_ERR_INVALID_ARG, "es config: unknown reward normalisation %d", (int)c->reward_norm);
  if ((unsigned)c->anchor_decay > FG_ES_ANCHOR_L2)
    return fg_fail(FG_ERR_INVALID_ARG, "es config: unknown anchor decay %d", (int)c->anchor_decay);
  if (!(c->ternary_flip_rate > 0.0f && c->ternary_flip_rate <= 1.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "es config: ternary_flip_rate %g must be in (0, 1]",
                   (double)c->ternary_flip_rate);
  if (!(c->ternary_update_fraction > 0.0f && c->ternary_update_fraction <= 1.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "es config: ternary_update_fraction %g must be in (0, 1]",
                   (double)c->ternary_update_fraction);
  if (!(isfinite(c->ternary_update_decay) && c->ternary_update_decay >= 0.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "es config: ternary_update_decay %g must be finite and >= 0",
                   (double)c->ternary_update_decay);
  if (c->anchor_decay != FG_ES_ANCHOR_NONE) {
    if (!(isfinite(c->anchor_lambda) && c->anchor_lambda > 0.0f))
      return fg_fail(FG_ERR_INVALID_ARG, "es config: anchor_lambda %g must be positive and finite with %s decay",
                     (double)c->anchor_lambda, fg_es_anchor_decay_name(c->anchor_decay));
    const float step = fg_es_alpha_of(c) * c->anchor_lambda;
    if (c->anchor_decay == FG_ES_ANCHOR_L2 && !(step < 1.0f))
      return fg_fail(FG_ERR_INVALID_ARG, "es config: l2 anchor decay needs alpha * anchor_lambda < 1, got %g",
                     (double)step);
  }
  return FG_OK;
}

/* Names, as Fucina's config enums spell them. */
static const char *const fg_es_noise_names[] = {"iid", "correlated"};
static const char *const fg_es_restore_names[] = {"regenerate", "snapshot"};
static const char *const fg_es_anchor_names[] = {"none", "l1", "l2"};
static const char *const fg_es_norm_names[] = {"z_score", "centered_ranks", "none"};

#define FG_ES_NAME_FN(fn, type, names)                                                   \
  const char *fn(type v) {                                                               \
    return (unsigned)v < sizeof names / sizeof names[0] ? names[(unsigned)v] : NULL;     \
  }
FG_ES_NAME_FN(fg_es_noise_name, fg_es_noise, fg_es_noise_names)
FG_ES_NAME_FN(fg_es_restore_mode_name, fg_es_restore_mode, fg_es_restore_names)
FG_ES_NAME_FN(fg_es_anchor_decay_name, fg_es_anchor_decay, fg_es_anchor_names)
FG_ES_NAME_FN(fg_es_reward_norm_name, fg_es_reward_norm, fg_es_norm_names)

static fg_status fg_es_parse(const char *what, const char *s, const char *const *names, size_t n, int *out) {
  if (!s) return fg_fail(FG_ERR_INVALID_ARG, "es %s: NULL", what);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(s, names[i])) {
      *out = (int)i;
      return FG_OK;
    }
  char list[96] = "";
  for (size_t i = 0; i < n; i++) {
    strcat(list, i ? ", " : "");
    strcat(list, names[i]);
  }
  return fg_fail(FG_ERR_INVALID_ARG, "es %s: unknown value '%s' (expected %s)", what, s, list);
}

#define FG_ES_PARSE_FN(fn, type, what, names)                                               \
  fg_status fn(const char *s, type *out) {                                                  \
    int v = 0;                                                                              \
    fg_status st = fg_es_parse(what, s, names, sizeof names / sizeof names[0], &v);         \
    if (!st && out) *out = (type)v;                                                         \
    return st;                                                                              \
  }
FG_ES_PARSE_FN(fg_es_noise_parse, fg_es_noise, "noise", fg_es_noise_names)
FG_ES_PARSE_FN(fg_es_restore_mode_parse, fg_es_restore_mode, "restore_mode", fg_es_restore_names)
FG_ES_PARSE_FN(fg_es_anchor_decay_parse, fg_es_anchor_decay, "anchor_decay", fg_es_anchor_names)
FG_ES_PARSE_FN(fg_es_reward_norm_parse, fg_es_reward_norm, "reward_norm", fg_es_norm_names)

fg_status fg_es_create(const fg_es_config *c, fg_es **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_create: NULL out");
  *out = NULL;
  fg_status st = fg_es_config_check(c);
  if (st) return st;
  fg_es *es = calloc(1, sizeof *es);
  if (!es) return fg_fail(FG_ERR_NOMEM, "fg_es_create: out of memory");
  es->cfg = *c;
  es->alpha = fg_es_alpha_of(c);
  es->active = -1;
  *out = es;
  return FG_OK;
}

static void fg_es_anchor_drop(fg_es *es) {
  if (es->anchor) fg_device_mem_free(es->dev, es->anchor);
  es->anchor = NULL;
  free(es->anchor_off);
  es->anchor_off = NULL;
}

void fg_es_free(fg_es *es) {
  if (!es) return;
  fg_es_cache_free(es);
  fg_es_anchor_drop(es);
  for (size_t k = 0; k < es->nslots; k++) {
    if (es->slots[k].snapshot) fg_device_mem_free(es->dev, es->slots[k].snapshot);
    free(es->slots[k].name);
  }
  free(es->slots);
  for (size_t k = 0; k < es->ntslots; k++) fg_es_tslot_free(es, &es->tslots[k]);
  free(es->tslots);
  free(es);
}

const fg_es_config *fg_es_config_of(const fg_es *es) { return es ? &es->cfg : NULL; }

bool fg_es_holds(const fg_es *es, const fg_tensor *t) {
  for (size_t k = 0; k < es->nslots; k++)
    if (es->slots[k].t == t || (t->data && es->slots[k].t->data == t->data)) return true;
  for (size_t k = 0; k < es->ntslots; k++)
    if (es->tslots[k].t == t || (t->data && es->tslots[k].t->data == t->data)) return true;
  return false;
}

/* The checks every float registration makes; nothing changes. */
static fg_status fg_es_check_float(const fg_es *es, const fg_tensor *t, const char *name) {
  const char *nm = name ? name : (t && t->name ? t->name : "");
  if (!t) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add: NULL tensor");
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "fg_es_add '%s': member %lld is applied; restore it before registering", nm,
                   (long long)es->active);
  if (t->dtype != FG_F32 && t->dtype != FG_F16 && t->dtype != FG_BF16)
    return fg_fail(FG_ERR_TYPE, "fg_es_add '%s': dtype %s, expected f32, f16 or bf16", nm,
                   fg_dtype_name(t->dtype) ? fg_dtype_name(t->dtype) : "(invalid)");
  if (t->readonly) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add '%s': the tensor is read-only (a file mapping)", nm);
  if (!t->dev) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add '%s': the tensor has no device", nm);
  if (es->dev && t->dev != es->dev)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add '%s': the tensor is on %s, the trainer's slots on %s", nm,
                   fg_device_spec(t->dev), fg_device_spec(es->dev));
  if (fg_es_holds(es, t)) return fg_fail(FG_ERR_DUPLICATE, "fg_es_add '%s': the tensor is already registered", nm);
  return FG_OK;
}

static fg_status fg_es_push_float(fg_es *es, fg_tensor *t, const char *name) {
  if (es->nslots == es->slots_cap) {
    const size_t cap = es->slots_cap ? 2 * es->slots_cap : 8;
    fg_es_slot *s = realloc(es->slots, cap * sizeof *s);
    if (!s) return fg_fail(FG_ERR_NOMEM, "fg_es_add: out of memory");
    es->slots = s;
    es->slots_cap = cap;
  }
  fg_es_slot sl = {.t = t};
  const char *nm = name ? name : t->name ? t->name : "";
  sl.name = strdup(nm);
  if (!sl.name) return fg_fail(FG_ERR_NOMEM, "fg_es_add: out of memory");
  if (es->cfg.restore_mode == FG_ES_RESTORE_SNAPSHOT && t->nbytes) {
    fg_status st = fg_device_mem_alloc(t->dev, (size_t)t->nbytes, &sl.snapshot);
    if (st) {
      free(sl.name);
      return st;
    }
  }
  /* The slot set changes: the anchor and the stream cache describe the old one. */
  fg_es_anchor_drop(es);
  fg_es_cache_free(es);
  es->dev = t->dev;
  es->slots[es->nslots++] = sl;
  es->float_elems += t->numel;
  return FG_OK;
}

fg_status fg_es_add(fg_es *es, fg_tensor *t, const char *name) {
  if (!es) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add: NULL trainer");
  fg_status st = fg_es_check_float(es, t, name);
  return st ? st : fg_es_push_float(es, t, name);
}

fg_status fg_es_add_registry(fg_es *es, const fg_registry *r, size_t *added) {
  if (added) *added = 0;
  if (!es || !r) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_add_registry: NULL argument");
  const size_t n = fg_registry_count(r);
  /* Check every entry first (skipping storage that is registered, or that an earlier entry
   * of the table shares), so a refused call adds nothing. */
  bool *take = calloc(n ? n : 1, sizeof *take);
  if (!take) return fg_fail(FG_ERR_NOMEM, "fg_es_add_registry: out of memory");
  fg_status st = FG_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const fg_registry_entry *e = fg_registry_entry_at(r, i);
    bool tied = fg_es_holds(es, e->tensor);
    for (size_t j = 0; j < i && !tied; j++)
      if (take[j]) {
        const fg_tensor *u = fg_registry_entry_at(r, j)->tensor;
        tied = u == e->tensor || (u->data && u->data == e->tensor->data);
      }
    if (tied) continue;
    st = fg_es_check_float(es, e->tensor, e->name);
    if (!st && es->dev == NULL && i > 0) {
      /* Slots must share one device: compare with the first entry taken. */
      for (size_t j = 0; j < i; j++)
        if (take[j] && fg_registry_entry_at(r, j)->tensor->dev != e->tensor->dev) {
          st = fg_fail(FG_ERR_INVALID_ARG, "fg_es_add_registry: entry '%s' is on %s, entry '%s' on %s", e->name,
                       fg_device_spec(e->tensor->dev), fg_registry_entry_at(r, j)->name,
                       fg_device_spec(fg_registry_entry_at(r, j)->tensor->dev));
          break;
        }
    }
    take[i] = !st;
  }
  size_t count = 0;
  for (size_t i = 0; i < n && !st; i++)
    if (take[i]) {
      const fg_registry_entry *e = fg_registry_entry_at(r, i);
      st = fg_es_push_float(es, e->tensor, e->name);
      if (!st) count++;
    }
  free(take);
  if (added) *added = count;
  return st;
}

fg_status fg_es_capture_anchor(fg_es *es) {
  if (!es) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_capture_anchor: NULL trainer");
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "fg_es_capture_anchor: member %lld is applied", (long long)es->active);
  if (!es->nslots) return fg_fail(FG_ERR_NOT_FOUND, "fg_es_capture_anchor: no float parameter is registered");
  size_t *off = malloc(es->nslots * sizeof *off);
  if (!off) return fg_fail(FG_ERR_NOMEM, "fg_es_capture_anchor: out of memory");
  size_t total = 0;
  /* Each slot starts on a 256-byte boundary: the ops load the anchor as the slot's dtype
   * (an f16 slot of odd length would leave the next f32 slot misaligned) and CUDA wants
   * aligned vector loads. */
  for (size_t k = 0; k < es->nslots; k++) {
    total = (total + 255u) & ~(size_t)255u;
    off[k] = total;
    total += (size_t)es->slots[k].t->nbytes;
  }
  void *anchor = NULL;
  fg_status st = fg_device_mem_alloc(es->dev, total ? total : 1, &anchor);
  for (size_t k = 0; k < es->nslots && !st; k++)
    if (es->slots[k].t->nbytes)
      st = fg_device_copy(es->dev, (char *)anchor + off[k], es->slots[k].t->data, (size_t)es->slots[k].t->nbytes,
                          FG_COPY_D2D);
  if (st) {
    if (anchor) fg_device_mem_free(es->dev, anchor);
    free(off);
    return st;
  }
  fg_es_anchor_drop(es);
  es->anchor = anchor;
  es->anchor_off = off;
  return FG_OK;
}

size_t fg_es_param_count(const fg_es *es) { return es ? es->nslots + es->ntslots : 0; }

uint64_t fg_es_element_count(const fg_es *es) {
  if (!es) return 0;
  uint64_t n = es->float_elems;
  for (size_t k = 0; k < es->ntslots; k++) n += es->tslots[k].len;
  return n;
}

float fg_es_alpha_value(const fg_es *es) { return es ? es->alpha : 0.0f; }
uint64_t fg_es_iteration(const fg_es *es) { return es ? es->iteration : 0; }
int64_t fg_es_active_member(const fg_es *es) { return es ? es->active : -1; }

fg_status fg_es_set_iteration(fg_es *es, uint64_t iteration) {
  if (!es) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_set_iteration: NULL trainer");
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "fg_es_set_iteration: member %lld is applied", (long long)es->active);
  es->iteration = iteration;
  return FG_OK;
}

/* Wrapping u64 arithmetic, as Fucina's counter. */
uint64_t fg_es_member_seed(const fg_es *es, uint64_t member) {
  return fg_rng_at(es->cfg.seed ^ FG_RNG_DOMAIN_ES_SEEDS, es->iteration * es->cfg.population + member);
}

uint64_t fg_es_slot_stream_seed(const fg_es *es, uint64_t member, size_t slot, float *sign) {
  const bool odd = es->cfg.antithetic && (member & 1u);
  if (sign) *sign = odd ? -1.0f : 1.0f;
  const uint64_t ms = fg_es_member_seed(es, es->cfg.antithetic ? member & ~(uint64_t)1 : member);
  return es->cfg.noise == FG_ES_NOISE_IID ? fg_rng_at(ms ^ FG_RNG_DOMAIN_ES_NOISE, slot) : ms;
}

fg_status fg_es_perturb(fg_es *es, uint64_t member) {
  if (!es) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_perturb: NULL trainer");
  if (member >= es->cfg.population)
    return fg_fail(FG_ERR_RANGE, "fg_es_perturb: member %llu of a population of %llu", (unsigned long long)member,
                   (unsigned long long)es->cfg.population);
  if (es->active >= 0)
    return fg_fail(FG_ERR_STATE, "fg_es_perturb %llu: member %lld is still applied; restore it first",
                   (unsigned long long)member, (long long)es->active);
  fg_status st = FG_OK;
  if (es->cfg.restore_mode == FG_ES_RESTORE_SNAPSHOT)
    for (size_t k = 0; k < es->nslots && !st; k++)
      if (es->slots[k].t->nbytes)
        st = fg_device_copy(es->dev, es->slots[k].snapshot, es->slots[k].t->data, (size_t)es->slots[k].t->nbytes,
                            FG_COPY_D2D);
  bool floats_done = false;
  if (!st) st = fg_es_float_perturb(es, member, 1.0f);
  if (!st) floats_done = true;
  if (!st) st = fg_es_ternary_perturb(es, member);
  if (st && floats_done) {
    /* The ternary slots undid themselves; take the float slots back too, so a failed perturb
     * leaves no member half applied. */
    if (es->cfg.restore_mode == FG_ES_RESTORE_SNAPSHOT) {
      for (size_t k = 0; k < es->nslots; k++)
        if (es->slots[k].t->nbytes)
          (void)fg_device_copy(es->dev, es->slots[k].t->data, es->slots[k].snapshot, (size_t)es->slots[k].t->nbytes,
                               FG_COPY_D2D);
    } else {
      (void)fg_es_float_perturb(es, member, -1.0f);
    }
  }
  if (!st) es->active = (int64_t)member;
  return st;
}

fg_status fg_es_restore(fg_es *es, uint64_t member) {
  if (!es) return fg_fail(FG_ERR_INVALID_ARG, "fg_es_restore: NULL trainer");
  if (es->active < 0 || (uint64_t)es->active != member) {
    if (es->active < 0)
      return fg_fail(FG_ERR_STATE, "fg_es_restore %llu: no member is applied", (unsigned long long)member);
    return fg_fail(FG_ERR_STATE, "fg_es_restore %llu: member %lld is the one applied", (unsigned long long)member,
                   (long long)es->active);
  }
  fg_status st = FG_OK;
  if (es->cfg.restore_mode == FG_ES_RESTORE_SNAPSHOT) {
    for (size_t k = 0; k < es->nslots && !st; k++)
      if (es->slots[k].t->nbytes)
        st = fg_device_copy(es->dev, es->slots[k].t->data, es->slots[k].snapshot, (size_t)es->slots[k].t->nbytes,
                            FG_COPY_D2D);
  } else {
    st = fg_es_float_perturb(es, member, -1.0f);
  }
  if (!st) st = fg_es_ternary_restore(es);
  if (!st) es->active = -1;
  return st;
}
