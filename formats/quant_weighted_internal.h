/* Row encoders behind fg_quant_encode_rows_weighted (forgia/quant_weighted.h). Each encodes
 * one row of n finite floats (the caller has checked them, and the weights) with n per-column
 * weights qw, following ggml's quantize_<type> with quant_weights operation by operation in
 * f32, so that the bytes match ggml built with -ffp-contract=off. Unlike the unweighted block
 * encoders of quant_internal.h these take whole rows: the simple types scale their weights by
 * the row's mean square, the k-quants and IQ4 by each super-block's. qw may be NULL only where
 * a comment says so (the grid i-quants that ggml runs without a matrix). */
#ifndef FORGIA_FORMATS_QUANT_WEIGHTED_INTERNAL_H
#define FORGIA_FORMATS_QUANT_WEIGHTED_INTERNAL_H

#include <stdint.h>

#include "formats/quant_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*fg_qrow_wenc)(const float *x, const float *qw, uint8_t *y, int64_t n);

#define FG_QW_GROUP_MAX_EPS 1e-15f

/* quant_weighted_fit.c: ggml's fitting helpers, in their weighted forms. */

/* Symmetric fit of n values with weights qw (make_qx_quants, rmse_type 1): codes
 * -nmax..nmax-1 stored +nmax in L; 18 trial inverse scales around -nmax/max. */
float fg_qw_fit_sym(int n, int nmax, const float *x, int8_t *L, const float *qw);
/* Asymmetric fit (make_qkx3_quants with weights, squared error): codes 0..nmax in L, n at
 * most 32; nstep+1 trial inverse scales. *the_min receives -min. */
float fg_qw_fit_asym(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                     float rmin, float rdelta, int nstep);
/* Fit of non-negative sub-block scales to codes 0..nmax (make_qp_quants) with weights qw,
 * then up to 5 passes of coordinate descent; returns the super-block scale. */
float fg_qw_fit_scales(int n, int nmax, const float *x, uint8_t *L, const float *qw);

/* quant_weighted_grid.c: the grid i-quants' search tables (see there), built once. */
enum { FG_IQT_2XXS, FG_IQT_2XS, FG_IQT_2S, FG_IQT_1S, FG_IQT_3XXS, FG_IQT_3S, FG_IQT_COUNT };
#define FG_IQ_NO_LIST INT32_MIN
typedef struct fg_iq_tab {
  int ngrid, dim, bits;
  const int8_t *pts;   /* ngrid x dim coordinates 2l+1 */
  const int32_t *map;  /* 2^(bits*dim): grid entry, -(offset+1) into nb, or FG_IQ_NO_LIST */
  const uint16_t *nb;  /* neighbour lists: count, then entries */
  const float *ptsf;   /* pts as floats: the searches load 4 coordinates at once */
  int maxl;            /* the encoders' largest level (their clamp) */
  /* The lists transposed for fg_iq_trials (NULL for IQ1_S, which searches on its own): ptsf
   * coordinate k of list entries 4g+1..4g+4 at soa[soa_at[index] + 4 dim g + 4k..], a short
   * last group padded with NaN (a NaN distance is never taken); soa_at[index] is -1 where map
   * has no list. Floats
   * rather than pts's int8: converting them costs more than the loads (IQ2_XS: 6 MB). */
  const float *soa;
  const int32_t *soa_at;
} fg_iq_tab;
/* The tables for FG_IQT_*; NULL when they could not be allocated. Thread-safe. */
const fg_iq_tab *fg_iq_tab_get(int which);
/* ggml's neighbour search for an off-grid index (map value code): the listed entry
 * minimising sum w*(scale*q - xval)^2 (first on ties, below FLT_MAX); its levels go to L.
 * Returns the entry, or -1 when none qualifies (ggml asserts there: the encoders refuse). */
int fg_iq_best_neighbour(const fg_iq_tab *t, int32_t code, const float *xval, const float *w, float scale,
                         int8_t *L);

/* ggml's trial loop of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S over n (16 or 32)
 * magnitudes xval in groups of t->dim, in trial order: trial k rounds xval * ids[k] to levels
 * 0..t->maxl, moves the groups off the grid to their best neighbour at scale 1 / ids[k], and
 * is taken when sumq2 > 0 and sumqx^2 > *best * sumq2 (sums of weight * xval * q and
 * weight * q^2, q = 2l + 1), which sets *scale = sumqx / sumq2, *best = *scale * sumqx, L to
 * its levels and *on_grid to its groups on the grid (bit g for group g). Returns 0 when a
 * search finds nothing (ggml asserts: the encoders refuse the block). */
int fg_iq_trials(const fg_iq_tab *t, int n, const float *xval, const float *weight, const float *waux, const float *ids,
                 int ntrial, int8_t *L, float *scale, float *best, unsigned *on_grid);

/* quant_weighted_grid_fit.c: the sub-block steps of the IQ2 and IQ3 encoders. */

/* Mean square of the 256 x of a super-block (twice that when twice is set). */
float fg_iq_sigma2(const float *x, int twice);
/* One sub-block of n <= 32 elements in the search: the weights, their square roots waux (the
 * neighbour searches' weights), the magnitudes xval, the levels L and a sign byte per group of
 * 8 (bit i: element i was negative). */
typedef struct fg_iq_sub {
  float weight[32], waux[32], xval[32];
  int8_t L[32];
  uint8_t signs[4];
} fg_iq_sub;
/* Sets up s for the n (16 or 32) x of xb: weights qw * sqrt(sigma2 + x²), or bias + x²
 * without a matrix (qw NULL), waux, xval and signs; with parity, an odd count of negatives in
 * a group flips back its element of least weight * x² (first on ties) and its sign byte keeps
 * 7 bits. Returns the largest magnitude. */
float fg_iq_prepare(fg_iq_sub *s, const float *xb, const float *qw, int n, float sigma2, float bias, int parity);
/* The groups of the n levels s->L not marked in keep (bit g: group g) redone at the trials'
 * *scale (> 0): levels of xval / *scale, a group off the grid moved to its best neighbour;
 * then *scale = sumqx / sumq2 over all of L when sumq2 > 0. Returns 0 when a neighbour search
 * finds nothing (the block is refused). */
int fg_iq_regrid(const fg_iq_tab *t, int n, fg_iq_sub *s, unsigned keep, float *scale);

/* The grid entries of the ngroups groups of L into gi; 0 when one is off the grid. dim: the
 * table's, passed as a constant so that the loops unroll. ggml packs a group's index into an
 * integer of bits * dim bits: a level above the clamp (IQ2_XXS keeps its initial fit's codes,
 * 0..4 or wrapped, when no scale is accepted) spills into the next fields and the top bits are
 * dropped; the same here. */
static inline int fg_iq_grid_all(const fg_iq_tab *t, const int dim, const int8_t *L, int ngroups, int *gi) {
  const int bits = dim == 4 ? 3 : 2; /* the IQ3 tables' levels 0..7, the IQ2 tables' 0..2 */
  for (int k = 0; k < ngroups; k++) {
    unsigned u = 0;
    for (int i = 0; i < dim; i++) u |= (unsigned)(int)L[dim * k + i] << (bits * i);
    if ((gi[k] = t->map[u & ((1u << (bits * dim)) - 1)]) < 0) return 0;
  }
  return 1;
}

/* A negative fitted scale made positive by flipping the ngroups sign bytes (7 bits with
 * parity); returns |scale|. */
static inline float fg_iq_unsign(float scale, int ngroups, int parity, uint8_t *signs) {
  if (!(scale < 0)) return scale;
  for (int k = 0; k < ngroups; k++) signs[k] = parity ? (uint8_t)(~signs[k] & 127) : (uint8_t)~signs[k];
  return -scale;
}

/* The stored level 0..maxl of a sub-block's scale s against the block's inverse scale id. */
static inline int fg_iq_scale_level(float id, float s, int maxl) {
  return fg_clampi(fg_nearest_int(0.5f * (id * s - 1)), 0, maxl);
}

/* The grid encoders can fail where ggml aborts (no neighbour below FLT_MAX, a NaN scale):
 * they return -1 when the row is encoded, else the index of the refused block in the row.
 * qw may be NULL (ggml's unweighted path, weights x^2) except for the types that need it. */
typedef int64_t (*fg_qrow_wenc_grid)(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n);

/* quant_weighted_simple.c */
void fg_qwenc_q4_0(const float *x, const float *qw, uint8_t *y, int64_t n);
void fg_qwenc_q4_1(const float *x, const float *qw, uint8_t *y, int64_t n);
void fg_qwenc_q5_0(const float *x, const float *qw, uint8_t *y, int64_t n);
void fg_qwenc_q5_1(const float *x, const float *qw, uint8_t *y, int64_t n);
/* quant_weighted_kquants.c */
void fg_qwenc_q2_K(const float *x, const float *qw, uint8_t *y, int64_t n);
void fg_qwenc_q3_K(const float *x, const float *qw, uint8_t *y, int64_t n);
void fg_qwenc_q4_K(const float *x, const float *qw, uint8_t *y, int64_t n);
void fg_qwenc_q5_K(const float *x, const float *qw, uint8_t *y, int64_t n);
void fg_qwenc_q6_K(const float *x, const float *qw, uint8_t *y, int64_t n);
/* quant_weighted_iq4.c */
void fg_qwenc_iq4_nl(const float *x, const float *qw, uint8_t *y, int64_t n);
void fg_qwenc_iq4_xs(const float *x, const float *qw, uint8_t *y, int64_t n);
/* quant_weighted_iq3.c */
int64_t fg_qwenc_iq3_xxs(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n);
int64_t fg_qwenc_iq3_s(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n);
/* quant_weighted_iq2.c (IQ2_XXS and IQ2_XS need qw) */
int64_t fg_qwenc_iq2_xxs(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n);
int64_t fg_qwenc_iq2_xs(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n);
int64_t fg_qwenc_iq2_s(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n);
/* quant_weighted_iq1.c (IQ1_S needs qw) */
int64_t fg_qwenc_iq1_s(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n);
int64_t fg_qwenc_iq1_m(const fg_iq_tab *t, const float *x, const float *qw, uint8_t *y, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
