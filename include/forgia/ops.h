/* The op layer: one call runs an elementwise op over a list of tensors on one device.
 *
 *   fg_op_args a[2] = {{.ptr = {w0, g0, m0, v0}, .dtype = {FG_F32, FG_F32, FG_F32, FG_F32}, .n = n0},
 *                      {.ptr = {w1, g1, m1, v1}, .dtype = {FG_BF16, FG_F32, FG_F32, FG_F32}, .n = n1}};
 *   fg_op_params p = {.f = {keep, omb1, beta2, omb2, step_size, bc2s, eps}};
 *   fg_op_run(dev, FG_OP_ADAMW, &p, a, 2, stream);
 *
 * The ops and what each stream and parameter slot means are listed in elem/op_table.h.
 * Each element is computed by the op's elem/ function on every backend, so a CPU run and a
 * CUDA run give the same bits (compare with memcmp), for any thread count and any list.
 * A list is one launch on CUDA (a chunk table: many small tensors share a launch, large
 * ones are split) and one OpenMP loop on the CPU; 1,000 tensors cost one call, not 1,000.
 *
 * s NULL runs synchronously on the device's default stream; otherwise the op is queued on s
 * and fg_op_params.dscalar (and every pointer) must stay valid until s completes. The
 * argument list itself is copied before return. Calls with s NULL may come from several
 * threads at once (they take turns on the device's stream); a stream passed explicitly,
 * fg_device_stream(dev) included, is used by one thread at a time, as device.h says. */
#ifndef FORGIA_OPS_H
#define FORGIA_OPS_H

#include <stddef.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/elem/op_params.h"
#include "forgia/elem/op_table.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Each op's number is written in its table row (elem/op_table.h); the count is the rows'. */
typedef enum fg_op_kind {
#define FG_OP_ENUM_(E, id, name, W, ns, rm, wm, dts) FG_OP_##E = id,
  FG_OP_TABLE(FG_OP_ENUM_)
#undef FG_OP_ENUM_
#define FG_OP_ONE_(E, id, name, W, ns, rm, wm, dts) +1
  FG_OP_KIND_COUNT = 0 FG_OP_TABLE(FG_OP_ONE_)
#undef FG_OP_ONE_
} fg_op_kind;

/* "adamw", ...; NULL for an unknown kind. */
FG_API const char *fg_op_name(fg_op_kind op);

/* Validates everything (op, dtypes per stream, NULL pointers, read-only memory is not
 * checked here: see fg_tensor.readonly) before anything runs. */
FG_API fg_status fg_op_run(fg_device *dev, fg_op_kind op, const fg_op_params *params, const fg_op_args *list,
                           size_t count, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
