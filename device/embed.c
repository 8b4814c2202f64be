/* The embedding's fronts (forgia/embed.h), the gather and its gradient: one validation for
 * every backend, then the embed or embed_bwd kernel family (device/family_table.h). */
#include <math.h>
#include <stdint.h>

#include "device/backend.h"
#include "device/overlap.h"
#include "forgia/elem/embed.h"
#include "forgia/embed.h"

/* f32, f16, bf16, or a block type elem/quant_decode.h decodes: asking the decoder itself (on
 * a zero block) keeps that header the only list of decodable types. */
static bool fg_embed_decodable(const fg_dtype_traits *tr, fg_dtype t) {
  if (t == FG_F32 || t == FG_F16 || t == FG_BF16) return true;
  if (!tr || !tr->is_quant || tr->block_elems > 256 || tr->block_bytes > 512) return false;
  uint8_t zero[512] = {0};
  float y[256];
  return fg_dequant_block(t, zero, y);
}

fg_status fg_embed_rows(fg_device *dev, const void *table, fg_dtype dtype, size_t n_rows, size_t n_cols,
                        const int32_t *ids, size_t n_ids, float scale, float *out, fg_stream *s) {
  const char *what = "fg_embed_rows";
  const fg_dtype_traits *tr = fg_dtype_info(dtype);
  if (!fg_embed_decodable(tr, dtype))
    return fg_fail(FG_ERR_TYPE, "%s: table has dtype %s, expected f32, f16, bf16 or a block type with a decoder", what,
                   fg_dtype_name(dtype) ? fg_dtype_name(dtype) : "(invalid)");
  if (n_cols % tr->block_elems)
    return fg_fail(FG_ERR_BAD_ROW, "%s: %zu columns are not a whole number of %s's %u-element blocks", what, n_cols,
                   tr->name, tr->block_elems);
  if (n_ids && !n_cols) return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu ids of rows of 0 columns", what, n_ids);
  if (!isfinite(scale)) return fg_fail(FG_ERR_INVALID_ARG, "%s: scale %g is not finite", what, (double)scale);
  const size_t row_bytes = n_cols / tr->block_elems * tr->block_bytes;
  if ((n_rows && row_bytes && n_rows > SIZE_MAX / row_bytes) || (n_cols && n_ids > SIZE_MAX / 4 / n_cols))
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu rows or %zu ids of %zu columns overflow", what, n_rows, n_ids, n_cols);
  if (!n_ids) return dev ? FG_OK : fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (!ids || !out) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !ids ? "ids" : "out");
  if (n_rows && !table) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL table of %zu rows", what, n_rows);
  const size_t ob = n_ids * n_cols * 4;
  if (fg_bytes_overlap(out, ob, table, n_rows * row_bytes) || fg_bytes_overlap(out, ob, ids, n_ids * 4))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: out overlaps %s", what,
                   fg_bytes_overlap(out, ob, ids, n_ids * 4) ? "ids" : "table");
  const fg_embed_call c = {.table = (const uint8_t *)table, .dtype = dtype, .block_elems = tr->block_elems,
                           .block_bytes = tr->block_bytes, .n_rows = n_rows, .n_cols = n_cols, .row_bytes = row_bytes,
                           .ids = ids, .n_ids = n_ids, .scale = scale, .out = out};
  return fg_family_embed(dev, &c, s, what);
}

fg_status fg_embed_backward(fg_device *dev, const float *dy, const int32_t *ids, size_t n_ids, size_t n_rows,
                            size_t n_cols, float scale, float *dtable, fg_stream *s) {
  const char *what = "fg_embed_backward";
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (n_ids && !n_cols) return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu ids of rows of 0 columns", what, n_ids);
  if (!isfinite(scale)) return fg_fail(FG_ERR_INVALID_ARG, "%s: scale %g is not finite", what, (double)scale);
  if (n_cols && (n_rows > SIZE_MAX / 4 / n_cols || n_ids > SIZE_MAX / 4 / n_cols))
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu rows or %zu ids of %zu columns overflow", what, n_rows, n_ids, n_cols);
  if (s && s->dev != dev)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: the stream belongs to %s, not %s", what, s->dev->spec, dev->spec);
  if (!n_ids) return FG_OK;
  if (!dy || !ids) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !dy ? "dy" : "ids");
  if (n_rows && !dtable) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL dtable of %zu rows", what, n_rows);
  const size_t tb = n_rows * n_cols * 4;
  if (fg_bytes_overlap(dtable, tb, dy, n_ids * n_cols * 4) || fg_bytes_overlap(dtable, tb, ids, n_ids * 4))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: dtable overlaps %s", what,
                   fg_bytes_overlap(dtable, tb, ids, n_ids * 4) ? "ids" : "dy");
  /* No row to add to: every id is out of range. */
  if (!n_rows) return FG_OK;
  const fg_embed_bwd_call c = {.dy = dy, .ids = ids, .n_ids = n_ids, .n_rows = n_rows, .n_cols = n_cols,
                               .scale = scale, .dtable = dtable};
  return fg_family_embed_bwd(dev, &c, s, what);
}
