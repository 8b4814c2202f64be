/* Gradient housekeeping of an optimizer: zeroing, scaling, the squared norm and clipping,
 * each one launch over the whole gradient list; the clip's norm never leaves the device. */
#include <math.h>
#include <string.h>

#include "forgia/reduce.h"
#include "training/optim_internal.h"

static fg_status fg_optim_grad_op(fg_optim *o, fg_op_kind op, const fg_op_params *p, fg_stream *s) {
  const size_t k = fg_optim_collect_grads(o);
  return k ? fg_op_run(o->dev, op, p, o->args, k, s) : FG_OK;
}

fg_status fg_optim_zero_grad(fg_optim *o, fg_stream *s) {
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_zero_grad: NULL optimizer");
  fg_op_params p;
  memset(&p, 0, sizeof p);
  return fg_optim_grad_op(o, FG_OP_FILL, &p, s);
}

fg_status fg_optim_scale_gradients(fg_optim *o, float factor, fg_stream *s) {
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_scale_gradients: NULL optimizer");
  fg_op_params p;
  memset(&p, 0, sizeof p);
  p.f[0] = factor;
  return fg_optim_grad_op(o, FG_OP_SCALE, &p, s);
}

fg_status fg_optim_grad_squared_norm(fg_optim *o, double *out, fg_stream *s) {
  if (!o || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_grad_squared_norm: NULL argument");
  const size_t k = fg_optim_collect_grads(o);
  if (!k) {
    const double zero = 0.0;
    return s ? fg_device_copy_async(o->dev, out, &zero, sizeof zero, FG_COPY_H2D, s)
             : fg_device_copy(o->dev, out, &zero, sizeof zero, FG_COPY_H2D);
  }
  return fg_reduce_list(o->dev, FG_REDUCE_SUMSQ, o->grads, o->grad_dtypes, o->grad_ns, k, NULL, out, s);
}

fg_status fg_optim_clip_with(fg_optim *o, const double *norm, float max_norm, fg_stream *s) {
  fg_op_params p;
  memset(&p, 0, sizeof p);
  p.f[0] = max_norm;
  p.dscalar = norm;
  return fg_optim_grad_op(o, FG_OP_CLIP_SCALE, &p, s);
}

fg_status fg_optim_clip_grad_norm(fg_optim *o, float max_norm, float *total_out, fg_stream *s) {
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_clip_grad_norm: NULL optimizer");
  if (!(max_norm > 0.0f) || !isfinite(max_norm))
    return fg_fail(FG_ERR_INVALID_ARG, "clip_grad_norm: max_norm %g, expected finite and > 0", max_norm);
  /* Both launches go on one stream (s NULL: each is synchronous), so the clip reads the
   * norm the reduction left in device memory, with no host round trip. */
  fg_status st = fg_optim_grad_squared_norm(o, o->norm, s);
  if (st == FG_OK) st = fg_optim_clip_with(o, o->norm, max_norm, s);
  if (st == FG_OK && total_out) {
    double sq = 0.0;
    if (s) st = fg_stream_sync(s);
    if (st == FG_OK) st = fg_device_copy(o->dev, &sq, o->norm, sizeof sq, FG_COPY_D2H);
    if (st == FG_OK) *total_out = (float)sqrt(sq);
  }
  return st;
}
