/* RMSNorm over the rows of a rows x cols matrix (row-major, cols contiguous): the norm of
 * Llama, Qwen and Gemma blocks, forward and backward. The arithmetic, and the fixed row grid
 * its sums follow, are in forgia/elem/rmsnorm.h: CPU and CUDA give the same bits, for any
 * thread count. All pointers are device memory of dev. x and w may be f32, f16 or bf16;
 * everything written is f32. s NULL runs synchronously on the device's own stream; otherwise
 * the call is queued on s and every pointer must stay valid until s completes. */
#ifndef FORGIA_RMSNORM_H
#define FORGIA_RMSNORM_H

#include <stddef.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[r][i] = (x[r][i] * rstd[r]) * (w[i] + w_offset), rstd[r] = 1 / sqrt(mean of x[r]^2 + eps).
 * w_offset is 0 for Llama and Qwen, 1 for Gemma (which stores w - 1). rstd (rows values) is
 * written when not NULL: the backward pass reads it. y must not overlap x, w or rstd; eps
 * and w_offset must be finite, eps >= 0; rows == 0 does nothing. */
FG_API fg_status fg_rmsnorm_forward(fg_device *dev, const void *x, fg_dtype x_dtype, const void *w, fg_dtype w_dtype,
                                    size_t rows, size_t cols, float eps, float w_offset, float *y, float *rstd,
                                    fg_stream *s);

/* Gradients of the forward pass above given dy (rows x cols) and its saved rstd: dx (rows x
 * cols) and dw (cols), either of which may be NULL (not both). Both are overwritten, not
 * accumulated; dw sums over the rows in row order. Outputs must not overlap the inputs or each
 * other. */
FG_API fg_status fg_rmsnorm_backward(fg_device *dev, const void *x, fg_dtype x_dtype, const void *w, fg_dtype w_dtype,
                                     size_t rows, size_t cols, float w_offset, const float *rstd, const float *dy,
                                     float *dx, float *dw, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
