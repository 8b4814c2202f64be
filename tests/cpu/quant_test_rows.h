// Test rows for the quant codec tests (cpu round trips and interop parity): the value shapes
// that exercise the reference quantizers' corners.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/quant.h"
#include "testutil.h"

namespace fgq {

// Every type the codecs encode, in the priority order.
inline const std::vector<fg_dtype> &encodable_types() {
  static const std::vector<fg_dtype> v = {
      FG_F32,  FG_F16,  FG_BF16, FG_Q8_0,  FG_Q4_0,  FG_Q4_1,   FG_Q5_0,   FG_Q5_1,
      FG_Q8_1, FG_Q2_K, FG_Q3_K, FG_Q4_K,  FG_Q5_K,  FG_Q6_K,   FG_Q8_K,   FG_TQ1_0,
      FG_TQ2_0, FG_IQ4_NL, FG_IQ4_XS, FG_MXFP4, FG_NVFP4, FG_Q1_0, FG_Q2_0};
  return v;
}

struct RowKind {
  const char *name;
  std::vector<float> (*make)(size_t n, uint64_t seed);
};

inline std::vector<float> row_gaussian(size_t n, uint64_t seed) { return fgt::gaussian(n, seed, 1.0f); }
inline std::vector<float> row_uniform(size_t n, uint64_t seed) {
  std::vector<float> g = fgt::gaussian(n, seed ^ 0x5555, 1.0f), v(n);
  // uniform in [-1, 1) from the gaussian's CDF-free bits: fractional part of a scaled value
  for (size_t i = 0; i < n; i++) {
    float f = g[i] * 1000.0f;
    v[i] = 2.0f * (f - std::floor(f)) - 1.0f;
  }
  return v;
}
inline std::vector<float> row_zero(size_t n, uint64_t) { return std::vector<float>(n, 0.0f); }
inline std::vector<float> row_outlier(size_t n, uint64_t seed) {
  std::vector<float> v = fgt::gaussian(n, seed, 0.02f);
  v[(seed * 7919u) % n] = (seed & 1) ? 60000.0f : -1.0e6f;
  return v;
}
inline std::vector<float> row_tiny(size_t n, uint64_t seed) { return fgt::gaussian(n, seed, 1e-6f); }
inline std::vector<float> row_tinier(size_t n, uint64_t seed) { return fgt::gaussian(n, seed, 1e-20f); }
inline std::vector<float> row_constant(size_t n, uint64_t seed) {
  return std::vector<float>(n, (seed & 1) ? 0.37f : -2.5f);
}
inline std::vector<float> row_negative(size_t n, uint64_t seed) {
  std::vector<float> v = fgt::gaussian(n, seed, 3.0f);
  for (float &f : v) f = -std::fabs(f) - 0.001f;
  return v;
}
// Small integers and halves: products land exactly on rounding ties.
inline std::vector<float> row_steps(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = 0.5f * (float)((int)((i * 7 + seed) % 33) - 16);
  return v;
}
// Blocks where Q4_0's x*id + 8.5 truncates differently with and without FMA contraction
// (found by search with numpy): plain f32 gives code 13 for -1.6539872, fused gives 12.
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline std::vector<float> row_fma_tie(size_t n, uint64_t) {
  std::vector<float> v(n, bits_f32(0xbfd3b5dau));
  for (size_t i = 0; i < n; i += 32) v[i] = bits_f32(0x403c2fdfu);
  return v;
}
inline std::vector<float> row_large(size_t n, uint64_t seed) { return fgt::gaussian(n, seed, 1e4f); }

inline const std::vector<RowKind> &row_kinds() {
  static const std::vector<RowKind> v = {
      {"gaussian", row_gaussian}, {"uniform", row_uniform},   {"zero", row_zero},
      {"outlier", row_outlier},   {"tiny", row_tiny},         {"tinier", row_tinier},
      {"constant", row_constant}, {"negative", row_negative}, {"steps", row_steps},
      {"large", row_large},       {"fma_tie", row_fma_tie}};
  return v;
}

// Byte offsets, within a block, of the half-precision fields ggml's encoders store (scales,
// mins, Q8_1's sum); empty for the types that keep none. A block whose field holds Inf or
// NaN is one ggml wrote for a finite input that overflowed f16, which forgia refuses.
inline std::vector<size_t> half_fields(fg_dtype t) {
  switch (t) {
    case FG_Q4_0: case FG_Q5_0: case FG_Q8_0: case FG_IQ4_NL: case FG_IQ4_XS: case FG_Q1_0: case FG_Q2_0:
      return {0};
    case FG_Q4_1: case FG_Q5_1: case FG_Q8_1: case FG_Q4_K: case FG_Q5_K:
      return {0, 2};
    case FG_Q2_K: return {80, 82};
    case FG_Q3_K: return {108};
    case FG_Q6_K: return {208};
    case FG_TQ1_0: return {52};
    case FG_TQ2_0: return {64};
    default: return {};
  }
}

// Indices of the blocks of q (nblocks blocks of t) whose half fields are not finite.
inline std::vector<size_t> overflowed_blocks(fg_dtype t, const uint8_t *q, size_t nblocks) {
  std::vector<size_t> out;
  const size_t bb = fg_dtype_info(t)->block_bytes;
  for (size_t b = 0; b < nblocks; b++)
    for (size_t off : half_fields(t)) {
      const unsigned h = q[b * bb + off] | (q[b * bb + off + 1] << 8);
      if ((h & 0x7c00u) == 0x7c00u) {
        out.push_back(b);
        break;
      }
    }
  return out;
}

inline size_t row_bytes(fg_dtype t, int64_t n) {
  uint64_t b = 0;
  fg_dtype_nbytes(t, (uint64_t)n, &b);
  return (size_t)b;
}

}  // namespace fgq
