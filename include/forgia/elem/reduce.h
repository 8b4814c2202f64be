/* The fixed reduction grid (docs/design.md, Numerics contract, rule 3): Fucina's sumSquares
 * grid (its src/optim.zig, sumSquares / sumSquaresChunk), used for every
 * reduction, so that clipping, the APOLLO limiter and Muon see Fucina's bits.
 *
 * Each value is widened exactly (f16/bf16 -> f32 -> f64) and mapped by the op: v (SUM),
 * v*v (SUMSQ; exact in f64, so contraction could not change it) or |v| (MAXABS). Values
 * combine with (+): f64 addition for SUM and SUMSQ, a NaN-propagating maximum for MAXABS.
 *
 *   The grid depends only on the length n: chunks of FG_REDUCE_CHUNK = 2^15 elements, the
 *   last one possibly short. In a chunk of m elements, FG_REDUCE_LANES = 16 f64 lanes start
 *   at +0.0 (Fucina's four 4-lane accumulators A0..A3: lane j is A[j/4][j%4]), then
 *     1. for k = 0 .. m/16-1 ascending: lane j (+)= f(x[16k + j]);
 *     2. each whole group of 4 after those strides, in order: lane q (+)= f(its element q),
 *        q = 0..3 (Fucina's leftover groups, into A0);
 *     3. c_q = (lane q (+) lane 4+q) (+) (lane 8+q (+) lane 12+q), then
 *        r = ((c_0 (+) c_1) (+) c_2) (+) c_3;
 *     4. the last m % 4 elements in index order: r (+)= f(x[i]).
 *   A tensor's result is +0.0 (+) r_0 (+) r_1 (+) ... in chunk order (Fucina returns a
 *   lone chunk as is; the same bits, since r is never -0.0). No values give +0.0.
 *   A list's total is +0.0 (+) result_0 (+) result_1 (+) ... in list order: Fucina's
 *   gradSquaredNorm, which clipGradNorm takes the square root of.
 *
 * Every result, partial or final, is therefore a pure function of the values: the same bits
 * on every device and for any thread count, and for SUMSQ of f32 values Fucina's own bits.
 * The CPU (cpu/cpu_reduce.c) and the CUDA kernel (cuda/kernels/reduce.cu) call the
 * functions below; they differ only in how they schedule chunks and stage memory.
 *
 * NaN: any NaN value (or, for SUM, inf + -inf) makes the result NaN, stored as the canonical
 * quiet NaN 0x7ff8000000000000 (fg_reduce_canonical), because CPUs and GPUs propagate NaN
 * payloads differently. MAXABS is NaN when any value is NaN; a NaN per-tensor result makes
 * the list total NaN for every op. */
#ifndef FORGIA_ELEM_REDUCE_H
#define FORGIA_ELEM_REDUCE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/dtype_enum.h"
#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"
#include "forgia/elem/reduce_op.h"

#define FG_REDUCE_CHUNK 32768u /* 2^15, Fucina's sumsq_chunk_len */
#define FG_REDUCE_LANES 16u    /* 4 accumulators x 4 lanes = one 16-element stride */

/* Chunks of a tensor of n values; an empty tensor has one empty chunk (result +0.0), so
 * that every tensor of a list owns at least one partial. */
static inline FG_HD size_t fg_reduce_nchunks(size_t n) { return n ? (n - 1) / FG_REDUCE_CHUNK + 1 : 1; }

/* Element i of x, widened exactly (dtype f32, f16 or bf16). */
static inline FG_HD float fg_reduce_widen(const void *x, fg_dtype t, size_t i) {
  if (t == FG_F16) return fg_f16_to_f32(((const uint16_t *)x)[i]);
  if (t == FG_BF16) return fg_bf16_to_f32(((const uint16_t *)x)[i]);
  return ((const float *)x)[i];
}

static inline FG_HD double fg_reduce_map(int op, float x) {
  const double v = (double)x;
  if (op == FG_REDUCE_SUMSQ) return v * v;
  if (op == FG_REDUCE_MAXABS) return fabs(v);
  return v;
}

/* (+). The maximum is NaN when either side is; written as three selects, the form GCC
 * vectorises (compares and blends) in the CPU loop. */
static inline FG_HD double fg_reduce_join(int op, double a, double b) {
  if (op == FG_REDUCE_MAXABS) {
    double m = b > a ? b : a;
    m = b != b ? b : m;
    return a != a ? a : m;
  }
  return a + b;
}

static inline FG_HD double fg_reduce_step(int op, double acc, float x) {
  return fg_reduce_join(op, acc, fg_reduce_map(op, x));
}

/* Step 1 over nstrides whole strides of x (x[0] is a stride's first element). */
static inline FG_HD void fg_reduce_strides(int op, double *lane, const float *x, size_t nstrides) {
  for (size_t k = 0; k < nstrides; k++)
    for (unsigned j = 0; j < FG_REDUCE_LANES; j++) lane[j] = fg_reduce_step(op, lane[j], x[k * FG_REDUCE_LANES + j]);
}

/* Steps 2 to 4: lane[] after step 1 and the nrest (< 16) elements after the last stride. */
static inline FG_HD double fg_reduce_chunk_end(int op, const double *lane, const float *rest, unsigned nrest) {
  double a[4];
  for (unsigned q = 0; q < 4; q++) a[q] = lane[q];
  unsigned i = 0;
  for (; i + 4 <= nrest; i += 4)
    for (unsigned q = 0; q < 4; q++) a[q] = fg_reduce_step(op, a[q], rest[i + q]);
  double c[4];
  for (unsigned q = 0; q < 4; q++)
    c[q] = fg_reduce_join(op, fg_reduce_join(op, a[q], lane[4 + q]), fg_reduce_join(op, lane[8 + q], lane[12 + q]));
  double r = fg_reduce_join(op, fg_reduce_join(op, fg_reduce_join(op, c[0], c[1]), c[2]), c[3]);
  for (; i < nrest; i++) r = fg_reduce_step(op, r, rest[i]);
  return r;
}

/* Applied to every result that leaves a reduction (per tensor and total). */
static inline FG_HD double fg_reduce_canonical(double d) {
  union { uint64_t u; double d; } v;
  v.u = 0x7ff8000000000000ull;
  return d != d ? v.d : d;
}

#endif
