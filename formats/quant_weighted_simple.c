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

/* Q4_0 / Q5_0 (codes -nmax..nmax-1 stored + nmax, d in f16) and, with a min, Q4_1 / Q5_1
 * (codes 0..nmax, d and m = -the_min in f16); 4-bit codes as nibbles, 5-bit as fg_pack_q5. */
static void fg_qw_enc32(const float *x, const float *qw, uint8_t *y, int64_t n, int nmax, int has_min) {
  const float sigma2 = fg_qw_row_sigma2(x, n);
  const int bits5 = nmax > 15, head = has_min ? 4 : 2, bb = head + (bits5 ? 20 : 16);
  float w[32];
  uint8_t L[32];
  for (int64_t ib = 0; ib < n / 32; ib++, y += bb) {
    const float *xb = x + 32 * ib;
    fg_qw_block_weights(xb, qw + 32 * ib, sigma2, w);
    if (has_min) {
      float min;
      fg_bytes_st_le16(y, fg_f32_to_f16(fg_qw_fit_asym(32, nmax, xb, w, L, &min, -0.9f, 0.05f, 36)));
      fg_bytes_st_le16(y + 2, fg_f32_to_f16(-min));
    } else {
      fg_bytes_st_le16(y, fg_f32_to_f16(fg_qw_fit_sym(32, nmax, xb, (int8_t *)L, w)));
    }
    if (bits5)
      fg_pack_q5(L, y + head, y + head + 4);
    else
      for (int j = 0; j < 16; j++) y[head + j] = (uint8_t)(L[j] | (L[j + 16] << 4));
  }
}

void fg_qwenc_q4_0(const float *x, const float *qw, uint8_t *y, int64_t n) { fg_qw_enc32(x, qw, y, n, 8, 0); }
void fg_qwenc_q5_0(const float *x, const float *qw, uint8_t *y, int64_t n) { fg_qw_enc32(x, qw, y, n, 16, 0); }
void fg_qwenc_q4_1(const float *x, const float *qw, uint8_t *y, int64_t n) { fg_qw_enc32(x, qw, y, n, 15, 1); }
void fg_qwenc_q5_1(const float *x, const float *qw, uint8_t *y, int64_t n) { fg_qw_enc32(x, qw, y, n, 31, 1); }
