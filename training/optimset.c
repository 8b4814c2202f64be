/* Sets of optimizers: member order everywhere, one global clip whose norm stays on the device. */
#include <math.h>
#include <stdlib.h>

#include "forgia/optimset.h"
#include "forgia/reduce.h"
#include "training/optim_apollo_internal.h"
#include "training/optim_internal.h"

struct fg_optimset {
  fg_optim **m;
  size_t n, cap;
  fg_device *dev;
  double *totals; /* device memory: one squared norm per member, then the global one */
  size_t totals_cap;
};

fg_status fg_optimset_create(fg_optimset **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_create: NULL out");
  *out = calloc(1, sizeof **out);
  return *out ? FG_OK : fg_fail(FG_ERR_NOMEM, "optimizer set: out of memory");
}

void fg_optimset_free(fg_optimset *set) {
  if (!set) return;
  if (set->dev) fg_device_mem_free(set->dev, set->totals);
  free(set->m);
  free(set);
}

size_t fg_optimset_count(const fg_optimset *set) { return set ? set->n : 0; }
fg_optim *fg_optimset_member(const fg_optimset *set, size_t i) { return set && i < set->n ? set->m[i] : NULL; }

fg_status fg_optimset_add(fg_optimset *set, fg_optim *m) {
  if (!set || !m) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_add: NULL argument");
  if (set->n && m->dev != set->dev)
    return fg_fail(FG_ERR_INVALID_ARG, "optimizer set: a member on %s, the set is on %s", fg_device_spec(m->dev),
                   fg_device_spec(set->dev));
  for (size_t k = 0; k < set->n; k++) {
    if (set->m[k] == m) return fg_fail(FG_ERR_DUPLICATE, "optimizer set: member %zu added twice", k);
    /* Every slot list of m (main and fallback) against every list of member k. */
    const fg_optim *lists[2] = {m, m->fallback};
    for (int l = 0; l < 2 && lists[l]; l++)
      for (size_t i = 0; i < lists[l]->n; i++) {
        const char *other = fg_optim_holds(set->m[k], lists[l]->slots[i].t);
        if (other)
          return fg_fail(FG_ERR_DUPLICATE, "optimizer set: parameter '%s' is already in member %zu as '%s'",
                         lists[l]->slots[i].name, k, other);
      }
    if (m->apollo)
      for (size_t i = 0; i < m->apollo->nfb; i++) {
        const char *other = fg_optim_holds(set->m[k], m->apollo->fb[i].t);
        if (other)
          return fg_fail(FG_ERR_DUPLICATE, "optimizer set: fallback parameter '%s' is already in member %zu as '%s'",
                         m->apollo->fb[i].name, k, other);
      }
  }
  if (set->n + 1 > set->totals_cap) { /* room for every member's total and the global one */
    double *d = NULL;
    const size_t cap = (set->n + 1) * 2;
    fg_status s = fg_device_mem_alloc(m->dev, (cap + 1) * sizeof(double), (void **)&d);
    if (s) return s;
    if (set->dev) fg_device_mem_free(set->dev, set->totals);
    set->totals = d;
    set->totals_cap = cap;
  }
  if (set->n == set->cap) {
    const size_t cap = set->cap ? set->cap * 2 : 4;
    fg_optim **p = realloc(set->m, cap * sizeof *p);
    if (!p) return fg_fail(FG_ERR_NOMEM, "optimizer set: out of memory");
    set->m = p;
    set->cap = cap;
  }
  set->dev = m->dev;
  set->m[set->n++] = m;
  return FG_OK;
}

fg_status fg_optimset_step(fg_optimset *set, fg_stream *s) {
  if (!set) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_step: NULL set");
  for (size_t k = 0; k < set->n; k++) {
    fg_status st = fg_optim_step(set->m[k], s);
    if (st) return fg_fail_prefix(st, "optimizer set member %zu: ", k);
  }
  return FG_OK;
}

fg_status fg_optimset_zero_grad(fg_optimset *set, fg_stream *s) {
  if (!set) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_zero_grad: NULL set");
  for (size_t k = 0; k < set->n; k++) {
    fg_status st = fg_optim_zero_grad(set->m[k], s);
    if (st) return st;
  }
  return FG_OK;
}

fg_status fg_optimset_scale_gradients(fg_optimset *set, float factor, fg_stream *s) {
  if (!set) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_scale_gradients: NULL set");
  for (size_t k = 0; k < set->n; k++) {
    fg_status st = fg_optim_scale_gradients(set->m[k], factor, s);
    if (st) return st;
  }
  return FG_OK;
}

fg_status fg_optimset_apply_lr_factor(fg_optimset *set, double factor) {
  if (!set) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_apply_lr_factor: NULL set");
  for (size_t k = 0; k < set->n; k++) { /* validate every member first: all or nothing */
    const float lr = (float)(set->m[k]->base_lr * factor);
    if (!isfinite(lr) || lr < 0.0f) return fg_fail(FG_ERR_INVALID_ARG, "optimizer set: lr factor %g gives lr %g in member %zu", factor, lr, k);
  }
  for (size_t k = 0; k < set->n; k++) fg_optim_apply_lr_factor(set->m[k], factor);
  return FG_OK;
}

fg_status fg_optimset_grad_squared_norm(fg_optimset *set, double *out, fg_stream *s) {
  if (!set || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_grad_squared_norm: NULL argument");
  if (!set->n) return fg_fail(FG_ERR_STATE, "optimizer set: no members");
  for (size_t k = 0; k < set->n; k++) {
    fg_status st = fg_optim_grad_squared_norm(set->m[k], &set->totals[k], s);
    if (st) return st;
  }
  return fg_reduce_f64_sum(set->dev, set->totals, set->n, out, s);
}

fg_status fg_optimset_clip_grad_norm(fg_optimset *set, float max_norm, float *total_out, fg_stream *s) {
  if (!set) return fg_fail(FG_ERR_INVALID_ARG, "fg_optimset_clip_grad_norm: NULL set");
  if (!(max_norm > 0.0f) || !isfinite(max_norm))
    return fg_fail(FG_ERR_INVALID_ARG, "clip_grad_norm: max_norm %g, expected finite and > 0", max_norm);
  if (!set->n) return fg_fail(FG_ERR_STATE, "optimizer set: no members");
  double *norm = &set->totals[set->totals_cap];
  fg_status st = fg_optimset_grad_squared_norm(set, norm, s);
  for (size_t k = 0; k < set->n && st == FG_OK; k++) st = fg_optim_clip_with(set->m[k], norm, max_norm, s);
  if (st == FG_OK && total_out) {
    double sq = 0.0;
    if (s) st = fg_stream_sync(s);
    if (st == FG_OK) st = fg_device_copy(set->dev, &sq, norm, sizeof sq, FG_COPY_D2H);
    if (st == FG_OK) *total_out = (float)sqrt(sq);
  }
  return st;
}
