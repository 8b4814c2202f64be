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
  int32_t *map = (int32_t *)malloc((size_t)nmap * sizeof *map);
  int *d2 = (int *)malloc((size_t)d.ngrid * sizeof *d2);
  uint16_t *nb = NULL;
  size_t nnb = 0, cap = 0;
  if (!pts || !map || !d2) goto fail;
  for (int i = 0; i < nmap; i++) map[i] = FG_IQ_NO_LIST;
  for (int j = 0; j < d.ngrid; j++) {
    int idx = 0;
    for (int k = 0; k < d.dim; k++) {
      const int l = fg_iq_level(which, j, k);
      pts[j * d.dim + k] = (int8_t)(2 * l + 1);
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
  fg_iq_tabs[which] = (fg_iq_tab){d.ngrid, d.dim, d.bits, pts, map, nb};
  return;
fail:
  free(pts);
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

int fg_iq_best_neighbour(const fg_iq_tab *t, int32_t code, const float *xval, const float *w, float scale,
                         int8_t *L) {
  if (code == FG_IQ_NO_LIST) return -1;
  const uint16_t *nb = t->nb + (-(int64_t)code - 1);
  float best = 3.40282347e38f; /* FLT_MAX: a distance that is not below it (Inf, NaN) is never taken */
  int gi = -1;
  for (int j = 1; j <= nb[0]; j++) {
    const int8_t *pg = t->pts + (size_t)nb[j] * (size_t)t->dim;
    float d2 = 0;
    for (int i = 0; i < t->dim; i++) {
      const float diff = scale * pg[i] - xval[i];
      d2 += w[i] * diff * diff;
    }
    if (d2 < best) {
      best = d2;
      gi = nb[j];
    }
  }
  if (gi < 0) return -1;
  const int8_t *pg = t->pts + (size_t)gi * (size_t)t->dim;
  for (int i = 0; i < t->dim; i++) L[i] = (int8_t)((pg[i] - 1) / 2);
  return gi;
}
