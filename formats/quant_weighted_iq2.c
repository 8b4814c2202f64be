/* Encoders of IQ2_XXS, IQ2_XS and IQ2_S (ggml quantize_row_iq2_{xxs,xs,s}_impl). Groups of 8
 * magnitudes are rounded to levels 0..2 under trial scales and moved to their best listed
 * grid neighbour when off the grid; the sign patterns of IQ2_XXS and IQ2_XS have an even
 * number of negatives (a 7-bit code), so an odd one flips its least important element. */
#include <math.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"

/* Levels of xval * id for one group of 8, stored in L; returns the packed index. */
static int fg_iq2_index(const float *xval, float id, int8_t *L) {
  int u = 0;
  for (int i = 0; i < 8; i++) {
    const int l = fg_qw_clampi(fg_nearest_int(0.5f * (id * xval[i] - 1)), 0, 2);
    L[i] = (int8_t)l;
    u |= l << (2 * i);
  }
  return u;
}

/* The grid entry of levels L (or a negative map value). ggml packs into a uint16: a level
 * outside 0..2 (IQ2_XXS keeps its initial fit's codes, 0..4 or wrapped, when no scale is
 * accepted) spills into the next fields and the top bits are dropped; the same here. */
static int fg_iq2_grid_of(const fg_iq_tab *t, const int8_t *L) {
  unsigned u = 0;
  for (int i = 0; i < 8; i++) u |= (unsigned)(int)L[i] << (2 * i);
  return t->map[u & 0xffffu];
}

/* Magnitudes of ngroups groups of 8 and their sign bytes; with parity, an odd count of
 * negatives flips back the element of least weight*x^2 (first on ties) and the codes keep 7
 * bits. */
static void fg_iq2_signs(const float *xb, const float *weight, int ngroups, int parity, float *xval, uint8_t *signs) {
  for (int k = 0; k < ngroups; k++) {
    int nflip = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; i++) {
      if (xb[8 * k + i] >= 0) {
        xval[8 * k + i] = xb[8 * k + i];
      } else {
        xval[8 * k + i] = -xb[8 * k + i];
        nflip++;
        s |= (uint8_t)(1u << i);
      }
    }
    if (parity && nflip % 2) {
      int imin = 0;
      float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
      for (int i = 1; i < 8; i++) {
        const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
        if (ax < min) {
          min = ax;
          imin = i;
        }
      }
      xval[8 * k + imin] = -xval[8 * k + imin];
      s ^= (uint8_t)(1u << imin);
    }
    signs[k] = parity ? (uint8_t)(s & 127) : s;
  }
}

static void fg_iq2_sums(int n, const float *weight, const float *xval, const int8_t *L, float *sumqx, float *sumq2) {
  float a = 0, b = 0;
  for (int i = 0; i < n; i++) {
    const float q = (float)(2 * L[i] + 1);
    a += weight[i] * xval[i] * q;
    b += weight[i] * q * q;
  }
  *sumqx = a;
  *sumq2 = b;
}

static float fg_iq2_sigma2(const float *x, int twice) {
  float s = 0;
  for (int i = 0; i < 256; i++) s += x[i] * x[i];
  return twice ? 2 * s / 256 : s / 256;
}

/* The 16-element sub-block fit of IQ2_XS and IQ2_S: trials -9..9 around max/5, then the
 * groups left off the grid redone at the chosen scale. Returns 0 when a search fails. */
static int fg_iq2_fit16(const fg_iq_tab *t, const float *xval, const float *weight, const float *waux, float max,
                        int8_t *L, float *scale_out) {
  float ids[19], best = 0, scale = max / 5;
  unsigned on_grid = 3;
  for (int is = -9; is <= 9; is++) ids[is + 9] = (5 + is * 0.1f) / max;
  if (!fg_iq_trials(t, 16, xval, weight, waux, ids, 19, L, &scale, &best, &on_grid)) return 0;
  if (on_grid != 3 && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 2; k++) {
      if (on_grid >> k & 1) continue;
      const int u = fg_iq2_index(xval + 8 * k, id, L + 8 * k);
      if (t->map[u] < 0 && fg_iq_best_neighbour(t, t->map[u], xval + 8 * k, waux + 8 * k, scale, L + 8 * k) < 0)
        return 0;
    }
    float sumqx, sumq2;
    fg_iq2_sums(16, weight, xval, L, &sumqx, &sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  *scale_out = scale;
  return 1;
}

int64_t fg_qwenc_iq2_xxs(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  float scales[8], weight[32], waux[32], xval[32];
  int8_t L[32];
  uint8_t signs[4];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += 66) {
    uint32_t q2[16] = {0};
    fg_bytes_st_le16(y, fg_f32_to_f16(0.f));
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq2_sigma2(xbl, 0);
    for (int ib = 0; ib < 8; ib++) {
      const float *xb = xbl + 32 * ib, *w = qw + 256 * ibl + 32 * ib;
      for (int i = 0; i < 32; i++) weight[i] = w[i] * sqrtf(sigma2 + xb[i] * xb[i]);
      for (int i = 0; i < 32; i++) waux[i] = sqrtf(weight[i]);
      fg_iq2_signs(xb, weight, 4, 1, xval, signs);
      float max = xval[0];
      for (int i = 1; i < 32; i++) max = max > xval[i] ? max : xval[i];
      if (max < FG_QW_GROUP_MAX_EPS) {
        scales[ib] = 0;
        memset(L, 0, 32);
        continue;
      }
      float scale = fg_qw_fit_scales(32, 4, xval, (uint8_t *)L, weight);
      const float eff_max = scale * 3;
      if (eff_max <= 0) {
        scales[ib] = 0;
        memset(L, 0, 32);
        continue;
      }
      float ids[13], best = 0;
      unsigned on_grid = 0;
      for (int is = -6; is <= 6; is++) ids[is + 6] = (5 + is * 0.1f) / eff_max;
      if (!fg_iq_trials(t, 32, xval, weight, waux, ids, 13, L, &scale, &best, &on_grid)) return ibl;
      if (scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 4; k++) {
          int8_t Lt[8];
          const int u = fg_iq2_index(xval + 8 * k, id, Lt);
          int gi = t->map[u];
          if (gi < 0 && (gi = fg_iq_best_neighbour(t, gi, xval + 8 * k, waux + 8 * k, scale, L + 8 * k)) < 0) return ibl;
          const int8_t *pg = t->pts + 8 * gi;
          for (int i = 0; i < 8; i++) L[8 * k + i] = (int8_t)((pg[i] - 1) / 2);
        }
        float sumqx, sumq2;
        fg_iq2_sums(32, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
      }
      if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; k++) signs[k] = (uint8_t)(~signs[k] & 127);
      }
      for (int k = 0; k < 4; k++) {
        const int gi = fg_iq2_grid_of(t, L + 8 * k);
        if (gi < 0) return ibl;
        q2[2 * ib] |= (uint32_t)gi << (8 * k);
        q2[2 * ib + 1] |= (uint32_t)signs[k] << (7 * k);
      }
      if (!(scale >= 0)) return ibl;
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale == 0.0f) {
      memset(y + 2, 0, 64);
      continue;
    }
    const float d = max_scale / 31;
    fg_bytes_st_le16(y, fg_f32_to_f16(d));
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib++) {
      const int l = fg_qw_clampi(fg_nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
      q2[2 * ib + 1] |= (uint32_t)l << 28;
    }
    for (int j = 0; j < 16; j++) fg_bytes_st_le32(y + 2 + 4 * j, q2[j]);
  }
  return -1;
}

/* IQ2_XS and IQ2_S differ in sigma2, the weights without a matrix (IQ2_S only), the sign
 * codes, the smallest sub-block and the stored scale's fudge factor; and in the packing. */
static int64_t fg_iq2_enc16(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n, int is_s) {
  float scales[16], weight[16], waux[16], xval[16];
  int8_t L[16];
  uint8_t signs[2];
  const int64_t bb = is_s ? 82 : 74;
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += bb) {
    memset(y, 0, (size_t)bb);
    uint16_t q2[32] = {0};
    uint8_t *sc = y + (is_s ? 74 : 66);
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq2_sigma2(xbl, is_s);
    for (int ib = 0; ib < 16; ib++) {
      const float *xb = xbl + 16 * ib;
      if (qw) {
        const float *w = qw + 256 * ibl + 16 * ib;
        for (int i = 0; i < 16; i++) weight[i] = w[i] * sqrtf(sigma2 + xb[i] * xb[i]);
      } else {
        for (int i = 0; i < 16; i++) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
      }
      for (int i = 0; i < 16; i++) waux[i] = sqrtf(weight[i]);
      fg_iq2_signs(xb, weight, 2, !is_s, xval, signs);
      float max = xval[0];
      for (int i = 1; i < 16; i++) max = max > xval[i] ? max : xval[i];
      memset(L, 0, 16);
      if (max < (is_s ? 1e-8f : FG_QW_GROUP_MAX_EPS)) { /* GROUP_MAX_EPS_IQ2_S, GROUP_MAX_EPS */
        scales[ib] = 0;
        continue;
      }
      float scale;
      if (!fg_iq2_fit16(t, xval, weight, waux, max, L, &scale)) return ibl;
      if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 2; k++) signs[k] = is_s ? (uint8_t)~signs[k] : (uint8_t)(~signs[k] & 127);
      }
      for (int k = 0; k < 2; k++) {
        const int gi = fg_iq2_grid_of(t, L + 8 * k);
        if (gi < 0) return ibl;
        if (is_s) {
          const int i8 = 2 * ib + k;
          y[2 + i8] = (uint8_t)(gi & 255);
          y[66 + i8 / 4] |= (uint8_t)((gi >> 8) << (2 * (i8 % 4)));
          y[34 + i8] = signs[k];
        } else {
          q2[2 * ib + k] = (uint16_t)(gi | (signs[k] << 9));
        }
      }
      if (!(scale >= 0)) return ibl;
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale == 0.0f) continue; /* the block stays zero (IQ2_XS: d 0, qs 0, scales 0) */
    const float d = max_scale / 31;
    fg_bytes_st_le16(y, fg_f32_to_f16(is_s ? d * 0.9875f : d));
    const float id = 1 / d;
    for (int ib = 0; ib < 16; ib++) {
      const int l = fg_qw_clampi(fg_nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
      if (ib % 2 == 0) sc[ib / 2] = (uint8_t)l;
      else sc[ib / 2] |= (uint8_t)(l << 4);
    }
    if (!is_s)
      for (int j = 0; j < 32; j++) fg_bytes_st_le16(y + 2 + 2 * j, q2[j]);
  }
  return -1;
}

int64_t fg_qwenc_iq2_xs(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  return fg_iq2_enc16(t, x, qw, y, n, 0);
}

int64_t fg_qwenc_iq2_s(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  return fg_iq2_enc16(t, x, qw, y, n, 1);
}
