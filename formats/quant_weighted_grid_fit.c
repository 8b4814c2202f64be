/* The sub-block steps that the IQ2 and IQ3 grid encoders (quant_weighted_iq2.c,
 * quant_weighted_iq3.c) share, each as ggml's quantize_row_iq{2,3}_*_impl loops write it:
 * the weights, the signs taken out of a sub-block, and the refit of its groups to the grid at
 * the scale the trials chose. */
#include <math.h>

#include "formats/quant_weighted_internal.h"

float fg_iq_sigma2(const float *x, int twice) {
  float s = 0;
  for (int i = 0; i < 256; i++) s += x[i] * x[i];
  return twice ? 2 * s / 256 : s / 256;
}

/* n (16 or 32) and ngroups are constants once inlined into the instances of fg_iq_prepare. */
static inline __attribute__((always_inline)) void fg_iq_weights(const float *xb, const float *qw, const int n,
                                                                float sigma2, float bias, float *weight, float *waux) {
  if (qw)
    for (int i = 0; i < n; i++) weight[i] = qw[i] * sqrtf(sigma2 + xb[i] * xb[i]);
  else
    for (int i = 0; i < n; i++) weight[i] = bias + xb[i] * xb[i];
  for (int i = 0; i < n; i++) waux[i] = sqrtf(weight[i]);
}

/* Magnitudes of ngroups groups of 8 and their sign bytes; with parity, an odd count of
 * negatives flips back the element of least weight*x^2 (first on ties) and the codes keep 7
 * bits. */
static inline __attribute__((always_inline)) void fg_iq_signs(const float *xb, const float *weight, const int ngroups,
                                                              int parity, float *xval, uint8_t *signs) {
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

static inline __attribute__((always_inline)) float fg_iq_prepare_n(fg_iq_sub *s, const float *xb, const float *qw,
                                                                   const int n, float sigma2, float bias, int parity) {
  fg_iq_weights(xb, qw, n, sigma2, bias, s->weight, s->waux);
  fg_iq_signs(xb, s->weight, n / 8, parity, s->xval, s->signs);
  float max = s->xval[0];
  for (int i = 1; i < n; i++) max = max > s->xval[i] ? max : s->xval[i];
  return max;
}

float fg_iq_prepare(fg_iq_sub *s, const float *xb, const float *qw, int n, float sigma2, float bias, int parity) {
  if (n == 16) return fg_iq_prepare_n(s, xb, qw, 16, sigma2, bias, parity);
  return fg_iq_prepare_n(s, xb, qw, 32, sigma2, bias, parity);
}

/* n, dim, bits and maxl are constants once inlined into the instances below. The levels go
 * straight into L: a group on the grid holds its entry's levels (map's definition), and
 * fg_iq_best_neighbour writes the levels of the entry it picks. */
static inline __attribute__((always_inline)) int fg_iq_regrid_n(const fg_iq_tab *t, const int n, const int dim,
                                                                const int bits, const int maxl, const float *xval,
                                                                const float *weight, const float *waux,
                                                                unsigned keep, int8_t *L, float *scale) {
  const float id = 1 / *scale;
  for (int k = 0; k < n / dim; k++) {
    if (keep >> k & 1) continue;
    int u = 0;
    for (int i = 0; i < dim; i++) {
      const int l = fg_clampi(fg_nearest_int(0.5f * (id * xval[dim * k + i] - 1)), 0, maxl);
      L[dim * k + i] = (int8_t)l;
      u |= l << (bits * i);
    }
    if (t->map[u] < 0 && fg_iq_best_neighbour(t, t->map[u], xval + dim * k, waux + dim * k, *scale, L + dim * k) < 0)
      return 0;
  }
  float sumqx = 0, sumq2 = 0;
  for (int i = 0; i < n; i++) {
    const float q = (float)(2 * L[i] + 1);
    sumqx += weight[i] * xval[i] * q;
    sumq2 += weight[i] * q * q;
  }
  if (sumq2 > 0) *scale = sumqx / sumq2;
  return 1;
}

/* The IQ3 tables group 4 levels 0..7 (3 bits each), the IQ2 tables 8 levels 0..2 (2 bits);
 * IQ3 sub-blocks have 32 elements, IQ2's 16 or 32. */
int fg_iq_regrid(const fg_iq_tab *t, int n, fg_iq_sub *s, unsigned keep, float *scale) {
  if (t->dim == 4) return fg_iq_regrid_n(t, 32, 4, 3, 7, s->xval, s->weight, s->waux, keep, s->L, scale);
  if (n == 16) return fg_iq_regrid_n(t, 16, 8, 2, 2, s->xval, s->weight, s->waux, keep, s->L, scale);
  return fg_iq_regrid_n(t, 32, 8, 2, 2, s->xval, s->weight, s->waux, keep, s->L, scale);
}
