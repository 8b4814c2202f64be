/* Encoders of IQ3_XXS and IQ3_S (ggml quantize_row_iq3_xxs_impl / quantize_row_iq3_s_impl).
 * Per 32-element sub-block: magnitudes with the signs taken out (IQ3_XXS keeps an even number
 * of negatives, flipping the least important element, because its 7-bit sign codes imply the
 * eighth bit), trial scales that round groups of 4 to levels 0..7, groups off the grid moved
 * to their best listed neighbour, the scale refitted; then a 4-bit scale per sub-block against
 * the super-block's largest. */
#include <math.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"

/* Levels of xval * id, group k: the packed grid index. */
static int fg_iq3_index(const float *xval, float id, int8_t *L) {
  int u = 0;
  for (int i = 0; i < 4; i++) {
    const int l = fg_qw_clampi(fg_nearest_int(0.5f * (id * xval[i] - 1)), 0, 7);
    L[i] = (int8_t)l;
    u |= l << (3 * i);
  }
  return u;
}

/* The fitted scale of one sub-block of 32 (nsub groups of 4), its levels in L; trials
 * -ntry..ntry; on_grid_init is ggml's starting is_on_grid (true for IQ3_XXS, false for IQ3_S,
 * which also refits every group, not only those off the grid). Returns 0 when a neighbour
 * search finds nothing (the block is refused). */
static int fg_iq3_fit(const fg_iq_tab *t, const float *xval, const float *weight, const float *waux, float max,
                      int ntry, int xxs, int8_t *L, float *scale_out) {
  float ids[31];
  for (int is = -ntry; is <= ntry; is++) ids[is + ntry] = (15 + is * 0.2f) / max;
  float best = 0;
  float scale = max / 15;
  unsigned on_grid = xxs ? 0xffu : 0u;
  if (!fg_iq_trials(t, 32, xval, weight, waux, ids, 2 * ntry + 1, L, &scale, &best, &on_grid)) return 0;
  if (on_grid != 0xffu && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 8; k++) {
      if (xxs && (on_grid >> k & 1)) continue;
      int8_t Lt[4];
      const int u = fg_iq3_index(xval + 4 * k, id, Lt);
      int gi = t->map[u];
      if (gi < 0 && (gi = fg_iq_best_neighbour(t, gi, xval + 4 * k, waux + 4 * k, scale, L + 4 * k)) < 0) return 0;
      const int8_t *pg = t->pts + 4 * gi;
      for (int i = 0; i < 4; i++) L[4 * k + i] = (int8_t)((pg[i] - 1) / 2);
    }
    float sumqx = 0, sumq2 = 0;
    for (int i = 0; i < 32; i++) {
      const float q = (float)(2 * L[i] + 1);
      sumqx += weight[i] * xval[i] * q;
      sumq2 += weight[i] * q * q;
    }
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  *scale_out = scale;
  return 1;
}

static float fg_iq3_sigma2(const float *x) {
  float s = 0;
  for (int i = 0; i < 256; i++) s += x[i] * x[i];
  return 2 * s / 256;
}

static void fg_iq3_weights(const float *xb, const float *qw, float sigma2, float *weight, float *waux) {
  if (qw)
    for (int i = 0; i < 32; i++) weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
  else
    for (int i = 0; i < 32; i++) weight[i] = xb[i] * xb[i];
  for (int i = 0; i < 32; i++) waux[i] = sqrtf(weight[i]);
}

/* The packed index of group k of L; every L the fit leaves is on the grid. */
static int fg_iq3_grid_of(const fg_iq_tab *t, const int8_t *L) {
  int u = 0;
  for (int i = 0; i < 4; i++) u |= L[i] << (3 * i);
  return t->map[u];
}

int64_t fg_qwenc_iq3_xxs(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  float scales[8], weight[32], waux[32], xval[32];
  int8_t L[32];
  uint8_t signs[4];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += 98) {
    const float *xbl = x + 256 * ibl;
    uint8_t q3[96]; /* 64 grid indices, then 8 u32 of signs and scale */
    uint32_t ss[8] = {0};
    memset(q3, 0, sizeof q3);
    fg_bytes_st_le16(y, fg_f32_to_f16(0.f));
    float max_scale = 0;
    const float sigma2 = fg_iq3_sigma2(xbl);
    for (int ib = 0; ib < 8; ib++) {
      const float *xb = xbl + 32 * ib;
      fg_iq3_weights(xb, qw ? qw + 256 * ibl + 32 * ib : NULL, sigma2, weight, waux);
      for (int k = 0; k < 4; k++) {
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
        if (nflip % 2) {
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
        signs[k] = s & 127;
      }
      float max = xval[0];
      for (int i = 1; i < 32; i++) max = max > xval[i] ? max : xval[i];
      memset(L, 0, 32);
      if (max < 1e-8f) { /* GROUP_MAX_EPS_IQ3_XXS */
        scales[ib] = 0;
        continue;
      }
      float scale;
      if (!fg_iq3_fit(t, xval, weight, waux, max, 15, 1, L, &scale)) return ibl;
      if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; k++) signs[k] = (uint8_t)(~signs[k] & 127);
      }
      for (int k = 0; k < 8; k++) {
        const int gi = fg_iq3_grid_of(t, L + 4 * k);
        if (gi < 0) return ibl;
        q3[8 * ib + k] = (uint8_t)gi;
      }
      ss[ib] = (uint32_t)signs[0] | ((uint32_t)signs[1] << 7) | ((uint32_t)signs[2] << 14) | ((uint32_t)signs[3] << 21);
      if (!(scale >= 0)) return ibl; /* NaN: ggml asserts */
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale == 0.0f) {
      memset(y + 2, 0, 96);
      continue;
    }
    const float d = max_scale / 31;
    fg_bytes_st_le16(y, fg_f32_to_f16(d * 1.0125f));
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib++) {
      const int l = fg_qw_clampi(fg_nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
      ss[ib] |= (uint32_t)l << 28;
    }
    for (int ib = 0; ib < 8; ib++) fg_bytes_st_le32(q3 + 64 + 4 * ib, ss[ib]);
    memcpy(y + 2, q3, 96);
  }
  return -1;
}

int64_t fg_qwenc_iq3_s(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  float scales[8], weight[32], waux[32], xval[32];
  int8_t L[32];
  uint8_t signs_b[4];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += 110) {
    memset(y, 0, 110);
    uint8_t *qs = y + 2, *qh = y + 66, *signs = y + 74, *sc = y + 106;
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq3_sigma2(xbl);
    for (int ib = 0; ib < 8; ib++) {
      const float *xb = xbl + 32 * ib;
      fg_iq3_weights(xb, qw ? qw + 256 * ibl + 32 * ib : NULL, sigma2, weight, waux);
      for (int k = 0; k < 4; k++) {
        uint8_t s = 0;
        for (int i = 0; i < 8; i++) {
          if (xb[8 * k + i] >= 0) {
            xval[8 * k + i] = xb[8 * k + i];
          } else {
            xval[8 * k + i] = -xb[8 * k + i];
            s |= (uint8_t)(1u << i);
          }
        }
        signs_b[k] = s;
      }
      float max = xval[0];
      for (int i = 1; i < 32; i++) max = max > xval[i] ? max : xval[i];
      memset(L, 0, 32);
      /* an all-zero sub-block writes nothing and, as in ggml, does not advance the qs and
       * signs cursors: the next sub-blocks' codes land in its place */
      if (max == 0.0f) {
        scales[ib] = 0;
        continue;
      }
      float scale;
      if (!fg_iq3_fit(t, xval, weight, waux, max, 9, 0, L, &scale)) return ibl;
      if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; k++) signs_b[k] = (uint8_t)~signs_b[k];
      }
      for (int k = 0; k < 8; k++) {
        const int gi = fg_iq3_grid_of(t, L + 4 * k);
        if (gi < 0) return ibl;
        qs[k] = (uint8_t)(gi & 255);
        qh[(ib * 8 + k) / 8] |= (uint8_t)((gi >> 8) << ((ib * 8 + k) % 8));
      }
      qs += 8;
      memcpy(signs, signs_b, 4);
      signs += 4;
      if (!(scale >= 0)) return ibl;
      scales[ib] = scale;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale == 0.0f) continue;
    const float d = max_scale / 31;
    fg_bytes_st_le16(y, fg_f32_to_f16(d * 1.033f));
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib += 2) {
      const int l1 = fg_qw_clampi(fg_nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
      const int l2 = fg_qw_clampi(fg_nearest_int(0.5f * (id * scales[ib + 1] - 1)), 0, 15);
      sc[ib / 2] = (uint8_t)(l1 | (l2 << 4));
    }
  }
  return -1;
}
