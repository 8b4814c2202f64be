/* Reductions on the device: sum, sum of squares and max-abs, per tensor and over a list of
 * tensors, with the results left in device memory.
 *
 *   double *d;                                        // 1 + count doubles on dev
 *   fg_device_mem_alloc(dev, (1 + count) * sizeof(double), (void **)&d);
 *   fg_reduce_tensors(dev, FG_REDUCE_SUMSQ, grads, count, d + 1, d, s);   // queued on s
 *   fg_op_params p = {.f = {max_norm}, .dscalar = d};
 *   fg_op_run(dev, FG_OP_CLIP_SCALE, &p, list, count, s);                // no host round trip
 *   double host;  fg_device_copy_async(dev, &host, d, 8, FG_COPY_D2H, s); // reading is a copy
 *
 * Every result is computed in f64 on the fixed grid of elem/reduce.h, which is Fucina's
 * sumSquares grid: the same bits on every device and for any thread count, and for the sum
 * of squares of f32 values the bits Fucina computes. The total of a list combines the
 * per-tensor results in list order (a sum for SUM and SUMSQ, a maximum for MAXABS), as
 * Fucina's clipGradNorm does. Values are f32, f16 or bf16 (widened exactly); an empty
 * tensor gives 0. NaN: a NaN value (or, for SUM, inf + -inf) gives NaN, always the canonical
 * quiet NaN (bits 0x7ff8000000000000); MAXABS of anything holding a NaN is NaN.
 *
 * per_tensor (count doubles) and total (one double) are device memory on dev; either may be
 * NULL, not both. s NULL runs synchronously on the device's own stream (fg_device_stream);
 * otherwise the work is queued on s and the input arrays, per_tensor and total must stay
 * valid until s completes; the lists of pointers, dtypes and lengths are read before return.
 * The partials live in the stream's scratch memory, so repeated calls allocate no device
 * memory: use a stream from one thread at a time (calls with s NULL may come from many
 * threads: they take turns on the device's stream). */
#ifndef FORGIA_REDUCE_H
#define FORGIA_REDUCE_H

#include <stddef.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/dtype.h"
#include "forgia/elem/reduce_op.h"
#include "forgia/status.h"
#include "forgia/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "sum", "sumsq", "maxabs"; NULL for an unknown op. */
FG_API const char *fg_reduce_op_name(fg_reduce_op op);

/* count arrays on dev: xs[t] holds ns[t] values of dtypes[t]. */
FG_API fg_status fg_reduce_list(fg_device *dev, fg_reduce_op op, const void *const *xs, const fg_dtype *dtypes,
                                const size_t *ns, size_t count, double *per_tensor, double *total, fg_stream *s);

/* One array: *out (device memory) = its result. */
FG_API fg_status fg_reduce_array(fg_device *dev, fg_reduce_op op, const void *x, fg_dtype dtype, size_t n,
                                 double *out, fg_stream *s);

/* The data of count tensors on dev (each tensor's data, numel and dtype). */
FG_API fg_status fg_reduce_tensors(fg_device *dev, fg_reduce_op op, const fg_tensor *const *ts, size_t count,
                                   double *per_tensor, double *total, fg_stream *s);

/* *out = ((0 + x[0]) + x[1]) + ... : n doubles in device memory summed in order, on the
 * device (totals of totals, such as the squared gradient norm of a set of optimizers, whose
 * members each sum their own parameters first, as Fucina does). */
FG_API fg_status fg_reduce_f64_sum(fg_device *dev, const double *x, size_t n, double *out, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
