/* Softmax over the rows of a matrix, and the negative log-likelihood of a target column per
 * row (the cross-entropy of language-model logits), with its gradient.
 *
 * Over one row x of n values, with the 32-lane row grid of forgia/elem/rmsnorm.h for sums
 * (lane j adds j, j + 32, ... in order; then the fixed fold), so every backend gives the same
 * bits for any thread count:
 *
 *   m      = max_j x_j                       (f32, exact)
 *   e_j    = fg_exp_f32(x_j - m)             (forgia/elem/fmath.h)
 *   S      = row-grid f64 sum of e_j
 *   y_j    = f32(e_j / S)                    in f64, rounded once       (softmax)
 *   lse    = m + fg_log_f64(S)               in f64
 *   nll    = lse - x_target                  in f64                     (cross-entropy)
 *   dx_j   = f32(scale * (e_j / S - [j == target]))  in f64             (its gradient)
 *
 * All pointers are device memory of dev. s NULL runs synchronously on the device's own
 * stream; otherwise the call is queued on s. rows == 0 does nothing. */
#ifndef FORGIA_SOFTMAX_H
#define FORGIA_SOFTMAX_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = softmax of each row of x (rows x cols f32); y may equal x (in place), not overlap it
 * otherwise. cols > 0. */
FG_API fg_status fg_softmax_rows(fg_device *dev, const float *x, size_t rows, size_t cols, float *y, fg_stream *s);

/* nll[r] (f64) for the target column targets[r] of each row of logits (rows x cols f32). A
 * target outside [0, cols) gives NaN for its row. cols > 0. */
FG_API fg_status fg_softmax_nll(fg_device *dev, const float *logits, size_t rows, size_t cols, const int32_t *targets,
                                double *nll, fg_stream *s);

/* dlogits = scale * (softmax(logits) - onehot(target)) per row (rows x cols f32): the
 * gradient of scale * sum of nll. A target outside [0, cols) gives a row of NaN. dlogits
 * must not overlap logits. scale finite. */
FG_API fg_status fg_softmax_nll_backward(fg_device *dev, const float *logits, size_t rows, size_t cols,
                                         const int32_t *targets, float scale, float *dlogits, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
