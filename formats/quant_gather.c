/* fg_quant_gather_rows: rows of a stored matrix copied whole, block bytes untouched. Every
 * argument is checked before the first byte is written, so a failure leaves dst as it was. */
#include <string.h>

#include "forgia/quant.h"

fg_status fg_quant_gather_rows(fg_dtype t, const void *src, size_t src_bytes, int64_t nrows, int64_t n,
                               const int64_t *rows, int64_t nidx, void *dst, size_t dst_bytes) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  if (!tr) return fg_fail(FG_ERR_BAD_DTYPE, "quant gather: invalid dtype %d", (int)t);
  if (n < 0 || nrows < 0 || nidx < 0)
    return fg_fail(FG_ERR_INVALID_ARG, "quant gather %s: negative row length %lld, row count %lld or index count %lld",
                   tr->name, (long long)n, (long long)nrows, (long long)nidx);
  if (n % tr->block_elems != 0)
    return fg_fail(FG_ERR_BAD_ROW, "quant gather %s: row length %lld is not a multiple of the %u-element block",
                   tr->name, (long long)n, tr->block_elems);
  uint64_t row_bytes = (uint64_t)(n / tr->block_elems) * tr->block_bytes;
  if ((nrows && row_bytes > UINT64_MAX / (uint64_t)nrows) || (nidx && row_bytes > UINT64_MAX / (uint64_t)nidx))
    return fg_fail(FG_ERR_OVERFLOW, "quant gather %s: %lld rows of %lld elements overflow", tr->name,
                   (long long)(nrows > nidx ? nrows : nidx), (long long)n);
  uint64_t want_src = row_bytes * (uint64_t)nrows, want_dst = row_bytes * (uint64_t)nidx;
  if ((uint64_t)src_bytes != want_src)
    return fg_fail(FG_ERR_BAD_ROW, "quant gather %s: source is %zu bytes, expected %llu (%lld rows x %llu bytes)",
                   tr->name, src_bytes, (unsigned long long)want_src, (long long)nrows, (unsigned long long)row_bytes);
  if ((uint64_t)dst_bytes != want_dst)
    return fg_fail(FG_ERR_BAD_ROW, "quant gather %s: destination is %zu bytes, expected %llu (%lld rows x %llu bytes)",
                   tr->name, dst_bytes, (unsigned long long)want_dst, (long long)nidx, (unsigned long long)row_bytes);
  if (nidx && !rows) return fg_fail(FG_ERR_INVALID_ARG, "quant gather %s: NULL row indices", tr->name);
  if (want_dst && (!src || !dst)) return fg_fail(FG_ERR_INVALID_ARG, "quant gather %s: NULL buffer", tr->name);
  for (int64_t i = 0; i < nidx; i++)
    if (rows[i] < 0 || rows[i] >= nrows)
      return fg_fail(FG_ERR_RANGE, "quant gather %s: index %lld is row %lld, outside the %lld rows of the source",
                     tr->name, (long long)i, (long long)rows[i], (long long)nrows);
  const uint8_t *s = src;
  uint8_t *d = dst;
  for (int64_t i = 0; i < nidx; i++)
    memcpy(d + (uint64_t)i * row_bytes, s + (uint64_t)rows[i] * row_bytes, (size_t)row_bytes);
  return FG_OK;
}
