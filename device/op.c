/* The op layer's front: one validation for every backend, then the backend's launcher. */
#include <stdbool.h>

#include "device/backend.h"
#include "device/op_chunks.h"
#include "device/scratch.h"
#include "forgia/ops.h"

typedef struct fg_op_info {
  const char *name;
  unsigned width, nstreams, read, write;
  unsigned dt[FG_OP_MAX_STREAMS];
} fg_op_info;

/* The table's numbers are in range here and unique below (fg_op_name: a repeated number is a
 * duplicate case label), so, there being FG_OP_KIND_COUNT rows, they are 0..COUNT-1 and index
 * fg_op_infos and the backends' tables densely, whatever the rows' order. */
#define FG_OP_IN_RANGE_(E, id, name, W, ns, rm, wm, dts) \
  _Static_assert((id) >= 0 && (id) < FG_OP_KIND_COUNT, "op " #name ": number outside 0..FG_OP_KIND_COUNT-1");
FG_OP_TABLE(FG_OP_IN_RANGE_)
#undef FG_OP_IN_RANGE_

static const fg_op_info fg_op_infos[FG_OP_KIND_COUNT] = {
#define FG_OP_INFO_(E, id, name, W, ns, rm, wm, dts)                                                      \
  [id] = {#name, W, ns, rm, wm,                                                                           \
   {FG_OP_DT_OF(dts, 0), FG_OP_DT_OF(dts, 1), FG_OP_DT_OF(dts, 2), FG_OP_DT_OF(dts, 3), FG_OP_DT_OF(dts, 4), \
    FG_OP_DT_OF(dts, 5)}},
    FG_OP_TABLE(FG_OP_INFO_)
#undef FG_OP_INFO_
};

const char *fg_op_name(fg_op_kind op) {
  switch (op) {
#define FG_OP_NAME_(E, id, name, W, ns, rm, wm, dts) \
  case FG_OP_##E: return #name;
    FG_OP_TABLE(FG_OP_NAME_)
#undef FG_OP_NAME_
    default: return NULL;
  }
}

static bool fg_op_dtype_ok(unsigned set, fg_dtype d) {
  switch (set) {
    case FG_OP_DT_FLOAT: return d == FG_F32 || d == FG_F16 || d == FG_BF16;
    case FG_OP_DT_F32: return d == FG_F32;
    case FG_OP_DT_MASK: return d == FG_U8 || d == FG_BOOL;
    default: return false;
  }
}

static const char *fg_op_dtype_set_name(unsigned set) {
  switch (set) {
    case FG_OP_DT_FLOAT: return "f32, f16 or bf16";
    case FG_OP_DT_F32: return "f32";
    default: return "u8 or bool";
  }
}

fg_status fg_op_run(fg_device *dev, fg_op_kind op, const fg_op_params *params, const fg_op_args *list, size_t count,
                    fg_stream *s) {
  if (!dev || !params || (count && !list)) return fg_fail(FG_ERR_INVALID_ARG, "fg_op_run: NULL argument");
  if ((unsigned)op >= FG_OP_KIND_COUNT) return fg_fail(FG_ERR_INVALID_ARG, "fg_op_run: unknown op %d", (int)op);
  if (s && s->dev != dev)
    return fg_fail(FG_ERR_INVALID_ARG, "op %s: the stream belongs to %s, not %s", fg_op_infos[op].name, s->dev->spec,
                   dev->spec);
  const fg_op_info *in = &fg_op_infos[op];
  if (op == FG_OP_CLIP_SCALE && !params->dscalar)
    return fg_fail(FG_ERR_INVALID_ARG, "op %s: params.dscalar must point to the sum of squares on %s", in->name,
                   dev->spec);
  if (op == FG_OP_ES_UPDATE && !params->dtable)
    return fg_fail(FG_ERR_INVALID_ARG, "op %s: params.dtable must point to the stream table on %s", in->name, dev->spec);
  size_t work = 0;
  for (size_t t = 0; t < count; t++) {
    const fg_op_args *a = &list[t];
    for (unsigned k = 0; k < in->nstreams; k++) {
      if (in->dt[k] == FG_OP_DT_NONE) continue; /* a stream this op does not use */
      if (!fg_op_dtype_ok(in->dt[k], a->dtype[k]))
        return fg_fail(FG_ERR_TYPE, "op %s: tensor %zu of the list, stream %u: dtype %s, expected %s", in->name, t, k,
                       fg_dtype_name(a->dtype[k]) ? fg_dtype_name(a->dtype[k]) : "(invalid)",
                       fg_op_dtype_set_name(in->dt[k]));
      if (a->n && !a->ptr[k])
        return fg_fail(FG_ERR_INVALID_ARG, "op %s: tensor %zu of the list, stream %u: NULL data for %zu elements",
                       in->name, t, k, a->n);
    }
    work += a->n;
  }
  if (!work) return FG_OK;
  const fg_op_call c = {.op = (int)op, .p = params, .list = list, .count = count};
  return fg_family_op(dev, &c, s, "fg_op_run");
}
