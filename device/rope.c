/* RoPE's front (forgia/rope.h): the host-side angle table, and one validation for every
 * backend before the rope kernel family (device/family_table.h). */
#include <math.h>
#include <stdint.h>

#include "device/backend.h"
#include "device/overlap.h"
#include "forgia/elem/rope.h"
#include "forgia/rope.h"

static fg_status fg_rope_check_dims(const char *what, size_t n_dims) {
  if (!n_dims || n_dims % 2)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: n_dims %zu, expected an even count > 0", what, n_dims);
  return FG_OK;
}

fg_status fg_rope_table_fill(float *table, size_t n_pos, size_t n_dims, double base, double freq_scale,
                             const float *factors) {
  const char *what = "fg_rope_table_fill";
  fg_status st = fg_rope_check_dims(what, n_dims);
  if (st) return st;
  if (!isfinite(base) || base <= 0.0)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: base %g, expected a finite value > 0", what, base);
  if (!isfinite(freq_scale) || freq_scale <= 0.0)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: freq_scale %g, expected a finite value > 0", what, freq_scale);
  const size_t half = n_dims / 2;
  for (size_t i = 0; factors && i < half; i++)
    if (!isfinite(factors[i]) || factors[i] <= 0.0f)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: factors[%zu] = %g, expected a finite value > 0", what, i,
                     (double)factors[i]);
  if (n_pos > SIZE_MAX / 4 / n_dims)
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu positions x %zu dims overflow", what, n_pos, n_dims);
  if (!n_pos) return FG_OK;
  if (!table) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL table for %zu positions", what, n_pos);
  for (size_t i = 0; i < half; i++) {
    /* The pair's angle per position, in f64: freq_scale * base^(-2i / n_dims) / factor. */
    const double w = freq_scale * pow(base, -(double)(2 * i) / (double)n_dims) / (factors ? (double)factors[i] : 1.0);
    for (size_t p = 0; p < n_pos; p++) {
      const double th = (double)p * w;
      table[(p * half + i) * 2] = (float)cos(th);
      table[(p * half + i) * 2 + 1] = (float)sin(th);
    }
  }
  return FG_OK;
}

fg_status fg_rope_apply(fg_device *dev, float *x, size_t n_tok, size_t n_heads, size_t head_dim, size_t n_dims,
                        fg_rope_layout layout, const int32_t *pos, const float *table, size_t n_pos, bool inverse,
                        fg_stream *s) {
  const char *what = "fg_rope_apply";
  fg_status st = fg_rope_check_dims(what, n_dims);
  if (st) return st;
  if (n_dims > head_dim)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: n_dims %zu exceeds head_dim %zu", what, n_dims, head_dim);
  if (layout != FG_ROPE_NORM && layout != FG_ROPE_NEOX)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: layout %d, expected FG_ROPE_NORM or FG_ROPE_NEOX", what, (int)layout);
  if (n_tok && !n_heads) return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu tokens of 0 heads", what, n_tok);
  if (n_heads > SIZE_MAX / 4 / head_dim || (n_tok && n_heads * head_dim > SIZE_MAX / 4 / n_tok))
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu tokens x %zu heads x %zu values overflow", what, n_tok, n_heads, head_dim);
  if (n_pos > SIZE_MAX / 4 / n_dims)
    return fg_fail(FG_ERR_OVERFLOW, "%s: a table of %zu positions x %zu dims overflows", what, n_pos, n_dims);
  if (!n_tok) return dev ? FG_OK : fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (!x || !pos) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !x ? "x" : "pos");
  if (n_pos && !table) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL table for %zu positions", what, n_pos);
  const size_t xb = n_tok * n_heads * head_dim * 4;
  if (fg_bytes_overlap(x, xb, pos, n_tok * 4) || fg_bytes_overlap(x, xb, table, n_pos * n_dims * 4))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: x overlaps %s", what,
                   fg_bytes_overlap(x, xb, pos, n_tok * 4) ? "pos" : "table");
  const fg_rope_call c = {.x = x, .n_tok = n_tok, .n_heads = n_heads, .head_dim = head_dim, .n_dims = n_dims,
                          .n_pos = n_pos, .layout = (int)layout, .inverse = inverse ? 1 : 0, .pos = pos,
                          .table = table};
  return fg_family_rope(dev, &c, s, what);
}
