/* Weighted encoders of IQ4_NL and IQ4_XS (ggml quantize_iq4_{nl,xs} with quant_weights: the
 * search of quant_iq.c with weights qw * sqrt(sigma2 + x²) in place of x², sigma2 twice the
 * mean square of the super-block: 32 elements for IQ4_NL, 256 for IQ4_XS). */
#include <math.h>

#include "formats/quant_weighted_internal.h"

static float fg_qw_sigma2(const float *x, int n) {
  float s = 0;
  for (int j = 0; j < n; j++) s += x[j] * x[j];
  s *= 2.f / n;
  return s;
}

static void fg_qw_iq4_weights(const float *xb, const float *qw, float sigma2, float *w) {
  for (int j = 0; j < 32; j++) w[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
}

void fg_qwenc_iq4_nl(const float *x, const float *qw, uint8_t *y, int64_t n) {
  float w[32];
  for (int64_t ib = 0; ib < n / 32; ib++, x += 32, qw += 32, y += 18) {
    fg_qw_iq4_weights(x, qw, fg_qw_sigma2(x, 32), w);
    fg_iq4_nl_store(x, fg_iq4_fit(x, w), y);
  }
}

void fg_qwenc_iq4_xs(const float *x, const float *qw, uint8_t *y, int64_t n) {
  float w[32], scales[8];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, x += 256, qw += 256, y += 136) {
    const float sigma2 = fg_qw_sigma2(x, 256);
    for (int ib = 0; ib < 8; ib++) {
      fg_qw_iq4_weights(x + 32 * ib, qw + 32 * ib, sigma2, w);
      scales[ib] = fg_iq4_fit(x + 32 * ib, w);
    }
    fg_iq4_xs_store(x, scales, y);
  }
}
