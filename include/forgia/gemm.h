/* GEMM: C = alpha * op(A) * op(B) + beta * C, row-major, on one device.
 *
 *   op(A) is m x k (A stored m x k, or k x m with trans_a), op(B) is k x n (B stored k x n,
 *   or n x k with trans_b), C is m x n f32. Leading dimensions count elements between rows.
 *   A and B are each f32 or bf16, in any combination (f32 x bf16 too); products and sums
 *   are f32 (bf16 widens to f32 exactly).
 *
 * Two modes:
 *   FG_GEMM_FAST       CBLAS (OpenBLAS) on the CPU, cuBLAS on CUDA with f32 compute (no
 *                      TF32). The bits depend on the library, the device and the thread
 *                      count; tests compare it with a tolerance.
 *   FG_GEMM_FAST_TF32  as FAST, but cuBLAS may round f32 inputs to TF32 on tensor cores
 *                      (CUBLAS_COMPUTE_32F_FAST_TF32); the same as FAST on the CPU.
 *   FG_GEMM_EXACT      every output is, with each + and * rounded to f32 (never fused):
 *                        acc = +0; for p = 0 .. k-1 in order: acc = acc + op(A)[i,p] * op(B)[p,j]
 *                        t = alpha * acc
 *                        C[i,j] = beta == 0 ? t : t + beta * C[i,j]
 *                      The same bits on every device and for any thread count, and with
 *                      alpha 1, beta 0 (1 * acc == acc) the same as Fucina's scalar matmul2D
 *                      (its matmul2DAcc is alpha 1, beta 1). The elements are
 *                      forgia/elem/gemm_exact.h.
 *   FG_GEMM_DEFAULT    the device's mode (fg_device_set_gemm_mode; FAST until set).
 * In both modes, as in BLAS: beta == 0 never reads C (it may hold NaN or garbage), and
 * alpha == 0 or k == 0 never reads A or B, so then C = beta * C (beta == 0: +0). In the exact
 * mode a NaN result is written as the canonical quiet NaN 0x7fc00000, because CPUs and GPUs
 * propagate NaN payloads differently. m == 0 or n == 0 does nothing.
 *
 * s NULL runs synchronously on the device's own stream; otherwise the call is queued on s
 * and every pointer must stay valid until s completes. The fast mode with a bf16 input and
 * the CPU's exact mode work in the stream's scratch memory, so a stream is used by one
 * thread at a time; calls with s NULL may come from many threads (they take turns on the
 * device's stream). Pointers are device memory of dev (host
 * memory for the CPU). C must not overlap A or B. The fast mode takes sizes and leading
 * dimensions up to INT_MAX (BLAS takes int). */
#ifndef FORGIA_GEMM_H
#define FORGIA_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_gemm_mode {
  FG_GEMM_DEFAULT = 0,
  FG_GEMM_FAST = 1,
  FG_GEMM_EXACT = 2,
  FG_GEMM_FAST_TF32 = 3,
} fg_gemm_mode;

/* The mode FG_GEMM_DEFAULT means on dev from now on (FG_GEMM_DEFAULT: back to FAST). Set it
 * while no other thread runs a GEMM on dev. */
FG_API fg_status fg_device_set_gemm_mode(fg_device *dev, fg_gemm_mode mode);

/* Validates everything (NULLs, dtypes, leading dimensions, size overflow, overlap of C with
 * A or B) before anything runs; a failed call leaves C untouched. */
FG_API fg_status fg_gemm(fg_device *dev, fg_gemm_mode mode, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                         float alpha, const void *a, fg_dtype a_type, size_t lda, const void *b, fg_dtype b_type,
                         size_t ldb, float beta, float *c, size_t ldc, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
