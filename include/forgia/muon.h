/* Newton-Schulz 5 orthogonalisation, Muon's core (Keller Jordan's zeropower_via_newtonschulz5
 * as Fucina's newtonSchulz5 computes it in f32):
 *
 *   X = U (rows x cols; X = U^T when rows > cols, so the Gram matrix has the small side)
 *   X = X * f32(1 / (sqrt(sumSquares(X)) + 1e-7))     sumSquares on Fucina's grid, in f64
 *   steps times:  A = X X^T;  B = A A;  B = b*A + c*B;  X = a*X + B X
 *   O = X (transposed back when rows > cols)
 *
 * with a = 3.4445, b = -4.7750, c = 2.0315 (f32). The GEMMs run in the given mode
 * (forgia/gemm.h). With FG_GEMM_EXACT every output bit is Fucina's scalar backend's, on every
 * device; in the fast modes the bits follow the GEMM library. The transposed case never
 * transposes in memory: the products read U through the GEMM's transposition flags, and the
 * norm is taken over a transposed copy made by an identity product (exact: FG_GEMM_FAST_TF32
 * makes it with FG_GEMM_FAST), so that the sum of squares walks Fucina's element order.
 *
 *   size_t bytes = fg_muon_newton_schulz5_workspace(rows, cols);
 *   void *work;  fg_device_mem_alloc(dev, bytes, &work);
 *   fg_muon_newton_schulz5(dev, FG_GEMM_EXACT, u, rows, cols, 5, o, work, bytes, s);
 *
 * u and o are rows x cols row-major f32 in device memory of dev (host memory for the CPU); o
 * may be u. work is device memory of at least fg_muon_newton_schulz5_workspace bytes, or NULL to
 * have the call allocate (and free) its own, which makes it synchronous. s as in gemm.h. */
#ifndef FORGIA_MUON_H
#define FORGIA_MUON_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/gemm.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fucina's coefficients. */
#define FG_NS5_A 3.4445f
#define FG_NS5_B (-4.7750f)
#define FG_NS5_C 2.0315f

/* Bytes of workspace fg_muon_newton_schulz5 needs for a rows x cols matrix (0 on overflow). */
FG_API size_t fg_muon_newton_schulz5_workspace(size_t rows, size_t cols);
/* o = NS5(u) as above. steps >= 1; rows, cols >= 1. Everything is validated before anything
 * runs; on failure o is untouched. */
FG_API fg_status fg_muon_newton_schulz5(fg_device *dev, fg_gemm_mode mode, const float *u, size_t rows, size_t cols,
                                        uint32_t steps, float *o, void *work, size_t work_bytes, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
