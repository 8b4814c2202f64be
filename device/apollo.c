/* APOLLO's kernels' front (forgia/apollo.h): one validation for every backend, then the
 * apollo kernel family (device/family_table.h). */
#include <stdint.h>

#include "device/apollo_call.h"
#include "device/backend.h"
#include "device/scratch.h"
#include "forgia/apollo.h"

static fg_status fg_apollo_run(fg_device *dev, const char *what, const fg_apollo_call *c, fg_stream *s) {
  return fg_family_apollo(dev, c, s, what);
}

static fg_status fg_apollo_check_shape(const char *what, fg_apollo_layout layout, size_t rows, size_t cols) {
  if (layout != FG_APOLLO_LAYOUT_TALL && layout != FG_APOLLO_LAYOUT_WIDE && layout != FG_APOLLO_LAYOUT_WHOLE)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: unknown layout %d", what, (int)layout);
  if (layout == FG_APOLLO_LAYOUT_TALL && rows < cols)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: tall layout with %zu rows < %zu cols", what, rows, cols);
  if (layout == FG_APOLLO_LAYOUT_WIDE && rows >= cols)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: wide layout with %zu rows >= %zu cols", what, rows, cols);
  if (cols && rows > SIZE_MAX / cols) return fg_fail(FG_ERR_OVERFLOW, "%s: %zu x %zu overflows", what, rows, cols);
  return FG_OK;
}

fg_status fg_apollo_scaling(fg_device *dev, fg_apollo_layout layout, size_t rows, size_t cols, size_t rank, const float *m,
                            const float *v, const float *r, float eps, float *scaling, fg_stream *s) {
  const char *what = "fg_apollo_scaling";
  fg_status st = fg_apollo_check_shape(what, layout, rows, cols);
  if (st) return st;
  const size_t ch = rows >= cols ? rows : cols;
  if (rank && ch > SIZE_MAX / rank) return fg_fail(FG_ERR_OVERFLOW, "%s: %zu x %zu overflows", what, ch, rank);
  if (!m || !v || !r || !scaling) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL argument", what);
  const fg_apollo_call c = {.kernel = FG_APOLLO_KERNEL_SCALING, .layout = (int)layout, .rows = rows, .cols = cols,
                            .rank = rank, .m = m, .v = v, .r = r, .eps = eps, .scaling = scaling};
  return fg_apollo_run(dev, what, &c, s);
}

fg_status fg_apollo_build(fg_device *dev, fg_apollo_layout layout, size_t rows, size_t cols, const float *g, const float *scaling,
                          float front, float *u, fg_stream *s) {
  const char *what = "fg_apollo_build";
  fg_status st = fg_apollo_check_shape(what, layout, rows, cols);
  if (st) return st;
  if (!g || !scaling || !u) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL argument", what);
  const size_t n = rows * cols;
  if (n && (const char *)u < (const char *)(g + n) && (const char *)g < (const char *)(u + n))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: u overlaps g", what);
  const fg_apollo_call c = {.kernel = FG_APOLLO_KERNEL_BUILD, .layout = (int)layout, .rows = rows, .cols = cols, .g = g,
                            .factors = scaling, .front = front, .u = u};
  return fg_apollo_run(dev, what, &c, s);
}

fg_status fg_apollo_limit(fg_device *dev, const double *sumsq, float *prev_norm, double *limiter, fg_stream *s) {
  if (!sumsq || !prev_norm || !limiter) return fg_fail(FG_ERR_INVALID_ARG, "fg_apollo_limit: NULL argument");
  const fg_apollo_call c = {.kernel = FG_APOLLO_KERNEL_LIMIT, .sumsq = sumsq, .prev_norm = prev_norm, .limiter = limiter};
  return fg_apollo_run(dev, "fg_apollo_limit", &c, s);
}
