/* f64 destinations: every conversion on the host, so any target takes f64 without a device
 * kernel for it. f32, f16 and bf16 values are all exactly representable in f64; a block
 * type decodes to the f32 values ggml's dequantizer gives, which then widen exactly. */
#include <string.h>

#include "forgia/elem/bytes.h"
#include "forgia/elem/half.h"
#include "forgia/quant.h"
#include "host/load_internal.h"

/* Below this many elements a parallel region costs more than it saves. */
#define FG_F64_PAR_MIN ((int64_t)1 << 16)

fg_status fg_load_to_f64(fg_dtype st, const void *src, size_t src_bytes, double *dst, int64_t nrows, int64_t rowlen) {
  const fg_dtype_traits *tr = fg_dtype_info(st);
  if (!tr || nrows < 0 || rowlen < 0) return fg_fail(FG_ERR_INVALID_ARG, "f64 load: bad arguments");
  if (nrows != 0 && (uint64_t)rowlen > UINT64_MAX / (uint64_t)nrows)
    return fg_fail(FG_ERR_OVERFLOW, "f64 load: %lld rows of %lld elements overflow", (long long)nrows, (long long)rowlen);
  const int64_t n = nrows * rowlen;
  if (tr->is_quant) {
    /* Decode into the first half of dst's bytes, then widen from the last element down:
     * double i covers floats 2i and 2i+1, both at or past i, which are already read. The
     * floats are read with memcpy so that no type-based aliasing lets the compiler move a
     * double store ahead of a float load it overlaps. */
    fg_status s = fg_quant_decode_rows(st, src, src_bytes, (float *)(void *)dst, nrows, rowlen);
    if (s) return s;
    const uint8_t *f = (const uint8_t *)dst;
    for (int64_t i = n; i-- > 0;) {
      float v;
      memcpy(&v, f + 4 * i, 4);
      dst[i] = (double)v;
    }
    return FG_OK;
  }
  if (st != FG_F32 && st != FG_F16 && st != FG_BF16)
    return fg_fail(FG_ERR_UNSUPPORTED, "f64 load: %s is not a float or block type", tr->name);
  if ((uint64_t)src_bytes != (uint64_t)n * tr->block_bytes)
    return fg_fail(FG_ERR_BAD_ROW, "f64 load: %zu bytes of %s for %lld elements, expected %llu", src_bytes, tr->name,
                   (long long)n, (unsigned long long)((uint64_t)n * tr->block_bytes));
  const uint8_t *p = src;
  if (st == FG_F32) {
#pragma omp parallel for schedule(static) if (n >= FG_F64_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
      float v;
      memcpy(&v, p + 4 * i, 4);
      dst[i] = (double)v;
    }
  } else if (st == FG_F16) {
#pragma omp parallel for schedule(static) if (n >= FG_F64_PAR_MIN)
    for (int64_t i = 0; i < n; i++) dst[i] = (double)fg_f16_to_f32(fg_bytes_ld_le16(p + 2 * i));
  } else {
#pragma omp parallel for schedule(static) if (n >= FG_F64_PAR_MIN)
    for (int64_t i = 0; i < n; i++) dst[i] = (double)fg_bf16_to_f32(fg_bytes_ld_le16(p + 2 * i));
  }
  return FG_OK;
}
