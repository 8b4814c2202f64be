/* One optimizer step of the elementwise kinds (SGD, Adam, AdamW): one op-layer launch per
 * group of parameters (same step count, f32 or 16-bit with a master), its op and parameter
 * block from the kind's descriptor (training/optim_kind_<name>.c). Kinds with a step of their
 * own (Muon, APOLLO) take it here. */
#include <string.h>

#include "training/optim_kind.h"

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
  const fg_optim_op_pack *pk = fg_optim_kind_ops_of(o->c.kind)->step_pack(&o->c);
  fg_op_params p;
  pk->pack(&o->c, t, 0.0f, &p);
  return fg_op_run(o->dev, master ? pk->op_master : pk->op, &p, o->args, k, s);
}

fg_status fg_optim_step(fg_optim *o, fg_stream *s) {
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_step: NULL optimizer");
  const fg_optim_kind_ops *ops = fg_optim_kind_ops_of(o->c.kind);
  if (ops->step) return ops->step(o, s);
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
    if (st) return fg_fail_prefix(st, "%s step: ", ops->d.name);
  }
  for (size_t i = 0; i < o->n; i++)
    if (o->slots[i].t->grad) o->slots[i].step++;
  return FG_OK;
}
