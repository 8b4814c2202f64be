/* The reductions' front: one validation for every backend, then the reduce and sum_f64
 * kernel families (device/family_table.h). */
#include "device/backend.h"
#include "device/scratch.h"
#include "device/reduce_call.h"
#include "forgia/reduce.h"

static const char *const fg_reduce_names[FG_REDUCE_OP_COUNT] = {"sum", "sumsq", "maxabs"};

const char *fg_reduce_op_name(fg_reduce_op op) {
  return (unsigned)op < FG_REDUCE_OP_COUNT ? fg_reduce_names[op] : NULL;
}

static fg_status fg_reduce_run(fg_device *dev, fg_reduce_call *r, fg_stream *s) {
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "reduce: NULL device");
  if ((unsigned)r->op >= FG_REDUCE_OP_COUNT) return fg_fail(FG_ERR_INVALID_ARG, "reduce: unknown op %d", r->op);
  const char *name = fg_reduce_names[r->op];
  if (!r->per_tensor && !r->total)
    return fg_fail(FG_ERR_INVALID_ARG, "reduce %s: per_tensor and total are both NULL (nothing to write)", name);
  if (s && s->dev != dev)
    return fg_fail(FG_ERR_INVALID_ARG, "reduce %s: the stream belongs to %s, not %s", name, s->dev->spec, dev->spec);
  r->nchunks = 0;
  for (size_t t = 0; t < r->count; t++) {
    if (r->ts && !r->ts[t]) return fg_fail(FG_ERR_INVALID_ARG, "reduce %s: tensor %zu of the list is NULL", name, t);
    const char *tn = r->ts && r->ts[t]->name ? r->ts[t]->name : "";
    if (r->ts && r->ts[t]->dev != dev)
      return fg_fail(FG_ERR_INVALID_ARG, "reduce %s: tensor %zu '%s' lives on %s, not %s", name, t, tn,
                     r->ts[t]->dev ? r->ts[t]->dev->spec : "(no device)", dev->spec);
    const void *x;
    fg_dtype dt;
    size_t n;
    fg_reduce_call_at(r, t, &x, &dt, &n);
    if (dt != FG_F32 && dt != FG_F16 && dt != FG_BF16)
      return fg_fail(FG_ERR_TYPE, "reduce %s: tensor %zu '%s' has dtype %s, expected f32, f16 or bf16", name, t, tn,
                     fg_dtype_name(dt) ? fg_dtype_name(dt) : "(invalid)");
    if (n && !x)
      return fg_fail(FG_ERR_INVALID_ARG, "reduce %s: tensor %zu '%s' has NULL data for %zu values", name, t, tn, n);
    r->nchunks += fg_reduce_nchunks(n);
  }
  return fg_family_reduce(dev, r, s, "fg_reduce");
}

fg_status fg_reduce_list(fg_device *dev, fg_reduce_op op, const void *const *xs, const fg_dtype *dtypes,
                         const size_t *ns, size_t count, double *per_tensor, double *total, fg_stream *s) {
  if (count && (!xs || !dtypes || !ns)) return fg_fail(FG_ERR_INVALID_ARG, "fg_reduce_list: NULL list");
  fg_reduce_call r = {.op = (int)op, .count = count, .xs = xs, .dtypes = dtypes, .ns = ns,
                      .per_tensor = per_tensor, .total = total};
  return fg_reduce_run(dev, &r, s);
}

fg_status fg_reduce_array(fg_device *dev, fg_reduce_op op, const void *x, fg_dtype dtype, size_t n, double *out,
                          fg_stream *s) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_reduce_array: NULL result pointer");
  fg_reduce_call r = {.op = (int)op, .count = 1, .xs = &x, .dtypes = &dtype, .ns = &n, .per_tensor = out};
  return fg_reduce_run(dev, &r, s);
}

fg_status fg_reduce_tensors(fg_device *dev, fg_reduce_op op, const fg_tensor *const *ts, size_t count,
                            double *per_tensor, double *total, fg_stream *s) {
  if (count && !ts) return fg_fail(FG_ERR_INVALID_ARG, "fg_reduce_tensors: NULL list");
  fg_reduce_call r = {.op = (int)op, .count = count, .ts = ts, .per_tensor = per_tensor, .total = total};
  return fg_reduce_run(dev, &r, s);
}

fg_status fg_reduce_f64_sum(fg_device *dev, const double *x, size_t n, double *out, fg_stream *s) {
  if (!dev || !out || (n && !x)) return fg_fail(FG_ERR_INVALID_ARG, "fg_reduce_f64_sum: NULL argument");
  const fg_sum_f64_call c = {.x = x, .n = n, .out = out};
  return fg_family_sum_f64(dev, &c, s, "fg_reduce_f64_sum");
}
