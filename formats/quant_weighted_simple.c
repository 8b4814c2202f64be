/* Weighted encoders of the 32-element types (ggml quantize_row_q{4,5}_{0,1}_impl): each
 * block's weights are qw * sqrt(sigma2 + x²), sigma2 the mean square of the whole row; the
 * symmetric types fit with fg_qw_fit_sym, the ones with a min with fg_qw_fit_asym. Q8_0
 * ignores the weights in ggml (quantize_q8_0 runs the reference quantizer), so it is not here. */
#include <math.h>

#include "formats/quant_weighted_internal.h"

static float fg_qw_row_sigma2(const float *x, int64_t n) {
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; j++) sum_x2 += x[j] * x[j];
  return sum_x2 / n;
}

static void fg_qw_block_weights(const float *xb, const float *qw, float sigma2, float *w) {
  for (int j = 0; j < 32; j++) w[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
}

/* the fifth bits of 32 codes: bit j of qh is code j's, bit j+16 code j+16's */
static void fg_qw_pack5(const uint8_t *L, uint8_t *qh, uint8_t *qs) {
  uint32_t h = 0;
  for (int j = 0; j < 16; j++) {
    const uint8_t a = L[j], b = L[j + 16];
    qs[j] = (uint8_t)((a & 0x0F) | ((b & 0x0F) << 4));
    h |= ((a & 0x10u) >> 4) << j;
    h |= ((b & 0x10u) >> 4) << (j + 16);
  }
  fg_bytes_st_le32(qh, h);
}

void fg_qwenc_q4_0(const float *x, const float *qw, uint8_t *y, int64_t n) {
  const float sigma2 = fg_qw_row_sigma2(x, n);
  float w[32];
  int8_t L[32];
  for (int64_t ib = 0; ib < n / 32; ib++, y += 18) {
    const float *xb = x + 32 * ib;
    fg_qw_block_weights(xb, qw + 32 * ib, sigma2, w);
    const float d = fg_qw_fit_sym(32, 8, xb, L, w);
    fg_bytes_st_le16(y, fg_f32_to_f16(d));
    for (int j = 0; j < 16; j++) y[2 + j] = (uint8_t)(L[j] | (L[j + 16] << 4));
  }
}

void fg_qwenc_q5_0(const float *x, const float *qw, uint8_t *y, int64_t n) {
  const float sigma2 = fg_qw_row_sigma2(x, n);
  float w[32];
  int8_t L[32];
  for (int64_t ib = 0; ib < n / 32; ib++, y += 22) {
    const float *xb = x + 32 * ib;
    fg_qw_block_weights(xb, qw + 32 * ib, sigma2, w);
    const float d = fg_qw_fit_sym(32, 16, xb, L, w);
    fg_bytes_st_le16(y, fg_f32_to_f16(d));
    fg_qw_pack5((const uint8_t *)L, y + 2, y + 6);
  }
}

/* Q4_1 / Q5_1: d and the min (stored as m = -the_min) both in f16. */
static void fg_qw_enc_min(const float *x, const float *qw, uint8_t *y, int64_t n, int nmax) {
  const float sigma2 = fg_qw_row_sigma2(x, n);
  const int bb = nmax == 15 ? 20 : 24;
  float w[32];
  uint8_t L[32];
  for (int64_t ib = 0; ib < n / 32; ib++, y += bb) {
    const float *xb = x + 32 * ib;
    fg_qw_block_weights(xb, qw + 32 * ib, sigma2, w);
    float min;
    const float d = fg_qw_fit_asym(32, nmax, xb, w, L, &min, -0.9f, 0.05f, 36);
    fg_bytes_st_le16(y, fg_f32_to_f16(d));
    fg_bytes_st_le16(y + 2, fg_f32_to_f16(-min));
    if (nmax == 15)
      for (int j = 0; j < 16; j++) y[4 + j] = (uint8_t)(L[j] | (L[j + 16] << 4));
    else
      fg_qw_pack5(L, y + 4, y + 8);
  }
}

void fg_qwenc_q4_1(const float *x, const float *qw, uint8_t *y, int64_t n) { fg_qw_enc_min(x, qw, y, n, 15); }
void fg_qwenc_q5_1(const float *x, const float *qw, uint8_t *y, int64_t n) { fg_qw_enc_min(x, qw, y, n, 31); }
