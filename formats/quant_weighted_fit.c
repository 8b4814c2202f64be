/* ggml's fitting helpers in their weighted forms (make_qx_quants with quant weights,
 * make_qkx3_quants, make_qp_quants). Every sum runs in index order in f32 and every product
 * keeps ggml's association ((w*x)*l, (w*l)*l): the chosen codes depend on the rounding. */
#include <math.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"

/* Codes of iscale * x[i] clamped to -nmax..nmax-1 as floats, four trial scales in the lanes.
 * ggml rounds with the bits of v + 1.5*2^23 and then clamps; for |v| < 2^22 that is the float
 * (v + 1.5*2^23) - 1.5*2^23 (the same round-half-even), and clamping to integer bounds first
 * gives the same code. Here |v| <= nmax + 0.9: iscale is -(nmax + 0.1 is)/max and max has the
 * largest magnitude of the x. */
static inline fg_qvf fg_qw_sym_codes(fg_qvf iscale, float x, int nmax) {
  const fg_qvf lo = {(float)-nmax, (float)-nmax, (float)-nmax, (float)-nmax};
  const fg_qvf hi = {(float)(nmax - 1), (float)(nmax - 1), (float)(nmax - 1), (float)(nmax - 1)};
  const fg_qvf v = FG_QV_MIN(FG_QV_MAX(iscale * x, lo), hi);
  return (v + 12582912.0f) - 12582912.0f;
}

/* ggml's make_qx_quants with weights (rmse_type 1): the fit at -nmax/max, then 18 trials at
 * -(nmax + 0.1 is)/max, each taken when its sumlx^2/suml2 beats the best so far. The trials'
 * sums do not depend on which were taken, so all 19 are summed together, four to a vector
 * (each lane adds its terms in ggml's order, so each sum is ggml's), then taken or not in
 * ggml's order; the codes are those of the last trial taken. */
float fg_qw_fit_sym(int n, int nmax, const float *x, int8_t *L, const float *qw) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; i++) {
    const float ax = fabsf(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < FG_QW_GROUP_MAX_EPS) {
    memset(L, 0, (size_t)n);
    return 0.0f;
  }
  /* lanes: trials -9..-1, 1..9, then 0 (the first fit: nmax + 0.1f * 0 is nmax) and a copy */
  static const float is_of[20] = {-9, -8, -7, -6, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0};
  fg_qvf isc[5], sx[5], s2[5];
  for (int g = 0; g < 5; g++) {
    const fg_qvf is = fg_qv_load(is_of + 4 * g);
    isc[g] = -((float)nmax + 0.1f * is) / max;
    sx[g] = s2[g] = (fg_qvf){0, 0, 0, 0};
  }
  for (int i = 0; i < n; i++) {
    const float wx = qw[i] * x[i], w = qw[i];
    for (int g = 0; g < 5; g++) {
      const fg_qvf l = fg_qw_sym_codes(isc[g], x[i], nmax);
      sx[g] += wx * l;
      s2[g] += w * l * l;
    }
  }
  float sumlx = sx[4][2], suml2 = s2[4][2];
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx, iscale = isc[4][2];
  for (int t = 0; t < 18; t++) {
    sumlx = sx[t / 4][t % 4];
    suml2 = s2[t / 4][t % 4];
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      scale = sumlx / suml2;
      best = scale * sumlx;
      iscale = isc[t / 4][t % 4];
    }
  }
  for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + fg_clampi(fg_nearest_int(iscale * x[i]), -nmax, nmax - 1));
  return scale;
}

/* ggml's make_qkx3_quants with weights: the fit at nmax/(max-min), then trials at
 * (rmin + rdelta is + nmax)/(max-min), each taken when its weighted error is below the best.
 * A taken trial moves min, which the later trials' codes use: so four trials at a time are
 * computed in the lanes with the current min (each lane in ggml's order), looked at in order,
 * and at the first one taken the lanes after it are dropped and redone from the next trial
 * with the new min. n is at most 32. */
float fg_qw_fit_asym(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
                     float rmin, float rdelta, int nstep) {
  float min, max, sum_w, sum_x;
  fg_qkx_range(n, x, w, &min, &max, &sum_w, &sum_x);
  if (max <= min) {
    memset(L, 0, (size_t)n);
    *the_min = -min;
    return 0.0f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best = 0;
  for (int i = 0; i < n; i++) {
    L[i] = (uint8_t)fg_clampi(fg_nearest_int(iscale * (x[i] - min)), 0, nmax);
    const float diff = scale * L[i] + min - x[i];
    best += w[i] * (diff * diff);
  }
  const fg_qvi lo = {0, 0, 0, 0}, hi = {nmax, nmax, nmax, nmax};
  fg_qvf lv[32];
  for (int is0 = 0; is0 <= nstep;) {
    const fg_qvf isv = {(float)is0, (float)(is0 + 1), (float)(is0 + 2), (float)(is0 + 3)};
    const fg_qvf isc = (rmin + rdelta * isv + (float)nmax) / (max - min);
    fg_qvf sl = {0, 0, 0, 0}, sl2 = sl, sxl = sl;
    for (int i = 0; i < n; i++) {
      const fg_qvf v = isc * (x[i] - min) + 12582912.0f; /* fg_nearest_int per lane */
      fg_qvi l = ((fg_qvi)v & 0x007fffff) - 0x00400000;
      const fg_qvi below = l < lo, above = l > hi;
      l = (below & lo) | (~below & l);
      l = (above & hi) | (~above & l);
      lv[i] = __builtin_convertvector(l, fg_qvf);
      const fg_qvf wl = w[i] * lv[i];
      sl += wl;
      sl2 += wl * lv[i];
      sxl += wl * x[i];
    }
    const fg_qvf D = sum_w * sl2 - sl * sl;
    fg_qvf tsc = (sum_w * sxl - sum_x * sl) / D, tmin = (sl2 * sum_x - sl * sxl) / D;
    const fg_qvi pos = tmin > 0.0f;
    const fg_qvf zero = {0, 0, 0, 0};
    tmin = FG_QV_SEL(pos, zero, tmin);
    tsc = FG_QV_SEL(pos, sxl / sl2, tsc);
    fg_qvf err = {0, 0, 0, 0};
    for (int i = 0; i < n; i++) {
      const fg_qvf diff = tsc * lv[i] + tmin - x[i];
      err += w[i] * (diff * diff);
    }
    int next = is0 + 4;
    for (int k = 0; k < 4 && is0 + k <= nstep; k++) {
      if (!(D[k] > 0) || !(err[k] < best)) continue;
      for (int i = 0; i < n; i++) L[i] = (uint8_t)lv[i][k];
      best = err[k];
      scale = tsc[k];
      min = tmin[k];
      next = is0 + k + 1; /* the later lanes used the old min */
      break;
    }
    is0 = next;
  }
  *the_min = -min;
  return scale;
}

/* L holds uint8 codes, as ggml's: a negative nearest_int (a negative scale to fit) wraps
 * there and the descent then reads the wrapped code, so the wrap is kept. */
float fg_qw_fit_scales(int n, int nmax, const float *x, uint8_t *L, const float *qw) {
  float max = 0;
  for (int i = 0; i < n; i++) max = max > x[i] ? max : x[i];
  if (max < FG_QW_GROUP_MAX_EPS) {
    memset(L, 0, (size_t)n);
    return 0.0f;
  }
  float iscale = nmax / max;
  for (int i = 0; i < n; i++) L[i] = (uint8_t)fg_nearest_int(iscale * x[i]);
  float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; i++) {
    const float diff = x[i] - scale * L[i];
    best_mse += qw[i] * diff * diff;
  }
  for (int is = -4; is <= 4; is++) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * is + nmax) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; i++) {
      int l = fg_nearest_int(iscale_is * x[i]);
      l = nmax < l ? nmax : l;
      const float diff = x[i] - scale_is * l;
      mse += qw[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    int l = fg_nearest_int(iscale * x[i]);
    l = nmax < l ? nmax : l;
    L[i] = (uint8_t)l;
    sumlx += qw[i] * x[i] * l;
    suml2 += qw[i] * l * l;
  }
  for (int itry = 0; itry < 5; itry++) {
    int n_changed = 0;
    for (int i = 0; i < n; i++) {
      const float w = qw[i];
      float slx = sumlx - w * x[i] * L[i];
      float sl2 = suml2 - w * L[i] * L[i];
      if (slx > 0 && sl2 > 0) {
        int new_l = fg_nearest_int(x[i] * sl2 / slx);
        new_l = nmax < new_l ? nmax : new_l;
        if (new_l != L[i]) {
          slx += w * x[i] * new_l;
          sl2 += w * new_l * new_l;
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = (uint8_t)new_l;
            sumlx = slx;
            suml2 = sl2;
            n_changed++;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}
