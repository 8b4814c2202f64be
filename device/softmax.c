/* Softmax's front (forgia/softmax.h): one validation for every backend, then the softmax
 * kernel family (device/family_table.h). */
#include <math.h>
#include <stdint.h>

#include "device/backend.h"
#include "device/overlap.h"
#include "forgia/elem/softmax.h"
#include "forgia/softmax.h"

/* The checks every entry shares; *n the element count rows * cols. */
static fg_status fg_sm_check(const char *what, fg_device *dev, const float *x, const char *xname, size_t rows,
                             size_t cols, size_t *n) {
  if (rows && !cols) return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu rows of 0 columns", what, rows);
  if (cols && rows > SIZE_MAX / 8 / cols)
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu x %zu values overflow", what, rows, cols);
  *n = rows * cols;
  if (!*n) return dev ? FG_OK : fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (!x) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, xname);
  return FG_OK;
}

fg_status fg_softmax_rows(fg_device *dev, const float *x, size_t rows, size_t cols, float *y, fg_stream *s) {
  const char *what = "fg_softmax_rows";
  size_t n = 0;
  fg_status st = fg_sm_check(what, dev, x, "x", rows, cols, &n);
  if (st || !n) return st;
  if (!y) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL y", what);
  if ((const float *)y != x && fg_bytes_overlap(y, n * 4, x, n * 4))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: y overlaps x without being x (in place needs y == x)", what);
  const fg_softmax_call c = {.kind = FG_SOFTMAX_ROWS, .rows = rows, .cols = cols, .x = x, .y = y};
  return fg_family_softmax(dev, &c, s, what);
}

fg_status fg_softmax_nll(fg_device *dev, const float *logits, size_t rows, size_t cols, const int32_t *targets,
                         double *nll, fg_stream *s) {
  const char *what = "fg_softmax_nll";
  size_t n = 0;
  fg_status st = fg_sm_check(what, dev, logits, "logits", rows, cols, &n);
  if (st || !n) return st;
  if (!targets || !nll) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !targets ? "targets" : "nll");
  if (fg_bytes_overlap(nll, rows * 8, logits, n * 4) || fg_bytes_overlap(nll, rows * 8, targets, rows * 4))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: nll overlaps %s", what,
                   fg_bytes_overlap(nll, rows * 8, logits, n * 4) ? "logits" : "targets");
  const fg_softmax_call c = {.kind = FG_SOFTMAX_NLL, .rows = rows, .cols = cols, .x = logits, .targets = targets,
                             .nll = nll};
  return fg_family_softmax(dev, &c, s, what);
}

fg_status fg_softmax_nll_backward(fg_device *dev, const float *logits, size_t rows, size_t cols,
                                  const int32_t *targets, float scale, float *dlogits, fg_stream *s) {
  const char *what = "fg_softmax_nll_backward";
  if (!isfinite(scale)) return fg_fail(FG_ERR_INVALID_ARG, "%s: scale %g is not finite", what, (double)scale);
  size_t n = 0;
  fg_status st = fg_sm_check(what, dev, logits, "logits", rows, cols, &n);
  if (st || !n) return st;
  if (!targets || !dlogits) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !targets ? "targets" : "dlogits");
  if (fg_bytes_overlap(dlogits, n * 4, logits, n * 4) || fg_bytes_overlap(dlogits, n * 4, targets, rows * 4))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: dlogits overlaps %s", what,
                   fg_bytes_overlap(dlogits, n * 4, logits, n * 4) ? "logits" : "targets");
  const fg_softmax_call c = {.kind = FG_SOFTMAX_NLL_BACKWARD, .rows = rows, .cols = cols, .x = logits,
                             .targets = targets, .scale = scale, .y = dlogits};
  return fg_family_softmax(dev, &c, s, what);
}
