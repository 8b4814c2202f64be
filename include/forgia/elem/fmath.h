/* Transcendental functions that give the same bits on every backend.
 *
 * glibc's expf/logf/tanhf and CUDA's differ in the last place, so a kernel that calls them
 * gives different bits on the CPU and the GPU (docs/design.md, "Numerics contract"). These
 * are built from +, -, *, / and integer bit operations only, each rounded to its type (the
 * build forbids contraction into FMA on both sides), so they are deterministic across
 * devices. Accuracy: fg_exp_f32 within 2 ulp of exp, fg_log_f64 within 2 ulp of log (tests
 * check both against the C library over their ranges). */
#ifndef FORGIA_ELEM_FMATH_H
#define FORGIA_ELEM_FMATH_H

#include <stdint.h>

#include "forgia/elem/hd.h"

/* f64 bit casts, as hd.h's f32 ones. */
static inline FG_HD double fg_f64_from_bits(uint64_t u) {
  union { double d; uint64_t u; } v;
  v.u = u;
  return v.d;
}
static inline FG_HD uint64_t fg_f64_bits(double d) {
  union { double d; uint64_t u; } v;
  v.d = d;
  return v.u;
}

/* Round to the nearest integer, ties away from zero, for |x| < 2^22 (the range reduction
 * below only sees |x| < 200). Written out because rintf's mode handling is not an
 * elementary operation we want to trust on both sides. */
static inline FG_HD float fg_round_f32(float x) {
  /* +-0.5 with x's sign, by bits: no conditional, so loops over it vectorise. */
  const float h = fg_bits_f32((fg_f32_bits(x) & 0x80000000u) | 0x3f000000u);
  return (float)(int32_t)(x + h);
}

/* fg_exp_f32's range reduction and polynomial for a in [-103.98, 88.73]: e^a = p * 2^k,
 * p returned. Branch-free, so loops over it vectorise (cpu/cpu_softmax.c). */
static inline FG_HD float fg_exp_f32_reduce(float a, int32_t *k) {
  /* a = n ln2 + r, |r| <= ln2 / 2, with ln2 split so n * LN2_HI is exact (n < 2^8). */
  const float n = fg_round_f32(a * 1.44269502162933349609375f);
  const float r = (a - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
  /* e^r by its Taylor series to r^7 (|error| < 2^-26 on |r| <= 0.347), Horner form. */
  float p = 1.98412698e-4f;
  p = p * r + 1.38888889e-3f;
  p = p * r + 8.33333377e-3f;
  p = p * r + 4.16666679e-2f;
  p = p * r + 1.66666672e-1f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  *k = (int32_t)n;
  return p;
}

/* e^x in f32. NaN gives the canonical quiet NaN; x > 88.7228 gives +inf; x < -103.98 gives
 * +0; subnormal results are produced by a two-step scale. */
static inline FG_HD float fg_exp_f32(float x) {
  if (x != x) return fg_bits_f32(0x7fc00000u);
  if (x > 88.72283935546875f) return fg_bits_f32(0x7f800000u);
  if (x < -103.97207708f) return 0.0f;
  int32_t k = 0;
  const float p = fg_exp_f32_reduce(x, &k);
  if (k < -126) {
    /* Two steps so the intermediate stays normal: 2^(k + 64) then 2^-64. */
    const float s1 = fg_bits_f32((uint32_t)(k + 64 + 127) << 23);
    return (p * s1) * fg_bits_f32((uint32_t)(-64 + 127) << 23);
  }
  if (k > 127) {
    const float s1 = fg_bits_f32((uint32_t)(k - 1 + 127) << 23);
    return (p * s1) * 2.0f;
  }
  return p * fg_bits_f32((uint32_t)(k + 127) << 23);
}

/* log(x) in f64. x < 0 or NaN gives the canonical quiet NaN, 0 gives -inf, +inf gives +inf. */
static inline FG_HD double fg_log_f64(double x) {
  if (x != x || x < 0.0) return fg_f64_from_bits(0x7ff8000000000000ull);
  if (x == 0.0) return fg_f64_from_bits(0xfff0000000000000ull);
  if (x > 1.7976931348623157e308) return x;
  int e = 0;
  uint64_t u = fg_f64_bits(x);
  if ((u >> 52) == 0) { /* subnormal: scale into the normal range first */
    x = x * 18014398509481984.0; /* 2^54 */
    u = fg_f64_bits(x);
    e = -54;
  }
  e += (int)((u >> 52) & 0x7ff) - 1023;
  /* m in [1, 2); move it to [sqrt(1/2), sqrt(2)) so |s| below is <= 0.1716. */
  double m = fg_f64_from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) {
    m = m * 0.5;
    e += 1;
  }
  /* With f = m - 1 (exact) and s = f / (2 + f), log m = 2 atanh(s) = 2s + s r, r = 2 (s^2/3 +
   * s^4/5 + ... + s^22/23), and 2s = f - hfsq + s hfsq (hfsq = f^2 / 2), so
   * log m = f - (hfsq - s (hfsq + r)): f is exact and the rounded terms are small next to it,
   * which keeps the error under 1 ulp where e ln2 and log m nearly cancel (x just below
   * sqrt(1/2)); summing 2s + 2s (s^2 q) directly reached 2 ulp there. */
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double s2 = s * s;
  double q = 1.0 / 23.0;
  q = q * s2 + 1.0 / 21.0;
  q = q * s2 + 1.0 / 19.0;
  q = q * s2 + 1.0 / 17.0;
  q = q * s2 + 1.0 / 15.0;
  q = q * s2 + 1.0 / 13.0;
  q = q * s2 + 1.0 / 11.0;
  q = q * s2 + 1.0 / 9.0;
  q = q * s2 + 1.0 / 7.0;
  q = q * s2 + 1.0 / 5.0;
  q = q * s2 + 1.0 / 3.0;
  const double r = 2.0 * (s2 * q);
  const double hfsq = 0.5 * (f * f);
  /* e ln2 with ln2 split so e * LN2_HI is exact (|e| < 2^11); the low part joins the small terms. */
  const double de = (double)e;
  return de * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + r) + de * 1.90821492927058770002e-10)) - f);
}

/* silu(x) = x / (1 + e^-x), in f32. */
static inline FG_HD float fg_silu_f32(float x) { return x / (1.0f + fg_exp_f32(-x)); }

/* tanh(x) in f32 from e^(2x): 1 - 2 / (e^(2x) + 1), odd-symmetric; |x| < 2^-12 returns x. */
static inline FG_HD float fg_tanh_f32(float x) {
  const float a = x < 0.0f ? -x : x;
  if (a != a) return fg_bits_f32(0x7fc00000u);
  if (a < 2.44140625e-4f) return x;
  const float t = a > 9.0f ? 1.0f : 1.0f - 2.0f / (fg_exp_f32(2.0f * a) + 1.0f);
  return x < 0.0f ? -t : t;
}

/* The tanh form of GELU (PyTorch's approximate="tanh", Gemma's gelu_pytorch_tanh), in f32:
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static inline FG_HD float fg_gelu_tanh_f32(float x) {
  const float inner = 0.7978845608028654f * (x + 0.044715f * ((x * x) * x));
  return (0.5f * x) * (1.0f + fg_tanh_f32(inner));
}

#endif
