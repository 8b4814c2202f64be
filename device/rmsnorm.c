/* RMSNorm's front (forgia/rmsnorm.h): one validation for every backend, then the rmsnorm
 * kernel family (device/family_table.h). */
#include <math.h>
#include <stdint.h>

#include "device/backend.h"
#include "device/overlap.h"
#include "forgia/elem/rmsnorm.h"
#include "forgia/rmsnorm.h"

static bool fg_rn_float(fg_dtype d) { return d == FG_F32 || d == FG_F16 || d == FG_BF16; }

static size_t fg_rn_size(fg_dtype d) { return fg_dtype_info(d)->block_bytes; }

/* The checks both directions share; *n the element count rows * cols. */
static fg_status fg_rn_check(const char *what, const void *x, fg_dtype xt, const void *w, fg_dtype wt, size_t rows,
                             size_t cols, float offset, size_t *n) {
  if (!fg_rn_float(xt))
    return fg_fail(FG_ERR_TYPE, "%s: x has dtype %s, expected f32, f16 or bf16", what,
                   fg_dtype_name(xt) ? fg_dtype_name(xt) : "(invalid)");
  if (!fg_rn_float(wt))
    return fg_fail(FG_ERR_TYPE, "%s: w has dtype %s, expected f32, f16 or bf16", what,
                   fg_dtype_name(wt) ? fg_dtype_name(wt) : "(invalid)");
  if (rows && !cols) return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu rows of 0 columns", what, rows);
  if (cols && rows > SIZE_MAX / 4 / cols)
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu x %zu values overflow", what, rows, cols);
  if (!isfinite(offset)) return fg_fail(FG_ERR_INVALID_ARG, "%s: w_offset %g is not finite", what, (double)offset);
  *n = rows * cols;
  if (*n && (!x || !w)) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !x ? "x" : "w");
  return FG_OK;
}

fg_status fg_rmsnorm_forward(fg_device *dev, const void *x, fg_dtype x_dtype, const void *w, fg_dtype w_dtype,
                             size_t rows, size_t cols, float eps, float w_offset, float *y, float *rstd, fg_stream *s) {
  const char *what = "fg_rmsnorm_forward";
  size_t n = 0;
  fg_status st = fg_rn_check(what, x, x_dtype, w, w_dtype, rows, cols, w_offset, &n);
  if (st) return st;
  if (!isfinite(eps) || eps < 0.0f)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: eps %g, expected a finite value >= 0", what, (double)eps);
  if (!n) return dev ? FG_OK : fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (!y) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL y", what);
  const size_t yb = n * 4;
  if (fg_bytes_overlap(y, yb, x, n * fg_rn_size(x_dtype)) || fg_bytes_overlap(y, yb, w, cols * fg_rn_size(w_dtype)) ||
      fg_bytes_overlap(y, yb, rstd, rows * 4))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: y overlaps an input or rstd", what);
  if (rstd && (fg_bytes_overlap(rstd, rows * 4, x, n * fg_rn_size(x_dtype)) ||
               fg_bytes_overlap(rstd, rows * 4, w, cols * fg_rn_size(w_dtype))))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: rstd overlaps x or w", what);
  const fg_rmsnorm_call c = {.backward = 0, .rows = rows, .cols = cols, .x = x, .x_dtype = x_dtype, .w = w,
                             .w_dtype = w_dtype, .offset = w_offset, .eps = eps, .y = y, .rstd = rstd};
  return fg_family_rmsnorm(dev, &c, s, what);
}

fg_status fg_rmsnorm_backward(fg_device *dev, const void *x, fg_dtype x_dtype, const void *w, fg_dtype w_dtype,
                              size_t rows, size_t cols, float w_offset, const float *rstd, const float *dy, float *dx,
                              float *dw, fg_stream *s) {
  const char *what = "fg_rmsnorm_backward";
  size_t n = 0;
  fg_status st = fg_rn_check(what, x, x_dtype, w, w_dtype, rows, cols, w_offset, &n);
  if (st) return st;
  if (!dx && !dw) return fg_fail(FG_ERR_INVALID_ARG, "%s: dx and dw are both NULL (nothing to write)", what);
  if (!n) return dev ? FG_OK : fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (!rstd || !dy) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !rstd ? "rstd" : "dy");
  const void *in[4] = {x, w, rstd, dy};
  const size_t inb[4] = {n * fg_rn_size(x_dtype), cols * fg_rn_size(w_dtype), rows * 4, n * 4};
  for (int k = 0; k < 4; k++)
    if (fg_bytes_overlap(dx, n * 4, in[k], inb[k]) || fg_bytes_overlap(dw, cols * 4, in[k], inb[k]))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: %s overlaps %s", what,
                     fg_bytes_overlap(dx, n * 4, in[k], inb[k]) ? "dx" : "dw", (const char *[]){"x", "w", "rstd", "dy"}[k]);
  if (fg_bytes_overlap(dx, n * 4, dw, cols * 4)) return fg_fail(FG_ERR_INVALID_ARG, "%s: dx overlaps dw", what);
  const fg_rmsnorm_call c = {.backward = 1, .rows = rows, .cols = cols, .x = x, .x_dtype = x_dtype, .w = w,
                             .w_dtype = w_dtype, .offset = w_offset, .rstd = (float *)rstd, .dy = dy, .dx = dx,
                             .dw = dw};
  return fg_family_rmsnorm(dev, &c, s, what);
}
