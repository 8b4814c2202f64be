/* Encoders of the k-quants (ggml quantize_row_q{2..6,8}_K_ref, no importance matrix).
 * Each super-block of 256 is split into sub-blocks; a helper fits a scale (and a min) per
 * sub-block, the scales are quantized against the block's largest one, and the elements are
 * re-quantized with the fp16-rounded stored scales. Every sum runs in index order in f32 and
 * every expression keeps ggml's association, because the chosen codes depend on it. */
#include <math.h>

#include "formats/quant_internal.h"
#include "formats/quant_kquants_pack.h"
#include "forgia/elem/quant_k.h"

#define FG_GROUP_MAX_EPS 1e-15f

/* Asymmetric fit (scale, min) of n values with weights w, codes 0..nmax, searching nstep+1
 * trial inverse scales around nmax/(max-min); the error is weighted |diff| (use_mad) or diff².
 * Returns the scale; *the_min receives -min (a value to subtract, >= 0). */
static float fg_make_qkx2_quants(int n, int nmax, const float *x, const float *w, uint8_t *L,
                                 float *the_min, uint8_t *Laux, float rmin, float rdelta,
                                 int nstep, int use_mad) {
  float min, max, sum_w, sum_x;
  fg_qkx_range(n, x, w, &min, &max, &sum_w, &sum_x);
  if (max == min) {
    for (int i = 0; i < n; i++) L[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; i++) {
    int l = fg_nearest_int(iscale * (x[i] - min));
    L[i] = (uint8_t)fg_clampi(l, 0, nmax);
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? fabsf(diff) : diff * diff;
    best_error += w[i] * diff;
  }
  for (int is = 0; is <= nstep; is++) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; i++) {
      int l = fg_clampi(fg_nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = (uint8_t)l;
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; i++) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; i++) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

/* The fits below run the sub-blocks of one super-block side by side: lane k of group g is
 * sub-block 4g + k, in GCC/Clang vector types of 4 floats (element-wise IEEE operations, so
 * each lane computes exactly what the scalar code computes). Per lane, each sum still runs
 * over the sub-block's elements in index order and every expression keeps ggml's association,
 * so each lane computes what ggml's loop computes for that sub-block; only independent
 * sub-blocks are interleaved. Choices (the best trial, a kept min) are selects per lane, made
 * in trial order. Explicit vectors rather than loops over lanes, because GCC -O3 unrolls short
 * lane loops and vectorises the element loop instead, with in-order (scalar) reductions, and
 * the speed would depend on -O2 or -O3. Vectors of 4: wider GCC vectors are scalarised on
 * base x86-64 (compares, selects). xv[i][g] holds element i of group g's sub-blocks. */
#define FG_KQ_W 4      /* lanes per vector */
#define FG_KQ_ELEMS 32 /* most elements per sub-block */
#define FG_KQ_GROUPS 4 /* most vectors per super-block */

#if defined(__GNUC__)
#define FG_KQ_INLINE static inline __attribute__((always_inline))
#else
#define FG_KQ_INLINE static inline
#endif

/* Before each loop over the groups: unrolled, the groups' vectors stay in registers (GCC -O2
 * keeps them in memory otherwise). */
#define FG_KQ_GROUPS_LOOP _Pragma("GCC unroll 4")

/* MAX(lo, MIN(hi, l)) of ggml for integer-valued l */
#define FG_KQ_CLAMP(l, lo, hi) FG_QV_MIN((hi), FG_QV_MAX((lo), (l)))
/* ggml's nearest_int(f) as a float, for |f| <= 4194303: adding 1.5 * 2^23 rounds to an
 * integer (half to even) and subtracting it back is exact. */
#define FG_KQ_ROUND(f) (((f) + 12582912.0f) - 12582912.0f)
/* All ones where !(|v| <= 4194303) (NaN included): where FG_KQ_ROUND would not be exact. */
#define FG_KQ_OUT(v) (~(FG_QV_ABS(v) <= lim))

/* Sub-block s (n elements each, at x + n * s) into lane s % 4 of group s / 4: 4x4 transposes. */
FG_KQ_INLINE void fg_kq_lanes_load(const float *x, int G, int n, fg_qvf xv[][FG_KQ_GROUPS]) {
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++)
    for (int i = 0; i < n; i += 4) {
      fg_qvf r[4];
      for (int k = 0; k < 4; k++) memcpy(&r[k], x + n * (FG_KQ_W * g + k) + i, sizeof r[k]);
#if defined(__SSE2__)
      const __m128 a = _mm_unpacklo_ps((__m128)r[0], (__m128)r[1]), b = _mm_unpacklo_ps((__m128)r[2], (__m128)r[3]);
      const __m128 c = _mm_unpackhi_ps((__m128)r[0], (__m128)r[1]), d = _mm_unpackhi_ps((__m128)r[2], (__m128)r[3]);
      xv[i][g] = (fg_qvf)_mm_movelh_ps(a, b);
      xv[i + 1][g] = (fg_qvf)_mm_movehl_ps(b, a);
      xv[i + 2][g] = (fg_qvf)_mm_movelh_ps(c, d);
      xv[i + 3][g] = (fg_qvf)_mm_movehl_ps(d, c);
#else
      for (int j = 0; j < 4; j++) xv[i + j][g] = (fg_qvf){r[0][j], r[1][j], r[2][j], r[3][j]};
#endif
    }
}

/* Per lane: the signed value of largest magnitude, the first on ties (ggml's strict > scan from
 * 0), and that magnitude. */
FG_KQ_INLINE void fg_kq_lanes_absmax(fg_qvf xv[][FG_KQ_GROUPS], int G, int n, fg_qvf *max, fg_qvf *amax) {
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
    fg_qvf m = {0}, a = {0};
    for (int i = 0; i < n; i++) {
      const fg_qvf v = xv[i][g], av = FG_QV_ABS(v);
      m = FG_QV_SEL(av > a, v, m);
      a = FG_QV_MAX(av, a);
    }
    max[g] = m;
    amax[g] = a;
  }
}

static inline void fg_kq_lanes_store(const fg_qvf *v, int G, float *out) {
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++)
    for (int k = 0; k < FG_KQ_W; k++) out[FG_KQ_W * g + k] = v[g][k];
}

/* make_qkx2_quants for 4G sub-blocks of n at once (weights wv, codes 0..nmax, nstep+1 trial
 * inverse scales after the first). FG_KQ_ROUND is exact while every iscale * (x - min) stays
 * within 2^22: each lane's extremes are checked before each trial (the product is monotonic
 * in x), and 0 is returned if one is not (a sub-block of subnormals whose iscale overflows,
 * say), for the caller to take the scalar fit. Else returns 1 with each sub-block's scale, -min
 * and, for fg_qkx2_codes, the inverse scale and min of its kept codes (0 and 0 for a flat
 * sub-block, whose codes are 0). */
FG_KQ_INLINE int fg_qkx2_lanes(int G, int n, int nmax, fg_qvf xv[][FG_KQ_GROUPS], fg_qvf wv[][FG_KQ_GROUPS],
                               float rmin, float rdelta, int nstep, int use_mad, float *scale_out,
                               float *the_min, float *code_iscale, float *code_min) {
  const fg_qvf zero = {0}, one = zero + 1.0f, vmax = zero + (float)nmax, lim = zero + 4194303.0f;
  fg_qvf lt[FG_KQ_ELEMS][FG_KQ_GROUPS];
  fg_qvf mn[FG_KQ_GROUPS], mx[FG_KQ_GROUPS], lo[FG_KQ_GROUPS], sum_w[FG_KQ_GROUPS], sum_x[FG_KQ_GROUPS];
  fg_qvf scale[FG_KQ_GROUPS], best[FG_KQ_GROUPS], bisc[FG_KQ_GROUPS], bmin[FG_KQ_GROUPS];
  fg_qvi flat[FG_KQ_GROUPS], bad = {0};
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
    fg_qvf a = xv[0][g], b = a, sw = wv[0][g], sx = sw * a;
    for (int i = 1; i < n; i++) {
      const fg_qvf v = xv[i][g];
      a = FG_QV_MIN(v, a);
      b = FG_QV_MAX(v, b);
      sw += wv[i][g];
      sx += wv[i][g] * v;
    }
    lo[g] = a;
    mn[g] = FG_QV_MIN(zero, a);
    mx[g] = b;
    sum_w[g] = sw;
    sum_x[g] = sx;
    flat[g] = mx[g] == mn[g];
    /* a flat lane is answered at the end; a range of 1 keeps its arithmetic finite meanwhile */
    const fg_qvf iscale = vmax / FG_QV_SEL(flat[g], one, mx[g] - mn[g]);
    bad |= FG_KQ_OUT(iscale * (mx[g] - mn[g])) | FG_KQ_OUT(iscale * (lo[g] - mn[g]));
    bisc[g] = iscale;
    bmin[g] = mn[g];
    scale[g] = 1.0f / iscale;
    best[g] = zero;
  }
  if (fg_qv_any(bad)) return 0;
  for (int i = 0; i < n; i++)
    FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
      const fg_qvf l = FG_KQ_CLAMP(FG_KQ_ROUND(bisc[g] * (xv[i][g] - mn[g])), zero, vmax);
      fg_qvf diff = scale[g] * l + mn[g] - xv[i][g];
      diff = use_mad ? FG_QV_ABS(diff) : diff * diff;
      best[g] += wv[i][g] * diff;
    }
  for (int is = 0; is <= nstep; is++) {
    const float num = rmin + rdelta * (float)is + (float)nmax;
    fg_qvf isc[FG_KQ_GROUPS], sum_l[FG_KQ_GROUPS], sum_l2[FG_KQ_GROUPS], sum_xl[FG_KQ_GROUPS];
    fg_qvf this_scale[FG_KQ_GROUPS], this_min[FG_KQ_GROUPS], cur[FG_KQ_GROUPS];
    fg_qvi take[FG_KQ_GROUPS];
    FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
      isc[g] = num / FG_QV_SEL(flat[g], one, mx[g] - mn[g]);
      bad |= ~flat[g] & (FG_KQ_OUT(isc[g] * (mx[g] - mn[g])) | FG_KQ_OUT(isc[g] * (lo[g] - mn[g])));
      sum_l[g] = sum_l2[g] = sum_xl[g] = cur[g] = zero;
    }
    if (fg_qv_any(bad)) return 0;
    for (int i = 0; i < n; i++)
      FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
        const fg_qvf l = FG_KQ_CLAMP(FG_KQ_ROUND(isc[g] * (xv[i][g] - mn[g])), zero, vmax);
        const fg_qvf wl = wv[i][g] * l;
        lt[i][g] = l;
        sum_l[g] += wl;
        sum_l2[g] += wl * l;
        sum_xl[g] += wl * xv[i][g];
      }
    FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
      const fg_qvf D = sum_w[g] * sum_l2[g] - sum_l[g] * sum_l[g];
      const fg_qvf sc = (sum_w[g] * sum_xl[g] - sum_x[g] * sum_l[g]) / D;
      const fg_qvf m = (sum_l2[g] * sum_x[g] - sum_l[g] * sum_xl[g]) / D;
      const fg_qvi pos = m > zero;
      this_min[g] = FG_QV_SEL(pos, zero, m);
      this_scale[g] = FG_QV_SEL(pos, sum_xl[g] / sum_l2[g], sc);
      take[g] = ~flat[g] & (D > zero);
    }
    for (int i = 0; i < n; i++)
      FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
        fg_qvf diff = this_scale[g] * lt[i][g] + this_min[g] - xv[i][g];
        diff = use_mad ? FG_QV_ABS(diff) : diff * diff;
        cur[g] += wv[i][g] * diff;
      }
    FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
      const fg_qvi t = take[g] & (cur[g] < best[g]);
      best[g] = FG_QV_SEL(t, cur[g], best[g]);
      scale[g] = FG_QV_SEL(t, this_scale[g], scale[g]);
      bisc[g] = FG_QV_SEL(t, isc[g], bisc[g]);
      bmin[g] = FG_QV_SEL(t, mn[g], bmin[g]);
      mn[g] = FG_QV_SEL(t, this_min[g], mn[g]);
    }
  }
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
    scale[g] = FG_QV_SEL(flat[g], zero, scale[g]);
    mn[g] = -mn[g];
    bisc[g] = FG_QV_SEL(flat[g], zero, bisc[g]);
    bmin[g] = FG_QV_SEL(flat[g], zero, bmin[g]);
  }
  fg_kq_lanes_store(scale, G, scale_out);
  fg_kq_lanes_store(mn, G, the_min);
  fg_kq_lanes_store(bisc, G, code_iscale);
  fg_kq_lanes_store(bmin, G, code_min);
  return 1;
}

/* The codes make_qkx2_quants keeps for one sub-block, from fg_qkx2_lanes' inverse scale and
 * min; only needed where the stored scale comes out 0, since every other sub-block is
 * re-quantized (ggml keeps the fit's codes there). */
static void fg_qkx2_codes(const float *x, int n, int nmax, float iscale, float min, uint8_t *L) {
  for (int i = 0; i < n; i++) L[i] = (uint8_t)fg_clampi(fg_nearest_int(iscale * (x[i] - min)), 0, nmax);
}

/* make_qx_quants (rmse_type 1: weights x², no importance matrix) for 16 sub-blocks of 16 at
 * once, as Q6_K uses it (codes -nmax..nmax-1): the first inverse scale -nmax/max and 18 more
 * around it. |iscale * x| stays within nmax + 1, so FG_KQ_ROUND is exact; a lane below
 * GROUP_MAX_EPS computes with max = 1 and is answered 0 at the end. Fills each sub-block's
 * scale and the inverse scale of its kept codes (0 for an all-zero sub-block) for
 * fg_qx_codes. */
FG_KQ_INLINE void fg_qx_lanes(int nmax, fg_qvf xv[][FG_KQ_GROUPS], float *scale_out, float *code_iscale) {
  enum { G = 4, N = 16 };
  const fg_qvf zero = {0}, one = zero + 1.0f, vlo = zero - (float)nmax, vhi = zero + (float)(nmax - 1);
  fg_qvf max[G], amax[G], w[N][G], wx[N][G], scale[G], best[G], bisc[G];
  fg_qvi small[G];
  fg_kq_lanes_absmax(xv, G, N, max, amax);
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
    scale[g] = best[g] = bisc[g] = zero; /* set by the first fit; for the compiler's sake */
    small[g] = amax[g] < FG_GROUP_MAX_EPS;
    max[g] = FG_QV_SEL(small[g], one, max[g]);
    for (int i = 0; i < N; i++) {
      w[i][g] = xv[i][g] * xv[i][g];
      wx[i][g] = w[i][g] * xv[i][g];
    }
  }
  /* is = -10 stands for ggml's first fit, at -nmax/max, which is taken as it is */
  for (int is = -10; is <= 9; is++) {
    if (is == 0) continue;
    const float num = is == -10 ? (float)-nmax : -((float)nmax + 0.1f * (float)is);
    fg_qvf isc[G], sumlx[G], suml2[G];
    FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
      isc[g] = num / max[g];
      sumlx[g] = suml2[g] = zero;
    }
    for (int i = 0; i < N; i++)
      FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
        const fg_qvf l = FG_KQ_CLAMP(FG_KQ_ROUND(isc[g] * xv[i][g]), vlo, vhi);
        sumlx[g] += wx[i][g] * l;
        suml2[g] += w[i][g] * l * l;
      }
    FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
      if (is == -10) {
        scale[g] = FG_QV_SEL(suml2[g] != zero, sumlx[g] / suml2[g], zero);
        best[g] = scale[g] * sumlx[g];
        bisc[g] = isc[g];
      } else {
        const fg_qvi t = (suml2[g] > zero) & (sumlx[g] * sumlx[g] > best[g] * suml2[g]);
        const fg_qvf sc = sumlx[g] / suml2[g];
        scale[g] = FG_QV_SEL(t, sc, scale[g]);
        best[g] = FG_QV_SEL(t, sc * sumlx[g], best[g]);
        bisc[g] = FG_QV_SEL(t, isc[g], bisc[g]);
      }
    }
  }
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
    scale[g] = FG_QV_SEL(small[g], zero, scale[g]);
    bisc[g] = FG_QV_SEL(small[g], zero, bisc[g]);
  }
  fg_kq_lanes_store(scale, G, scale_out);
  fg_kq_lanes_store(bisc, G, code_iscale);
}

/* The codes make_qx_quants keeps for one sub-block (stored +nmax; 0 for an all-zero one, whose
 * inverse scale fg_qx_lanes gives as 0), for a sub-block whose stored scale comes out 0. */
static void fg_qx_codes(const float *x, int n, int nmax, float iscale, int8_t *L) {
  for (int i = 0; i < n; i++)
    L[i] = iscale == 0.0f ? 0 : (int8_t)(nmax + fg_clampi(fg_nearest_int(iscale * x[i]), -nmax, nmax - 1));
}

/* make_q3_quants (with its rmse passes) for 16 sub-blocks of 16 at once: initial codes from
 * -nmax/max, then up to 5 passes of coordinate descent on the x²-weighted least squares. Each
 * element's step depends on the one before in its sub-block, so lanes run the elements in
 * order. A pass that changes nothing leaves a lane as it was, so running a converged lane
 * through further passes (until no lane changes) gives ggml's early stop. x * sl2 / slx has
 * no useful bound, so the new code is rounded with fg_nearest_int's own bit trick (its values
 * for out-of-range and non-finite quotients). Fills the scales and lt, the codes (-nmax for
 * every element of an all-zero sub-block, so that the stored code is 0). */
FG_KQ_INLINE void fg_q3_lanes(int nmax, fg_qvf xv[][FG_KQ_GROUPS], fg_qvf lt[][FG_KQ_GROUPS], float *scale_out) {
  enum { G = 4, N = 16 };
  const fg_qvf zero = {0}, one = zero + 1.0f, vlo = zero - (float)nmax, vhi = zero + (float)(nmax - 1);
  fg_qvf max[G], amax[G], w[N][G], wx[N][G], sumlx[G], suml2[G];
  fg_qvi small[G];
  fg_kq_lanes_absmax(xv, G, N, max, amax);
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
    small[g] = amax[g] < FG_GROUP_MAX_EPS;
    const fg_qvf isc = (float)-nmax / FG_QV_SEL(small[g], one, max[g]);
    sumlx[g] = suml2[g] = zero;
    for (int i = 0; i < N; i++) {
      const fg_qvf l = FG_KQ_CLAMP(FG_KQ_ROUND(isc * xv[i][g]), vlo, vhi);
      lt[i][g] = l;
      w[i][g] = xv[i][g] * xv[i][g];
      wx[i][g] = w[i][g] * xv[i][g];
      sumlx[g] += wx[i][g] * l;
      suml2[g] += w[i][g] * l * l;
    }
  }
  /* a group (4 lanes) whose pass changed nothing is done: it would not change again */
  int live[G];
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) live[g] = 1;
  for (int itry = 0; itry < 5; itry++) {
    int any = 0;
    FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
      if (!live[g]) continue;
      fg_qvi changed = {0};
      for (int i = 0; i < N; i++) {
        const fg_qvf x = xv[i][g], l = lt[i][g];
        fg_qvf slx = sumlx[g] - wx[i][g] * l;
        fg_qvf sl2 = suml2[g] - w[i][g] * l * l;
        const fg_qvi pos = slx > zero;
        const fg_qvi nl = ((fg_qvi)(x * sl2 / slx + 12582912.0f) & 0x007fffff) - 0x00400000;
        const fg_qvf new_l = FG_KQ_CLAMP(__builtin_convertvector(nl, fg_qvf), vlo, vhi);
        /* most steps change nothing (mostly new_l == l): branches rather than selects let the
         * next element start before this one's test is known */
        const fg_qvi cand = pos & (new_l != l);
        if (!fg_qv_any(cand)) continue;
        slx += wx[i][g] * new_l;
        sl2 += w[i][g] * new_l * new_l;
        const fg_qvi t = cand & (sl2 > zero) & (slx * slx * suml2[g] > sumlx[g] * sumlx[g] * sl2);
        if (fg_qv_any(t)) {
          lt[i][g] = FG_QV_SEL(t, new_l, l);
          sumlx[g] = FG_QV_SEL(t, slx, sumlx[g]);
          suml2[g] = FG_QV_SEL(t, sl2, suml2[g]);
          changed |= t;
        }
      }
      live[g] = fg_qv_any(changed);
      any |= live[g];
    }
    if (!any) break;
  }
  FG_KQ_GROUPS_LOOP for (int g = 0; g < G; g++) {
    for (int i = 0; i < N; i++) lt[i][g] = FG_QV_SEL(small[g], vlo, lt[i][g]);
    sumlx[g] = FG_QV_SEL(small[g], zero, sumlx[g] / suml2[g]);
  }
  fg_kq_lanes_store(sumlx, G, scale_out);
}

void fg_qenc_q2_K(const float *restrict x, uint8_t *restrict y) {
  uint8_t L[256], *scales = y, *qs = y + 16;
  float mins[16], sc[16], code_iscale[16], code_min[16];
  float max_scale = 0, max_min = 0;
  fg_qvf xv[16][FG_KQ_GROUPS], wv[16][FG_KQ_GROUPS];
  fg_kq_lanes_load(x, 4, 16, xv);
  for (int i = 0; i < 16; i++)
    for (int g = 0; g < 4; g++) wv[i][g] = FG_QV_ABS(xv[i][g]);
  const int lanes = fg_qkx2_lanes(4, 16, 3, xv, wv, -0.5f, 0.1f, 15, 1, sc, mins, code_iscale, code_min);
  if (!lanes) {
    uint8_t Laux[16];
    float w[16];
    for (int j = 0; j < 16; j++) {
      for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
      sc[j] = fg_make_qkx2_quants(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, 1);
    }
  }
  for (int j = 0; j < 16; j++) {
    if (sc[j] > max_scale) max_scale = sc[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  uint16_t d16 = 0, dmin16 = 0;
  if (max_scale > 0) {
    const float iscale = 15.f / max_scale;
    for (int j = 0; j < 16; j++) scales[j] = (uint8_t)fg_nearest_int(iscale * sc[j]);
    d16 = fg_f32_to_f16(max_scale / 15.f);
  } else {
    for (int j = 0; j < 16; j++) scales[j] = 0;
    d16 = fg_f32_to_f16(0.f);
  }
  if (max_min > 0) {
    const float iscale = 15.f / max_min;
    for (int j = 0; j < 16; j++) scales[j] |= (uint8_t)((uint32_t)fg_nearest_int(iscale * mins[j]) << 4); /* low byte, as ggml */
    dmin16 = fg_f32_to_f16(max_min / 15.f);
  } else {
    dmin16 = fg_f32_to_f16(0.f);
  }
  fg_bytes_st_le16(y + 80, d16);
  fg_bytes_st_le16(y + 82, dmin16);
  for (int j = 0; j < 16; j++) {
    const float d = fg_f16_to_f32(d16) * (scales[j] & 0xF);
    if (d == 0.0f) { /* keep the fit's codes, as ggml does */
      if (lanes) fg_qkx2_codes(x + 16 * j, 16, 3, code_iscale[j], code_min[j], L + 16 * j);
      continue;
    }
    fg_kq_requant_asym(x + 16 * j, 16, d, fg_f16_to_f32(dmin16) * (scales[j] >> 4), 3, L + 16 * j);
  }
  fg_kq_pack_2bit(L, qs);
}

void fg_qenc_q3_K(const float *restrict x, uint8_t *restrict y) {
  int8_t L[256];
  float sc[16];
  uint8_t *hmask = y, *qs = y + 32, *scales = y + 96;
  float max_scale = 0, amax = 0;
  fg_qvf xv[16][FG_KQ_GROUPS], lt[16][FG_KQ_GROUPS];
  fg_kq_lanes_load(x, 4, 16, xv);
  fg_q3_lanes(4, xv, lt, sc);
  for (int j = 0; j < 16; j++) {
    float s = fabsf(sc[j]);
    if (s > amax) {
      amax = s;
      max_scale = sc[j];
    }
  }
  uint16_t d16;
  if (max_scale != 0.0f) {
    const float iscale = -32.f / max_scale;
    int8_t ls[16];
    for (int j = 0; j < 16; j++) ls[j] = (int8_t)(fg_clampi((int8_t)fg_nearest_int(iscale * sc[j]), -32, 31) + 32);
    fg_kq_pack_q3_scales(ls, scales);
    d16 = fg_f32_to_f16(1 / iscale);
  } else {
    memset(scales, 0, 12);
    d16 = fg_f32_to_f16(0.f);
  }
  fg_bytes_st_le16(y + 108, d16);
  for (int j = 0; j < 16; j++) {
    const float d = fg_f16_to_f32(d16) * fg_q3_K_scale(scales, j);
    if (d == 0.0f) { /* the fit's codes */
      for (int ii = 0; ii < 16; ii++) L[16 * j + ii] = (int8_t)(lt[ii][j / FG_KQ_W][j % FG_KQ_W] + 4);
      continue;
    }
    fg_kq_requant_sym(x + 16 * j, 16, d, 4, L + 16 * j);
  }
  uint8_t Lu[256];
  fg_kq_q3_split(L, hmask, Lu);
  fg_kq_pack_2bit(Lu, qs);
}

/* Q4_K / Q5_K share the fit and the 12-byte scale/min packing; they differ in nmax, the
 * search grid and the code packing. */
static void fg_qenc_q45_K(const float *restrict x, uint8_t *restrict y, int nmax, float rmin, int nstep,
                          uint8_t *restrict L) {
  uint8_t *scales = y + 4;
  float mins[8], sc[8], av_x[8], code_iscale[8], code_min[8];
  float max_scale = 0, max_min = 0;
  fg_qvf xv[32][FG_KQ_GROUPS], wv[32][FG_KQ_GROUPS];
  fg_kq_lanes_load(x, 2, 32, xv);
  for (int g = 0; g < 2; g++) {
    fg_qvf sum_x2 = {0};
    for (int i = 0; i < 32; i++) sum_x2 += xv[i][g] * xv[i][g];
    for (int k = 0; k < FG_KQ_W; k++) av_x[FG_KQ_W * g + k] = sqrtf(sum_x2[k] / 32);
  }
  for (int i = 0; i < 32; i++)
    for (int j = 0; j < 8; j++) wv[i][j / FG_KQ_W][j % FG_KQ_W] = av_x[j] + fabsf(x[32 * j + i]);
  const int lanes = fg_qkx2_lanes(2, 32, nmax, xv, wv, rmin, 0.1f, nstep, 0, sc, mins, code_iscale, code_min);
  if (!lanes) {
    uint8_t Laux[32];
    float w[32];
    for (int j = 0; j < 8; j++) {
      for (int l = 0; l < 32; l++) w[l] = wv[l][j / FG_KQ_W][j % FG_KQ_W];
      sc[j] = fg_make_qkx2_quants(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, 0);
    }
  }
  for (int j = 0; j < 8; j++) {
    if (sc[j] > max_scale) max_scale = sc[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; j++) {
    ls[j] = (uint8_t)fg_nearest_int(inv_scale * sc[j]);
    lm[j] = (uint8_t)fg_nearest_int(inv_min * mins[j]);
    ls[j] = ls[j] < 63 ? ls[j] : 63;
    lm[j] = lm[j] < 63 ? lm[j] : 63;
  }
  fg_kq_pack_scale_min(ls, lm, scales);
  const uint16_t d16 = fg_f32_to_f16(max_scale / 63.f), dmin16 = fg_f32_to_f16(max_min / 63.f);
  fg_bytes_st_le16(y, d16);
  fg_bytes_st_le16(y + 2, dmin16);
  for (int j = 0; j < 8; j++) {
    int sc6, m6;
    fg_k4_scale_min(scales, j, &sc6, &m6);
    const float d = fg_f16_to_f32(d16) * sc6;
    if (d == 0.0f) { /* the fit's codes */
      if (lanes) fg_qkx2_codes(x + 32 * j, 32, nmax, code_iscale[j], code_min[j], L + 32 * j);
      continue;
    }
    fg_kq_requant_asym(x + 32 * j, 32, d, fg_f16_to_f32(dmin16) * m6, nmax, L + 32 * j);
  }
}

void fg_qenc_q4_K(const float *restrict x, uint8_t *restrict y) {
  uint8_t L[256];
  fg_qenc_q45_K(x, y, 15, -1.f, 20, L);
  fg_kq_pack_q4(L, y + 16);
}

void fg_qenc_q5_K(const float *restrict x, uint8_t *restrict y) {
  uint8_t L[256];
  fg_qenc_q45_K(x, y, 31, -0.5f, 15, L);
  fg_kq_pack_q5(L, y + 16, y + 48);
}

void fg_qenc_q6_K(const float *restrict x, uint8_t *restrict y) {
  int8_t L[256];
  float sc[16], code_iscale[16];
  const int8_t *scales = (int8_t *)(y + 192);
  float max_scale = 0, max_abs_scale = 0;
  fg_qvf xv[16][FG_KQ_GROUPS];
  fg_kq_lanes_load(x, 4, 16, xv);
  fg_qx_lanes(32, xv, sc, code_iscale);
  for (int ib = 0; ib < 16; ib++) {
    const float a = fabsf(sc[ib]);
    if (a > max_abs_scale) {
      max_abs_scale = a;
      max_scale = sc[ib];
    }
  }
  if (max_abs_scale < FG_GROUP_MAX_EPS) {
    memset(y, 0, 210);
    return;
  }
  const uint16_t d16 = fg_kq_q6_scales(sc, max_scale, y);
  for (int j = 0; j < 16; j++) {
    const float d = fg_f16_to_f32(d16) * scales[j];
    if (d == 0.0f) { /* the fit's codes */
      fg_qx_codes(x + 16 * j, 16, 32, code_iscale[j], L + 16 * j);
      continue;
    }
    fg_kq_requant_sym(x + 16 * j, 16, d, 32, L + 16 * j);
  }
  fg_kq_pack_q6(L, y, y + 128);
}

/* Q8_K: d = 1/iscale stored as f32; bsums are the sums of each 16 codes. ggml leaves bsums
 * unwritten for an all-zero block; here they are zeroed, so the bytes are defined. */
void fg_qenc_q8_K(const float *restrict x, uint8_t *restrict y) {
  const float max = fg_signed_absmax(x, 256);
  if (max == 0.0f) {
    memset(y, 0, 292);
    return;
  }
  const float iscale = -127.f / max;
  int8_t *qs = (int8_t *)(y + 4);
  for (int j = 0; j < 256; j++) {
    int v = fg_nearest_int(iscale * x[j]);
    qs[j] = (int8_t)(v < 127 ? v : 127);
  }
  for (int j = 0; j < 16; j++) {
    int sum = 0;
    for (int ii = 0; ii < 16; ii++) sum += qs[16 * j + ii];
    fg_bytes_st_le16(y + 260 + 2 * j, (uint16_t)(int16_t)sum);
  }
  fg_bytes_st_le32(y, fg_f32_bits(1 / iscale));
}
