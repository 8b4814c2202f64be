/* Encoders of IQ1_S and IQ1_M (ggml quantize_row_iq1_{s,m}_impl). Each element becomes one of
 * three levels {-1, 0, +1} shifted by +-delta (0.125); with the values sorted, the best split
 * into three groups is found exhaustively from prefix sums, then groups of 8 off the grid are
 * moved to their nearest listed grid neighbour. IQ1_S fits 32-element sub-blocks with one
 * shift each; IQ1_M 16-element sub-blocks with a shift per half and a block scale refitted
 * over the whole super-block, spread over the top nibbles of its four scale words.
 *
 * The sort: ggml calls qsort on (value, index) pairs comparing values only; glibc (2.36, where
 * the goldens were made) sorts such small arrays with a stable merge sort, so equal values keep
 * index order. A stable insertion sort gives that order. */
#include <math.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"

#define FG_IQ1_DELTA_W 0.125f

static const float fg_iq1_xp[3] = {-1 + FG_IQ1_DELTA_W, FG_IQ1_DELTA_W, 1 + FG_IQ1_DELTA_W};
static const float fg_iq1_xm[3] = {-1 - FG_IQ1_DELTA_W, -FG_IQ1_DELTA_W, 1 - FG_IQ1_DELTA_W};

/* Indices of x[0..n) in ascending order of value, ties in index order. */
static void fg_iq1_sort(const float *x, int n, int *idx) {
  for (int j = 0; j < n; j++) {
    int k = j;
    while (k > 0 && x[idx[k - 1]] > x[j]) {
      idx[k] = idx[k - 1];
      k--;
    }
    idx[k] = j;
  }
}

/* ggml's iq1_find_best_neighbour2: the listed entry minimising sum w*(scale*xg[l] - x)^2,
 * first on ties, below FLT_MAX; -1 when none (ggml then scans the whole grid reading past its
 * group, and asserts: refused here). */
static int fg_iq1_neighbour(const fg_iq_tab *t, int32_t code, const float *x, const float *w, float scale,
                            const float *xg, int8_t *L) {
  if (code == FG_IQ_NO_LIST) return -1;
  const uint16_t *nb = t->nb + (-(int64_t)code - 1);
  float best = 3.40282347e38f;
  int gi = -1;
  for (int j = 1; j <= nb[0]; j++) {
    const int8_t *pg = t->pts + 8 * (size_t)nb[j];
    float d2 = 0;
    for (int i = 0; i < 8; i++) {
      const float diff = scale * xg[(pg[i] - 1) / 2] - x[i];
      d2 += w[i] * diff * diff;
    }
    if (d2 < best) {
      best = d2;
      gi = nb[j];
    }
  }
  if (gi < 0) return -1;
  const int8_t *pg = t->pts + 8 * (size_t)gi;
  for (int i = 0; i < 8; i++) L[i] = (int8_t)((pg[i] - 1) / 2);
  return gi;
}

static int fg_iq1_group_index(const int8_t *L) {
  int u = 0;
  for (int j = 0; j < 8; j++) u |= L[j] << (2 * j);
  return u;
}

static float fg_iq1_sigma2(const float *x) {
  float s = 0;
  for (int i = 0; i < 256; i++) s += x[i] * x[i];
  return 2 * s / 256;
}

int64_t fg_qwenc_iq1_s(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  float scales[8], weight[32], sumx[33], sumw[33];
  int8_t L[32], shifts[8];
  int idx[32];
  uint16_t index[4];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += 50) {
    memset(y, 0, 50);
    uint8_t *qs = y + 2, *qh = y + 34;
    uint16_t qhv[8] = {0};
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq1_sigma2(xbl);
    for (int ib = 0; ib < 8; ib++) {
      const float *xb = xbl + 32 * ib, *w = qw + 256 * ibl + 32 * ib;
      for (int i = 0; i < 32; i++) weight[i] = w[i] * sqrtf(sigma2 + xb[i] * xb[i]);
      float max = fabsf(xb[0]);
      for (int i = 1; i < 32; i++) max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
      if (max < 1e-12f) { /* GROUP_MAX_EPS_IQ1_S */
        scales[ib] = 0;
        shifts[ib] = 1;
        memset(L, 1, 32);
        continue;
      }
      fg_iq1_sort(xb, 32, idx);
      sumx[0] = sumw[0] = 0;
      for (int j = 0; j < 32; j++) {
        const int i = idx[j];
        sumx[j + 1] = sumx[j] + weight[i] * xb[i];
        sumw[j + 1] = sumw[j] + weight[i];
      }
      float best_score = -3.40282347e38f, scale = max;
      int besti1 = -1, besti2 = -1, best_shift = 0;
      for (int i1 = 0; i1 <= 32; i1++) {
        for (int i2 = i1; i2 <= 32; i2++) {
          for (int sgn = 0; sgn < 2; sgn++) {
            const float *v = sgn ? fg_iq1_xm : fg_iq1_xp;
            const float sumqx = (sumx[i1] - sumx[0]) * v[0] + (sumx[i2] - sumx[i1]) * v[1] + (sumx[32] - sumx[i2]) * v[2];
            const float sumq2 = (sumw[i1] - sumw[0]) * v[0] * v[0] + (sumw[i2] - sumw[i1]) * v[1] * v[1] +
                                (sumw[32] - sumw[i2]) * v[2] * v[2];
            if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
              scale = sumqx / sumq2;
              best_score = scale * sumqx;
              besti1 = i1;
              besti2 = i2;
              best_shift = sgn ? -1 : 1;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || best_shift == 0) {
        scales[ib] = 0;
        shifts[ib] = 1;
        memset(L, 1, 32);
        continue;
      }
      for (int j = 0; j < besti1; j++) L[idx[j]] = 0;
      for (int j = besti1; j < besti2; j++) L[idx[j]] = 1;
      for (int j = besti2; j < 32; j++) L[idx[j]] = 2;
      if (scale < 0) {
        for (int j = 0; j < 32; j++) L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_shift = -best_shift;
      }
      int all_on_grid = 1;
      const float *xx = best_shift == 1 ? fg_iq1_xp : fg_iq1_xm;
      for (int k = 0; k < 4; k++) {
        const int u = fg_iq1_group_index(L + 8 * k);
        int gi = t->map[u];
        if (gi < 0) {
          all_on_grid = 0;
          if ((gi = fg_iq1_neighbour(t, gi, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k)) < 0) return ibl;
        }
        index[k] = (uint16_t)gi;
      }
      if (!all_on_grid) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < 4; k++) {
          const int8_t *pg = t->pts + 8 * (size_t)index[k];
          for (int j = 0; j < 8; j++) {
            const float q = xx[(pg[j] - 1) / 2];
            sumqx += weight[8 * k + j] * q * xb[8 * k + j];
            sumq2 += weight[8 * k + j] * q * q;
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
      }
      uint16_t h = 0;
      for (int k = 0; k < 4; k++) {
        qs[4 * ib + k] = (uint8_t)(index[k] & 255);
        h = (uint16_t)(h | ((index[k] >> 8) << (3 * k)));
      }
      qhv[ib] = h;
      if (!(scale >= 0)) return ibl;
      scales[ib] = scale;
      shifts[ib] = (int8_t)best_shift;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale != 0.0f) {
      const float d = max_scale / 15;
      fg_st_le16(y, fg_f32_to_f16(d * 1.125f));
      const float id = 1 / d;
      for (int ib = 0; ib < 8; ib++) {
        int l = fg_qw_clampi(fg_nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
        if (shifts[ib] == -1) l |= 8;
        qhv[ib] = (uint16_t)(qhv[ib] | (l << 12));
      }
    }
    for (int ib = 0; ib < 8; ib++) fg_st_le16(qh + 2 * ib, qhv[ib]);
  }
  return -1;
}

static void fg_iq1m_weights(const float *xb, const float *qw, float sigma2, float *weight) {
  if (qw)
    for (int i = 0; i < 16; i++) weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
  else
    for (int i = 0; i < 16; i++) weight[i] = xb[i] * xb[i];
}

/* The level values of group k (0: first 8, 1: last 8) under shift code s: bit 1 of s picks
 * the first half's sign, bit 0 the second's (0: +delta). */
static const float *fg_iq1m_xx(int s, int k) {
  if (k == 0) return s < 2 ? fg_iq1_xp : fg_iq1_xm;
  return s % 2 == 0 ? fg_iq1_xp : fg_iq1_xm;
}

int64_t fg_qwenc_iq1_m(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  static const uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
  float scales[16], weight[16];
  int8_t L[16], shifts[16];
  int idx[16];
  uint16_t index[2];
  const float p2 = fg_iq1_xp[2], m2 = fg_iq1_xm[2];
  const float cp1 = fg_iq1_xp[0] * fg_iq1_xp[0] - fg_iq1_xp[1] * fg_iq1_xp[1];
  const float cp2 = fg_iq1_xp[1] * fg_iq1_xp[1] - fg_iq1_xp[2] * fg_iq1_xp[2];
  const float cm1 = fg_iq1_xm[0] * fg_iq1_xm[0] - fg_iq1_xm[1] * fg_iq1_xm[1];
  const float cm2 = fg_iq1_xm[1] * fg_iq1_xm[1] - fg_iq1_xm[2] * fg_iq1_xm[2];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += 56) {
    memset(y, 0, 56);
    uint8_t *qs = y, *qh = y + 32;
    uint16_t sc[4] = {0};
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq1_sigma2(xbl);
    for (int ib = 0; ib < 16; ib++) {
      const float *xb = xbl + 16 * ib;
      fg_iq1m_weights(xb, qw ? qw + 256 * ibl + 16 * ib : NULL, sigma2, weight);
      float max = fabsf(xb[0]);
      for (int i = 1; i < 16; i++) max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
      if (max < 1e-7f) { /* GROUP_MAX_EPS_IQ1_M */
        scales[ib] = 0;
        shifts[ib] = 0;
        memset(L, 1, 16);
        continue;
      }
      fg_iq1_sort(xb, 16, idx);
      float best_score = -3.40282347e38f, scale = max;
      int besti1 = -1, besti2 = -1, best_k = -1;
      {
        /* prefix sums per half: each half has its own shift */
        float px[2][17], pw[2][17];
        px[0][0] = px[1][0] = pw[0][0] = pw[1][0] = 0;
        for (int j = 0; j < 16; j++) {
          const int i = idx[j], h = i < 8 ? 0 : 1;
          px[h][j + 1] = px[h][j] + weight[i] * xb[i];
          px[1 - h][j + 1] = px[1 - h][j];
          pw[h][j + 1] = pw[h][j] + weight[i];
          pw[1 - h][j + 1] = pw[1 - h][j];
        }
        const float txs[2] = {px[0][16], px[1][16]}, tws[2] = {pw[0][16], pw[1][16]};
        for (int i1 = 0; i1 <= 16; i1++) {
          for (int i2 = i1; i2 <= 16; i2++) {
            float qx_p[2], qx_m[2], q2_p[2], q2_m[2], sqx[4], sq2[4];
            for (int h = 0; h < 2; h++) {
              const float sx = px[h][i1] + px[h][i2];
              qx_p[h] = txs[h] * p2 - sx;
              qx_m[h] = txs[h] * m2 - sx;
              q2_p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
              q2_m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
            }
            sqx[0] = qx_p[0] + qx_p[1];
            sqx[1] = qx_p[0] + qx_m[1];
            sqx[2] = qx_m[0] + qx_p[1];
            sqx[3] = qx_m[0] + qx_m[1];
            sq2[0] = q2_p[0] + q2_p[1];
            sq2[1] = q2_p[0] + q2_m[1];
            sq2[2] = q2_m[0] + q2_p[1];
            sq2[3] = q2_m[0] + q2_m[1];
            for (int k = 0; k < 4; k++) {
              if (sq2[k] > 0 && sqx[k] * sqx[k] > best_score * sq2[k]) {
                scale = sqx[k] / sq2[k];
                best_score = scale * sqx[k];
                besti1 = i1;
                besti2 = i2;
                best_k = k;
              }
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || best_k < 0) {
        scales[ib] = 0;
        shifts[ib] = 0;
        memset(L, 1, 16);
        continue;
      }
      for (int j = 0; j < besti1; j++) L[idx[j]] = 0;
      for (int j = besti1; j < besti2; j++) L[idx[j]] = 1;
      for (int j = besti2; j < 16; j++) L[idx[j]] = 2;
      if (scale < 0) {
        for (int j = 0; j < 16; j++) L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_k = 3 - best_k;
      }
      int all_on_grid = 1;
      for (int k = 0; k < 2; k++) {
        const float *xx = fg_iq1m_xx(best_k, k);
        const int u = fg_iq1_group_index(L + 8 * k);
        int gi = t->map[u];
        if (gi < 0) {
          all_on_grid = 0;
          if ((gi = fg_iq1_neighbour(t, gi, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k)) < 0) return ibl;
        }
        index[k] = (uint16_t)gi;
      }
      if (!all_on_grid) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < 2; k++) {
          const float *xx = fg_iq1m_xx(best_k, k);
          const int8_t *pg = t->pts + 8 * (size_t)index[k];
          for (int j = 0; j < 8; j++) {
            const float q = xx[(pg[j] - 1) / 2];
            sumqx += weight[8 * k + j] * q * xb[8 * k + j];
            sumq2 += weight[8 * k + j] * q * q;
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
      }
      qs[2 * ib] = (uint8_t)(index[0] & 255);
      qs[2 * ib + 1] = (uint8_t)(index[1] & 255);
      qh[ib] = (uint8_t)((index[0] >> 8) | ((index[1] >> 8) << 4));
      if (!(scale >= 0)) return ibl;
      scales[ib] = scale;
      shifts[ib] = (int8_t)best_k;
      max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale == 0.0f) continue;
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    /* the block scale refitted over every sub-block (the skipped ones too: grid entry 0) */
    for (int ib = 0; ib < 16; ib++) {
      const int l = fg_qw_clampi(fg_nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
      sc[ib / 4] = (uint16_t)(sc[ib / 4] | (l << (3 * (ib % 4))));
      qh[ib] |= masks[shifts[ib]];
      const float *xb = xbl + 16 * ib;
      fg_iq1m_weights(xb, qw ? qw + 256 * ibl + 16 * ib : NULL, sigma2, weight);
      for (int k = 0; k < 2; k++) {
        const float *xx = fg_iq1m_xx(shifts[ib], k);
        const int8_t *pg = t->pts + 8 * (size_t)(qs[2 * ib + k] + ((qh[ib] << (8 - 4 * k)) & 0x700));
        for (int j = 0; j < 8; j++) {
          const float q = xx[(pg[j] - 1) / 2] * (2 * l + 1);
          sumqx += weight[8 * k + j] * q * xb[8 * k + j];
          sumq2 += weight[8 * k + j] * q * q;
        }
      }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t s = fg_f32_to_f16(d * 1.1125f);
    sc[0] = (uint16_t)(sc[0] | ((s & 0x000f) << 12));
    sc[1] = (uint16_t)(sc[1] | ((s & 0x00f0) << 8));
    sc[2] = (uint16_t)(sc[2] | ((s & 0x0f00) << 4));
    sc[3] = (uint16_t)(sc[3] | (s & 0xf000));
    for (int j = 0; j < 4; j++) fg_st_le16(y + 48 + 2 * j, sc[j]);
  }
  return -1;
}
