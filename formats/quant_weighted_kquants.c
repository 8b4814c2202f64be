/* Weighted encoders of the k-quants (ggml quantize_row_q{2..6}_K_impl). Per super-block of
 * 256: the sub-block weights are qw * sqrt(sigma2 + x²) (Q6_K takes qw as it is), each
 * sub-block is fitted, the sub-block scales (and mins) are fitted against their summed
 * weights (fg_qw_fit_scales, or a symmetric fit for Q3_K), and the elements are re-quantized
 * with the stored f16 scales, as in the unweighted encoders. */
#include <math.h>
#include <string.h>

#include "formats/quant_kquants_pack.h"
#include "formats/quant_weighted_internal.h"
#include "forgia/elem/quant_k.h"

static float fg_qw_sumsq256(const float *x) {
  float s = 0;
  for (int j = 0; j < 256; j++) s += x[j] * x[j];
  return s;
}

/* The n weights qw * sqrt(sigma2 + x²) of a sub-block into w; returns their sum. */
static float fg_qw_sub_weights(const float *x, const float *qw, int n, float sigma2, float *w) {
  float sumw = 0;
  for (int l = 0; l < n; l++) w[l] = qw[l] * sqrtf(sigma2 + x[l] * x[l]);
  for (int l = 0; l < n; l++) sumw += w[l];
  return sumw;
}

void fg_qwenc_q2_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  uint8_t L[256], Ls[16], Lm[16];
  float mins[16], scales[16], sw[16], w[16];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 84) {
    const float sigma2 = fg_qw_sumsq256(x) / 256;
    for (int j = 0; j < 16; j++) {
      sw[j] = fg_qw_sub_weights(x + 16 * j, qw + 16 * j, 16, sigma2, w);
      scales[j] = fg_qw_fit_asym(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.9f, 0.05f, 36);
    }
    const float dm0 = fg_qw_fit_scales(16, 15, scales, Ls, sw);
    const float mm0 = fg_qw_fit_scales(16, 15, mins, Lm, sw);
    const uint16_t d16 = fg_f32_to_f16(dm0), m16 = fg_f32_to_f16(mm0);
    fg_bytes_st_le16(y + 80, d16);
    fg_bytes_st_le16(y + 82, m16);
    const float dm = fg_f16_to_f32(d16), mm = fg_f16_to_f32(m16);
    uint8_t *sc = y;
    for (int j = 0; j < 16; j++) sc[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
    for (int j = 0; j < 16; j++) {
      const float d = dm * (sc[j] & 0xF);
      if (d == 0.0f) continue;
      fg_kq_requant_asym(x + 16 * j, 16, d, mm * (sc[j] >> 4), 3, L + 16 * j);
    }
    fg_kq_pack_2bit(L, y + 16);
  }
}

void fg_qwenc_q3_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  int8_t L[256], Ls[16];
  float scales[16], w[16], sw[16];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 110) {
    uint8_t *hmask = y, *qs = y + 32, *sc = y + 96;
    const float sigma2 = 2 * fg_qw_sumsq256(x) / 256;
    for (int j = 0; j < 16; j++) {
      sw[j] = fg_qw_sub_weights(x + 16 * j, qw + 16 * j, 16, sigma2, w);
      scales[j] = fg_qw_fit_sym(16, 4, x + 16 * j, L + 16 * j, w);
    }
    const float d_block = fg_qw_fit_sym(16, 32, scales, Ls, sw);
    fg_kq_pack_q3_scales(Ls, sc);
    const uint16_t d16 = fg_f32_to_f16(d_block);
    fg_bytes_st_le16(y + 108, d16);
    for (int j = 0; j < 16; j++) {
      const float d = fg_f16_to_f32(d16) * fg_q3_K_scale(sc, j);
      if (d == 0.0f) continue;
      fg_kq_requant_sym(x + 16 * j, 16, d, 4, L + 16 * j);
    }
    uint8_t Lu[256];
    fg_kq_q3_split(L, hmask, Lu);
    fg_kq_pack_2bit(Lu, qs);
  }
}

/* Q4_K / Q5_K: 8 sub-blocks of 32 with a 6-bit scale and min each; clamp63 is Q5_K's
 * MIN(63, .) on the fitted codes, which ggml's Q4_K omits. */
static void fg_qw_enc_q45(const float *x, const float *qw, uint8_t *y, int nmax, int clamp63, uint8_t *L) {
  uint8_t Ls[8], Lm[8], *sc = y + 4;
  float w[32], sw[8], mins[8], scales[8];
  const float sigma2 = 2 * fg_qw_sumsq256(x) / 256;
  for (int j = 0; j < 8; j++) {
    sw[j] = fg_qw_sub_weights(x + 32 * j, qw + 32 * j, 32, sigma2, w);
    scales[j] = fg_qw_fit_asym(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], -0.9f, 0.05f, 36);
  }
  const float d_block = fg_qw_fit_scales(8, 63, scales, Ls, sw);
  const float m_block = fg_qw_fit_scales(8, 63, mins, Lm, sw);
  if (clamp63)
    for (int j = 0; j < 8; j++) {
      Ls[j] = Ls[j] < 63 ? Ls[j] : 63;
      Lm[j] = Lm[j] < 63 ? Lm[j] : 63;
    }
  fg_kq_pack_scale_min(Ls, Lm, sc);
  const uint16_t d16 = fg_f32_to_f16(d_block), m16 = fg_f32_to_f16(m_block);
  fg_bytes_st_le16(y, d16);
  fg_bytes_st_le16(y + 2, m16);
  for (int j = 0; j < 8; j++) {
    int s6, m6;
    fg_k4_scale_min(sc, j, &s6, &m6);
    const float d = fg_f16_to_f32(d16) * s6;
    if (d == 0.0f) continue;
    fg_kq_requant_asym(x + 32 * j, 32, d, fg_f16_to_f32(m16) * m6, nmax, L + 32 * j);
  }
}

void fg_qwenc_q4_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  uint8_t L[256];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 144) {
    fg_qw_enc_q45(x, qw, y, 15, 0, L);
    fg_kq_pack_q4(L, y + 16);
  }
}

void fg_qwenc_q5_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  uint8_t L[256];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 176) {
    fg_qw_enc_q45(x, qw, y, 31, 1, L);
    fg_kq_pack_q5(L, y + 16, y + 48);
  }
}

void fg_qwenc_q6_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  int8_t L[256];
  float scales[16];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 210) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ib++) {
      const float s = fg_qw_fit_sym(16, 32, x + 16 * ib, L + 16 * ib, qw + 16 * ib);
      scales[ib] = s;
      const float a = fabsf(s);
      if (a > max_abs_scale) {
        max_abs_scale = a;
        max_scale = s;
      }
    }
    if (max_abs_scale < FG_QW_GROUP_MAX_EPS) {
      memset(y, 0, 210);
      continue;
    }
    const uint16_t d16 = fg_kq_q6_scales(scales, max_scale, y);
    const int8_t *sc = (const int8_t *)(y + 192);
    for (int j = 0; j < 16; j++) {
      const float d = fg_f16_to_f32(d16) * sc[j];
      if (d == 0.0f) continue;
      fg_kq_requant_sym(x + 16 * j, 16, d, 32, L + 16 * j);
    }
    fg_kq_pack_q6(L, y, y + 128);
  }
}
