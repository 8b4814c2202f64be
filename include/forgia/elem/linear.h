/* The linear layer's arithmetic (forgia/linear.h), shared by the CPU launcher
 * (cpu/cpu_linear.c), the CUDA kernels (cuda/kernels/linear.cu) and the tests' scalar
 * reference. A row of W is decoded block by block with fg_dequant_block (ggml's values);
 * the exact mode's output is then
 *
 *   acc = +0; for i in order: acc = fg_gemm_exact_step(acc, x_i, w_i)     (no fused multiply-add)
 *   y   = fg_linear_out(acc, accumulate, y_old)
 *
 * and the kernels may decode, tile and vectorise across outputs and tokens as they like as
 * long as every output keeps its own accumulator and this order. A NaN result is written as
 * the canonical quiet NaN, as the exact GEMM does: CPUs and GPUs propagate payloads
 * differently. */
#ifndef FORGIA_ELEM_LINEAR_H
#define FORGIA_ELEM_LINEAR_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/elem/gemm_exact.h"
#include "forgia/elem/quant_decode.h"

/* The largest block fg_dequant_block writes (the K-quants' 256 elements). */
#define FG_LINEAR_MAX_BLOCK 256u

/* One validated call (device/linear.c builds it). mode is FAST, FAST_TF32 or EXACT (never
 * DEFAULT); n_tok, n_out > 0; n_in is a whole number of blocks, and may be 0 (every sum is
 * then +0: the kernels take the exact mode's path). */
typedef struct fg_linear_call {
  int mode; /* fg_gemm_mode */
  const float *x;
  size_t n_tok, n_in, n_out;
  const void *w;
  fg_dtype w_type;
  unsigned block_elems, block_bytes; /* of w_type */
  size_t row_bytes;                  /* bytes of one row of W: n_in / block_elems blocks */
  float *y;
  bool accumulate;
} fg_linear_call;

/* One validated call of the input gradient (device/linear.c builds it): dx[t][i] (+)=
 * sum over o of dy[t][o] * W[o][i], W as in fg_linear_call. mode as above; n_tok, n_in > 0
 * (n_in a whole number of blocks); n_out may be 0 (every sum is then +0: the kernels take
 * the exact mode's path). The exact order is o ascending, one accumulator per (t, i):
 *
 *   acc = +0; for o in order: acc = fg_gemm_exact_step(acc, dy[t][o], w[o][i])
 *   dx  = fg_linear_out(acc, accumulate, dx_old) */
typedef struct fg_linear_bwd_call {
  int mode; /* fg_gemm_mode */
  const float *dy;
  size_t n_tok, n_out, n_in;
  const void *w;
  fg_dtype w_type;
  unsigned block_elems, block_bytes; /* of w_type */
  size_t row_bytes;                  /* bytes of one row of W */
  float *dx;
  bool accumulate;
} fg_linear_bwd_call;

/* The stored value of an output whose sum is acc. */
static inline FG_HD float fg_linear_out(float acc, bool accumulate, float y_old) {
  return fg_gemm_exact_canonical(accumulate ? fg_gemm_exact_add(y_old, acc) : acc);
}

#endif
