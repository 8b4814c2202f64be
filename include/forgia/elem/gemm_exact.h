/* The exact GEMM mode (forgia/gemm.h), one output at a time.
 *
 *   acc = +0; for p = 0 .. k-1 in order: acc = fg_gemm_exact_step(acc, op(A)[i,p], op(B)[p,j])
 *   C[i,j] = fg_gemm_exact_out(acc, alpha, beta, beta == 0 ? 0 : C[i,j])    (alpha != 0, k > 0)
 *   C[i,j] = fg_gemm_exact_scale(beta, beta == 0 ? 0 : C[i,j])             (alpha == 0 or k == 0)
 *
 * This is Fucina's scalar matmul2D (`var acc: f32 = 0; acc += a * b` in ascending p, Zig's
 * strict float mode: no contraction). The CPU kernels may tile i and j and vectorise across j,
 * and the CUDA kernel may stage tiles in shared memory, but every output keeps its own
 * accumulator and this order. acc is never -0 (it starts at +0 and a sum is -0 only when both
 * terms are), so a zero product added in padding could not change it; the kernels still
 * stop at k rather than rely on that. */
#ifndef FORGIA_ELEM_GEMM_EXACT_H
#define FORGIA_ELEM_GEMM_EXACT_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"

/* acc + a * b, the product rounded to f32 before the add: host code relies on
 * -ffp-contract=off (a usage requirement of forgia), device code says so with the _rn
 * intrinsics, so even a build without --fmad=false cannot fuse them. The macro is the same
 * step on whole vectors of lanes (GCC/Clang vector types, lane-wise IEEE), for the CPU's
 * vectorised kernels. */
#define FG_GEMM_EXACT_STEP_LANES(acc, a, b) ((acc) + (a) * (b))

static inline FG_HD float fg_gemm_exact_step(float acc, float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(acc, __fmul_rn(a, b));
#else
  return FG_GEMM_EXACT_STEP_LANES(acc, a, b);
#endif
}

static inline FG_HD float fg_gemm_exact_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

static inline FG_HD float fg_gemm_exact_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

/* NaN payloads propagate differently on CPUs and GPUs (and with operand order): one NaN. */
static inline FG_HD float fg_gemm_exact_canonical(float x) {
  return x != x ? fg_bits_f32(0x7fc00000u) : x;
}

/* c_old is read by the caller only when beta != 0. */
static inline FG_HD float fg_gemm_exact_out(float acc, float alpha, float beta, float c_old) {
  float t = fg_gemm_exact_mul(alpha, acc);
  if (beta != 0.0f) t = fg_gemm_exact_add(t, fg_gemm_exact_mul(beta, c_old));
  return fg_gemm_exact_canonical(t);
}

/* No product term (alpha == 0 or k == 0): BLAS's C = beta * C, with beta == 0 writing +0. */
static inline FG_HD float fg_gemm_exact_scale(float beta, float c_old) {
  return beta != 0.0f ? fg_gemm_exact_canonical(fg_gemm_exact_mul(beta, c_old)) : 0.0f;
}

/* Element i of an f32 (bf16 == 0) or bf16 array; bf16 widens exactly. */
static inline FG_HD float fg_gemm_exact_load(const void *p, int bf16, size_t i) {
  return bf16 ? fg_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* The accumulator of one output: a at op(A)[i,0] stepping a_step elements per p, b at
 * op(B)[0,j] stepping b_step. */
static inline FG_HD float fg_gemm_exact_dot(const void *a, int a_bf16, size_t a_step, const void *b, int b_bf16,
                                            size_t b_step, size_t k) {
  float acc = 0.0f;
  for (size_t p = 0; p < k; p++)
    acc = fg_gemm_exact_step(acc, fg_gemm_exact_load(a, a_bf16, p * a_step), fg_gemm_exact_load(b, b_bf16, p * b_step));
  return acc;
}

#endif
