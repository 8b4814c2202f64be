/* Encoders of IQ2_XXS, IQ2_XS and IQ2_S (ggml quantize_row_iq2_{xxs,xs,s}_impl). Groups of 8
 * magnitudes are rounded to levels 0..2 under trial scales and moved to their best listed
 * grid neighbour when off the grid; the sign patterns of IQ2_XXS and IQ2_XS have an even
 * number of negatives (a 7-bit code), so an odd one flips its least important element. */
#include <math.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"

/* The 16-element sub-block fit of IQ2_XS and IQ2_S: trials -9..9 around max/5, then the
 * groups left off the grid redone at the chosen scale. Returns 0 when a search fails. */
static int fg_iq2_fit16(const fg_iq_tab *t, fg_iq_sub *s, float max, float *scale_out) {
  float ids[19], best = 0, scale = max / 5;
  unsigned on_grid = 3;
  for (int is = -9; is <= 9; is++) ids[is + 9] = (5 + is * 0.1f) / max;
  if (!fg_iq_trials(t, 16, s->xval, s->weight, s->waux, ids, 19, s->L, &scale, &best, &on_grid)) return 0;
  if (on_grid != 3 && scale > 0 && !fg_iq_regrid(t, 16, s, on_grid, &scale)) return 0;
  *scale_out = scale;
  return 1;
}

int64_t fg_qwenc_iq2_xxs(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  float scales[8];
  fg_iq_sub s;
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += 66) {
    uint32_t q2[16] = {0};
    fg_bytes_st_le16(y, fg_f32_to_f16(0.f));
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq_sigma2(xbl, 0);
    for (int ib = 0; ib < 8; ib++) {
      const float *xb = xbl + 32 * ib;
      if (fg_iq_prepare(&s, xb, qw + 256 * ibl + 32 * ib, 32, sigma2, 0, 1) < FG_QW_GROUP_MAX_EPS) {
        scales[ib] = 0;
        memset(s.L, 0, 32);
        continue;
      }
      float scale = fg_qw_fit_scales(32, 4, s.xval, (uint8_t *)s.L, s.weight);
      const float eff_max = scale * 3;
      if (eff_max <= 0) {
        scales[ib] = 0;
        memset(s.L, 0, 32);
        continue;
      }
      float ids[13], best = 0;
      unsigned on_grid = 0;
      for (int is = -6; is <= 6; is++) ids[is + 6] = (5 + is * 0.1f) / eff_max;
      if (!fg_iq_trials(t, 32, s.xval, s.weight, s.waux, ids, 13, s.L, &scale, &best, &on_grid)) return ibl;
      if (scale > 0 && !fg_iq_regrid(t, 32, &s, 0, &scale)) return ibl;
      scale = fg_iq_unsign(scale, 4, 1, s.signs);
      int gi[4];
      if (!fg_iq_grid_all(t, 8, s.L, 4, gi)) return ibl;
      for (int k = 0; k < 4; k++) {
        q2[2 * ib] |= (uint32_t)gi[k] << (8 * k);
        q2[2 * ib + 1] |= (uint32_t)s.signs[k] << (7 * k);
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
      q2[2 * ib + 1] |= (uint32_t)fg_iq_scale_level(id, scales[ib], 15) << 28;
    }
    for (int j = 0; j < 16; j++) fg_bytes_st_le32(y + 2 + 4 * j, q2[j]);
  }
  return -1;
}

/* IQ2_XS and IQ2_S differ in sigma2, the weights without a matrix (IQ2_S only), the sign
 * codes, the smallest sub-block and the stored scale's fudge factor; and in the packing. */
static int64_t fg_iq2_enc16(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n, int is_s) {
  float scales[16];
  fg_iq_sub s;
  const int64_t bb = is_s ? 82 : 74;
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += bb) {
    memset(y, 0, (size_t)bb);
    uint16_t q2[32] = {0};
    uint8_t *sc = y + (is_s ? 74 : 66);
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq_sigma2(xbl, is_s);
    for (int ib = 0; ib < 16; ib++) {
      const float *xb = xbl + 16 * ib;
      const float max = fg_iq_prepare(&s, xb, qw ? qw + 256 * ibl + 16 * ib : NULL, 16, sigma2, 0.25f * sigma2, !is_s);
      memset(s.L, 0, 16);
      if (max < (is_s ? 1e-8f : FG_QW_GROUP_MAX_EPS)) { /* GROUP_MAX_EPS_IQ2_S, GROUP_MAX_EPS */
        scales[ib] = 0;
        continue;
      }
      float scale;
      if (!fg_iq2_fit16(t, &s, max, &scale)) return ibl;
      scale = fg_iq_unsign(scale, 2, !is_s, s.signs);
      int gi[2];
      if (!fg_iq_grid_all(t, 8, s.L, 2, gi)) return ibl;
      for (int k = 0; k < 2; k++) {
        if (is_s) {
          const int i8 = 2 * ib + k;
          y[2 + i8] = (uint8_t)(gi[k] & 255);
          y[66 + i8 / 4] |= (uint8_t)((gi[k] >> 8) << (2 * (i8 % 4)));
          y[34 + i8] = s.signs[k];
        } else {
          q2[2 * ib + k] = (uint16_t)(gi[k] | (s.signs[k] << 9));
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
      const int l = fg_iq_scale_level(id, scales[ib], 15);
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
