/* APOLLO's three non-elementwise steps on the device (the optimizer in forgia/optim.h runs
 * them; the elementwise ones are ops of elem/op_apollo.h). All memory is device memory of dev,
 * every value f32 unless said otherwise; the arithmetic is elem/op_apollo.h's on every
 * backend, so CPU and CUDA give the same bits, which are Fucina's.
 *
 *   FG_APOLLO_LAYOUT_TALL  (rows >= cols): R is rows x rank, one factor per row;
 *   FG_APOLLO_LAYOUT_WIDE  (rows < cols):  R is rank x cols, one factor per column;
 *   FG_APOLLO_LAYOUT_WHOLE (tensor scaling): R is max(rows, cols) * rank values, one factor.
 *
 * s NULL runs synchronously on the device's own stream; otherwise the call is queued on s and
 * every pointer must stay valid until s completes. */
#ifndef FORGIA_APOLLO_H
#define FORGIA_APOLLO_H

#include <stddef.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/elem/op_apollo.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* scaling[c] = f32(sqrt(so_c) / (sqrt(sr_c) + 1e-8)) per channel c (rows, cols or 1 of them):
 * so_c and sr_c are the f64 sums, in R's flat order, of o^2 (o = m / (sqrt(v) + eps), f32) and
 * of r^2 over the channel's values of m, v and r (each rank x channels long). */
FG_API fg_status fg_apollo_scaling(fg_device *dev, fg_apollo_layout layout, size_t rows, size_t cols, size_t rank, const float *m,
                                   const float *v, const float *r, float eps, float *scaling, fg_stream *s);
/* u = (g * scaling[channel]) * front over the rows x cols gradient g (channel: the row for
 * TALL, the column for WIDE, 0 for WHOLE). u must not overlap g. */
FG_API fg_status fg_apollo_build(fg_device *dev, fg_apollo_layout layout, size_t rows, size_t cols, const float *g,
                                 const float *scaling, float front, float *u, fg_stream *s);
/* The norm-growth limiter from *sumsq (f64, the sum of squares of u): updates *prev_norm and
 * writes the factor u is divided by, widened to f64, to *limiter (for fg_op_params.dscalar). */
FG_API fg_status fg_apollo_limit(fg_device *dev, const double *sumsq, float *prev_norm, double *limiter,
                                 fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
