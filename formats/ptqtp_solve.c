/* The PTQTP group solver (forgia/ptqtp.h): the free fit (ridge scales + exhaustive trit
 * search) and the tied fit (uniform 3^K-level quantizer). Every operation and its order
 * follow Fucina's src/ptqtp.zig, so the trits and scales are Fucina's bit for bit: the
 * regression is f64 over an integer Gram matrix, the search is f32, and f32 options widen
 * to f64 where the reference compares them with f64 values. */
#include <math.h>
#include <string.h>

#include "formats/ptqtp_internal.h"

/* Candidate tuples in the reference's pinned order: zero first, then by support size with
 * later (finer) planes first, lexicographic within a size. Ties keep the earlier tuple, so
 * an exact tie prefers the sparser one, and the order breaks the symmetric sign(w) start. */
static const int8_t fg_ptqtp_k1[3][3] = {{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}};
static const int8_t fg_ptqtp_k2[9][3] = {
  {0, 0, 0}, {0, -1, 0}, {0, 1, 0}, {-1, 0, 0}, {1, 0, 0}, {-1, -1, 0}, {-1, 1, 0}, {1, -1, 0}, {1, 1, 0},
};
static const int8_t fg_ptqtp_k3[27][3] = {
  {0, 0, 0},    {0, 0, -1},   {0, 0, 1},   {0, -1, 0},  {0, 1, 0},   {-1, 0, 0},   {1, 0, 0},
  {0, -1, -1},  {0, -1, 1},   {0, 1, -1},  {0, 1, 1},   {-1, 0, -1}, {-1, 0, 1},   {1, 0, -1},
  {1, 0, 1},    {-1, -1, 0},  {-1, 1, 0},  {1, -1, 0},  {1, 1, 0},   {-1, -1, -1}, {-1, -1, 1},
  {-1, 1, -1},  {-1, 1, 1},   {1, -1, -1}, {1, -1, 1},  {1, 1, -1},  {1, 1, 1},
};

/* Four elements at a time in GCC/Clang vector types (element-wise IEEE operations, so
 * each lane computes exactly what the scalar code does): per element the candidates are
 * compared in the pinned order with strictly-less, as a per-element scan does. A
 * non-finite element compares false everywhere and keeps candidate 0, the zero tuple. */
typedef float fg_v4f __attribute__((vector_size(16)));
typedef int32_t fg_v4i __attribute__((vector_size(16)));

void fg_ptqtp_search(int k, const float *w, size_t n, int8_t *const t[3], const float alpha[3]) {
  const int8_t(*cand)[3] = k == 1 ? fg_ptqtp_k1 : k == 2 ? fg_ptqtp_k2 : fg_ptqtp_k3;
  const int nc = k == 1 ? 3 : k == 2 ? 9 : 27;
  float vals[27];
  for (int i = 0; i < nc; i++) {
    float v = alpha[0] * (float)cand[i][0];
    if (k >= 2) v += alpha[1] * (float)cand[i][1];
    if (k == 3) v += alpha[2] * (float)cand[i][2];
    vals[i] = v;
  }
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    fg_v4f x;
    memcpy(&x, w + j, sizeof x);
    fg_v4f d = x - vals[0], best_err = d * d;
    fg_v4i best = {0, 0, 0, 0};
    for (int i = 1; i < nc; i++) {
      d = x - vals[i];
      const fg_v4f e = d * d;
      const fg_v4i lt = e < best_err; /* all ones where strictly better */
      best_err = (fg_v4f)(((fg_v4i)e & lt) | ((fg_v4i)best_err & ~lt));
      best = (i & lt) | (best & ~lt);
    }
    for (int l = 0; l < 4; l++) {
      const int c = isfinite(w[j + l]) ? best[l] : 0;
      for (int p = 0; p < k; p++) t[p][j + l] = cand[c][p];
    }
  }
  for (; j < n; j++) {
    const float x = w[j];
    int best = 0;
    float d = x - vals[0], best_err = d * d;
    for (int i = 1; i < nc; i++) {
      d = x - vals[i];
      const float e = d * d;
      if (e < best_err) {
        best = i;
        best_err = e;
      }
    }
    if (!isfinite(x)) best = 0;
    for (int p = 0; p < k; p++) t[p][j] = cand[best][p];
  }
}

/* The ridge solve of the scale step for K = 2 and K = 3 (K = 1 has no condition rule). */
static void ridge2(const int64_t sd[3], int64_t s12, const double b[3], const fg_ptqtp_options *o, float alpha[3]) {
  double lambda = (double)o->lambda0, a11, a22, det;
  const double a12 = (double)s12;
  for (;;) {
    a11 = (double)sd[0] + lambda;
    a22 = (double)sd[1] + lambda;
    det = a11 * a22 - a12 * a12; /* lambda > 0 keeps the matrix positive definite */
    const double frob2 = a11 * a11 + a22 * a22 + 2 * a12 * a12;
    const double kappa = frob2 / det;
    if (kappa <= (double)o->kappa_max || lambda >= (double)o->lambda_max) break;
    lambda = fmin(lambda * 10, (double)o->lambda_max);
  }
  alpha[0] = (float)((b[0] * a22 - b[1] * a12) / det);
  alpha[1] = (float)((b[1] * a11 - b[0] * a12) / det);
}

/* 3x3 symmetric solve through the adjugate; kappa_F = ||A||_F ||adj A||_F / det. */
static void ridge3(const int64_t sd[3], int64_t s12, int64_t s13, int64_t s23, const double b[3],
                   const fg_ptqtp_options *o, float alpha[3]) {
  double lambda = (double)o->lambda0;
  const double a12 = (double)s12, a13 = (double)s13, a23 = (double)s23;
  double adj11, adj12, adj13, adj22, adj23, adj33, det;
  for (;;) {
    const double a11 = (double)sd[0] + lambda, a22 = (double)sd[1] + lambda, a33 = (double)sd[2] + lambda;
    adj11 = a22 * a33 - a23 * a23;
    adj12 = -(a12 * a33 - a23 * a13);
    adj13 = a12 * a23 - a22 * a13;
    adj22 = a11 * a33 - a13 * a13;
    adj23 = -(a11 * a23 - a12 * a13);
    adj33 = a11 * a22 - a12 * a12;
    det = a11 * adj11 + a12 * adj12 + a13 * adj13;
    const double fa = sqrt(a11 * a11 + a22 * a22 + a33 * a33 + 2 * (a12 * a12 + a13 * a13 + a23 * a23));
    const double fadj = sqrt(adj11 * adj11 + adj22 * adj22 + adj33 * adj33 +
                             2 * (adj12 * adj12 + adj13 * adj13 + adj23 * adj23));
    const double kappa = fa * fadj / det;
    if (kappa <= (double)o->kappa_max || lambda >= (double)o->lambda_max) break;
    lambda = fmin(lambda * 10, (double)o->lambda_max);
  }
  alpha[0] = (float)((adj11 * b[0] + adj12 * b[1] + adj13 * b[2]) / det);
  alpha[1] = (float)((adj12 * b[0] + adj22 * b[1] + adj23 * b[2]) / det);
  alpha[2] = (float)((adj13 * b[0] + adj23 * b[1] + adj33 * b[2]) / det);
}

static fg_ptqtp_group solve_free(const float *w, size_t n, int8_t *const t[3], const fg_ptqtp_options *o) {
  const int k = o->planes;
  for (size_t j = 0; j < n; j++) {
    /* sign(w): NaN gets 0, +-Inf gets +-1 (and so enters the first Gram matrix) */
    const int8_t s = w[j] > 0 ? 1 : w[j] < 0 ? -1 : 0;
    for (int p = 0; p < k; p++) t[p][j] = s;
  }
  fg_ptqtp_group r = {{1, k >= 2 ? 1.0f : 0.0f, k == 3 ? 1.0f : 0.0f}, 0, false};
  while (r.iterations < o->max_iterations) {
    r.iterations++;
    const float prev[3] = {r.alpha[0], r.alpha[1], r.alpha[2]};
    int64_t sd[3] = {0, 0, 0}, s12 = 0, s13 = 0, s23 = 0;
    double b[3] = {0, 0, 0};
    for (size_t j = 0; j < n; j++) {
      const bool finite = isfinite(w[j]);
      const double x = finite ? (double)w[j] : 0.0;
      for (int p = 0; p < k; p++) {
        /* b[p] += +-w where the trit is +-1; for a 0 trit or a non-finite w the term is
         * +-0, which leaves b unchanged (b starts at +0 and never becomes -0), so the sum is
         * the reference's without its branches */
        const int8_t c = t[p][j];
        sd[p] += c != 0;
        b[p] += (double)c * x;
      }
      if (k >= 2) s12 += (int64_t)t[0][j] * t[1][j];
      if (k == 3) {
        s13 += (int64_t)t[0][j] * t[2][j];
        s23 += (int64_t)t[1][j] * t[2][j];
      }
    }
    if (k == 1)
      r.alpha[0] = (float)(b[0] / ((double)sd[0] + (double)o->lambda0));
    else if (k == 2)
      ridge2(sd, s12, b, o, r.alpha);
    else
      ridge3(sd, s12, s13, s23, b, o, r.alpha);

    fg_ptqtp_search(k, w, n, t, r.alpha);

    double move2 = 0;
    for (int p = 0; p < k; p++) {
      const double d = (double)r.alpha[p] - (double)prev[p];
      move2 += d * d;
    }
    if (sqrt(move2) < (double)o->epsilon) {
      r.converged = true;
      break;
    }
  }
  return r;
}

/* clamp(round(v), -l, l) as the reference computes it (std.math.clamp of @round: a NaN
 * becomes l, as fminf/fmaxf give). Clamping first gives the same value for any v (l is an
 * integer) and bounds v, so the rounding (half away from zero) is exact integer arithmetic
 * that vectorises: v - trunc(v) is exact below 2^23. */
static inline float clamp_round(float v, float l) {
  v = v < l ? v : l; /* NaN -> l */
  v = v > -l ? v : -l;
  const float tr = (float)(int32_t)v, fr = v - tr;
  return tr + (fr >= 0.5f ? 1.0f : fr <= -0.5f ? -1.0f : 0.0f);
}

static int32_t floor_div(int32_t a, int32_t b) {
  int32_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The tied fit: the step s of a uniform symmetric quantizer with L = (3^K - 1) / 2 levels a
 * side, swept over 65 divisors around absmax / L by exact-code squared error (first minimum
 * kept), codes then split into balanced trits, coarsest plane first. */
static fg_ptqtp_group solve_tied(const float *w, size_t n, int8_t *const t[3], int k) {
  const float levels = k == 2 ? 4.0f : 13.0f;
  float absmax = 0;
  for (size_t j = 0; j < n; j++)
    if (isfinite(w[j])) absmax = fmaxf(absmax, fabsf(w[j]));
  fg_ptqtp_group r = {{0, 0, 0}, 1, true};
  if (absmax == 0) {
    for (int p = 0; p < k; p++)
      for (size_t j = 0; j < n; j++) t[p][j] = 0;
    return r;
  }
  float best_s = absmax / levels;
  double best_err = INFINITY;
  for (int i = 0; i <= 64; i++) {
    const float divisor = (levels - 0.75f) + (float)i * (2.0f / 64.0f);
    const float s = absmax / divisor;
    float dd[FG_PTQTP_GROUP];
    double err = 0;
    for (size_t j0 = 0; j0 < n; j0 += FG_PTQTP_GROUP) {
      const size_t m = n - j0 < FG_PTQTP_GROUP ? n - j0 : FG_PTQTP_GROUP;
      for (size_t j = 0; j < m; j++) {
        const float x = w[j0 + j], d = x - s * clamp_round(x / s, levels);
        dd[j] = d;
      }
      /* the f64 sum in element order, non-finite elements left out */
      for (size_t j = 0; j < m; j++)
        if (isfinite(w[j0 + j])) err += (double)dd[j] * (double)dd[j];
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
    }
  }
  for (size_t j = 0; j < n; j++) {
    const float x = w[j];
    int32_t c = isfinite(x) ? (int32_t)clamp_round(x / best_s, levels) : 0;
    if (k == 3) {
      const int32_t t1 = floor_div(c + 4, 9); /* c in -13..13 -> -1..1 */
      t[0][j] = (int8_t)t1;
      c -= 9 * t1;
    }
    const int32_t tm = floor_div(c + 1, 3); /* c in -4..4 -> -1..1 */
    t[k - 2][j] = (int8_t)tm;
    t[k - 1][j] = (int8_t)(c - 3 * tm);
  }
  if (k == 2) {
    r.alpha[0] = 3 * best_s;
    r.alpha[1] = best_s;
  } else {
    r.alpha[0] = 9 * best_s;
    r.alpha[1] = 3 * best_s;
    r.alpha[2] = best_s;
  }
  return r;
}

fg_ptqtp_group fg_ptqtp_solve(const float *w, size_t n, int8_t *const t[3], const fg_ptqtp_options *o) {
  if (o->tie_scales) return solve_tied(w, n, t, o->planes);
  return solve_free(w, n, t, o);
}
