/* Weighted encoders of the k-quants (ggml quantize_row_q{2..6}_K_impl). Per super-block of
 * 256: the sub-block weights are qw * sqrt(sigma2 + x²) (Q6_K takes qw as it is), each
 * sub-block is fitted, the sub-block scales (and mins) are fitted against their summed
 * weights (fg_qw_fit_scales, or a symmetric fit for Q3_K), and the elements are re-quantized
 * with the stored f16 scales, as in the unweighted encoders. */
#include <math.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"
#include "forgia/elem/quant_k.h"

static float fg_qw_sumsq256(const float *x) {
  float s = 0;
  for (int j = 0; j < 256; j++) s += x[j] * x[j];
  return s;
}

/* Q2_K / Q3_K low-2-bit packing: byte l of half c holds elements 128c + l + 32s at bits 2s. */
static void fg_qw_pack_2bit(const uint8_t *L, uint8_t *qs) {
  for (int j = 0; j < 256; j += 128)
    for (int l = 0; l < 32; l++)
      qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

void fg_qwenc_q2_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  uint8_t L[256], Ls[16], Lm[16];
  float mins[16], scales[16], sw[16], w[16];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 84) {
    const float sigma2 = fg_qw_sumsq256(x) / 256;
    for (int j = 0; j < 16; j++) {
      sw[j] = 0;
      for (int l = 0; l < 16; l++) w[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
      for (int l = 0; l < 16; l++) sw[j] += w[l];
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
      const float m = mm * (sc[j] >> 4);
      for (int ii = 0; ii < 16; ii++)
        L[16 * j + ii] = (uint8_t)fg_qw_clampi(fg_nearest_int((x[16 * j + ii] + m) / d), 0, 3);
    }
    fg_qw_pack_2bit(L, y + 16);
  }
}

void fg_qwenc_q3_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  int8_t L[256], Ls[16];
  float scales[16], w[16], sw[16];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 110) {
    uint8_t *hmask = y, *qs = y + 32, *sc = y + 96;
    const float sigma2 = 2 * fg_qw_sumsq256(x) / 256;
    for (int j = 0; j < 16; j++) {
      for (int l = 0; l < 16; l++) w[l] = qw[16 * j + l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
      float sumw = 0;
      for (int l = 0; l < 16; l++) sumw += w[l];
      sw[j] = sumw;
      scales[j] = fg_qw_fit_sym(16, 4, x + 16 * j, L + 16 * j, w);
    }
    memset(sc, 0, 12);
    const float d_block = fg_qw_fit_sym(16, 32, scales, Ls, sw);
    for (int j = 0; j < 16; j++) {
      int l = Ls[j];
      if (j < 8) sc[j] = (uint8_t)(l & 0xF);
      else sc[j - 8] |= (uint8_t)((l & 0xF) << 4);
      l >>= 4;
      sc[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
    }
    const uint16_t d16 = fg_f32_to_f16(d_block);
    fg_bytes_st_le16(y + 108, d16);
    for (int j = 0; j < 16; j++) {
      const float d = fg_f16_to_f32(d16) * fg_q3_K_scale(sc, j);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ii++)
        L[16 * j + ii] = (int8_t)(fg_qw_clampi(fg_nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
    }
    memset(hmask, 0, 32);
    uint8_t Lu[256];
    for (int j = 0; j < 256; j++) {
      uint8_t v = (uint8_t)L[j];
      if (v > 3) {
        hmask[j % 32] |= (uint8_t)(1u << (j / 32));
        v = (uint8_t)(v - 4);
      }
      Lu[j] = v;
    }
    fg_qw_pack_2bit(Lu, qs);
  }
}

/* Q4_K / Q5_K: 8 sub-blocks of 32 with a 6-bit scale and min each; clamp63 is Q5_K's
 * MIN(63, .) on the fitted codes, which ggml's Q4_K omits. */
static void fg_qw_enc_q45(const float *x, const float *qw, uint8_t *y, int nmax, int clamp63, uint8_t *L) {
  uint8_t Ls[8], Lm[8], *sc = y + 4;
  float w[32], sw[8], mins[8], scales[8];
  const float sigma2 = 2 * fg_qw_sumsq256(x) / 256;
  for (int j = 0; j < 8; j++) {
    for (int l = 0; l < 32; l++) w[l] = qw[32 * j + l] * sqrtf(sigma2 + x[32 * j + l] * x[32 * j + l]);
    float sumw = 0;
    for (int l = 0; l < 32; l++) sumw += w[l];
    sw[j] = sumw;
    scales[j] = fg_qw_fit_asym(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], -0.9f, 0.05f, 36);
  }
  const float d_block = fg_qw_fit_scales(8, 63, scales, Ls, sw);
  const float m_block = fg_qw_fit_scales(8, 63, mins, Lm, sw);
  for (int j = 0; j < 8; j++) {
    uint8_t ls = Ls[j], lm = Lm[j];
    if (clamp63) {
      ls = ls < 63 ? ls : 63;
      lm = lm < 63 ? lm : 63;
    }
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
      sc[j - 4] |= (uint8_t)((ls >> 4) << 6);
      sc[j] |= (uint8_t)((lm >> 4) << 6);
    }
  }
  const uint16_t d16 = fg_f32_to_f16(d_block), m16 = fg_f32_to_f16(m_block);
  fg_bytes_st_le16(y, d16);
  fg_bytes_st_le16(y + 2, m16);
  for (int j = 0; j < 8; j++) {
    int s6, m6;
    fg_k4_scale_min(sc, j, &s6, &m6);
    const float d = fg_f16_to_f32(d16) * s6;
    if (d == 0.0f) continue;
    const float dm = fg_f16_to_f32(m16) * m6;
    for (int ii = 0; ii < 32; ii++)
      L[32 * j + ii] = (uint8_t)fg_qw_clampi(fg_nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
  }
}

void fg_qwenc_q4_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  uint8_t L[256];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 144) {
    fg_qw_enc_q45(x, qw, y, 15, 0, L);
    uint8_t *q = y + 16;
    for (int j = 0; j < 256; j += 64, q += 32)
      for (int l = 0; l < 32; l++) q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
  }
}

void fg_qwenc_q5_K(const float *x, const float *qw, uint8_t *y, int64_t n) {
  uint8_t L[256];
  for (int64_t i = 0; i < n / 256; i++, x += 256, qw += 256, y += 176) {
    fg_qw_enc_q45(x, qw, y, 31, 1, L);
    uint8_t *qh = y + 16, *ql = y + 48;
    memset(qh, 0, 32);
    uint8_t m1 = 1, m2 = 2;
    for (int b = 0; b < 256; b += 64, ql += 32) {
      for (int j = 0; j < 32; j++) {
        int l1 = L[b + j], l2 = L[b + j + 32];
        if (l1 > 15) {
          l1 -= 16;
          qh[j] |= m1;
        }
        if (l2 > 15) {
          l2 -= 16;
          qh[j] |= m2;
        }
        ql[j] = (uint8_t)(l1 | (l2 << 4));
      }
      m1 = (uint8_t)(m1 << 2);
      m2 = (uint8_t)(m2 << 2);
    }
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
    const float iscale = -128.f / max_scale;
    const uint16_t d16 = fg_f32_to_f16(1 / iscale);
    fg_bytes_st_le16(y + 208, d16);
    int8_t *sc = (int8_t *)(y + 192);
    for (int ib = 0; ib < 16; ib++) {
      const int v = fg_nearest_int(iscale * scales[ib]);
      sc[ib] = (int8_t)(v < 127 ? v : 127);
    }
    for (int j = 0; j < 16; j++) {
      const float d = fg_f16_to_f32(d16) * sc[j];
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ii++)
        L[16 * j + ii] = (int8_t)(fg_qw_clampi(fg_nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
    }
    uint8_t *ql = y, *qh = y + 128;
    for (int j = 0; j < 256; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; l++) {
        const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
        const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
        ql[l] = (uint8_t)(q1 | (q3 << 4));
        ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
        qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                          ((L[j + l + 96] >> 4) << 6));
      }
    }
  }
}
