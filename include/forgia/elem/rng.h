/* Fucina's random streams as pure per-element functions (docs/design.md, Numerics contract,
 * rule 4).
 *
 * Every value is a function of (seed, counter): splitmix64 in counter form,
 * at(seed, i) = mix(seed + (i + 1) * G), which is the i-th output of the sequential generator
 * started at state seed. No generator state exists, so any chunking, thread count or device
 * gives the same values, and a checkpoint needs only the seed. The constants, the uniform
 * mapping, the dropout cutoff and the all-f32 fast gaussian are Fucina's checkpoint contract
 * (its src/rng.zig); the goldens in tests/cpu/test_rng.cpp pin them. Only correctly rounded
 * operations appear here (no libm): the scalar Box-Muller gaussian, which is defined on f64
 * libm log/cos/sin, is host code (include/forgia/rng.h; docs/design.md, Numerics contract,
 * rule 8). */
#ifndef FORGIA_ELEM_RNG_H
#define FORGIA_ELEM_RNG_H

#include <math.h>
#include <stdint.h>

#include "forgia/elem/hd.h"

#define FG_RNG_GAMMA 0x9E3779B97F4A7C15ull
/* Domain separation: a sub-stream seed is at(base ^ DOMAIN, counter). */
#define FG_RNG_DOMAIN_ES_SEEDS 0x65735f7365656473ull /* "es_seeds" */
#define FG_RNG_DOMAIN_ES_NOISE 0x65735f6e6f697365ull /* "es_noise" */
#define FG_RNG_DOMAIN_ES_TRITS 0x65735f7472697473ull /* "es_trits" */
#define FG_RNG_DOMAIN_DROPOUT_QWEN3 0x64726f7064726f70ull /* "dropdrop" */
#define FG_RNG_DOMAIN_DROPOUT_GEMMA4 0x67656d6d61346472ull /* "gemma4dr" */

static inline FG_HD uint64_t fg_rng_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline FG_HD uint64_t fg_rng_at(uint64_t seed, uint64_t i) { return fg_rng_mix(seed + (i + 1) * FG_RNG_GAMMA); }

/* f64(m) for m <= 2^53, exactly. On the host it is built from the two 32-bit halves with
 * the 2^52 bias trick (integer ops and exact f64 subtractions), which vectorises on CPUs
 * without a u64 -> f64 instruction (AVX2); an exact conversion has one result, so this is
 * the same value as (double)m. */
static inline FG_HD double fg_rng_u53_to_f64(uint64_t m) {
#if defined(__CUDA_ARCH__)
  return (double)m;
#else
  union { uint64_t u; double d; } hi, lo;
  hi.u = 0x4330000000000000ull | (m >> 32);
  lo.u = 0x4330000000000000ull | (m & 0xFFFFFFFFull);
  return (hi.d - 0x1p52) * 0x1p32 + (lo.d - 0x1p52);
#endif
}

/* The 53-bit uniforms: [0,1) and (0,1]. Exact in f64. */
static inline FG_HD double fg_rng_unit53(uint64_t x) { return fg_rng_u53_to_f64(x >> 11) * 0x1.0p-53; }
static inline FG_HD double fg_rng_unit53_open0(uint64_t x) { return fg_rng_u53_to_f64((x >> 11) + 1) * 0x1.0p-53; }

/* uniformFill element: v = f32(lo64 + span * u) in f64, then the largest f32 below hi when it
 * rounded up to hi. lo64 = f64(lo), span = f64(hi) - lo64 and below_hi are computed once on
 * the host (fg_rng_op_params, include/forgia/rng.h). */
typedef struct fg_rng_uniform_params {
  double lo64, span;
  float hi, below_hi;
} fg_rng_uniform_params;

static inline FG_HD float fg_rng_uniform_value(const fg_rng_uniform_params *p, uint64_t x) {
  float v = (float)(p->lo64 + p->span * fg_rng_unit53(x));
  return v >= p->hi ? p->below_hi : v;
}

/* Inverted dropout: element i is kept iff (at(seed, i) >> 11) < cutoff, with
 * cutoff = ceil((1 - p) * 2^53) computed on the host in f64. */
static inline FG_HD int fg_rng_keep(uint64_t x, uint64_t cutoff) { return (x >> 11) < cutoff; }

/* The fast gaussian's f32 transcendentals (Cephes logf and a quarter-turn sin/cos), written
 * with the constants' exact f32 bit patterns so that no compiler re-rounds a literal.
 * Fucina's branches and selects are done on the bits here: its e - 1 and m + m are exact
 * (an integer-valued e; m in [0.5, 1) doubled), a negation is a sign flip, and m < SQRTH
 * compares positive floats, so the values are the same, and a CPU compiler can vectorise
 * the loop (it will not if-convert floating-point operations that could trap). */
static inline FG_HD float fg_rng_ln_poly(float x) {
  const uint32_t bits = fg_f32_bits(x);
  const uint32_t mbits = (bits & 0x007FFFFFu) | 0x3F000000u; /* m in [0.5, 1) */
  const uint32_t low = mbits < 0x3F3504F3u;                  /* m < SQRTH: e - 1, m + m */
  const float e = (float)((int32_t)(bits >> 23) - 126 - (int32_t)low);
  const float m = fg_bits_f32(mbits + (low << 23));
  const float f = m - 1.0f;
  const float z = f * f;
  float p = fg_bits_f32(0x3D9021BBu); /* C8 */
  p = p * f + fg_bits_f32(0xBDEBD1B8u);
  p = p * f + fg_bits_f32(0x3DEF251Au);
  p = p * f + fg_bits_f32(0xBDFE5D4Fu);
  p = p * f + fg_bits_f32(0x3E11E9BFu);
  p = p * f + fg_bits_f32(0xBE2AAE50u);
  p = p * f + fg_bits_f32(0x3E4CCEACu);
  p = p * f + fg_bits_f32(0xBE7FFFFCu);
  p = p * f + fg_bits_f32(0x3EAAAAAAu); /* C0 */
  float y = (f * z) * p;
  y = y + e * fg_bits_f32(0xB95E8083u); /* LN2_LO */
  y = y - 0.5f * z;
  y = f + y;
  return y + e * fg_bits_f32(0x3F318000u); /* LN2_HI */
}

/* u in [0, 1), so t4 + 0.5 is in [0.5, 4.5], where truncation to an integer is Fucina's
 * floor (and, unlike floorf under -ftrapping-math, vectorises). */
static inline FG_HD void fg_rng_sincos_turn(float u, float *s, float *c) {
  const float t4 = u * 4.0f;
  const int32_t j = (int32_t)(t4 + 0.5f);
  const float jf = (float)j;
  const float y = t4 - jf;
  const float arg = y * fg_bits_f32(0x3FC90FDBu); /* PIO2 */
  const float z = arg * arg;
  float sp = fg_bits_f32(0xB94CA1F9u);        /* S2 */
  sp = sp * z + fg_bits_f32(0x3C08839Eu);     /* S1 */
  sp = sp * z + fg_bits_f32(0xBE2AAAA3u);     /* S0 */
  const float sin_arg = arg + (arg * z) * sp;
  float cp = fg_bits_f32(0x37CCF5CEu);        /* K2 */
  cp = cp * z + fg_bits_f32(0xBAB6061Au);     /* K1 */
  cp = cp * z + fg_bits_f32(0x3D2AAAA5u);     /* K0 */
  const float cos_arg = (1.0f - 0.5f * z) + (z * z) * cp;
  const uint32_t q = (uint32_t)j & 3u;
  const uint32_t sa = fg_f32_bits(sin_arg), ca = fg_f32_bits(cos_arg);
  const uint32_t swap = 0u - (q & 1u);
  const uint32_t sb = (sa & ~swap) | (ca & swap), cb = (ca & ~swap) | (sa & swap);
  *s = fg_bits_f32(sb ^ ((q & 2u) << 30));
  *c = fg_bits_f32(cb ^ (((q + 1u) & 2u) << 30));
}

/* gaussianFillAtFast, one Box-Muller pair: the values of counters p (cos half) and p + 1
 * (sin half) for an even p, before the scale. */
static inline FG_HD void fg_rng_gauss_fast_pair(uint64_t seed, uint64_t p, float *even, float *odd) {
  const uint64_t a = fg_rng_at(seed, p), b = fg_rng_at(seed, p + 1);
  const float ua = (float)fg_rng_unit53_open0(a);
  const float ub = (float)fg_rng_unit53(b);
  const float radius = sqrtf(-2.0f * fg_rng_ln_poly(ua));
  float s, c;
  fg_rng_sincos_turn(ub, &s, &c);
  *even = radius * c;
  *odd = radius * s;
}

/* Element j of gaussianFillAtFast(seed, ., scale). Computes its whole pair; fills that
 * write both halves use fg_rng_gauss_fast_pair directly. */
static inline FG_HD float fg_rng_gauss_fast_at(uint64_t seed, uint64_t j, float scale) {
  float e, o;
  fg_rng_gauss_fast_pair(seed, j & ~(uint64_t)1, &e, &o);
  return ((j & 1u) ? o : e) * scale;
}

#endif
