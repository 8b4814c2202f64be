/* One optimizer step: the f64 scalar preparation of Fucina's optimizers, then one op-layer
 * launch per group of parameters (same step count, f32 or 16-bit with a master). */
#include <math.h>
#include <string.h>

#include "training/optim_apollo_internal.h"
#include "training/optim_internal.h"
#include "training/optim_muon.h"

/* The op parameter block for step t (t = the post-increment count, as in torch and Fucina). */
static void fg_optim_scalars(const fg_optim_config *c, uint64_t t, fg_op_params *p) {
  memset(p, 0, sizeof *p);
  const double lr = (double)c->lr, wd = (double)c->weight_decay;
  if (c->kind == FG_OPTIM_SGD) {
    p->f[0] = c->lr;
    p->f[1] = c->weight_decay;
    p->f[2] = c->momentum;
    p->f[3] = (float)(1.0 - (double)c->dampening);
    p->u[0] = (c->nesterov ? 1u : 0u) | (t == 1 ? 2u : 0u);
    return;
  }
  const double bc1 = 1.0 - pow((double)c->beta1, (double)t);
  const double bc2 = 1.0 - pow((double)c->beta2, (double)t);
  p->f[0] = c->kind == FG_OPTIM_ADAMW && c->weight_decay != 0.0f ? (float)(1.0 - lr * wd) : 1.0f;
  p->f[1] = (float)(1.0 - (double)c->beta1);
  p->f[2] = c->beta2;
  p->f[3] = (float)(1.0 - (double)c->beta2);
  p->f[4] = (float)(lr / bc1);
  p->f[5] = (float)sqrt(bc2);
  p->f[6] = c->eps;
  p->f[7] = c->kind == FG_OPTIM_ADAM ? c->weight_decay : 0.0f;
}

/* The op of a kind for an f32 parameter, or for a 16-bit one stepped through its master. */
static fg_op_kind fg_optim_op(const fg_optim_config *c, bool master) {
  switch (c->kind) {
    case FG_OPTIM_ADAMW: return master ? FG_OP_ADAMW_MASTER : FG_OP_ADAMW;
    case FG_OPTIM_ADAM: return master ? FG_OP_ADAM_MASTER : FG_OP_ADAM;
    default:
      if (c->momentum != 0.0f) return master ? FG_OP_SGD_MOMENTUM_MASTER : FG_OP_SGD_MOMENTUM;
      return master ? FG_OP_SGD_MASTER : FG_OP_SGD;
  }
}

static fg_op_args fg_optim_args(const fg_optim *o, const fg_optim_slot *sl) {
  fg_op_args a;
  memset(&a, 0, sizeof a);
  const fg_tensor *t = sl->t;
  a.n = (size_t)t->numel;
  a.ptr[0] = sl->master ? (void *)sl->master : t->data;
  a.dtype[0] = sl->master ? FG_F32 : t->dtype;
  a.ptr[1] = t->grad;
  a.dtype[1] = FG_F32;
  a.ptr[2] = sl->m;
  a.dtype[2] = o->c.state_dtype;
  a.ptr[3] = sl->v;
  a.dtype[3] = o->c.second_moment_dtype;
  if (sl->master) {
    a.ptr[4] = t->data;
    a.dtype[4] = t->dtype;
  }
  return a;
}

/* Launches the slots with gradients whose next count is t and whose masterness is master. */
static fg_status fg_optim_launch(fg_optim *o, uint64_t t, bool master, fg_stream *s) {
  size_t k = 0;
  for (size_t i = 0; i < o->n; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    if (sl->t->grad && sl->step + 1 == t && (sl->master != NULL) == master) o->args[k++] = fg_optim_args(o, sl);
  }
  if (!k) return FG_OK;
  fg_op_params p;
  fg_optim_scalars(&o->c, t, &p);
  return fg_op_run(o->dev, fg_optim_op(&o->c, master), &p, o->args, k, s);
}

fg_status fg_optim_step(fg_optim *o, fg_stream *s) {
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_step: NULL optimizer");
  if (o->c.kind == FG_OPTIM_MUON) return fg_muon_step(o, s);
  if (o->apollo) return fg_apollo_step(o, s);
  /* The distinct next counts, in first-seen order: one when every parameter had a
   * gradient at every step, a few when some were skipped. */
  for (size_t i = 0; i < o->n; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    if (!sl->t->grad) continue;
    const uint64_t t = sl->step + 1;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = o->slots[j].t->grad && o->slots[j].step + 1 == t;
    if (seen) continue;
    fg_status st = fg_optim_launch(o, t, false, s);
    if (st == FG_OK) st = fg_optim_launch(o, t, true, s);
    if (st) return fg_fail_prefix(st, "%s step: ", fg_optim_kind_name(o->c.kind));
  }
  for (size_t i = 0; i < o->n; i++)
    if (o->slots[i].t->grad) o->slots[i].step++;
  return FG_OK;
}
