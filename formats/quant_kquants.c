/* Encoders of the k-quants (ggml quantize_row_q{2..6,8}_K_ref, no importance matrix).
 * Each super-block of 256 is split into sub-blocks; a helper fits a scale (and a min) per
 * sub-block, the scales are quantized against the block's largest one, and the elements are
 * re-quantized with the fp16-rounded stored scales. Every sum runs in index order in f32 and
 * every expression keeps ggml's association, because the chosen codes depend on it. */
#include <math.h>

#include "formats/quant_internal.h"
#include "forgia/elem/quant_k.h"

#define FG_GROUP_MAX_EPS 1e-15f

static inline int fg_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Asymmetric fit (scale, min) of n values with weights w, codes 0..nmax, searching nstep+1
 * trial inverse scales around nmax/(max-min); the error is weighted |diff| (use_mad) or diff².
 * Returns the scale; *the_min receives -min (a value to subtract, >= 0). */
static float fg_make_qkx2_quants(int n, int nmax, const float *x, const float *w, uint8_t *L,
                                 float *the_min, uint8_t *Laux, float rmin, float rdelta,
                                 int nstep, int use_mad) {
  float min = x[0], max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; i++) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; i++) L[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; i++) {
    int l = fg_nearest_int(iscale * (x[i] - min));
    L[i] = (uint8_t)fg_clampi(l, 0, nmax);
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? fabsf(diff) : diff * diff;
    best_error += w[i] * diff;
  }
  for (int is = 0; is <= nstep; is++) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; i++) {
      int l = fg_clampi(fg_nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = (uint8_t)l;
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; i++) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; i++) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

/* Signed value of largest magnitude, first on ties, starting from 0 (vectorised, see
 * fg_signed_absmax); *amax_out receives its magnitude. */
static float fg_kq_signed_max(const float *x, int n, float *amax_out) {
  const float max = fg_signed_absmax(x, n);
  *amax_out = fabsf(max);
  return max;
}

/* Symmetric fit with weights x² (rmse_type 1, no importance matrix): codes -nmax..nmax-1 stored
 * +nmax in L; tries 18 inverse scales around -nmax/max. Used by Q6_K. */
static float fg_make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
  float amax;
  const float max = fg_kq_signed_max(x, n, &amax);
  if (amax < FG_GROUP_MAX_EPS) {
    for (int i = 0; i < n; i++) L[i] = 0;
    return 0.0f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    int l = fg_clampi(fg_nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = (int8_t)(l + nmax);
    float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; is++) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; i++) {
      int l = fg_clampi(fg_nearest_int(iscale * x[i]), -nmax, nmax - 1);
      float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; i++)
        L[i] = (int8_t)(nmax + fg_clampi(fg_nearest_int(iscale * x[i]), -nmax, nmax - 1));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

/* Symmetric fit for Q3_K: initial codes from -nmax/max, then up to 5 passes of coordinate
 * descent on the weighted (x²) least-squares objective. Codes stored +nmax in L. */
static float fg_make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
  float amax;
  const float max = fg_kq_signed_max(x, n, &amax);
  if (amax < FG_GROUP_MAX_EPS) {
    for (int i = 0; i < n; i++) L[i] = 0;
    return 0.0f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    int l = fg_clampi(fg_nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = (int8_t)l;
    float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int itry = 0; itry < 5; itry++) {
    int n_changed = 0;
    for (int i = 0; i < n; i++) {
      float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx > 0) {
        float sl2 = suml2 - w * L[i] * L[i];
        int new_l = fg_clampi(fg_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          slx += w * x[i] * new_l;
          sl2 += w * new_l * new_l;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = (int8_t)new_l;
            sumlx = slx;
            suml2 = sl2;
            n_changed++;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
  return sumlx / suml2;
}

/* Q2_K / Q3_K low-2-bit packing: byte l of half c holds elements 128c + l + 32s at bits 2s. */
static void fg_pack_2bit(const uint8_t *L, uint8_t *qs) {
  for (int j = 0; j < 256; j += 128)
    for (int l = 0; l < 32; l++)
      qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

void fg_qenc_q2_K(const float *x, uint8_t *y) {
  uint8_t L[256], Laux[16], *scales = y, *qs = y + 16;
  float w[16], mins[16], sc[16];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 16; j++) {
    for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
    sc[j] = fg_make_qkx2_quants(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, 1);
    if (sc[j] > max_scale) max_scale = sc[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  uint16_t d16 = 0, dmin16 = 0;
  if (max_scale > 0) {
    const float iscale = 15.f / max_scale;
    for (int j = 0; j < 16; j++) scales[j] = (uint8_t)fg_nearest_int(iscale * sc[j]);
    d16 = fg_f32_to_f16(max_scale / 15.f);
  } else {
    for (int j = 0; j < 16; j++) scales[j] = 0;
    d16 = fg_f32_to_f16(0.f);
  }
  if (max_min > 0) {
    const float iscale = 15.f / max_min;
    for (int j = 0; j < 16; j++) scales[j] |= (uint8_t)((uint32_t)fg_nearest_int(iscale * mins[j]) << 4); /* low byte, as ggml */
    dmin16 = fg_f32_to_f16(max_min / 15.f);
  } else {
    dmin16 = fg_f32_to_f16(0.f);
  }
  fg_st_le16(y + 80, d16);
  fg_st_le16(y + 82, dmin16);
  for (int j = 0; j < 16; j++) {
    const float d = fg_f16_to_f32(d16) * (scales[j] & 0xF);
    if (d == 0.0f) continue; /* keep the fit's codes, as ggml does */
    const float dm = fg_f16_to_f32(dmin16) * (scales[j] >> 4);
    for (int ii = 0; ii < 16; ii++)
      L[16 * j + ii] = (uint8_t)fg_clampi(fg_nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
  }
  fg_pack_2bit(L, qs);
}

void fg_qenc_q3_K(const float *x, uint8_t *y) {
  int8_t L[256];
  float sc[16];
  uint8_t *hmask = y, *qs = y + 32, *scales = y + 96;
  float max_scale = 0, amax = 0;
  for (int j = 0; j < 16; j++) {
    sc[j] = fg_make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
    float s = fabsf(sc[j]);
    if (s > amax) {
      amax = s;
      max_scale = sc[j];
    }
  }
  memset(scales, 0, 12);
  uint16_t d16;
  if (max_scale != 0.0f) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < 16; j++) {
      int8_t l = (int8_t)fg_nearest_int(iscale * sc[j]);
      l = (int8_t)(fg_clampi(l, -32, 31) + 32);
      if (j < 8) scales[j] = (uint8_t)(l & 0xF);
      else scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
      l = (int8_t)(l >> 4);
      scales[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
    }
    d16 = fg_f32_to_f16(1 / iscale);
  } else {
    d16 = fg_f32_to_f16(0.f);
  }
  fg_st_le16(y + 108, d16);
  for (int j = 0; j < 16; j++) {
    const float d = fg_f16_to_f32(d16) * fg_q3_K_scale(scales, j);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ii++)
      L[16 * j + ii] = (int8_t)(fg_clampi(fg_nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
  }
  /* codes above 3 set bit j >> 5 of hmask[j & 31] and drop by 4 (branch-free, by rows) */
  uint8_t Lu[256];
  for (int m = 0; m < 32; m++) {
    uint8_t h = 0;
    for (int k = 0; k < 8; k++) {
      const uint8_t v = (uint8_t)L[32 * k + m], hi = (uint8_t)(v > 3);
      h = (uint8_t)(h | (hi << k));
      Lu[32 * k + m] = (uint8_t)(v - 4 * hi);
    }
    hmask[m] = h;
  }
  fg_pack_2bit(Lu, qs);
}

/* Q4_K / Q5_K share the fit and the 12-byte scale/min packing; they differ in nmax, the
 * search grid and the code packing. */
static void fg_qenc_q45_K(const float *x, uint8_t *y, int nmax, float rmin, int nstep, uint8_t *L) {
  uint8_t Laux[32], *scales = y + 4;
  float w[32], mins[8], sc[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; j++) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = sqrtf(sum_x2 / 32);
    for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(x[32 * j + l]);
    sc[j] = fg_make_qkx2_quants(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, 0);
    if (sc[j] > max_scale) max_scale = sc[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < 8; j++) {
    uint8_t ls = (uint8_t)fg_nearest_int(inv_scale * sc[j]);
    uint8_t lm = (uint8_t)fg_nearest_int(inv_min * mins[j]);
    ls = ls < 63 ? ls : 63;
    lm = lm < 63 ? lm : 63;
    if (j < 4) {
      scales[j] = ls;
      scales[j + 4] = lm;
    } else {
      scales[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
      scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
      scales[j] |= (uint8_t)((lm >> 4) << 6);
    }
  }
  const uint16_t d16 = fg_f32_to_f16(max_scale / 63.f), dmin16 = fg_f32_to_f16(max_min / 63.f);
  fg_st_le16(y, d16);
  fg_st_le16(y + 2, dmin16);
  for (int j = 0; j < 8; j++) {
    int sc6, m6;
    fg_k4_scale_min(scales, j, &sc6, &m6);
    const float d = fg_f16_to_f32(d16) * sc6;
    if (d == 0.0f) continue;
    const float dm = fg_f16_to_f32(dmin16) * m6;
    for (int ii = 0; ii < 32; ii++)
      L[32 * j + ii] = (uint8_t)fg_clampi(fg_nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
  }
}

void fg_qenc_q4_K(const float *x, uint8_t *y) {
  uint8_t L[256], *qs = y + 16;
  fg_qenc_q45_K(x, y, 15, -1.f, 20, L);
  for (int j = 0; j < 256; j += 64)
    for (int l = 0; l < 32; l++) qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

void fg_qenc_q5_K(const float *x, uint8_t *y) {
  uint8_t L[256], *qh = y + 16, *ql = y + 48;
  fg_qenc_q45_K(x, y, 31, -0.5f, 15, L);
  memset(qh, 0, 32);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < 256; n += 64) {
    for (int j = 0; j < 32; j++) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[n / 2 + j] = (uint8_t)(l1 | (l2 << 4));
    }
    m1 = (uint8_t)(m1 << 2);
    m2 = (uint8_t)(m2 << 2);
  }
}

void fg_qenc_q6_K(const float *x, uint8_t *y) {
  int8_t L[256];
  float sc[16];
  uint8_t *ql = y, *qh = y + 128;
  int8_t *scales = (int8_t *)(y + 192);
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < 16; ib++) {
    sc[ib] = fg_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
    const float a = fabsf(sc[ib]);
    if (a > max_abs_scale) {
      max_abs_scale = a;
      max_scale = sc[ib];
    }
  }
  if (max_abs_scale < FG_GROUP_MAX_EPS) {
    memset(y, 0, 210);
    return;
  }
  const float iscale = -128.f / max_scale;
  const uint16_t d16 = fg_f32_to_f16(1 / iscale);
  fg_st_le16(y + 208, d16);
  for (int ib = 0; ib < 16; ib++) {
    int v = fg_nearest_int(iscale * sc[ib]);
    scales[ib] = (int8_t)(v < 127 ? v : 127);
  }
  for (int j = 0; j < 16; j++) {
    const float d = fg_f16_to_f32(d16) * scales[j];
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ii++)
      L[16 * j + ii] = (int8_t)(fg_clampi(fg_nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
  }
  for (int j = 0; j < 256; j += 128) {
    for (int l = 0; l < 32; l++) {
      const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
      ql[l] = (uint8_t)(q1 | (q3 << 4));
      ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
      qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                        ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

/* Q8_K: d = 1/iscale stored as f32; bsums are the sums of each 16 codes. ggml leaves bsums
 * unwritten for an all-zero block; here they are zeroed, so the bytes are defined. */
void fg_qenc_q8_K(const float *x, uint8_t *y) {
  float amax;
  const float max = fg_kq_signed_max(x, 256, &amax);
  if (amax == 0.0f) {
    memset(y, 0, 292);
    return;
  }
  const float iscale = -127.f / max;
  int8_t *qs = (int8_t *)(y + 4);
  for (int j = 0; j < 256; j++) {
    int v = fg_nearest_int(iscale * x[j]);
    qs[j] = (int8_t)(v < 127 ? v : 127);
  }
  for (int j = 0; j < 16; j++) {
    int sum = 0;
    for (int ii = 0; ii < 16; ii++) sum += qs[16 * j + ii];
    fg_st_le16(y + 260 + 2 * j, (uint16_t)(int16_t)sum);
  }
  fg_st_le32(y, fg_f32_bits(1 / iscale));
}
