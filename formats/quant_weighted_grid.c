/* Search tables of the grid i-quant encoders (what ggml's iq2xs_init_impl / iq3xs_init_impl
 * build), derived here from the decode grids of elem/quant_iq_grids.h and built once per
 * process on first use (pthread_once), so that concurrent encoders share them.
 *
 * A grid point is a group of dim coordinates 2l+1 (l the level, 0..2 or 0..7); the index of a
 * group of levels packs l_k at bits*k. map[index] is the grid entry holding exactly those
 * levels, or -(offset + 1) for an index off the grid: nb[offset] is the count of its
 * neighbours and nb[offset + 1..] the grid entries whose squared distance to the index's
 * point is among the nwant smallest distinct distances, in (distance, entry) order: the
 * order ggml's qsort leaves them in, which decides ties in the neighbour search. Indices with
 * a level above the encoders' clamp are never looked up and get no list (FG_IQ_NO_LIST). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"
#include "forgia/elem/quant_iq_grids.h"

typedef struct fg_iq_def {
  int ngrid, dim, bits, maxl, nwant;
} fg_iq_def;

static const fg_iq_def fg_iq_defs[FG_IQT_COUNT] = {
  [FG_IQT_2XXS] = {256, 8, 2, 2, 2},  [FG_IQT_2XS] = {512, 8, 2, 2, 2}, [FG_IQT_2S] = {1024, 8, 2, 2, 1},
  [FG_IQT_1S] = {2048, 8, 2, 2, 3},   [FG_IQT_3XXS] = {256, 4, 3, 7, 2}, [FG_IQT_3S] = {512, 4, 3, 7, 3},
};

static fg_iq_tab fg_iq_tabs[FG_IQT_COUNT];
static pthread_once_t fg_iq_once[FG_IQT_COUNT] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
                                                  PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

/* Level of coordinate k of grid entry j, from the decode grids' magnitudes. */
static int fg_iq_level(int which, int j, int k) {
  unsigned v;
  switch (which) {
    case FG_IQT_2XXS: v = (unsigned)(fg_iq2xxs_grid((unsigned)j) >> (8 * k)) & 0xffu; break;
    case FG_IQT_2XS: v = (unsigned)(fg_iq2xs_grid((unsigned)j) >> (8 * k)) & 0xffu; break;
    case FG_IQT_2S: v = (unsigned)(fg_iq2s_grid((unsigned)j) >> (8 * k)) & 0xffu; break;
    case FG_IQT_1S: /* int8 -1, 0, +1 */
      return (int)(int8_t)((fg_iq1s_grid((unsigned)j) >> (8 * k)) & 0xffu) + 1;
    case FG_IQT_3XXS: { /* 4, 12, 20, ..., 52, then 62 */
      v = (fg_iq3xxs_grid((unsigned)j) >> (8 * k)) & 0xffu;
      return v == 62 ? 7 : (int)(v - 4) / 8;
    }
    default: /* FG_IQT_3S: 1, 3, ..., 15 */
      v = (fg_iq3s_grid((unsigned)j) >> (8 * k)) & 0xffu;
      return (int)(v - 1) / 2;
  }
  return v == 8 ? 0 : v == 25 ? 1 : 2; /* the iq2 magnitudes 8, 25, 43 */
}

static void fg_iq_build(int which) {
  const fg_iq_def d = fg_iq_defs[which];
  const int nmap = 1 << (d.bits * d.dim);
  const int mask = (1 << d.bits) - 1;
  int8_t *pts = (int8_t *)malloc((size_t)d.ngrid * (size_t)d.dim);
  float *ptsf = (float *)malloc((size_t)d.ngrid * (size_t)d.dim * sizeof *ptsf);
  int32_t *map = (int32_t *)malloc((size_t)nmap * sizeof *map);
  int *d2 = (int *)malloc((size_t)d.ngrid * sizeof *d2);
  uint16_t *nb = NULL;
  float *soa = NULL;
  int32_t *soa_at = NULL;
  size_t nnb = 0, cap = 0;
  if (!pts || !ptsf || !map || !d2) goto fail;
  for (int i = 0; i < nmap; i++) map[i] = FG_IQ_NO_LIST;
  for (int j = 0; j < d.ngrid; j++) {
    int idx = 0;
    for (int k = 0; k < d.dim; k++) {
      const int l = fg_iq_level(which, j, k);
      pts[j * d.dim + k] = (int8_t)(2 * l + 1);
      ptsf[j * d.dim + k] = (float)(2 * l + 1);
      idx |= l << (d.bits * k);
    }
    map[idx] = j;
  }
  for (int i = 0; i < nmap; i++) {
    if (map[i] >= 0) continue;
    int8_t pos[8];
    int ok = 1;
    for (int k = 0; k < d.dim; k++) {
      const int l = (i >> (d.bits * k)) & mask;
      if (l > d.maxl) ok = 0;
      pos[k] = (int8_t)(2 * l + 1);
    }
    if (!ok) continue;
    int dmax = 0;
    for (int j = 0; j < d.ngrid; j++) {
      int s = 0;
      for (int k = 0; k < d.dim; k++) {
        const int t = pts[j * d.dim + k] - pos[k];
        s += t * t;
      }
      d2[j] = s;
      dmax = s > dmax ? s : dmax;
    }
    /* the nwant smallest distinct distances: repeatedly the smallest above the last */
    int limits[3], nl = 0, last = -1;
    while (nl < d.nwant) {
      int m = dmax + 1;
      for (int j = 0; j < d.ngrid; j++)
        if (d2[j] > last && d2[j] < m) m = d2[j];
      if (m > dmax) break;
      limits[nl++] = last = m;
    }
    size_t need = 1;
    for (int j = 0; j < d.ngrid; j++) need += d2[j] <= last;
    if (nnb + need > cap) {
      size_t nc = cap ? cap * 2 : 1u << 16;
      while (nc < nnb + need) nc *= 2;
      uint16_t *g = (uint16_t *)realloc(nb, nc * sizeof *nb);
      if (!g) goto fail;
      nb = g;
      cap = nc;
    }
    map[i] = -(int32_t)nnb - 1;
    nb[nnb++] = (uint16_t)(need - 1);
    for (int q = 0; q < nl; q++)
      for (int j = 0; j < d.ngrid; j++)
        if (d2[j] == limits[q]) nb[nnb++] = (uint16_t)j;
  }
  free(d2);
  d2 = NULL;
  if (which != FG_IQT_1S) { /* IQ1_S has its own search */
    const int gs = 4 * d.dim;
    size_t nsoa = 0;
    for (int i = 0; i < nmap; i++)
      if (map[i] < 0 && map[i] != FG_IQ_NO_LIST) nsoa += gs * (size_t)((nb[-(int64_t)map[i] - 1] + 3) / 4);
    soa = (float *)malloc((nsoa ? nsoa : 1) * sizeof *soa);
    soa_at = (int32_t *)malloc((size_t)nmap * sizeof *soa_at);
    if (!soa || !soa_at) goto fail;
    size_t at = 0;
    for (int i = 0; i < nmap; i++) {
      soa_at[i] = -1;
      if (map[i] >= 0 || map[i] == FG_IQ_NO_LIST) continue;
      const uint16_t *l = nb + (-(int64_t)map[i] - 1);
      soa_at[i] = (int32_t)at;
      for (int p = 1; p <= l[0]; p += 4, at += gs)
        for (int k = 0; k < 4; k++)
          for (int c = 0; c < d.dim; c++) soa[at + 4 * c + k] = p + k <= l[0] ? ptsf[d.dim * l[p + k] + c] : NAN;
    }
  }
  fg_iq_tabs[which] = (fg_iq_tab){d.ngrid, d.dim, d.bits, pts, map, nb, ptsf, d.maxl, soa, soa_at};
  return;
fail:
  free(pts);
  free(ptsf);
  free(soa);
  free(soa_at);
  free(map);
  free(d2);
  free(nb);
}

#define FG_IQ_ONCE(W) \
  static void fg_iq_build_##W(void) { fg_iq_build(W); }
FG_IQ_ONCE(FG_IQT_2XXS)
FG_IQ_ONCE(FG_IQT_2XS)
FG_IQ_ONCE(FG_IQT_2S)
FG_IQ_ONCE(FG_IQT_1S)
FG_IQ_ONCE(FG_IQT_3XXS)
FG_IQ_ONCE(FG_IQT_3S)
#undef FG_IQ_ONCE

const fg_iq_tab *fg_iq_tab_get(int which) {
  static void (*const build[FG_IQT_COUNT])(void) = {
    [FG_IQT_2XXS] = fg_iq_build_FG_IQT_2XXS, [FG_IQT_2XS] = fg_iq_build_FG_IQT_2XS,
    [FG_IQT_2S] = fg_iq_build_FG_IQT_2S,     [FG_IQT_1S] = fg_iq_build_FG_IQT_1S,
    [FG_IQT_3XXS] = fg_iq_build_FG_IQT_3XXS, [FG_IQT_3S] = fg_iq_build_FG_IQT_3S,
  };
  if (which < 0 || which >= FG_IQT_COUNT) return NULL;
  pthread_once(&fg_iq_once[which], build[which]);
  return fg_iq_tabs[which].pts ? &fg_iq_tabs[which] : NULL;
}

/* The neighbour search runs four candidates at a time, one per lane: each lane sums its
 * candidate's dim terms in ggml's order (the same f32 operations as the scalar loop), so only
 * the order in which candidates are compared changes. Each lane keeps its first strict
 * minimum and its position in the list; the lanes' minima are then merged by value, ties to
 * the earlier position: the entry a sequential scan with strict < keeps. In fg_iq_search a
 * short last group repeats its first candidate, whose later position never wins a tie; the
 * transposed lists pad theirs with NaN instead, which keeps ties (the slow merge) rare. */
static void fg_iq_transpose4(fg_qvf *r0, fg_qvf *r1, fg_qvf *r2, fg_qvf *r3) {
#if defined(__SSE2__)
  __m128 a = (__m128)*r0, b = (__m128)*r1, c = (__m128)*r2, d = (__m128)*r3;
  _MM_TRANSPOSE4_PS(a, b, c, d);
  *r0 = (fg_qvf)a, *r1 = (fg_qvf)b, *r2 = (fg_qvf)c, *r3 = (fg_qvf)d;
#else
  const fg_qvf a = *r0, b = *r1, c = *r2, d = *r3;
  *r0 = (fg_qvf){a[0], b[0], c[0], d[0]};
  *r1 = (fg_qvf){a[1], b[1], c[1], d[1]};
  *r2 = (fg_qvf){a[2], b[2], c[2], d[2]};
  *r3 = (fg_qvf){a[3], b[3], c[3], d[3]};
#endif
}

/* The position in its list of the best entry from four lanes' first strict minima best at
 * positions bpos, or -1 when none is below FLT_MAX: the least value (never NaN: only values
 * below FLT_MAX replace the start), then the earliest position holding it. */
static inline int fg_iq_merge(fg_qvf best, fg_qvi bpos) {
  const float fmax = 3.40282347e38f;
#if defined(__SSE2__)
  const __m128 b = (__m128)best, m1 = _mm_min_ps(b, _mm_shuffle_ps(b, b, _MM_SHUFFLE(1, 0, 3, 2)));
  const float bv = _mm_cvtss_f32(_mm_min_ps(m1, _mm_shuffle_ps(m1, m1, _MM_SHUFFLE(2, 3, 0, 1))));
  if (!(bv < fmax)) return -1;
  const int eq = _mm_movemask_ps(_mm_cmpeq_ps(b, _mm_set1_ps(bv)));
  if ((eq & (eq - 1)) == 0) return bpos[__builtin_ctz((unsigned)eq)];
#else
  float bv = best[0];
  for (int k = 1; k < 4; k++) bv = best[k] < bv ? best[k] : bv;
  if (!(bv < fmax)) return -1;
#endif
  int bp = -1;
  for (int k = 0; k < 4; k++)
    if (best[k] == bv && (bp < 0 || bpos[k] < bp)) bp = bpos[k];
  return bp;
}

/* The position (1..count) in list nb of the best entry, or -1, for magnitudes and weights
 * broadcast in xv, wv; dim a constant 4 or 8 once inlined. */
static inline __attribute__((always_inline)) int fg_iq_search(const float *ptsf, const uint16_t *nb, const fg_qvf *xv,
                                                              const fg_qvf *wv, fg_qvf sv, const int dim) {
  const int n = nb[0];
  const float fmax = 3.40282347e38f; /* FLT_MAX: a distance that is not below it (Inf, NaN) is never taken */
  fg_qvf best = {fmax, fmax, fmax, fmax};
  fg_qvi bpos = {-1, -1, -1, -1}, pos = {1, 2, 3, 4};
  for (int j = 1; j <= n; j += 4, pos += 4) {
    const float *p0 = ptsf + (size_t)nb[j] * dim;
    const float *p1 = j + 1 <= n ? ptsf + (size_t)nb[j + 1] * dim : p0;
    const float *p2 = j + 2 <= n ? ptsf + (size_t)nb[j + 2] * dim : p0;
    const float *p3 = j + 3 <= n ? ptsf + (size_t)nb[j + 3] * dim : p0;
    fg_qvf d = {0, 0, 0, 0};
    for (int h = 0; h < dim; h += 4) {
      fg_qvf q[4] = {fg_qv_load(p0 + h), fg_qv_load(p1 + h), fg_qv_load(p2 + h), fg_qv_load(p3 + h)};
      fg_iq_transpose4(&q[0], &q[1], &q[2], &q[3]);
      for (int i = 0; i < 4; i++) {
        const fg_qvf diff = sv * q[i] - xv[h + i];
        d += wv[h + i] * diff * diff;
      }
    }
    const fg_qvi lt = d < best;
    best = FG_QV_SEL(lt, d, best);
    bpos = (lt & pos) | (~lt & bpos);
  }
  return fg_iq_merge(best, bpos);
}

/* The same over a transposed list (fg_iq_tab.soa) of n entries. */
static inline __attribute__((always_inline)) int fg_iq_search_soa(const float *soa, int n, const fg_qvf *xv,
                                                                  const fg_qvf *wv, fg_qvf sv, const int dim) {
  const float fmax = 3.40282347e38f;
  fg_qvf best = {fmax, fmax, fmax, fmax};
  fg_qvi bpos = {-1, -1, -1, -1}, pos = {1, 2, 3, 4};
  for (int j = 1; j <= n; j += 4, pos += 4, soa += 4 * dim) {
    fg_qvf d = {0, 0, 0, 0};
    for (int i = 0; i < dim; i++) {
      const fg_qvf diff = sv * fg_qv_load(soa + 4 * i) - xv[i];
      d += wv[i] * diff * diff;
    }
    const fg_qvi lt = d < best;
    best = FG_QV_SEL(lt, d, best);
    bpos = (lt & pos) | (~lt & bpos);
  }
  return fg_iq_merge(best, bpos);
}

static int fg_iq_search_any(const fg_iq_tab *t, const uint16_t *nb, const float *xval, const float *w, float scale) {
  fg_qvf xv[8], wv[8];
  for (int i = 0; i < t->dim; i++) {
    xv[i] = (fg_qvf){xval[i], xval[i], xval[i], xval[i]};
    wv[i] = (fg_qvf){w[i], w[i], w[i], w[i]};
  }
  const fg_qvf sv = {scale, scale, scale, scale};
  return t->dim == 8 ? fg_iq_search(t->ptsf, nb, xv, wv, sv, 8) : fg_iq_search(t->ptsf, nb, xv, wv, sv, 4);
}

int fg_iq_best_neighbour(const fg_iq_tab *t, int32_t code, const float *xval, const float *w, float scale,
                         int8_t *L) {
  if (code == FG_IQ_NO_LIST) return -1;
  const uint16_t *nb = t->nb + (-(int64_t)code - 1);
  const int bp = fg_iq_search_any(t, nb, xval, w, scale);
  if (bp < 0) return -1;
  const int gi = nb[bp];
  const int8_t *pg = t->pts + (size_t)gi * (size_t)t->dim;
  for (int i = 0; i < t->dim; i++) L[i] = (int8_t)((pg[i] - 1) >> 1); /* pg[i] = 2l+1 > 0 */
  return gi;
}

/* The trials run four at a time, one per lane: the levels, grid indices and the two sums of
 * a trial are its lane's (each sum in ggml's element order), the neighbour searches run per
 * lane and group over the transposed lists, and the trials are then taken or not in order.
 * n and dim are constants once inlined into the three instances below. */
static inline __attribute__((always_inline)) int fg_iq_trials_n(const fg_iq_tab *t, const int n, const int dim,
                                                                const float *xval, const float *weight,
                                                                const float *waux, const float *ids, int ntrial,
                                                                int8_t *L, float *scale, float *best, unsigned *on_grid) {
  const int ng = n / dim, bits = t->bits;
  const fg_qvi maxl = {t->maxl, t->maxl, t->maxl, t->maxl}, zero = {0, 0, 0, 0};
  fg_qvf wx[32], wv[32], xv[32], av[32];
  for (int i = 0; i < n; i++) {
    const float a = weight[i] * xval[i];
    wx[i] = (fg_qvf){a, a, a, a};
    wv[i] = (fg_qvf){weight[i], weight[i], weight[i], weight[i]};
    xv[i] = (fg_qvf){xval[i], xval[i], xval[i], xval[i]};
    av[i] = (fg_qvf){waux[i], waux[i], waux[i], waux[i]};
  }
  for (int t0 = 0; t0 < ntrial; t0 += 4) {
    const int nl = ntrial - t0 < 4 ? ntrial - t0 : 4;
    fg_qvf id;
    for (int k = 0; k < 4; k++) id[k] = ids[t0 + (k < nl ? k : 0)];
    fg_qvi lv[32];
    int32_t u[8][4];
    for (int g = 0; g < ng; g++) {
      fg_qvi ug = zero;
      for (int i = 0; i < dim; i++) {
        const fg_qvf v = 0.5f * (id * xv[g * dim + i] - 1) + 12582912.0f; /* fg_nearest_int */
        fg_qvi l = ((fg_qvi)v & 0x007fffff) - 0x00400000;
        l = ((l > maxl) & maxl) | ((l <= maxl) & l);
        l &= l > zero;
        lv[g * dim + i] = l;
        ug |= l << (bits * i);
      }
      memcpy(u[g], &ug, sizeof ug);
    }
    const fg_qvf ts = 1 / id;
    unsigned og[4] = {0, 0, 0, 0};
    for (int k = 0; k < nl; k++)
      for (int g = 0; g < ng; g++) {
        const int32_t code = t->map[u[g][k]];
        if (code >= 0) {
          og[k] |= 1u << g;
          continue;
        }
        if (code == FG_IQ_NO_LIST) return 0;
        const uint16_t *nb = t->nb + (-(int64_t)code - 1);
        const fg_qvf sv = {ts[k], ts[k], ts[k], ts[k]};
        const int bp = fg_iq_search_soa(t->soa + t->soa_at[u[g][k]], nb[0], xv + dim * g, av + dim * g, sv, dim);
        if (bp < 0) return 0;
        const int gi = nb[bp];
        const int8_t *pg = t->pts + (size_t)gi * (size_t)dim;
        for (int i = 0; i < dim; i++) lv[g * dim + i][k] = (pg[i] - 1) >> 1;
      }
    fg_qvf sqx = {0, 0, 0, 0}, sq2 = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
      const fg_qvf q = __builtin_convertvector(2 * lv[i] + 1, fg_qvf);
      sqx += wx[i] * q;
      sq2 += wv[i] * q * q;
    }
    for (int k = 0; k < nl; k++)
      if (sq2[k] > 0 && sqx[k] * sqx[k] > *best * sq2[k]) {
        *scale = sqx[k] / sq2[k];
        *best = *scale * sqx[k];
        for (int i = 0; i < n; i++) L[i] = (int8_t)lv[i][k];
        *on_grid = og[k];
      }
  }
  return 1;
}

int fg_iq_trials(const fg_iq_tab *t, int n, const float *xval, const float *weight, const float *waux, const float *ids,
                 int ntrial, int8_t *L, float *scale, float *best, unsigned *on_grid) {
  if (t->dim == 4) return fg_iq_trials_n(t, 32, 4, xval, weight, waux, ids, ntrial, L, scale, best, on_grid);
  if (n == 16) return fg_iq_trials_n(t, 16, 8, xval, weight, waux, ids, ntrial, L, scale, best, on_grid);
  return fg_iq_trials_n(t, 32, 8, xval, weight, waux, ids, ntrial, L, scale, best, on_grid);
}
