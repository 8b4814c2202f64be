/* PTQTP: post-training quantization of a weight matrix to K ternary planes (Fucina's
 * src/ptqtp.zig, arXiv:2509.16989).
 *
 *     W ~= sum_k diag(alpha_k) T_k,   T_k in {-1, 0, +1},   K in {1, 2, 3},
 *
 * with one scale per plane per 256-element group of a row (the TQ2_0 block), so that each
 * plane is a standalone TQ2_0 tensor whose block scale d is the group's scale: serving is K
 * ternary matmuls and adds, and serving fewer planes is valid.
 *
 * Per group, as the reference solves it (bit for bit; tests/cpu/test_ptqtp.cpp compares
 * with Fucina's own output):
 *   1. Every plane starts at sign(w); the scales at 1.
 *   2. Scale step: ridge alpha = (S^T S + lambda I)^-1 S^T w over the integer Gram matrix,
 *      in f64. lambda starts at lambda0 and grows x10 (capped at lambda_max) while the
 *      Frobenius condition estimate exceeds kappa_max (K = 1 takes lambda0 as is).
 *   3. Topology step: per element, the trit tuple of least (w - sum alpha_k c_k)^2 in f32
 *      over the 3^K tuples in a pinned order (zero first, sparser before denser, finer
 *      planes first), a later tuple replacing only when strictly better.
 *   4. Stop when the scales moved less than epsilon (Euclidean, f64) or after
 *      max_iterations.
 *   5. Pack: |alpha| rounded to f16 (clamped to 65504), then one more topology step against
 *      the rounded scales, so that the stored trits are optimal for what inference uses.
 * Tied fit (tie_scales, K >= 2): the scales are [3s, s] or [9s, 3s, s], a uniform 3^K-level
 * quantizer per group: s is swept over absmax / (L - 0.75 + i/32), i = 0..64 (L = 4 or 13),
 * keeping the least squared error, and each code splits into balanced base-3 trits; step 5
 * follows, the coarse scales rounded to f16 on their own.
 * Non-finite weights: a NaN or +-Inf element is left out of the scale regression and gets
 * trit 0 in every plane, so it costs only itself; the rest of its group quantizes as if it
 * were absent (its initial sign(+-Inf) trits still enter the first Gram matrix, as in the
 * reference).
 *
 * Groups are independent and rows are solved by whole rows on OpenMP threads, so the bytes
 * and the statistics are the same for any thread count. */
#ifndef FORGIA_PTQTP_H
#define FORGIA_PTQTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_PTQTP_GROUP 256        /* elements per group = TQ2_0 block */
#define FG_PTQTP_BLOCK_BYTES 66   /* one TQ2_0 block: qs[64], then d (f16, little-endian) */
#define FG_PTQTP_MAX_PLANES 3

typedef struct fg_ptqtp_options {
  int planes;            /* K: 1, 2 or 3 */
  bool tie_scales;       /* scales locked to ratio 3; needs planes >= 2 */
  int max_iterations;    /* >= 1 */
  float epsilon;         /* >= 0: convergence bound on the scale movement */
  float lambda0;         /* > 0: ridge floor */
  float lambda_max;      /* >= lambda0: ridge ceiling */
  float kappa_max;       /* >= 1: condition number that triggers a larger ridge */
  int threads;           /* OpenMP threads for fg_ptqtp_quantize; 0: the OpenMP default */
} fg_ptqtp_options;

/* The reference's defaults: planes 2, untied, 50 iterations, epsilon 1e-4, lambda0 1e-8,
 * lambda_max 1, kappa_max 1e6, threads 0. */
FG_API fg_ptqtp_options fg_ptqtp_options_default(void);

/* FG_ERR_INVALID_ARG naming the field when opt breaks one of the bounds above. */
FG_API fg_status fg_ptqtp_options_check(const fg_ptqtp_options *opt);

/* Diagnostics of one matrix. */
typedef struct fg_ptqtp_stats {
  double rel_frob_err;       /* ||W - W^||_F / ||W||_F over the finite elements (0 if ||W|| = 0),
                                W^ with the f16 scales inference uses */
  double zero_frac[3];       /* fraction of zero trits per plane (0 past K) */
  double mean_iterations;    /* per group */
  uint64_t unconverged_groups; /* groups that hit max_iterations */
  uint64_t group_count;
} fg_ptqtp_stats;

/* Bytes of one plane of a rows x cols matrix: rows * cols / 256 * 66. FG_ERR_BAD_ROW when
 * cols is not a multiple of 256, FG_ERR_BAD_SHAPE when rows or cols is 0, FG_ERR_OVERFLOW. */
FG_API fg_status fg_ptqtp_plane_bytes(uint64_t rows, uint64_t cols, uint64_t *bytes);

/* Quantizes the row-major rows x cols f32 matrix w (cols a multiple of 256). planes[k] for
 * k < opt->planes receives plane k, fg_ptqtp_plane_bytes bytes of TQ2_0 blocks in row order
 * (row r's cols/256 blocks, then row r+1's); entries past K are not touched and may be NULL.
 * stats may be NULL. opt NULL: the defaults. */
FG_API fg_status fg_ptqtp_quantize(const float *w, uint64_t rows, uint64_t cols, const fg_ptqtp_options *opt,
                                   void *const planes[FG_PTQTP_MAX_PLANES], fg_ptqtp_stats *stats);

/* One group of any length n >= 1 (the reference's solveGroup: exact scales, no f16
 * rounding, no packing): trits[k][0..n) for k < K receive plane k, alpha[0..3) the solved
 * scales with their signs (0 past K), iterations and converged may be NULL. */
FG_API fg_status fg_ptqtp_solve_group(const float *w, size_t n, const fg_ptqtp_options *opt,
                                      int8_t *const trits[FG_PTQTP_MAX_PLANES], float alpha[3], int *iterations,
                                      bool *converged);

/* W^ = the sum of the K planes decoded (dst = 0, then each plane's d * (code - 1) added in
 * plane order), rows x cols row-major. A code of 3 (not a TQ2_0 code) is FG_ERR_RANGE
 * naming the plane and element. */
FG_API fg_status fg_ptqtp_reconstruct(const void *const planes[FG_PTQTP_MAX_PLANES], int k, uint64_t rows,
                                      uint64_t cols, float *dst);

#ifdef __cplusplus
}
#endif
#endif
