/* fg_quant_encode_rows_weighted: contracts (sizes, finite inputs and weights, the range of
 * each block), dispatch by dtype, and the OpenMP loop over rows. The weighted encoders work on
 * whole rows (the simple types' weights depend on the row's mean square), so a row holding a
 * value that is refused is not encoded at all. */
#include "forgia/quant_weighted.h"

#include <math.h>
#include <stdio.h>

#include "forgia/quant.h"
#include "formats/quant_weighted_internal.h"

static const fg_qrow_wenc fg_wenc_tab[FG_GGML_TYPE_COUNT] = {
  [FG_Q4_0] = fg_qwenc_q4_0,   [FG_Q4_1] = fg_qwenc_q4_1,   [FG_Q5_0] = fg_qwenc_q5_0,
  [FG_Q5_1] = fg_qwenc_q5_1,   [FG_Q2_K] = fg_qwenc_q2_K,   [FG_Q3_K] = fg_qwenc_q3_K,
  [FG_Q4_K] = fg_qwenc_q4_K,   [FG_Q5_K] = fg_qwenc_q5_K,   [FG_Q6_K] = fg_qwenc_q6_K,
  [FG_IQ4_NL] = fg_qwenc_iq4_nl, [FG_IQ4_XS] = fg_qwenc_iq4_xs,
};

/* The grid i-quants: their encoder and search tables; they run without weights too. */
typedef struct fg_qw_grid {
  fg_qrow_wenc_grid fn;
  int tab;
} fg_qw_grid;

static const fg_qw_grid fg_wgrid_tab[FG_GGML_TYPE_COUNT] = {
  [FG_IQ3_XXS] = {fg_qwenc_iq3_xxs, FG_IQT_3XXS},
  [FG_IQ3_S] = {fg_qwenc_iq3_s, FG_IQT_3S},
  [FG_IQ2_XXS] = {fg_qwenc_iq2_xxs, FG_IQT_2XXS},
  [FG_IQ2_XS] = {fg_qwenc_iq2_xs, FG_IQT_2XS},
  [FG_IQ2_S] = {fg_qwenc_iq2_s, FG_IQT_2S},
  [FG_IQ1_S] = {fg_qwenc_iq1_s, FG_IQT_1S},
  [FG_IQ1_M] = {fg_qwenc_iq1_m, FG_IQT_1S},
};

/* ggml's quantizers that run the reference code whatever the weights. */
static bool fg_qw_ignores(fg_dtype t) {
  return t == FG_Q8_0 || t == FG_TQ1_0 || t == FG_TQ2_0 || t == FG_MXFP4 || t == FG_NVFP4 || t == FG_Q1_0 ||
         t == FG_Q2_0 || t == FG_F32 || t == FG_F16 || t == FG_BF16;
}

static bool fg_qw_is_grid(fg_dtype t) { return (int)t >= 0 && t < FG_GGML_TYPE_COUNT && fg_wgrid_tab[t].fn != NULL; }

static bool fg_qw_in_tab(fg_dtype t) {
  return ((int)t >= 0 && t < FG_GGML_TYPE_COUNT && fg_wenc_tab[t] != NULL) || fg_qw_is_grid(t);
}

bool fg_quant_needs_weights(fg_dtype t) { return t == FG_IQ2_XXS || t == FG_IQ2_XS || t == FG_IQ1_S; }

bool fg_quant_llama_requires_imatrix(fg_dtype t) {
  return t == FG_IQ3_XXS || t == FG_IQ2_XXS || t == FG_IQ2_XS || t == FG_IQ2_S || t == FG_IQ1_M || t == FG_IQ1_S;
}

bool fg_quant_uses_weights(fg_dtype t) { return fg_qw_in_tab(t); }

bool fg_quant_can_encode_weighted(fg_dtype t) { return fg_qw_in_tab(t) || fg_qw_ignores(t); }

/* The searching encoders square and cube their inputs in f32 (quant.c's bound). */
#define FG_QW_SEARCH_LIMIT_BITS 0x4f800000u /* 2^32 */

/* Work below this many elements stays on the calling thread. */
#define FG_QW_PAR_MIN_ELEMS 16384

static fg_status fg_qw_refuse_nonfinite(const fg_dtype_traits *tr, const float *src, int64_t nrows, int64_t n,
                                        int64_t at) {
  char row[48] = "";
  const float v = src[at];
  if (nrows > 1) snprintf(row, sizeof row, "row %lld, ", (long long)(at / n));
  return fg_fail(FG_ERR_NONFINITE, "quant encode %s (weighted): non-finite value %s at %selement %lld", tr->name,
                 isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"), row, (long long)(at % n));
}

static fg_status fg_qw_refuse_block(const fg_dtype_traits *tr, const float *src, int64_t nrows, int64_t n,
                                    int64_t block, int why) {
  const int64_t be = tr->block_elems;
  const float *x = src + block * be;
  int64_t at = 0;
  for (int64_t j = 1; j < be; j++)
    if ((fg_f32_bits(x[j]) & 0x7fffffffu) > (fg_f32_bits(x[at]) & 0x7fffffffu)) at = j;
  const int64_t first = block * be % n;
  char row[48] = "";
  if (nrows > 1) snprintf(row, sizeof row, "row %lld, ", (long long)(block * be / n));
  return fg_fail(FG_ERR_RANGE, "quant encode %s (weighted): %sblock %lld (elements %lld..%lld): largest magnitude %.9g at "
                 "element %lld %s", tr->name, row, (long long)(first / be), (long long)first,
                 (long long)(first + be - 1), (double)x[at], (long long)(first + at),
                 why == 1   ? "reaches 2^32 (the fitting search overflows f32 there)"
                 : why == 2 ? "leaves the grid search without a candidate (its weighted distances overflow f32; "
                              "ggml aborts there)"
                            : "needs an f16 scale or min beyond 65504 (ggml would store Inf, which decodes to NaN)");
}

fg_status fg_quant_encode_rows_weighted(fg_dtype t, const float *src, int64_t nrows, int64_t n,
                                        const float *weights, void *dst, size_t dst_bytes) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  if (!tr) return fg_fail(FG_ERR_BAD_DTYPE, "quant encode (weighted): invalid dtype %d", (int)t);
  if (!fg_quant_can_encode_weighted(t)) {
    if (fg_quant_needs_weights(t) || fg_quant_llama_requires_imatrix(t) || t == FG_IQ3_S)
      return fg_fail(FG_ERR_UNSUPPORTED, "quant encode %s (weighted): this build has no encoder for %s", tr->name,
                     tr->name);
    return fg_fail(FG_ERR_UNSUPPORTED, "quant encode %s (weighted): not a type ggml quantizes", tr->name);
  }
  if (!weights && fg_quant_needs_weights(t))
    return fg_fail(FG_ERR_INVALID_ARG, "quant encode %s: needs an importance matrix (ggml cannot quantize %s "
                   "without one)", tr->name, tr->name);
  /* no weights, or a type that ignores them: ggml's unweighted bytes */
  const bool grid = fg_qw_is_grid(t);
  if ((!weights && !grid) || fg_qw_ignores(t)) return fg_quant_encode_rows(t, src, nrows, n, dst, dst_bytes);

  if (n < 0 || nrows < 0)
    return fg_fail(FG_ERR_INVALID_ARG, "quant encode %s (weighted): negative row length %lld or row count %lld",
                   tr->name, (long long)n, (long long)nrows);
  const int64_t be = tr->block_elems, bb = tr->block_bytes;
  if (n % be != 0)
    return fg_fail(FG_ERR_BAD_ROW, "quant encode %s (weighted): row length %lld is not a multiple of the %lld-element "
                   "block", tr->name, (long long)n, (long long)be);
  const uint64_t row_bytes = (uint64_t)(n / be) * (uint64_t)bb;
  if (nrows != 0 && row_bytes > UINT64_MAX / (uint64_t)nrows)
    return fg_fail(FG_ERR_OVERFLOW, "quant encode %s (weighted): %lld rows of %lld elements overflow", tr->name,
                   (long long)nrows, (long long)n);
  const uint64_t want = row_bytes * (uint64_t)nrows;
  if ((uint64_t)dst_bytes != want)
    return fg_fail(FG_ERR_BAD_ROW, "quant encode %s (weighted): byte slice is %zu bytes, expected %llu (%lld rows x "
                   "%lld elements = %llu bytes per row)", tr->name, dst_bytes, (unsigned long long)want,
                   (long long)nrows, (long long)n, (unsigned long long)row_bytes);
  if (want == 0) return FG_OK;
  if (!src || !dst) return fg_fail(FG_ERR_INVALID_ARG, "quant encode %s (weighted): NULL buffer", tr->name);
  for (int64_t j = 0; weights && j < n; j++) {
    if (!isfinite(weights[j]))
      return fg_fail(FG_ERR_NONFINITE, "quant encode %s (weighted): weight %lld is %s", tr->name, (long long)j,
                     isnan(weights[j]) ? "NaN" : "Inf");
    if (weights[j] < 0)
      return fg_fail(FG_ERR_RANGE, "quant encode %s (weighted): weight %lld is negative (%.9g); importance weights "
                     "are mean squares", tr->name, (long long)j, (double)weights[j]);
  }

  /* the first problem in row-major order: a non-finite element, or a block the search cannot
   * take; rows from its row on are not encoded */
  const int64_t nb = nrows * (n / be);
  int64_t bad = INT64_MAX, big = INT64_MAX;
  for (int64_t b = 0; b < nb && bad == INT64_MAX && big == INT64_MAX; b++) {
    const float *x = src + b * be;
    uint32_t m = 0;
    for (int64_t j = 0; j < be; j++) {
      const uint32_t u = fg_f32_bits(x[j]) & 0x7fffffffu;
      if (u >= 0x7f800000u) {
        bad = b * be + j;
        break;
      }
      m = u > m ? u : m;
    }
    if (bad == INT64_MAX && m >= FG_QW_SEARCH_LIMIT_BITS) big = b;
  }
  const int64_t stop_row = bad != INT64_MAX ? bad / n : big != INT64_MAX ? big * be / n : nrows;

  const fg_qrow_wenc enc = fg_wenc_tab[t];
  const fg_iq_tab *tab = NULL;
  if (grid && !(tab = fg_iq_tab_get(fg_wgrid_tab[t].tab)))
    return fg_fail(FG_ERR_NOMEM, "quant encode %s: out of memory for the grid search tables", tr->name);
  uint8_t *y = (uint8_t *)dst;
  int64_t failed = INT64_MAX; /* smallest flat block whose grid search found nothing */
  int64_t r;
#pragma omp parallel for schedule(dynamic, 1) if (stop_row > 1 && stop_row * n >= FG_QW_PAR_MIN_ELEMS)
  for (r = 0; r < stop_row; r++) {
    if (!grid) {
      enc(src + r * n, weights, y + (size_t)r * row_bytes, n);
      continue;
    }
    const int64_t fb = fg_wgrid_tab[t].fn(tab, src + r * n, weights, y + (size_t)r * row_bytes, n);
    if (fb >= 0) {
#pragma omp critical(fg_qw_failed)
      if (r * (n / be) + fb < failed) failed = r * (n / be) + fb;
    }
  }

  /* a stored f16 field that came out Inf, in an encoded block before the first problem */
  const fg_half_fields h = fg_quant_halves[t];
  const int64_t nb_done = stop_row * (n / be) < failed ? stop_row * (n / be) : failed;
  for (int64_t b = 0; b < nb_done; b++) {
    const uint8_t *blk = y + b * bb;
    for (int k = 0; k < h.n; k++)
      if ((fg_bytes_ld_le16(blk + h.off[k]) & 0x7c00u) == 0x7c00u) return fg_qw_refuse_block(tr, src, nrows, n, b, 0);
    /* IQ1_M keeps its f16 scale in the top nibbles of its four scale words */
    if (t == FG_IQ1_M && (fg_bytes_ld_le16(blk + 54) & 0x7c00u) == 0x7c00u)
      return fg_qw_refuse_block(tr, src, nrows, n, b, 0);
  }
  if (failed != INT64_MAX) return fg_qw_refuse_block(tr, src, nrows, n, failed, 2);
  if (bad != INT64_MAX) return fg_qw_refuse_nonfinite(tr, src, nrows, n, bad);
  if (big != INT64_MAX) return fg_qw_refuse_block(tr, src, nrows, n, big, 1);
  return FG_OK;
}
