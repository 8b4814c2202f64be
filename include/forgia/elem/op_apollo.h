/* The apollo ops of the op table (elem/op_table.h includes this header and expands
 * FG_OP_TABLE_APOLLO at the end of FG_OP_TABLE). Same rules as there. Also the per-channel
 * and per-tensor elements of APOLLO's non-elementwise steps (forgia/apollo.h), shared by the
 * CPU loops and the CUDA kernels. Fucina's Apollo (its src/optim.zig Apollo.step, from the
 * projected moments to the scaled-SGD update), every + and * rounded on its own. */
#ifndef FORGIA_ELEM_OP_APOLLO_H
#define FORGIA_ELEM_OP_APOLLO_H

#include <math.h>
#include <stddef.h>

#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"
#include "forgia/elem/op_params.h"

/* apollo_moment: s0 m, s1 v, s2 r (the projected gradient), all f32; f[0] beta1, f[1] omb1 =
 * f32(1 - beta1), f[2] beta2, f[3] omb2. No lerp: (beta1 * m) + (omb1 * r). */
static inline FG_HD void fg_op_apollo_moment(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                             uint64_t c) {
  (void)seed, (void)c;
  const float r = v[0][2];
  v[0][0] = P->f[0] * v[0][0] + P->f[1] * r;
  v[0][1] = P->f[2] * v[0][1] + (P->f[3] * r) * r;
}

/* apollo_apply: s0 param, s1 the scaled update u (f32); f[0] back = sqrt(scale) or 1,
 * f[1] step_size, f[2] decay alpha = f32(-(lr * wd)) or 0; *dscalar the norm-growth limiter
 * (NULL: 1). The decay comes after the step, on the stepped value (legacy HF order). */
static inline FG_HD void fg_op_apollo_apply(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                            uint64_t c) {
  (void)seed, (void)c;
  const float lim = P->dscalar ? (float)*P->dscalar : 1.0f;
  const float adj = (v[0][1] / lim) * P->f[0];
  const float st = v[0][0] - P->f[1] * adj;
  v[0][0] = st + P->f[2] * st;
}
static inline FG_HD void fg_op_apollo_apply_master(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS],
                                                   uint64_t seed, uint64_t c) {
  fg_op_apollo_apply(P, v, seed, c);
  v[0][4] = v[0][0];
}

/* apollo_hf_adamw (APOLLO's fallback, legacy HF AdamW): s0 param, s1 grad, s2 m, s3 v (f32);
 * f[0] beta1, f[1] omb1, f[2] beta2, f[3] omb2, f[4] step_size, f[5] eps, f[6] decay alpha. */
static inline FG_HD void fg_op_apollo_hf_adamw(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                               uint64_t c) {
  (void)seed, (void)c;
  const float g = v[0][1];
  const float m = P->f[0] * v[0][2] + P->f[1] * g;
  const float s = P->f[2] * v[0][3] + (P->f[3] * g) * g;
  v[0][2] = m;
  v[0][3] = s;
  const float st = v[0][0] - P->f[4] * (m / (sqrtf(s) + P->f[5]));
  v[0][0] = st + P->f[6] * st;
}
static inline FG_HD void fg_op_apollo_hf_adamw_master(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS],
                                                      uint64_t seed, uint64_t c) {
  fg_op_apollo_hf_adamw(P, v, seed, c);
  v[0][4] = v[0][0];
}

#define FG_OP_TABLE_APOLLO(X)                                                      \
  X(APOLLO_MOMENT, 22, apollo_moment, 1, 3, 0x7u, 0x3u,                            \
    FG_OP_DTS(FG_OP_G, FG_OP_G, FG_OP_G, 0u, 0u, 0u))                              \
  X(APOLLO_APPLY, 23, apollo_apply, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_F, FG_OP_G)) \
  X(APOLLO_APPLY_MASTER, 24, apollo_apply_master, 1, 5, 0x3u, 0x11u,               \
    FG_OP_DTS(FG_OP_G, FG_OP_G, 0u, 0u, FG_OP_F, 0u))                              \
  X(APOLLO_HF_ADAMW, 25, apollo_hf_adamw, 1, 4, 0xFu, 0xDu,                        \
    FG_OP_DTS(FG_OP_F, FG_OP_G, FG_OP_G, FG_OP_G, 0u, 0u))                         \
  X(APOLLO_HF_ADAMW_MASTER, 26, apollo_hf_adamw_master, 1, 5, 0xFu, 0x1Du,         \
    FG_OP_DTS(FG_OP_G, FG_OP_G, FG_OP_G, FG_OP_G, FG_OP_F, 0u))

/* A NaN as the canonical quiet NaN (elem/op_table.h's rule, for the values stored here). */
static inline FG_HD float fg_apollo_canon(float v) { return v != v ? fg_bits_f32(0x7fc00000u) : v; }

/* How the channels of an APOLLO update lie (forgia/apollo.h). TALL (rows >= cols): R is
 * rows x rank, channel = row; WIDE: R is rank x cols, channel = column; WHOLE (tensor
 * scaling): one channel over all of R. */
typedef enum fg_apollo_layout {
  FG_APOLLO_LAYOUT_TALL = 0,
  FG_APOLLO_LAYOUT_WIDE = 1,
  FG_APOLLO_LAYOUT_WHOLE = 2
} fg_apollo_layout;

/* The scaling factor of one channel: the count elements first, first + stride, ... of R (in
 * flat order), so = sum of f64(o)^2 with o = m / (sqrt(v) + eps) in f32, sr = sum of f64(r)^2,
 * f32(sqrt(so) / (sqrt(sr) + 1e-8)). */
static inline FG_HD float fg_apollo_channel_factor(const float *m, const float *v, const float *r, size_t first,
                                                   size_t count, size_t stride, float eps) {
  double so = 0.0, sr = 0.0;
  size_t i = first;
  for (size_t k = 0; k < count; k++, i += stride) {
    const float o = m[i] / (sqrtf(v[i]) + eps);
    so = so + (double)o * (double)o;
    sr = sr + (double)r[i] * (double)r[i];
  }
  return fg_apollo_canon((float)(sqrt(so) / (sqrt(sr) + 1e-8)));
}

/* Channel c's slice of R for a layout: first, count and stride. */
static inline FG_HD void fg_apollo_channel_span(int layout, size_t rows, size_t cols, size_t rank, size_t c,
                                                size_t *first, size_t *count, size_t *stride) {
  if (layout == FG_APOLLO_LAYOUT_TALL) {
    *first = c * rank, *count = rank, *stride = 1;
  } else if (layout == FG_APOLLO_LAYOUT_WIDE) {
    *first = c, *count = rank, *stride = cols;
  } else {
    *first = 0, *count = (rows >= cols ? rows : cols) * rank, *stride = 1;
  }
}

/* Element i of U = (G * s[channel]) * front. */
static inline FG_HD float fg_apollo_build_at(int layout, const float *g, const float *s, size_t cols, size_t i,
                                             float front) {
  const size_t ch = layout == FG_APOLLO_LAYOUT_TALL ? i / cols : layout == FG_APOLLO_LAYOUT_WIDE ? i % cols : 0;
  return fg_apollo_canon((g[i] * s[ch]) * front);
}

/* The Fira norm-growth limiter (gamma 1.01) from the sum of squares of U: cur = f32(sqrt(sumsq));
 * with a previous norm (>= 0), lim = max(cur / (prev + 1e-8), 1.01) / 1.01 and prev = cur / lim;
 * else prev = cur and lim = 1. Zig's @max returns the other operand of a NaN. */
static inline FG_HD float fg_apollo_limit_eval(double sumsq, float *prev) {
  const float cur = (float)sqrt(sumsq);
  if (!(*prev >= 0.0f)) {
    *prev = fg_apollo_canon(cur);
    return 1.0f;
  }
  const float x = cur / (*prev + 1e-8f);
  const float mx = x != x ? 1.01f : (x > 1.01f ? x : 1.01f);
  const float lim = mx / 1.01f;
  *prev = fg_apollo_canon(cur / lim);
  return lim;
}

#endif
