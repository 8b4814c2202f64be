/* Inputs of the weighted quantizer goldens (README.md here): the rows of
 * tests/data/golden/README.md and deterministic per-column weights. Plain C99, included by the
 * generator (built against ggml) and by tests/cpu/test_quant_weighted.cpp, so both make the
 * same floats. Every value is a single IEEE binary32 operation chain evaluated left to right. */
#ifndef FORGIA_TESTS_WEIGHTED_ROWS_H
#define FORGIA_TESTS_WEIGHTED_ROWS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct fgw_rng {
  uint64_t s;
} fgw_rng;

static inline uint64_t fgw_next(fgw_rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline int64_t fgw_u24(fgw_rng *r) { return (int64_t)(fgw_next(r) >> 40); }
static inline float fgw_G(fgw_rng *r) {
  int64_t a = fgw_u24(r);
  a += fgw_u24(r);
  a += fgw_u24(r);
  a += fgw_u24(r);
  return (float)(a - 33554432) * 0x1p-23f;
}
static inline float fgw_U(fgw_rng *r) { return (float)(fgw_u24(r) - 8388608) * 0x1p-23f; }
static inline float fgw_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint32_t fgw_f32u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float fgw_steps(uint64_t i, uint64_t seed) { return 0.5f * (float)((int)((i * 7 + seed) % 33) - 16); }

/* Row kinds 0..14 exactly as tests/data/golden/README.md defines them. */
static inline void fgw_row(uint32_t kind, uint64_t n, uint64_t seed, float *v) {
  fgw_rng r = {seed};
  for (uint64_t i = 0; i < n; i++) {
    float x = 0.0f;
    switch (kind) {
      case 0: x = fgw_G(&r); break;
      case 1: x = fgw_U(&r); break;
      case 2: x = 0.0f; break;
      case 3: x = fgw_G(&r) * 0.02f; break;
      case 4: x = fgw_G(&r) * 1e-6f; break;
      case 5: x = fgw_G(&r) * 1e-20f; break;
      case 6: x = (seed & 1) ? 0.37f : -2.5f; break;
      case 7: x = -fabsf(fgw_G(&r) * 3.0f) - 0.001f; break;
      case 8: x = fgw_steps(i, seed); break;
      case 9:
        x = fgw_steps(i, seed);
        if (x != 0.0f) x = fgw_bits(fgw_f32u(x) + (uint32_t)((int)(i % 3) - 1));
        break;
      case 10: x = fgw_G(&r) * 1e4f; break;
      case 11: x = fgw_G(&r) * ldexpf(1.0f, (int)((i / 16) % 13) - 6); break;
      case 12: {
        const uint64_t m = fgw_next(&r);
        const float g = fgw_G(&r);
        x = (m & 7) == 0 ? g : 0.0f;
      } break;
      case 13: x = fgw_bits(i % 32 == 0 ? 0x403c2fdfu : 0xbfd3b5dau); break;
      case 14: {
        const float g = fgw_G(&r);
        x = ((i / 32) % 2 == 0) ? g : 0.0f;
      } break;
      default: break;
    }
    v[i] = x;
  }
  if (kind == 3) v[(seed * 7919u) % n] = (seed & 1) ? 60000.0f : -1.0e6f;
}

/* Weight kinds: what an importance matrix can hold (mean squares: non-negative, spread over
 * orders of magnitude, zero where an input never fired).
 *   0 ones      1.0
 *   1 uniform   (u24 + 1) * 2^-24, in (0, 1]
 *   2 squares   G()^2 (a mean square of activations; some near zero)
 *   3 spiky     G()^2 * 1e-3, and every 7th column (i % 7 == 3) 1000 + U()*U() * 1e4
 *   4 halfzero  0 in columns where (i / 16) % 2 == 1, else (u24 + 1) * 2^-24
 *   5 zero      0.0 everywhere (the fits' degenerate sums) */
#define FGW_WKINDS 6
static inline void fgw_weights(uint32_t kind, uint64_t n, uint64_t seed, float *w) {
  fgw_rng r = {seed};
  for (uint64_t i = 0; i < n; i++) {
    float x = 0.0f;
    switch (kind) {
      case 0: x = 1.0f; break;
      case 1: x = (float)(fgw_u24(&r) + 1) * 0x1p-24f; break;
      case 2: {
        const float g = fgw_G(&r);
        x = g * g;
      } break;
      case 3: {
        const float g = fgw_G(&r);
        if (i % 7 == 3) {
          const float u = fgw_U(&r);
          x = 1000.0f + u * u * 1e4f;
        } else {
          x = g * g * 1e-3f;
        }
      } break;
      case 4: {
        const float u = (float)(fgw_u24(&r) + 1) * 0x1p-24f;
        x = ((i / 16) % 2 == 1) ? 0.0f : u;
      } break;
      default: x = 0.0f; break;
    }
    w[i] = x;
  }
}

/* The rows of the golden files, in file order: each of these (kind, n, seed) with every
 * weight kind 0..5, weight seed = seed * 1000 + weight kind. */
static const uint32_t fgw_row_table[][3] = {
    {0, 256, 1},   {0, 1024, 2},  {1, 512, 3},   {2, 256, 4},   {3, 256, 5},   {3, 256, 6},
    {4, 256, 7},   {5, 256, 8},   {6, 256, 9},   {6, 256, 10},  {7, 256, 11},  {8, 256, 12},
    {9, 256, 13},  {10, 256, 14}, {11, 512, 15}, {12, 256, 16}, {13, 256, 17}, {14, 256, 18},
};
#define FGW_NROWS_TABLE (sizeof fgw_row_table / sizeof fgw_row_table[0])

/* FNV-1a 64 over bytes. */
static inline uint64_t fgw_fnv1a(const void *p, size_t n) {
  const uint8_t *b = (const uint8_t *)p;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

#endif
