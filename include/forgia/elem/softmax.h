/* Softmax's arithmetic (forgia/softmax.h states it), shared by the CPU launcher
 * (cpu/cpu_softmax.c), the CUDA kernel (cuda/kernels/softmax.cu) and the tests' scalar
 * reference. Sums follow the 32-lane row grid of forgia/elem/rmsnorm.h (fg_row_fold). The
 * max propagates NaN (any visiting order gives the same m); NaN outputs are stored as the
 * canonical NaN, since the NaN a CPU and a GPU produce differ in their bits. */
#ifndef FORGIA_ELEM_SOFTMAX_H
#define FORGIA_ELEM_SOFTMAX_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/fmath.h"
#include "forgia/elem/hd.h"
#include "forgia/elem/rmsnorm.h"

typedef enum fg_softmax_kind { FG_SOFTMAX_ROWS, FG_SOFTMAX_NLL, FG_SOFTMAX_NLL_BACKWARD } fg_softmax_kind;

/* One validated call (device/softmax.c builds it). */
typedef struct fg_softmax_call {
  fg_softmax_kind kind;
  size_t rows, cols;
  const float *x;         /* x or logits */
  const int32_t *targets; /* nll, nll_backward */
  float scale;            /* nll_backward */
  float *y;               /* rows: y (may equal x); nll_backward: dlogits */
  double *nll;            /* nll */
} fg_softmax_call;

static inline FG_HD float fg_sm_canon(float v) { return v != v ? fg_bits_f32(0x7fc00000u) : v; }

static inline FG_HD double fg_sm_nan64(void) { return fg_f64_from_bits(0x7ff8000000000000ull); }

static inline FG_HD float fg_sm_max(float a, float b) {
  if (a != a || b != b) return fg_bits_f32(0x7fc00000u);
  return a > b ? a : b;
}

/* The max's start: -inf, so that a row's max is exact whatever its first value. */
static inline FG_HD float fg_sm_max_init(void) { return fg_bits_f32(0xff800000u); }

static inline FG_HD float fg_sm_e(float x, float m) { return fg_exp_f32(x - m); }

static inline FG_HD float fg_sm_y(float e, double S) { return fg_sm_canon((float)((double)e / S)); }

static inline FG_HD double fg_sm_nll(float m, double S, float x_target) {
  const double v = ((double)m + fg_log_f64(S)) - (double)x_target;
  return v != v ? fg_sm_nan64() : v;
}

static inline FG_HD float fg_sm_dx(float e, double S, int is_target, float scale) {
  return fg_sm_canon((float)((double)scale * ((double)e / S - (is_target ? 1.0 : 0.0))));
}

/* Whether row r's target is a column (nll and nll_backward). */
static inline FG_HD int fg_sm_target_ok(const fg_softmax_call *c, size_t r) {
  return c->targets[r] >= 0 && (size_t)c->targets[r] < c->cols;
}

#endif
