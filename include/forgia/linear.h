/* A linear layer over weights kept as the checkpoint stores them:
 *
 *   y[t][o] (+)= sum over i of x[t][i] * W[o][i]      x: n_tok x n_in f32, W: n_out x n_in
 *
 * W is f32, f16, bf16 or any ggml block type forgia decodes (Q4_0, Q4_1, Q8_0, the K-quants,
 * the i-quants ...): it stays quantized in device memory and is decoded tile by tile, so a
 * Q4_K_M model occupies its file size. Decoding uses forgia/elem/quant_decode.h: the values
 * are ggml's dequantized values.
 *
 * Modes (forgia/gemm.h's fg_gemm_mode):
 *   FG_GEMM_EXACT  each y[t][o]: acc = +0; for i = 0 .. n_in - 1: acc = acc + x[t][i] * w_oi,
 *                  every operation rounded to f32 and never fused; then y = acc, or
 *                  y = y + acc when accumulating. The same bits on every device and for any
 *                  thread count.
 *   FG_GEMM_FAST, FG_GEMM_FAST_TF32   whatever order is fastest (BLAS/cuBLAS on decoded
 *                  tiles, vector dot products for a few tokens); results within rounding of
 *                  the exact mode.
 *   FG_GEMM_DEFAULT                   the device's mode (fg_device_set_gemm_mode).
 * s NULL runs synchronously on the device's own stream; otherwise the call is queued on s
 * and every pointer must stay valid until s completes. */
#ifndef FORGIA_LINEAR_H
#define FORGIA_LINEAR_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/dtype.h"
#include "forgia/gemm.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x, w and y are device memory of dev (host memory for the CPU); y must not overlap x or w.
 * n_in must be a multiple of w_type's block size. accumulate adds into y instead of
 * overwriting it. n_tok == 0 or n_out == 0 does nothing. Everything is validated before
 * anything runs; a failed call leaves y untouched. */
FG_API fg_status fg_linear(fg_device *dev, fg_gemm_mode mode, const float *x, size_t n_tok, size_t n_in, const void *w,
                           fg_dtype w_type, size_t n_out, float *y, bool accumulate, fg_stream *s);

/* The input gradient of fg_linear, through the same stored W:
 *
 *   dx[t][i] (+)= sum over o of dy[t][o] * W[o][i]      dy: n_tok x n_out, dx: n_tok x n_in
 *
 * FG_GEMM_EXACT: acc = +0; for o = 0 .. n_out - 1: acc = acc + dy[t][o] * w_oi, every
 * operation rounded to f32 and never fused; then dx = acc, or dx = dx + acc. The same bits on
 * every device and for any thread count. The fast modes: any order, within rounding. The
 * arguments obey fg_linear's rules (dx must not overlap dy or w); dx being the output here,
 * n_tok == 0 or n_in == 0 does nothing and n_out == 0 makes every sum +0. */
FG_API fg_status fg_linear_backward_x(fg_device *dev, fg_gemm_mode mode, const float *dy, size_t n_tok, size_t n_out,
                                      const void *w, fg_dtype w_type, size_t n_in, float *dx, bool accumulate,
                                      fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
