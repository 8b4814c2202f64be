/* The fixed reduction grid (DESIGN.md, numerics rule 3).
 *
 * Input: n f32 values x[0..n). Output: sum and sum of squares in f64.
 *
 *   chunk c covers x[c*FG_REDUCE_CHUNK .. (c+1)*FG_REDUCE_CHUNK) (the last one may be short);
 *   lane l of a chunk (0 <= l < FG_REDUCE_LANES) accumulates, in f64 and in index order,
 *     x[c*CHUNK + l + k*LANES] for k = 0, 1, ... while inside the chunk and below n;
 *   the LANES lane values of a chunk combine by the pairwise tree fg_reduce_tree
 *     (step s = LANES/2, LANES/4, ..., 1: v[i] += v[i+s] for i < s);
 *   the chunk values combine by the same tree over the next power of two, missing
 *     entries being +0.0.
 *
 * A CUDA block of LANES threads computes one chunk exactly this way (shared-memory tree in
 * the same order); the CPU runs chunks on any number of threads and emulates the same tree,
 * so the bits do not depend on the device or the thread count. x*x is exact in f64 (24-bit
 * significands), so contraction could not change it either. A NaN result is returned as the
 * canonical quiet NaN, because NaN payload propagation differs between CPUs and GPUs. */
#ifndef FORGIA_ELEM_REDUCE_H
#define FORGIA_ELEM_REDUCE_H

#include <stddef.h>

#include "forgia/elem/hd.h"

#define FG_REDUCE_CHUNK 4096
#define FG_REDUCE_LANES 256

typedef struct fg_sum2 {
  double sum, sumsq;
} fg_sum2;

static inline FG_HD size_t fg_reduce_nchunks(size_t n) { return (n + FG_REDUCE_CHUNK - 1) / FG_REDUCE_CHUNK; }

/* Lane l of chunk c. */
static inline FG_HD fg_sum2 fg_reduce_lane(const float *x, size_t n, size_t c, unsigned l) {
  fg_sum2 a = {0.0, 0.0};
  size_t end = (c + 1) * (size_t)FG_REDUCE_CHUNK;
  if (end > n) end = n;
  for (size_t i = c * (size_t)FG_REDUCE_CHUNK + l; i < end; i += FG_REDUCE_LANES) {
    double v = (double)x[i];
    a.sum = a.sum + v;
    a.sumsq = a.sumsq + v * v;
  }
  return a;
}

/* In-place pairwise tree over count values (count a power of two); result in v[0]. */
static inline FG_HD void fg_reduce_tree(fg_sum2 *v, size_t count) {
  for (size_t s = count / 2; s > 0; s /= 2) {
    for (size_t i = 0; i < s; i++) {
      v[i].sum = v[i].sum + v[i + s].sum;
      v[i].sumsq = v[i].sumsq + v[i + s].sumsq;
    }
  }
}

/* Host side: applied once to the final result. */
static inline double fg_reduce_canonical(double d) {
  return d != d ? __builtin_nan("") : d;
}

#endif
