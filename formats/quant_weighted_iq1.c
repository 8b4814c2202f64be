/* Encoders of IQ1_S and IQ1_M (ggml quantize_row_iq1_{s,m}_impl). Each element becomes one of
 * three levels {-1, 0, +1} shifted by +-delta (0.125); with the values sorted, the best split
 * into three groups is found exhaustively from prefix sums, then groups of 8 off the grid are
 * moved to their nearest listed grid neighbour. IQ1_S fits 32-element sub-blocks with one
 * shift each; IQ1_M 16-element sub-blocks with a shift per half and a block scale refitted
 * over the whole super-block, spread over the top nibbles of its four scale words.
 *
 * Speed without changing a bit: ggml runs the split search one sub-block at a time; here the
 * sub-blocks of a super-block run it together, one per vector lane (fg_qvf: each lane does
 * the scalar code's f32 operations on its own sub-block, so its sums are ggml's, in ggml's
 * order). A lane's running best depends only on its own earlier candidates, so the lanes need
 * no ordering between them; the terms that depend on one boundary only are computed once per
 * boundary instead of once per pair. The neighbour search tabulates its 24 possible terms
 * w*(scale*q - x)^2 (8 coordinates x 3 levels), then sums each candidate's 8 in ggml's order.
 *
 * The sort: ggml calls qsort on (value, index) pairs comparing values only; glibc (2.36, where
 * the goldens were made) sorts such small arrays with a stable merge sort, so equal values keep
 * index order: fg_iq1_sort gives that order. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"

#define FG_IQ1_DELTA_W 0.125f
#define FG_IQ1_FLT_MAX 3.40282347e38f

static const float fg_iq1_xp[3] = {-1 + FG_IQ1_DELTA_W, FG_IQ1_DELTA_W, 1 + FG_IQ1_DELTA_W};
static const float fg_iq1_xm[3] = {-1 - FG_IQ1_DELTA_W, -FG_IQ1_DELTA_W, 1 - FG_IQ1_DELTA_W};

/* Per grid entry, where its terms sit in the neighbour search's tables (fg_iq1_neighbour):
 * [0] its first four levels l0 + 3*l1 + 9*l2 + 27*l3 (the partial sums), [1..4] 8*l + i for
 * coordinates i = 4..7 (the terms). Built once from the shared grid table. */
static uint8_t fg_iq1_off[2048][8];
static pthread_once_t fg_iq1_once = PTHREAD_ONCE_INIT;
static const fg_iq_tab *fg_iq1_tab;

static void fg_iq1_build(void) {
  const fg_iq_tab *t = fg_iq_tab_get(FG_IQT_1S);
  if (!t) return;
  for (int j = 0; j < 2048; j++) {
    int l[8];
    for (int i = 0; i < 8; i++) l[i] = (t->pts[8 * j + i] - 1) / 2;
    fg_iq1_off[j][0] = (uint8_t)(l[0] + 3 * l[1] + 9 * l[2] + 27 * l[3]);
    for (int i = 4; i < 8; i++) fg_iq1_off[j][i - 3] = (uint8_t)(8 * l[i] + i);
  }
  fg_iq1_tab = t;
}

/* The offsets above belong to the 1S grid: any other table is refused (never happens: both
 * encoders are registered with FG_IQT_1S). */
static int fg_iq1_ready(const fg_iq_tab *t) {
  pthread_once(&fg_iq1_once, fg_iq1_build);
  return fg_iq1_tab == t;
}

static fg_qvf fg_iq1_splat(float v) { return (fg_qvf){v, v, v, v}; }

/* Indices of x[0..n) in ascending order of value, ties in index order (n 16 or 32). Without
 * ties the place of x[j] is the count of x[k] <= x[j] less one (itself), counted four j at a
 * time (a true compare lane is -1); those counts add up to n(n+1)/2 exactly when no two
 * values are equal, else an insertion sort keeps equal values in index order. */
static inline __attribute__((always_inline)) void fg_iq1_sort(const float *x, const int n, int *idx) {
  fg_qvf xv[8];
  fg_qvi cnt[8], tot = {0, 0, 0, 0};
  for (int v = 0; v < n / 4; v++) xv[v] = fg_qv_load(x + 4 * v), cnt[v] = tot;
  for (int k = 0; k < n; k++) {
    const fg_qvf xk = fg_iq1_splat(x[k]);
    for (int v = 0; v < n / 4; v++) cnt[v] += xk <= xv[v];
  }
  for (int v = 0; v < n / 4; v++) tot += cnt[v];
  if (tot[0] + tot[1] + tot[2] + tot[3] == -n * (n + 1) / 2) {
    for (int v = 0; v < n / 4; v++)
      for (int l = 0; l < 4; l++) idx[-cnt[v][l] - 1] = 4 * v + l;
    return;
  }
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
 * group, and asserts: refused here). The term of coordinate i at level l is the same for
 * every candidate, so it is computed once (ggml's operations: diff = scale*q - x, w*diff*diff);
 * a candidate's distance adds its 8 terms in coordinate order starting from 0, as ggml does,
 * and the 81 ways to begin (the sums over the first four coordinates) are computed once too.
 * (Skipping the last four terms of a candidate whose first four already reach the best would
 * be exact too, the terms being >= 0, but the branch mispredicts: it cost a third more time.) */
static int fg_iq1_neighbour(const fg_iq_tab *t, int32_t code, const float *x, const float *w, float scale,
                            const float *xg, int8_t *L) {
  if (code == FG_IQ_NO_LIST) return -1;
  const uint16_t *nb = t->nb + (-(int64_t)code - 1);
  float term[24];
  for (int l = 0; l < 3; l++) {
    const fg_qvf sq = fg_iq1_splat(scale * xg[l]);
    for (int h = 0; h < 8; h += 4) {
      const fg_qvf diff = sq - fg_qv_load(x + h);
      const fg_qvf tv = fg_qv_load(w + h) * diff * diff;
      memcpy(term + 8 * l + h, &tv, sizeof tv);
    }
  }
  /* part[l0 + 3*l1 + 9*l2 + 27*l3] = (((0 + t0) + t1) + t2) + t3 */
  float p1[3], p2[9], p3[27], part[81];
  for (int l = 0; l < 3; l++) p1[l] = 0 + term[8 * l];
  for (int l = 0; l < 3; l++)
    for (int a = 0; a < 3; a++) p2[3 * l + a] = p1[a] + term[8 * l + 1];
  for (int l = 0; l < 3; l++)
    for (int a = 0; a < 9; a++) p3[9 * l + a] = p2[a] + term[8 * l + 2];
  for (int l = 0; l < 3; l++)
    for (int a = 0; a < 27; a++) part[27 * l + a] = p3[a] + term[8 * l + 3];
  float best = FG_IQ1_FLT_MAX;
  int gi = -1;
  for (int j = 1; j <= nb[0]; j++) {
    const uint8_t *o = fg_iq1_off[nb[j]];
    float d2 = part[o[0]];
    for (int i = 1; i < 5; i++) d2 += term[o[i]];
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

/* The ngroups groups of 8 levels L of a sub-block to their grid entries in index, a group
 * off the grid moved to its best neighbour under group k's level values xx[k]; when one
 * moved, *scale is refitted to the entries (sumqx / sumq2, when both are positive). Returns 0
 * when a neighbour search finds nothing (the block is refused). */
static int fg_iq1_place(const fg_iq_tab *t, int ngroups, const float *const *xx, const float *xb, const float *wb,
                        int8_t *L, uint16_t *index, float *scale) {
  int all_on_grid = 1;
  for (int k = 0; k < ngroups; k++) {
    int gi = t->map[fg_iq1_group_index(L + 8 * k)];
    if (gi < 0) {
      all_on_grid = 0;
      if ((gi = fg_iq1_neighbour(t, gi, xb + 8 * k, wb + 8 * k, *scale, xx[k], L + 8 * k)) < 0) return 0;
    }
    index[k] = (uint16_t)gi;
  }
  if (!all_on_grid) {
    float sumqx = 0, sumq2 = 0;
    for (int k = 0; k < ngroups; k++) {
      const int8_t *pg = t->pts + 8 * (size_t)index[k];
      for (int j = 0; j < 8; j++) {
        const float q = xx[k][(pg[j] - 1) / 2];
        sumqx += wb[8 * k + j] * q * xb[8 * k + j];
        sumq2 += wb[8 * k + j] * q * q;
      }
    }
    if (sumqx > 0 && sumq2 > 0) *scale = sumqx / sumq2;
  }
  return 1;
}

/* m ? c : old per lane, for the candidate codes. */
static inline fg_qvi fg_iq1_take(fg_qvi m, int c, fg_qvi old) {
  return (m & (fg_qvi){c, c, c, c}) | (~m & old);
}

/* IQ1_S's split search for the 8 sub-blocks of a super-block, four a vector: sx, sw are the
 * prefix sums (sx[j][ib]: the j smallest of sub-block ib). code[ib] receives the winning
 * (i1, i2, sign) as (64*i1 + i2)*2 + (sign == -1), or -1 when no candidate qualified.
 * ggml's candidate for a split and a sign:
 *   sumqx = (S[i1] - S[0])*v0 + (S[i2] - S[i1])*v1 + (S[32] - S[i2])*v2
 *   sumq2 = (W[i1] - W[0])*v0*v0 + (W[i2] - W[i1])*v1*v1 + (W[32] - W[i2])*v2*v2
 * taken when sumq2 > 0 && sumqx*sumqx > best*sumq2 (best = (sumqx/sumq2)*sumqx), in the order
 * (i1, i2, +delta), (i1, i2, -delta). The first and last terms are each computed once. A pair
 * no lane could take against the best so far (the test without its sumq2 > 0 half) changes
 * nothing and is passed over; otherwise the two signs are tried in order, exactly. */
static void fg_iq1s_search(const float (*sx)[8], const float (*sw)[8], int *code) {
  const fg_qvf p0 = fg_iq1_splat(fg_iq1_xp[0]), p1 = fg_iq1_splat(fg_iq1_xp[1]), p2 = fg_iq1_splat(fg_iq1_xp[2]);
  const fg_qvf m0 = fg_iq1_splat(fg_iq1_xm[0]), m1 = fg_iq1_splat(fg_iq1_xm[1]), m2 = fg_iq1_splat(fg_iq1_xm[2]);
  const fg_qvf zero = {0, 0, 0, 0};
  for (int v = 0; v < 2; v++) {
    fg_qvf S[33], W[33], cxp[33], cxm[33], cwp[33], cwm[33];
    for (int j = 0; j <= 32; j++) {
      S[j] = fg_qv_load(sx[j] + 4 * v);
      W[j] = fg_qv_load(sw[j] + 4 * v);
    }
    for (int j = 0; j <= 32; j++) {
      cxp[j] = (S[32] - S[j]) * p2;
      cxm[j] = (S[32] - S[j]) * m2;
      cwp[j] = (W[32] - W[j]) * p2 * p2;
      cwm[j] = (W[32] - W[j]) * m2 * m2;
    }
    fg_qvf best = fg_iq1_splat(-FG_IQ1_FLT_MAX);
    fg_qvi bc = {-1, -1, -1, -1};
    for (int i1 = 0; i1 <= 32; i1++) {
      const fg_qvf s1 = S[i1], w1 = W[i1];
      const fg_qvf axp = (s1 - S[0]) * p0, axm = (s1 - S[0]) * m0;
      const fg_qvf awp = (w1 - W[0]) * p0 * p0, awm = (w1 - W[0]) * m0 * m0;
      for (int i2 = i1; i2 <= 32; i2++) {
        const fg_qvf dx = S[i2] - s1, dw = W[i2] - w1;
        const fg_qvf qxp = (axp + dx * p1) + cxp[i2], qxm = (axm + dx * m1) + cxm[i2];
        const fg_qvf q2p = (awp + dw * p1 * p1) + cwp[i2], q2m = (awm + dw * m1 * m1) + cwm[i2];
        if (!fg_qv_any((qxp * qxp > best * q2p) | (qxm * qxm > best * q2m))) continue;
        const int c = (64 * i1 + i2) * 2;
        fg_qvi up = (q2p > zero) & (qxp * qxp > best * q2p);
        if (fg_qv_any(up)) {
          const fg_qvf sc = qxp / q2p;
          best = FG_QV_SEL(up, sc * qxp, best);
          bc = fg_iq1_take(up, c, bc);
        }
        up = (q2m > zero) & (qxm * qxm > best * q2m);
        if (fg_qv_any(up)) {
          const fg_qvf sc = qxm / q2m;
          best = FG_QV_SEL(up, sc * qxm, best);
          bc = fg_iq1_take(up, c + 1, bc);
        }
      }
    }
    for (int k = 0; k < 4; k++) code[4 * v + k] = bc[k];
  }
}

int64_t fg_qwenc_iq1_s(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  if (!fg_iq1_ready(t)) return 0;
  _Alignas(16) float weight[256], sx[33][8], sw[33][8];
  float scales[8], maxv[8];
  int8_t L[32], shifts[8];
  int idx[8][32], code[8];
  uint16_t index[4];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += 50) {
    memset(y, 0, 50);
    uint8_t *qs = y + 2, *qh = y + 34;
    uint16_t qhv[8] = {0};
    float max_scale = 0;
    const float *xbl = x + 256 * ibl, *wbl = qw + 256 * ibl;
    const float sigma2 = fg_iq_sigma2(xbl, 1);
    for (int i = 0; i < 256; i++) weight[i] = wbl[i] * sqrtf(sigma2 + xbl[i] * xbl[i]);
    for (int ib = 0; ib < 8; ib++) {
      const float *xb = xbl + 32 * ib, *wb = weight + 32 * ib;
      maxv[ib] = fg_absmax(xb, 32);
      fg_iq1_sort(xb, 32, idx[ib]);
      float ax = 0, aw = 0; /* in registers: xb, wb might alias sx, sw for the compiler */
      sx[0][ib] = sw[0][ib] = 0;
      for (int j = 0; j < 32; j++) {
        const int i = idx[ib][j];
        sx[j + 1][ib] = ax = ax + wb[i] * xb[i];
        sw[j + 1][ib] = aw = aw + wb[i];
      }
    }
    fg_iq1s_search((const float(*)[8])sx, (const float(*)[8])sw, code);
    for (int ib = 0; ib < 8; ib++) {
      const float *xb = xbl + 32 * ib, *wb = weight + 32 * ib;
      if (maxv[ib] < 1e-12f || code[ib] < 0) { /* GROUP_MAX_EPS_IQ1_S, or no candidate */
        scales[ib] = 0;
        shifts[ib] = 1;
        continue;
      }
      const int besti1 = code[ib] >> 7, besti2 = (code[ib] >> 1) & 63;
      int best_shift = code[ib] & 1 ? -1 : 1;
      /* the winner's scale again, by the search's operations */
      const float *v = best_shift == 1 ? fg_iq1_xp : fg_iq1_xm;
      const float sumqx0 = (sx[besti1][ib] - sx[0][ib]) * v[0] + (sx[besti2][ib] - sx[besti1][ib]) * v[1] +
                           (sx[32][ib] - sx[besti2][ib]) * v[2];
      const float sumq20 = (sw[besti1][ib] - sw[0][ib]) * v[0] * v[0] +
                           (sw[besti2][ib] - sw[besti1][ib]) * v[1] * v[1] + (sw[32][ib] - sw[besti2][ib]) * v[2] * v[2];
      float scale = sumqx0 / sumq20;
      for (int j = 0; j < besti1; j++) L[idx[ib][j]] = 0;
      for (int j = besti1; j < besti2; j++) L[idx[ib][j]] = 1;
      for (int j = besti2; j < 32; j++) L[idx[ib][j]] = 2;
      if (scale < 0) {
        for (int j = 0; j < 32; j++) L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_shift = -best_shift;
      }
      const float *xx = best_shift == 1 ? fg_iq1_xp : fg_iq1_xm;
      const float *const xxs[4] = {xx, xx, xx, xx};
      if (!fg_iq1_place(t, 4, xxs, xb, wb, L, index, &scale)) return ibl;
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
      fg_bytes_st_le16(y, fg_f32_to_f16(d * 1.125f));
      const float id = 1 / d;
      for (int ib = 0; ib < 8; ib++) {
        int l = fg_iq_scale_level(id, scales[ib], 7);
        if (shifts[ib] == -1) l |= 8;
        qhv[ib] = (uint16_t)(qhv[ib] | (l << 12));
      }
    }
    for (int ib = 0; ib < 8; ib++) fg_bytes_st_le16(qh + 2 * ib, qhv[ib]);
  }
  return -1;
}

/* The level values of group k (0: first 8, 1: last 8) under shift code s: bit 1 of s picks
 * the first half's sign, bit 0 the second's (0: +delta). */
static const float *fg_iq1m_xx(int s, int k) {
  if (k == 0) return s < 2 ? fg_iq1_xp : fg_iq1_xm;
  return s % 2 == 0 ? fg_iq1_xp : fg_iq1_xm;
}

/* ggml's constants of the IQ1_M search: with v0 - v1 = v1 - v2 = -1 the three-group sums
 * collapse to T*v2 - px[i1] - px[i2] and Tw*v2*v2 + pw[i1]*c1 + pw[i2]*c2, per half. */
#define FG_IQ1M_C(v, a, b) ((v)[a] * (v)[a] - (v)[b] * (v)[b])

/* ggml's sums of candidate (i1, i2) of sub-block ib for its four shift codes k, from the
 * per-half prefix sums px, pw (px[h][j][ib]: the half-h elements among the j smallest). */
static void fg_iq1m_candidate(const float (*px)[17][16], const float (*pw)[17][16], int ib, int i1, int i2, float *sqx,
                              float *sq2) {
  const float p2 = fg_iq1_xp[2], m2 = fg_iq1_xm[2];
  const float cp1 = FG_IQ1M_C(fg_iq1_xp, 0, 1), cp2 = FG_IQ1M_C(fg_iq1_xp, 1, 2);
  const float cm1 = FG_IQ1M_C(fg_iq1_xm, 0, 1), cm2 = FG_IQ1M_C(fg_iq1_xm, 1, 2);
  float qx_p[2], qx_m[2], q2_p[2], q2_m[2];
  for (int h = 0; h < 2; h++) {
    const float sx = px[h][i1][ib] + px[h][i2][ib];
    qx_p[h] = px[h][16][ib] * p2 - sx;
    qx_m[h] = px[h][16][ib] * m2 - sx;
    q2_p[h] = pw[h][16][ib] * p2 * p2 + pw[h][i1][ib] * cp1 + pw[h][i2][ib] * cp2;
    q2_m[h] = pw[h][16][ib] * m2 * m2 + pw[h][i1][ib] * cm1 + pw[h][i2][ib] * cm2;
  }
  sqx[0] = qx_p[0] + qx_p[1];
  sqx[1] = qx_p[0] + qx_m[1];
  sqx[2] = qx_m[0] + qx_p[1];
  sqx[3] = qx_m[0] + qx_m[1];
  sq2[0] = q2_p[0] + q2_p[1];
  sq2[1] = q2_p[0] + q2_m[1];
  sq2[2] = q2_m[0] + q2_p[1];
  sq2[3] = q2_m[0] + q2_m[1];
}

/* IQ1_M's split search for the 16 sub-blocks of a super-block, four a vector, by the
 * operations of fg_iq1m_candidate (ggml's); px[h][j][ib], pw[h][j][ib] hold the sub-blocks'
 * per-half prefix sums. code[ib] receives (32*i1 + i2)*4 + k, or -1. Candidates are tried in
 * ggml's order (i1, i2, k); as in IQ1_S a pair that no lane could take is passed over. */
static void fg_iq1m_search(const float (*px)[17][16], const float (*pw)[17][16], int *code) {
  const fg_qvf p2 = fg_iq1_splat(fg_iq1_xp[2]), m2 = fg_iq1_splat(fg_iq1_xm[2]);
  const fg_qvf cp1 = fg_iq1_splat(FG_IQ1M_C(fg_iq1_xp, 0, 1)), cp2 = fg_iq1_splat(FG_IQ1M_C(fg_iq1_xp, 1, 2));
  const fg_qvf cm1 = fg_iq1_splat(FG_IQ1M_C(fg_iq1_xm, 0, 1)), cm2 = fg_iq1_splat(FG_IQ1M_C(fg_iq1_xm, 1, 2));
  const fg_qvf zero = {0, 0, 0, 0};
  for (int v = 0; v < 4; v++) {
    fg_qvf X[2][17], Wv[2][17], ep[2][17], em[2][17], tp[2], tm[2], wp[2], wm[2];
    for (int h = 0; h < 2; h++) {
      for (int j = 0; j <= 16; j++) {
        X[h][j] = fg_qv_load(px[h][j] + 4 * v);
        Wv[h][j] = fg_qv_load(pw[h][j] + 4 * v);
        ep[h][j] = Wv[h][j] * cp2;
        em[h][j] = Wv[h][j] * cm2;
      }
      tp[h] = X[h][16] * p2;
      tm[h] = X[h][16] * m2;
      wp[h] = Wv[h][16] * p2 * p2;
      wm[h] = Wv[h][16] * m2 * m2;
    }
    fg_qvf best = fg_iq1_splat(-FG_IQ1_FLT_MAX);
    fg_qvi bc = {-1, -1, -1, -1};
    for (int i1 = 0; i1 <= 16; i1++) {
      const fg_qvf a0 = X[0][i1], a1 = X[1][i1];
      const fg_qvf bp0 = wp[0] + Wv[0][i1] * cp1, bm0 = wm[0] + Wv[0][i1] * cm1;
      const fg_qvf bp1 = wp[1] + Wv[1][i1] * cp1, bm1 = wm[1] + Wv[1][i1] * cm1;
      for (int i2 = i1; i2 <= 16; i2++) {
        const fg_qvf sx0 = a0 + X[0][i2], sx1 = a1 + X[1][i2];
        const fg_qvf xp0 = tp[0] - sx0, xm0 = tm[0] - sx0, xp1 = tp[1] - sx1, xm1 = tm[1] - sx1;
        const fg_qvf wp0 = bp0 + ep[0][i2], wm0 = bm0 + em[0][i2], wp1 = bp1 + ep[1][i2], wm1 = bm1 + em[1][i2];
        const fg_qvf sqx[4] = {xp0 + xp1, xp0 + xm1, xm0 + xp1, xm0 + xm1};
        const fg_qvf sq2[4] = {wp0 + wp1, wp0 + wm1, wm0 + wp1, wm0 + wm1};
        if (!fg_qv_any((sqx[0] * sqx[0] > best * sq2[0]) | (sqx[1] * sqx[1] > best * sq2[1]) |
                       (sqx[2] * sqx[2] > best * sq2[2]) | (sqx[3] * sqx[3] > best * sq2[3])))
          continue;
        const int c = (32 * i1 + i2) * 4;
        for (int k = 0; k < 4; k++) {
          const fg_qvi up = (sq2[k] > zero) & (sqx[k] * sqx[k] > best * sq2[k]);
          if (fg_qv_any(up)) {
            const fg_qvf sc = sqx[k] / sq2[k];
            best = FG_QV_SEL(up, sc * sqx[k], best);
            bc = fg_iq1_take(up, c + k, bc);
          }
        }
      }
    }
    for (int k = 0; k < 4; k++) code[4 * v + k] = bc[k];
  }
}

int64_t fg_qwenc_iq1_m(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n) {
  static const uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
  if (!fg_iq1_ready(t)) return 0;
  _Alignas(16) float weight[256], px[2][17][16], pw[2][17][16];
  float scales[16], maxv[16];
  int8_t L[16], shifts[16];
  int idx[16][16], code[16];
  uint16_t index[2];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, y += 56) {
    memset(y, 0, 56);
    uint8_t *qs = y, *qh = y + 32;
    uint16_t sc[4] = {0};
    float max_scale = 0;
    const float *xbl = x + 256 * ibl;
    const float sigma2 = fg_iq_sigma2(xbl, 1);
    if (qw)
      for (int i = 0; i < 256; i++) weight[i] = qw[256 * ibl + i] * sqrtf(sigma2 + xbl[i] * xbl[i]);
    else
      for (int i = 0; i < 256; i++) weight[i] = xbl[i] * xbl[i];
    for (int ib = 0; ib < 16; ib++) {
      const float *xb = xbl + 16 * ib, *wb = weight + 16 * ib;
      maxv[ib] = fg_absmax(xb, 16);
      fg_iq1_sort(xb, 16, idx[ib]);
      /* prefix sums per half: each half has its own shift. ggml adds to the element's half
       * and copies the other; here both add, the other half's addend masked to +0: the
       * sums start at +0 and so are never -0, and s + (+0) is s. No branch on the half
       * (it mispredicts) and no sum read back from memory. */
      float ax0 = 0, ax1 = 0, aw0 = 0, aw1 = 0;
      px[0][0][ib] = px[1][0][ib] = pw[0][0][ib] = pw[1][0][ib] = 0;
      for (int j = 0; j < 16; j++) {
        const int i = idx[ib][j];
        const uint32_t m1 = 0u - (uint32_t)(i >> 3), m0 = ~m1;
        const uint32_t bx = fg_f32_bits(wb[i] * xb[i]), bw = fg_f32_bits(wb[i]);
        px[0][j + 1][ib] = ax0 = ax0 + fg_bits_f32(bx & m0);
        px[1][j + 1][ib] = ax1 = ax1 + fg_bits_f32(bx & m1);
        pw[0][j + 1][ib] = aw0 = aw0 + fg_bits_f32(bw & m0);
        pw[1][j + 1][ib] = aw1 = aw1 + fg_bits_f32(bw & m1);
      }
    }
    fg_iq1m_search((const float(*)[17][16])px, (const float(*)[17][16])pw, code);
    for (int ib = 0; ib < 16; ib++) {
      const float *xb = xbl + 16 * ib, *wb = weight + 16 * ib;
      if (maxv[ib] < 1e-7f || code[ib] < 0) { /* GROUP_MAX_EPS_IQ1_M, or no candidate */
        scales[ib] = 0;
        shifts[ib] = 0;
        continue;
      }
      const int besti1 = code[ib] >> 7, besti2 = (code[ib] >> 2) & 31;
      int best_k = code[ib] & 3;
      float sqx[4], sq2[4];
      fg_iq1m_candidate((const float(*)[17][16])px, (const float(*)[17][16])pw, ib, besti1, besti2, sqx, sq2);
      float scale = sqx[best_k] / sq2[best_k];
      for (int j = 0; j < besti1; j++) L[idx[ib][j]] = 0;
      for (int j = besti1; j < besti2; j++) L[idx[ib][j]] = 1;
      for (int j = besti2; j < 16; j++) L[idx[ib][j]] = 2;
      if (scale < 0) {
        for (int j = 0; j < 16; j++) L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_k = 3 - best_k;
      }
      const float *const xxs[2] = {fg_iq1m_xx(best_k, 0), fg_iq1m_xx(best_k, 1)};
      if (!fg_iq1_place(t, 2, xxs, xb, wb, L, index, &scale)) return ibl;
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
      const int l = fg_iq_scale_level(id, scales[ib], 7);
      sc[ib / 4] = (uint16_t)(sc[ib / 4] | (l << (3 * (ib % 4))));
      qh[ib] |= masks[shifts[ib]];
      const float *xb = xbl + 16 * ib, *wb = weight + 16 * ib;
      for (int k = 0; k < 2; k++) {
        const float *xx = fg_iq1m_xx(shifts[ib], k);
        const int8_t *pg = t->pts + 8 * (size_t)(qs[2 * ib + k] + ((qh[ib] << (8 - 4 * k)) & 0x700));
        for (int j = 0; j < 8; j++) {
          const float q = xx[(pg[j] - 1) / 2] * (2 * l + 1);
          sumqx += wb[8 * k + j] * q * xb[8 * k + j];
          sumq2 += wb[8 * k + j] * q * q;
        }
      }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t s = fg_f32_to_f16(d * 1.1125f);
    sc[0] = (uint16_t)(sc[0] | ((s & 0x000f) << 12));
    sc[1] = (uint16_t)(sc[1] | ((s & 0x00f0) << 8));
    sc[2] = (uint16_t)(sc[2] | ((s & 0x0f00) << 4));
    sc[3] = (uint16_t)(sc[3] | (s & 0xf000));
    for (int j = 0; j < 4; j++) fg_bytes_st_le16(y + 48 + 2 * j, sc[j]);
  }
  return -1;
}
