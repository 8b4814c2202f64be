/* Optimizers: configuration, registration and ownership of the device-resident state. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "training/optim_apollo_internal.h"
#include "training/optim_kind.h"

const char *fg_optim_kind_name(fg_optim_kind kind) {
  const fg_optim_kind_ops *k = fg_optim_kind_ops_of(kind);
  return k ? k->d.name : NULL;
}

/* Writes field f's default into the struct at base. */
static void fg_optim_field_default(void *base, const fg_optim_field *f) {
  void *p = (char *)base + f->offset;
  switch (f->type) {
    case FG_OPTIM_FIELD_F32: *(float *)p = (float)f->def; break;
    case FG_OPTIM_FIELD_BOOL: *(bool *)p = f->def != 0.0; break;
    case FG_OPTIM_FIELD_DTYPE: *(fg_dtype *)p = (fg_dtype)f->def; break;
    case FG_OPTIM_FIELD_U32: *(uint32_t *)p = (uint32_t)f->def; break;
    case FG_OPTIM_FIELD_U64: *(uint64_t *)p = (uint64_t)f->def; break;
    case FG_OPTIM_FIELD_ENUM: *(int *)p = (int)f->def; break;
  }
}

fg_optim_config fg_optim_defaults(fg_optim_kind kind) {
  fg_optim_config c;
  memset(&c, 0, sizeof c);
  c.kind = kind;
  /* What every kind starts from; a kind's fields then take its own defaults. */
  c.lr = 1e-3f;
  c.beta1 = 0.9f;
  c.beta2 = 0.999f;
  c.eps = 1e-8f;
  c.state_dtype = FG_F32;
  c.second_moment_dtype = FG_F32;
  const fg_optim_kind_desc *d = fg_optim_kind_describe(kind);
  for (size_t i = 0; d && i < d->n_fields; i++) fg_optim_field_default(&c, &d->fields[i]);
  for (size_t i = 0; d && i < d->n_fallback_fields; i++) fg_optim_field_default(&c.fallback, &d->fallback_fields[i]);
  return c;
}

fg_status fg_optim_check_moments(const fg_optim_config *c) {
  const char *k = fg_optim_kind_name(c->kind);
  if (!(c->beta1 >= 0.0f && c->beta1 < 1.0f) || !(c->beta2 >= 0.0f && c->beta2 < 1.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: betas %g, %g, expected in [0, 1)", k, c->beta1, c->beta2);
  if (!(c->eps > 0.0f) || !isfinite(c->eps)) return fg_fail(FG_ERR_INVALID_ARG, "%s: eps %g, expected > 0", k, c->eps);
  if (c->second_moment_dtype != FG_F32 && c->second_moment_dtype != FG_BF16)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: second_moment_dtype %s, expected f32 or bf16", k,
                   fg_dtype_name(c->second_moment_dtype));
  return FG_OK;
}

fg_status fg_optim_config_check(const fg_optim_config *c) {
  if (!c) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_config_check: NULL config");
  const fg_optim_kind_ops *ops = fg_optim_kind_ops_of(c->kind);
  if (!ops) return fg_fail(FG_ERR_INVALID_ARG, "optimizer: unknown kind %d", (int)c->kind);
  const char *k = ops->d.name;
  if (!isfinite(c->lr) || c->lr < 0.0f) return fg_fail(FG_ERR_INVALID_ARG, "%s: lr %g, expected finite and >= 0", k, c->lr);
  if (!isfinite(c->weight_decay) || c->weight_decay < 0.0f)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: weight_decay %g, expected finite and >= 0", k, c->weight_decay);
  if (c->state_dtype != FG_F32 && c->state_dtype != FG_BF16)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: state_dtype %s, expected f32 or bf16", k, fg_dtype_name(c->state_dtype));
  return ops->check ? ops->check(c) : FG_OK;
}

fg_status fg_optim_create(fg_device *dev, const fg_optim_config *c, fg_optim **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_create: NULL out");
  *out = NULL;
  if (!dev || !c) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_create: NULL argument");
  fg_status s = fg_optim_config_check(c);
  if (s) return s;
  fg_optim *o = calloc(1, sizeof *o);
  if (!o) return fg_fail(FG_ERR_NOMEM, "optimizer: out of memory");
  o->dev = dev;
  o->c = *c;
  o->base_lr = (double)c->lr;
  s = fg_device_mem_alloc(dev, sizeof(double), (void **)&o->norm);
  if (s) {
    free(o);
    return s;
  }
  const fg_optim_kind_ops *ops = fg_optim_kind_ops_of(c->kind);
  if (ops->create) s = ops->create(o);
  if (s) {
    fg_device_mem_free(dev, o->norm);
    free(o);
    return s;
  }
  *out = o;
  return FG_OK;
}

void fg_optim_free(fg_optim *o) {
  if (!o) return;
  fg_apollo_free(o);
  for (size_t i = 0; i < o->n; i++) {
    fg_optim_slot *sl = &o->slots[i];
    fg_device_mem_free(o->dev, sl->master);
    fg_device_mem_free(o->dev, sl->m);
    fg_device_mem_free(o->dev, sl->v);
    free(sl->name);
  }
  fg_device_mem_free(o->dev, o->norm);
  fg_device_mem_free(o->dev, o->muon_work);
  fg_optim_free(o->fallback);
  free(o->slots);
  free(o->args);
  free(o->grads);
  free(o->grad_dtypes);
  free(o->grad_ns);
  free(o);
}

fg_status fg_optim_reserve(fg_optim *o, size_t count) {
  if (count > o->args_cap) {
    fg_op_args *a = realloc(o->args, count * sizeof *a);
    if (!a) return fg_fail(FG_ERR_NOMEM, "optimizer: out of memory");
    o->args = a;
    o->args_cap = count;
  }
  if (count > o->grads_cap) {
    const void **g = realloc(o->grads, count * sizeof *g);
    if (g) o->grads = g;
    fg_dtype *d = realloc(o->grad_dtypes, count * sizeof *d);
    if (d) o->grad_dtypes = d;
    size_t *n = realloc(o->grad_ns, count * sizeof *n);
    if (n) o->grad_ns = n;
    if (!g || !d || !n) return fg_fail(FG_ERR_NOMEM, "optimizer: out of memory");
    o->grads_cap = count;
  }
  return FG_OK;
}

/* Appends the gradients of the slots of list sl (n) that have one at position k on. */
static size_t fg_optim_append_grads(fg_optim *o, const fg_optim_slot *sl, size_t n, size_t k) {
  for (size_t i = 0; i < n; i++) {
    const fg_tensor *t = sl[i].t;
    if (!t->grad) continue;
    o->grads[k] = t->grad;
    o->grad_dtypes[k] = FG_F32;
    o->grad_ns[k] = (size_t)t->numel;
    fg_op_args *a = &o->args[k];
    memset(a, 0, sizeof *a);
    a->ptr[0] = t->grad;
    a->dtype[0] = FG_F32;
    a->n = (size_t)t->numel;
    k++;
  }
  return k;
}

/* Fucina's order: Muon's fallback, then its own slots; APOLLO's main slots, then fallback. */
size_t fg_optim_collect_grads(fg_optim *o) {
  size_t k = o->fallback ? fg_optim_append_grads(o, o->fallback->slots, o->fallback->n, 0) : 0;
  k = fg_optim_append_grads(o, o->slots, o->n, k);
  return o->apollo ? fg_optim_append_grads(o, o->apollo->fb, o->apollo->nfb, k) : k;
}

const char *fg_optim_holds(const fg_optim *o, const fg_tensor *t) {
  for (size_t i = 0; i < o->n; i++)
    if (o->slots[i].t == t) return o->slots[i].name;
  if (o->fallback) return fg_optim_holds(o->fallback, t);
  if (o->apollo)
    for (size_t i = 0; i < o->apollo->nfb; i++)
      if (o->apollo->fb[i].t == t) return o->apollo->fb[i].name;
  return NULL;
}

fg_status fg_optim_check_param(const fg_optim *o, const fg_tensor *t, const char *name, bool main_name) {
  const char *k = fg_optim_kind_name(o->c.kind);
  if (!*name) return fg_fail(FG_ERR_INVALID_ARG, "%s: empty parameter name", k);
  if (t->dtype != FG_F32 && t->dtype != FG_F16 && t->dtype != FG_BF16)
    return fg_fail(FG_ERR_TYPE, "%s: parameter '%s' is %s, expected f32, f16 or bf16", k, name, fg_dtype_name(t->dtype));
  if (t->dev != o->dev)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: parameter '%s' is on %s, the optimizer on %s", k, name,
                   fg_device_spec(t->dev), fg_device_spec(o->dev));
  if (t->readonly) return fg_fail(FG_ERR_STATE, "%s: parameter '%s' is read-only (a view of a file mapping)", k, name);
  for (size_t i = 0; i < o->n; i++) {
    if (o->slots[i].t == t) return fg_fail(FG_ERR_DUPLICATE, "%s: parameter '%s' is already registered as '%s'", k, name, o->slots[i].name);
    if (main_name && strcmp(o->slots[i].name, name) == 0) return fg_fail(FG_ERR_DUPLICATE, "%s: the name '%s' is taken", k, name);
  }
  return FG_OK;
}

/* A zero-filled state buffer of n elements of dtype d on dev. */
static fg_status fg_state_alloc(fg_device *dev, fg_dtype d, size_t n, void **out) {
  const size_t bytes = n * (d == FG_BF16 ? 2 : 4);
  fg_status s = fg_device_mem_alloc(dev, bytes ? bytes : 1, out);
  if (s == FG_OK) s = fg_device_memset(dev, *out, 0, bytes);
  return s;
}

fg_status fg_optim_add(fg_optim *o, fg_tensor *t, const char *name) {
  if (!o || !t) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_add: NULL argument");
  const fg_optim_kind_ops *ops = fg_optim_kind_ops_of(o->c.kind);
  if (ops->add) {
    bool done;
    const fg_status r = ops->add(o, t, name, false, &done);
    if (r || done) return r;
  }
  const char *k = ops->d.name;
  char auto_name[32];
  if (!name) {
    snprintf(auto_name, sizeof auto_name, "param%zu", o->n);
    name = auto_name;
  }
  fg_status s = fg_optim_check_param(o, t, name, true);
  if (s) return s;
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 16;
    fg_optim_slot *sl = realloc(o->slots, cap * sizeof *sl);
    if (!sl) return fg_fail(FG_ERR_NOMEM, "optimizer: out of memory");
    o->slots = sl;
    o->cap = cap;
  }
  fg_optim_slot sl;
  memset(&sl, 0, sizeof sl);
  sl.t = t;
  sl.name = strdup(name);
  const size_t n = (size_t)t->numel;
  s = sl.name ? FG_OK : fg_fail(FG_ERR_NOMEM, "optimizer: out of memory");
  if (s == FG_OK && t->dtype != FG_F32) { /* the master starts as the parameter's values, widened */
    s = fg_device_mem_alloc(o->dev, n ? n * sizeof(float) : 1, (void **)&sl.master);
    if (s == FG_OK && n) s = fg_convert(o->dev, sl.master, FG_F32, t->data, t->dtype, n, NULL);
  }
  /* The kind's state buffers (at most two: m and v), those its config keeps. */
  void **bufs[2] = {&sl.m, &sl.v};
  for (size_t b = 0; b < ops->d.n_state && b < 2 && s == FG_OK; b++)
    if (fg_optim_state_present(&o->c, &ops->d.state[b]))
      s = fg_state_alloc(o->dev, fg_optim_state_dtype(&o->c, &ops->d.state[b]), n, bufs[b]);
  if (s == FG_OK) s = fg_optim_reserve(o, o->n + 1);
  if (s) {
    fg_device_mem_free(o->dev, sl.master);
    fg_device_mem_free(o->dev, sl.m);
    fg_device_mem_free(o->dev, sl.v);
    free(sl.name);
    return fg_fail_prefix(s, "%s: adding '%s': ", k, name);
  }
  o->slots[o->n++] = sl;
  return FG_OK;
}

fg_status fg_optim_add_fallback(fg_optim *o, fg_tensor *t, const char *name) {
  if (!o || !t) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_add_fallback: NULL argument");
  const fg_optim_kind_ops *ops = fg_optim_kind_ops_of(o->c.kind);
  if (!ops->d.has_fallback)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: cannot route '%s' to a fallback (only muon and apollo have one)",
                   ops->d.name, name ? name : "(unnamed)");
  bool done;
  return ops->add(o, t, name, true, &done);
}

size_t fg_optim_count(const fg_optim *o) { return o ? o->n : 0; }
const char *fg_optim_name_at(const fg_optim *o, size_t i) { return o && i < o->n ? o->slots[i].name : NULL; }
uint64_t fg_optim_step_count_at(const fg_optim *o, size_t i) { return o && i < o->n ? o->slots[i].step : 0; }
float fg_optim_lr(const fg_optim *o) { return o ? o->c.lr : 0.0f; }
fg_optim_kind fg_optim_kind_of(const fg_optim *o) { return o ? o->c.kind : FG_OPTIM_SGD; }

fg_status fg_optim_set_lr(fg_optim *o, float lr) {
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_set_lr: NULL optimizer");
  if (!isfinite(lr) || lr < 0.0f) return fg_fail(FG_ERR_INVALID_ARG, "%s: lr %g, expected finite and >= 0", fg_optim_kind_name(o->c.kind), lr);
  o->c.lr = lr;
  o->base_lr = (double)lr;
  return FG_OK;
}

fg_status fg_optim_apply_lr_factor(fg_optim *o, double factor) {
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_apply_lr_factor: NULL optimizer");
  const float lr = (float)(o->base_lr * factor);
  if (!isfinite(lr) || lr < 0.0f)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: lr factor %g gives lr %g", fg_optim_kind_name(o->c.kind), factor, lr);
  o->c.lr = lr;
  /* A schedule scales the whole optimizer, as torch's schedulers scale every param group
   * (MuonWithAuxAdam's Adam group included). */
  return o->fallback ? fg_optim_apply_lr_factor(o->fallback, factor) : FG_OK;
}
