/* GEMM: validation, the mode a call resolves to, dispatch to the backend. */
#include <limits.h>
#include <stdint.h>

#include "device/backend.h"
#include "device/scratch.h"
#include "device/gemm_call.h"
#include "device/overlap.h"

static bool fg_gemm_mode_ok(fg_gemm_mode mode) {
  return mode == FG_GEMM_DEFAULT || mode == FG_GEMM_FAST || mode == FG_GEMM_EXACT || mode == FG_GEMM_FAST_TF32;
}

fg_status fg_device_set_gemm_mode(fg_device *dev, fg_gemm_mode mode) {
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "fg_device_set_gemm_mode: NULL device");
  if (!fg_gemm_mode_ok(mode)) return fg_fail(FG_ERR_INVALID_ARG, "fg_device_set_gemm_mode: unknown mode %d", (int)mode);
  __atomic_store_n(&dev->gemm_mode, (int)mode, __ATOMIC_RELAXED);
  return FG_OK;
}

/* Elements spanned by a stored rows x cols matrix with leading dimension ld, and its bytes;
 * false when either does not fit (the caller's sizes cannot describe real memory). */
static bool fg_gemm_extent(size_t rows, size_t cols, size_t ld, size_t elem, size_t *bytes) {
  if (rows == 0 || cols == 0) {
    *bytes = 0;
    return true;
  }
  if (ld && rows - 1 > SIZE_MAX / ld) return false;
  size_t span = (rows - 1) * ld;
  if (span > SIZE_MAX - cols) return false;
  span += cols;
  if (span > (size_t)PTRDIFF_MAX / elem) return false;
  *bytes = span * elem;
  return true;
}

/* One operand: op(X) is rows x cols, stored transposed when trans. */
static fg_status fg_gemm_check_operand(const char *name, const void *x, fg_dtype t, size_t ld, bool trans,
                                       size_t rows, size_t cols, size_t *bytes) {
  if (!x) return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: %s is NULL", name);
  if (t != FG_F32 && t != FG_BF16)
    return fg_fail(FG_ERR_UNSUPPORTED, "fg_gemm: %s is %s; expected f32 or bf16", name, fg_dtype_name(t));
  size_t srows = trans ? cols : rows, scols = trans ? rows : cols;
  if (ld < scols || ld == 0)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: ld%s %zu is below the %zu columns of stored %s (%zu x %zu%s)", name, ld,
                   scols, name, srows, scols, trans ? ", transposed" : "");
  if (!fg_gemm_extent(srows, scols, ld, t == FG_F32 ? 4 : 2, bytes))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: %s (%zu x %zu, ld %zu) spans more bytes than an address space holds",
                   name, srows, scols, ld);
  return FG_OK;
}

fg_status fg_gemm(fg_device *dev, fg_gemm_mode mode, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                  float alpha, const void *a, fg_dtype a_type, size_t lda, const void *b, fg_dtype b_type, size_t ldb,
                  float beta, float *c, size_t ldc, fg_stream *s) {
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: NULL device");
  if (!fg_gemm_mode_ok(mode)) return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: unknown mode %d", (int)mode);
  if (mode == FG_GEMM_DEFAULT) {
    mode = (fg_gemm_mode)__atomic_load_n(&dev->gemm_mode, __ATOMIC_RELAXED);
    if (mode == FG_GEMM_DEFAULT) mode = FG_GEMM_FAST;
  }
  if (s && s->dev != dev)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: the stream belongs to %s, not %s", s->dev->spec, dev->spec);
  if (m == 0 || n == 0) return FG_OK;

  if (!c) return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: c is NULL");
  if (ldc < n) return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: ldc %zu is below the %zu columns of c (%zu x %zu)", ldc, n, m, n);
  size_t cb, ab = 0, bb = 0;
  if (!fg_gemm_extent(m, n, ldc, 4, &cb))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: c (%zu x %zu, ld %zu) spans more bytes than an address space holds", m,
                   n, ldc);
  /* BLAS's rule: alpha == 0 or k == 0 leaves A and B unread (they may be NULL). */
  bool product = k > 0 && alpha != 0.0f;
  if (product) {
    fg_status st = fg_gemm_check_operand("a", a, a_type, lda, trans_a, m, k, &ab);
    if (st) return st;
    st = fg_gemm_check_operand("b", b, b_type, ldb, trans_b, k, n, &bb);
    if (st) return st;
    if (mode != FG_GEMM_EXACT &&
        (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX))
      return fg_fail(FG_ERR_UNSUPPORTED,
                     "fg_gemm: m %zu, n %zu, k %zu, lda %zu, ldb %zu, ldc %zu: the fast mode takes each up to %d "
                     "(BLAS takes int); use FG_GEMM_EXACT",
                     m, n, k, lda, ldb, ldc, INT_MAX);
    if (fg_bytes_overlap(c, cb, a, ab) || fg_bytes_overlap(c, cb, b, bb))
      return fg_fail(FG_ERR_INVALID_ARG, "fg_gemm: c overlaps %s; the output must not alias an input",
                     fg_bytes_overlap(c, cb, a, ab) ? "a" : "b");
  }
  struct fg_gemm_call g = {
    .mode = mode, .trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = product ? k : 0,
    .alpha = alpha, .beta = beta, .a = product ? a : NULL, .a_type = a_type, .lda = lda,
    .b = product ? b : NULL, .b_type = b_type, .ldb = ldb, .c = c, .ldc = ldc,
  };
  return fg_family_gemm(dev, &g, s, "fg_gemm");
}
