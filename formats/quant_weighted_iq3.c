/* Encoders of IQ3_XXS and IQ3_S (ggml quantize_row_iq3_xxs_impl / quantize_row_iq3_s_impl).
 * Per 32-element sub-block: magnitudes with the signs taken out (IQ3_XXS keeps an even number
 * of negatives, flipping the least important element, because its 7-bit sign codes imply the
 * eighth bit), trial scales that round groups of 4 to levels 0..7, groups off the grid moved
 * to their best listed neighbour, the scale refitted; then a 4-bit scale per sub-block against
 * the super-block's largest. */
#include <math.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"

/* The fitted scale of sub-block s (32 elements, 8 groups of 4), its levels in s->L; trials
 * -ntry..ntry; xxs: ggml's starting is_on_grid is true (IQ3_XXS), else false (IQ3_S, which
 * also refits every group, not only those off the grid). Returns 0 when a neighbour search
 * finds nothing (the block is refused). */
static int fg_iq3_fit(const fg_iq_tab *t, fg_iq_sub *s, float max, int ntry, int xxs, float *scale_out) {
  float ids[31];
  for (int is = -ntry; is <= ntry; is++) ids[is + ntry] = (15 + is * 0.2f) / max;
  float best = 0;
  float scale = max / 15;
  unsigned on_grid = xxs ? 0xffu : 0u;
  if (!fg_iq_trials(t, 32, s->xval, s->weight, s->waux, ids, 2 * ntry + 1, s->L, &scale, &best, &on_grid)) return 0;
  if (on_grid != 0xffu && scale > 0 && !fg_iq_regrid(t, 32, s, xxs ? on_grid : 0u, &scale)) return 0;
  *scale_out = scale;
  return 1;
}

/* IQ3_XXS and IQ3_S differ in the sign codes (IQ3_XXS: 7 bits with even parity), the
 * smallest sub-block, the trials, the stored scale's fudge factor, and the packing. */
static int64_t fg_iq3_enc(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n, int is_s) {
  float scales[8];
  fg_iq_sub s;
  const int64_t bb = is_s ? 110 : 98;
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += bb) {
    memset(y, 0, (size_t)bb);
    /* IQ3_XXS: 64 grid indices, then 8 u32 of signs and scale (written at the end) */
    uint8_t q3[96];
    uint32_t ss[8] = {0};
    memset(q3, 0, sizeof q3);
    uint8_t *qs = y + 2, *qh = y + 66, *sg = y + 74; /* IQ3_S */
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq_sigma2(xbl, 1);
    for (int ib = 0; ib < 8; ib++) {
      const float *xb = xbl + 32 * ib;
      const float max = fg_iq_prepare(&s, xb, qw ? qw + 256 * ibl + 32 * ib : NULL, 32, sigma2, 0, !is_s);
      memset(s.L, 0, 32);
      /* GROUP_MAX_EPS_IQ3_XXS; an all-zero IQ3_S sub-block writes nothing and, as in ggml, does
       * not advance the qs and signs cursors: the next sub-blocks' codes land in its place */
      if (is_s ? max == 0.0f : max < 1e-8f) {
        scales[ib] = 0;
        continue;
      }
      float scale;
      if (!fg_iq3_fit(t, &s, max, is_s ? 9 : 15, !is_s, &scale)) return ibl;
      scale = fg_iq_unsign(scale, 4, !is_s, s.signs);
      int gi[8];
      if (!fg_iq_grid_all(t, 4, s.L, 8, gi)) return ibl;
      for (int k = 0; k < 8; k++) {
        if (is_s) {
          qs[k] = (uint8_t)(gi[k] & 255);
          qh[(ib * 8 + k) / 8] |= (uint8_t)((gi[k] >> 8) << ((ib * 8 + k) % 8));
        } else {
          q3[8 * ib + k] = (uint8_t)gi[k];
        }
      }
      if (is_s) {
        qs += 8;
        memcpy(sg, s.signs, 4);
        sg += 4;
      } else {
        for (int k = 0; k < 4; k++) ss[ib] |= (uint32_t)s.signs[k] << (7 * k);
      }
      if (!(scale >= 0)) return ibl; /* NaN: ggml asserts */
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale == 0.0f) continue; /* IQ3_XXS: all zero; IQ3_S: d 0 and scales 0 */
    const float d = max_scale / 31;
    fg_bytes_st_le16(y, fg_f32_to_f16(is_s ? d * 1.033f : d * 1.0125f));
    const float id = 1 / d;
    if (is_s) {
      for (int ib = 0; ib < 8; ib += 2) {
        const int l1 = fg_iq_scale_level(id, scales[ib], 15), l2 = fg_iq_scale_level(id, scales[ib + 1], 15);
        y[106 + ib / 2] = (uint8_t)(l1 | (l2 << 4));
      }
    } else {
      for (int ib = 0; ib < 8; ib++) ss[ib] |= (uint32_t)fg_iq_scale_level(id, scales[ib], 15) << 28;
      for (int ib = 0; ib < 8; ib++) fg_bytes_st_le32(q3 + 64 + 4 * ib, ss[ib]);
      memcpy(y + 2, q3, 96);
    }
  }
  return -1;
}

int64_t fg_qwenc_iq3_xxs(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  return fg_iq3_enc(t, x, qw, y, n, 0);
}

int64_t fg_qwenc_iq3_s(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  return fg_iq3_enc(t, x, qw, y, n, 1);
}
