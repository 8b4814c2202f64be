/* Newton-Schulz 5 (forgia/muon.h): GEMMs in the caller's mode and muon_* ops, in the order of
 * Fucina's newtonSchulz5. A tall U (rows > cols) is never transposed in memory: X = U^T is
 * kept in U's layout and every product reads it through the GEMM's transposition flags, which
 * visits the same products in the same order (a*b == b*a bit for bit). */
#include <stdint.h>
#include <string.h>

#include "forgia/muon.h"
#include "forgia/ops.h"
#include "forgia/reduce.h"

/* Workspace: [f64 norm, padded to 64 bytes] [X: n] [Y: n] [A: s*s] [Q: s*s] (f32). */
#define FG_NS_HEAD 64u

size_t fg_muon_newton_schulz5_workspace(size_t rows, size_t cols) {
  const size_t sm = rows < cols ? rows : cols;
  if (rows && cols > SIZE_MAX / rows) return 0;
  const size_t n = rows * cols;
  if (sm && sm > SIZE_MAX / sm) return 0;
  const size_t ss = sm * sm;
  if (n > (SIZE_MAX - FG_NS_HEAD) / 8 - ss) return 0;
  if (2 * n + 2 * ss > (SIZE_MAX - FG_NS_HEAD) / sizeof(float)) return 0;
  return FG_NS_HEAD + (2 * n + 2 * ss) * sizeof(float);
}

static fg_status fg_ns_copy(fg_device *dev, void *dst, const void *src, size_t bytes, fg_stream *s) {
  if (dst == src) return FG_OK;
  return s ? fg_device_copy_async(dev, dst, src, bytes, FG_COPY_D2D, s) : fg_device_copy(dev, dst, src, bytes, FG_COPY_D2D);
}

static fg_status fg_ns_op1(fg_device *dev, fg_op_kind op, const fg_op_params *p, float *x0, float *x1, size_t n,
                           fg_stream *s) {
  fg_op_args a;
  memset(&a, 0, sizeof a);
  a.ptr[0] = x0;
  a.dtype[0] = FG_F32;
  if (x1) {
    a.ptr[1] = x1;
    a.dtype[1] = FG_F32;
  }
  a.n = n;
  return fg_op_run(dev, op, p, &a, 1, s);
}

/* The run itself, on a validated workspace. */
static fg_status fg_ns_run(fg_device *dev, fg_gemm_mode mode, const float *u, size_t rows, size_t cols, uint32_t steps,
                           float *o, void *work, fg_stream *s) {
  const bool tall = rows > cols;
  const size_t sm = tall ? cols : rows, lg = tall ? rows : cols, n = rows * cols;
  double *norm = (double *)work;
  float *x = (float *)((char *)work + FG_NS_HEAD), *y = x + n, *a = y + n, *q = a + sm * sm;
  fg_op_params p;
  memset(&p, 0, sizeof p);
  fg_status st = FG_OK;
  if (tall) {
    /* Fucina sums the squares of the materialised U^T: y = I * U^T is that copy, exact in
     * every mode but TF32 (each output is one product by 1 among products by 0; -0 may become
     * +0, which squares alike). */
    const fg_gemm_mode tmode = mode == FG_GEMM_FAST_TF32 ? FG_GEMM_FAST : mode;
    p.u[0] = sm + 1;
    st = fg_ns_op1(dev, FG_OP_MUON_EYE, &p, q, NULL, sm * sm, s);
    if (st == FG_OK) st = fg_gemm(dev, tmode, false, true, sm, lg, sm, 1.0f, q, FG_F32, sm, u, FG_F32, sm, 0.0f, y, lg, s);
    if (st == FG_OK) st = fg_reduce_array(dev, FG_REDUCE_SUMSQ, y, FG_F32, n, norm, s);
  } else {
    st = fg_reduce_array(dev, FG_REDUCE_SUMSQ, u, FG_F32, n, norm, s);
  }
  if (st == FG_OK) st = fg_ns_copy(dev, x, u, n * sizeof(float), s);
  p.dscalar = norm;
  if (st == FG_OK) st = fg_ns_op1(dev, FG_OP_MUON_NORMALIZE, &p, x, NULL, n, s);
  p.dscalar = NULL;
  for (uint32_t it = 0; it < steps && st == FG_OK; it++) {
    /* A = X X^T; Q = A A; Q = b*A + c*Q; Y = Q X; Y = a*X + Y. Tall: X, Y stored transposed. */
    if (tall) st = fg_gemm(dev, mode, true, false, sm, sm, lg, 1.0f, x, FG_F32, sm, x, FG_F32, sm, 0.0f, a, sm, s);
    else st = fg_gemm(dev, mode, false, true, sm, sm, lg, 1.0f, x, FG_F32, lg, x, FG_F32, lg, 0.0f, a, sm, s);
    if (st == FG_OK) st = fg_gemm(dev, mode, false, false, sm, sm, sm, 1.0f, a, FG_F32, sm, a, FG_F32, sm, 0.0f, q, sm, s);
    p.f[0] = FG_NS5_B;
    p.f[1] = FG_NS5_C;
    if (st == FG_OK) st = fg_ns_op1(dev, FG_OP_MUON_NS_COMB, &p, q, a, sm * sm, s);
    if (st == FG_OK) {
      if (tall) st = fg_gemm(dev, mode, false, true, lg, sm, sm, 1.0f, x, FG_F32, sm, q, FG_F32, sm, 0.0f, y, sm, s);
      else st = fg_gemm(dev, mode, false, false, sm, lg, sm, 1.0f, q, FG_F32, sm, x, FG_F32, lg, 0.0f, y, lg, s);
    }
    p.f[0] = FG_NS5_A;
    if (st == FG_OK) st = fg_ns_op1(dev, FG_OP_AXPY, &p, y, x, n, s);
    float *t = x;
    x = y;
    y = t;
  }
  if (st == FG_OK) st = fg_ns_copy(dev, o, x, n * sizeof(float), s);
  return st;
}

fg_status fg_muon_newton_schulz5(fg_device *dev, fg_gemm_mode mode, const float *u, size_t rows, size_t cols,
                                 uint32_t steps, float *o, void *work, size_t work_bytes, fg_stream *s) {
  if (!dev || !u || !o) return fg_fail(FG_ERR_INVALID_ARG, "fg_muon_newton_schulz5: NULL argument");
  if (!rows || !cols || !steps)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_muon_newton_schulz5: %zu x %zu matrix, %u steps: expected all >= 1", rows, cols,
                   steps);
  if ((unsigned)mode > FG_GEMM_FAST_TF32) return fg_fail(FG_ERR_INVALID_ARG, "fg_muon_newton_schulz5: unknown GEMM mode %d", (int)mode);
  const size_t need = fg_muon_newton_schulz5_workspace(rows, cols);
  if (!need) return fg_fail(FG_ERR_INVALID_ARG, "fg_muon_newton_schulz5: %zu x %zu is too large", rows, cols);
  if (work && work_bytes < need)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_muon_newton_schulz5: workspace of %zu bytes, %zu needed for %zu x %zu", work_bytes,
                   need, rows, cols);
  if (work) return fg_ns_run(dev, mode, u, rows, cols, steps, o, work, s);
  fg_status st = s ? fg_stream_sync(s) : FG_OK;
  if (st) return st;
  st = fg_device_mem_alloc(dev, need, &work);
  if (st) return st;
  st = fg_ns_run(dev, mode, u, rows, cols, steps, o, work, NULL);
  fg_device_mem_free(dev, work);
  return st;
}
