/* RMSNorm's arithmetic, shared by the CPU launcher (cpu/cpu_rmsnorm.c), the CUDA kernels
 * (cuda/kernels/rmsnorm.cu) and the tests' scalar reference (docs/design.md, "Numerics
 * contract", rules 1 and 3). Over one row x of n values and a weight w:
 *
 *   ss   = the row grid's f64 sum of x_i^2 (below)
 *   rstd = f32(1 / sqrt(ss / n + eps))            in f64, rounded once
 *   y_i  = (x_i * rstd) * (w_i + offset)          in f32 (offset 1 for Gemma's 1 + w)
 *
 * and backward, from the rstd the forward pass saved:
 *
 *   g_i  = dy_i * (w_i + offset)                  in f32
 *   dot  = the row grid's f64 sum of g_i * x_i
 *   dx_i = f32(rstd * g_i - (dot / n) * rstd^3 * x_i)   in f64
 *   dw_i = f32(sum over rows, in row order, of dy_i * (x_i * rstd))   the sum in f64
 *
 * The row grid: lane j (0..31) adds the values at j, j + 32, j + 64, ... in that order from
 * +0.0; then, for h = 16, 8, 4, 2, 1, lane j < h adds lane j + h to itself. That is the fold a
 * CUDA warp does with shuffles, and the CPU runs the same additions, so both give the same
 * bits for any thread count. x and w may be f32, f16 or bf16 (widened exactly); the rest is f32. */
#ifndef FORGIA_ELEM_RMSNORM_H
#define FORGIA_ELEM_RMSNORM_H

#include <math.h>
#include <stddef.h>

#include "forgia/elem/dtype_enum.h"
#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"

#define FG_ROW_LANES 32u

/* One validated call (device/rmsnorm.c builds it; forgia/rmsnorm.h states the contract). */
typedef struct fg_rmsnorm_call {
  int backward;
  size_t rows, cols;
  const void *x;
  fg_dtype x_dtype;
  const void *w;
  fg_dtype w_dtype;
  float offset, eps;
  float *y;         /* forward */
  float *rstd;      /* forward: written when not NULL; backward: read */
  const float *dy;  /* backward */
  float *dx, *dw;   /* backward; either may be NULL */
} fg_rmsnorm_call;

/* Element i of an f32, f16 or bf16 array, widened to f32. */
static inline FG_HD float fg_row_load(const void *p, fg_dtype d, size_t i) {
  if (d == FG_F16) return fg_f16_to_f32(((const uint16_t *)p)[i]);
  if (d == FG_BF16) return fg_bf16_to_f32(((const uint16_t *)p)[i]);
  return ((const float *)p)[i];
}

/* The row grid's fold of the 32 lane sums (s is overwritten); returns the row's sum. */
static inline FG_HD double fg_row_fold(double *s) {
  for (unsigned h = FG_ROW_LANES / 2; h >= 1; h /= 2)
    for (unsigned j = 0; j < h; j++) s[j] = s[j] + s[j + h];
  return s[0];
}

static inline FG_HD float fg_rmsnorm_rstd(double ss, size_t n, float eps) {
  return (float)(1.0 / sqrt(ss / (double)n + (double)eps));
}

static inline FG_HD float fg_rmsnorm_y(float x, float rstd, float w, float offset) { return (x * rstd) * (w + offset); }

/* The backward pass's per-row coefficient of x_i: (dot / n) * rstd^3, in f64. */
static inline FG_HD double fg_rmsnorm_coef(double dot, size_t n, float rstd) {
  const double r = (double)rstd;
  return (dot / (double)n) * ((r * r) * r);
}

static inline FG_HD float fg_rmsnorm_dx(float x, float g, float rstd, double coef) {
  return (float)((double)rstd * (double)g - coef * (double)x);
}

/* Lane j's term of the backward row sum for element i: g_i * x_i in f64. */
static inline FG_HD double fg_rmsnorm_dot_term(float x, float dy, float w, float offset) {
  return (double)(dy * (w + offset)) * (double)x;
}

/* Row r's term of dw_i: dy_i * (x_i * rstd_r), in f64. */
static inline FG_HD double fg_rmsnorm_dw_term(float x, float dy, float rstd) { return (double)dy * (double)(x * rstd); }

#endif
