/* Muon (Fucina's optim.Muon, src/optim.zig): lerp momentum with the nesterov blend,
 * Newton-Schulz 5 on the update, the shape-scaled step with decoupled decay from the base lr;
 * parameters of fewer than 2 dims, and those routed explicitly, go to the embedded AdamW. */
#include <math.h>
#include <string.h>

#include "forgia/muon.h"
#include "training/optim_kind.h"
#include "training/optim_muon.h"

/* rows = dim 0, cols = the product of the rest, as Fucina views every parameter. */
static void fg_muon_dims(const fg_tensor *t, size_t *rows, size_t *cols) {
  *rows = (size_t)t->shape[0];
  *cols = *rows ? (size_t)(t->numel / t->shape[0]) : 0;
}

fg_status fg_muon_route(fg_optim *o, fg_tensor *t, const char *name, bool to_fallback, bool *done) {
  *done = false;
  const char *shown = name ? name : "(unnamed)", *other = NULL;
  if ((other = fg_optim_holds(o->fallback, t)))
    return fg_fail(FG_ERR_DUPLICATE, "muon: parameter '%s' is already registered with the fallback as '%s'", shown, other);
  fg_status s = fg_optim_reserve(o, o->n + o->fallback->n + 1);
  if (s) return s;
  if (to_fallback || t->ndim < 2) {
    if ((other = fg_optim_holds(o, t)))
      return fg_fail(FG_ERR_DUPLICATE, "muon: parameter '%s' is already registered as '%s'", shown, other);
    *done = true;
    return fg_optim_add(o->fallback, t, name);
  }
  size_t rows, cols;
  fg_muon_dims(t, &rows, &cols);
  if (!rows || !cols) return FG_OK; /* an empty matrix never reaches Newton-Schulz */
  const size_t need = fg_muon_newton_schulz5_workspace(rows, cols);
  if (!need) return fg_fail(FG_ERR_INVALID_ARG, "muon: parameter '%s' (%zu x %zu) is too large", shown, rows, cols);
  if (need <= o->muon_work_bytes) return FG_OK;
  void *w = NULL;
  s = fg_device_mem_alloc(o->dev, need, &w);
  if (s) return s;
  fg_device_mem_free(o->dev, o->muon_work);
  o->muon_work = w;
  o->muon_work_bytes = need;
  return FG_OK;
}

static float fg_muon_lr_eff(const fg_optim_config *c, size_t rows, size_t cols) {
  const float r = (float)rows, k = (float)cols;
  if (c->muon_scale == FG_MUON_SPECTRAL) return c->lr * sqrtf(fmaxf(1.0f, r / k));
  return c->lr * 0.2f * sqrtf(fmaxf(r, k));
}

static bool fg_muon_active(const fg_optim_slot *sl) { return sl->t->grad && sl->t->numel; }

/* The update of every active slot whose lr_eff and masterness match, as one launch. */
static fg_status fg_muon_apply(fg_optim *o, float lr_eff, bool master, fg_stream *s) {
  size_t k = 0;
  for (size_t i = 0; i < o->n; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    size_t rows, cols;
    fg_muon_dims(sl->t, &rows, &cols);
    if (!fg_muon_active(sl) || (sl->master != NULL) != master || fg_muon_lr_eff(&o->c, rows, cols) != lr_eff) continue;
    fg_op_args *a = &o->args[k++];
    memset(a, 0, sizeof *a);
    a->n = (size_t)sl->t->numel;
    a->ptr[0] = master ? (void *)sl->master : sl->t->data;
    a->dtype[0] = master ? FG_F32 : sl->t->dtype;
    a->ptr[1] = sl->v;
    a->dtype[1] = FG_F32;
    if (master) {
      a->ptr[4] = sl->t->data;
      a->dtype[4] = sl->t->dtype;
    }
  }
  if (!k) return FG_OK;
  fg_op_params p;
  fg_muon_pack_apply(&o->c, 0, lr_eff, &p);
  return fg_op_run(o->dev, master ? FG_OP_MUON_APPLY_MASTER : FG_OP_MUON_APPLY, &p, o->args, k, s);
}

static fg_status fg_muon_own_step(fg_optim *o, fg_stream *s) {
  size_t k = 0;
  for (size_t i = 0; i < o->n; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    if (!fg_muon_active(sl)) continue;
    fg_op_args *a = &o->args[k++];
    memset(a, 0, sizeof *a);
    a->n = (size_t)sl->t->numel;
    a->ptr[0] = sl->v;
    a->dtype[0] = FG_F32;
    a->ptr[1] = sl->t->grad;
    a->dtype[1] = FG_F32;
    a->ptr[2] = sl->m;
    a->dtype[2] = o->c.state_dtype;
  }
  if (!k) return FG_OK;
  fg_op_params p;
  fg_muon_pack_momentum(&o->c, 0, 0.0f, &p);
  fg_status st = fg_op_run(o->dev, FG_OP_MUON_MOMENTUM, &p, o->args, k, s);
  for (size_t i = 0; i < o->n && st == FG_OK; i++) {
    fg_optim_slot *sl = &o->slots[i];
    if (!fg_muon_active(sl)) continue;
    size_t rows, cols;
    fg_muon_dims(sl->t, &rows, &cols);
    st = fg_muon_newton_schulz5(o->dev, FG_GEMM_DEFAULT, sl->v, rows, cols, o->c.ns_steps, sl->v, o->muon_work,
                                o->muon_work_bytes, s);
  }
  /* One launch per distinct (lr_eff, masterness), in first-seen order. */
  for (size_t i = 0; i < o->n && st == FG_OK; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    if (!fg_muon_active(sl)) continue;
    size_t rows, cols;
    fg_muon_dims(sl->t, &rows, &cols);
    const float lr_eff = fg_muon_lr_eff(&o->c, rows, cols);
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) {
      const fg_optim_slot *sj = &o->slots[j];
      size_t rj, cj;
      fg_muon_dims(sj->t, &rj, &cj);
      seen = fg_muon_active(sj) && (sj->master != NULL) == (sl->master != NULL) && fg_muon_lr_eff(&o->c, rj, cj) == lr_eff;
    }
    if (!seen) st = fg_muon_apply(o, lr_eff, sl->master != NULL, s);
  }
  return st;
}

fg_status fg_muon_step(fg_optim *o, fg_stream *s) {
  fg_status st = fg_muon_own_step(o, s);
  if (st) return fg_fail_prefix(st, "muon step: ");
  for (size_t i = 0; i < o->n; i++)
    if (o->slots[i].t->grad) o->slots[i].step++;
  st = fg_optim_step(o->fallback, s);
  return st ? fg_fail_prefix(st, "muon fallback: ") : FG_OK;
}
