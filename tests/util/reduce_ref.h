// The reference for the reduction tests: Fucina's sumSquares grid written as plain loops from
// its src/optim.zig (sumSquares, sumSquaresChunk; docs/design.md, Numerics contract, rule 3),
// with the map and the combine of each op swapped in. Independent of elem/reduce.h on
// purpose: it uses Fucina's own shape (four accumulators of four lanes), not the library's
// 16 lanes, and its own f16 widening.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "forgia/forgia.h"

namespace fgt {

inline double ref_nan() {
  const uint64_t u = 0x7ff8000000000000ull;
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

inline uint64_t dbits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

inline double ref_map(fg_reduce_op op, float x) {
  const double v = x;
  return op == FG_REDUCE_SUMSQ ? v * v : op == FG_REDUCE_MAXABS ? std::fabs(v) : v;
}

inline double ref_join(fg_reduce_op op, double a, double b) {
  if (op != FG_REDUCE_MAXABS) return a + b;
  if (std::isnan(a) || std::isnan(b)) return ref_nan();
  return a > b ? a : b;
}

// sumSquaresChunk: A[0..3] are Fucina's acc0..acc3, each a 4-lane f64 vector.
inline double ref_chunk(fg_reduce_op op, const float *v, size_t len) {
  double A[4][4] = {};
  size_t i = 0;
  for (; i + 16 <= len; i += 16)
    for (int a = 0; a < 4; a++)
      for (int l = 0; l < 4; l++) A[a][l] = ref_join(op, A[a][l], ref_map(op, v[i + 4 * a + l]));
  for (; i + 4 <= len; i += 4)
    for (int l = 0; l < 4; l++) A[0][l] = ref_join(op, A[0][l], ref_map(op, v[i + l]));
  double acc[4];
  for (int l = 0; l < 4; l++) acc[l] = ref_join(op, ref_join(op, A[0][l], A[1][l]), ref_join(op, A[2][l], A[3][l]));
  double total = ref_join(op, ref_join(op, ref_join(op, acc[0], acc[1]), acc[2]), acc[3]);
  for (; i < len; i++) total = ref_join(op, total, ref_map(op, v[i]));
  return total;
}

inline double ref_canonical(double d) { return std::isnan(d) ? ref_nan() : d; }

// sumSquares: a length <= 2^15 is its one chunk; else +0.0 then the chunks in order.
inline double ref_tensor(fg_reduce_op op, const std::vector<float> &v) {
  const size_t chunk = 32768;
  if (v.size() <= chunk) return ref_canonical(ref_chunk(op, v.data(), v.size()));
  double total = 0.0;
  for (size_t s = 0; s < v.size(); s += chunk)
    total = ref_join(op, total, ref_chunk(op, v.data() + s, std::min(chunk, v.size() - s)));
  return ref_canonical(total);
}

// gradSquaredNorm's order: +0.0, then the per-tensor results in list order.
inline double ref_total(fg_reduce_op op, const std::vector<double> &per) {
  double t = 0.0;
  for (double p : per) t = ref_join(op, t, p);
  return ref_canonical(t);
}

// Exact widening written out from the formats' definitions (not elem/half.h).
inline float ref_bf16(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float ref_f16(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const float s = (h & 0x8000) ? -1.0f : 1.0f;
  if (e == 0) return s * std::ldexp((float)m, -24);
  if (e == 31) return m ? std::numeric_limits<float>::quiet_NaN() : s * std::numeric_limits<float>::infinity();
  return s * std::ldexp((float)(m | 1024), e - 25);
}

// Host-side values of a tensor for the reference: bytes of f32, f16 or bf16.
inline std::vector<float> ref_widen(fg_dtype d, const std::vector<uint8_t> &b) {
  const size_t es = d == FG_F32 ? 4 : 2, n = b.size() / es;
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) {
    if (d == FG_F32) {
      std::memcpy(&v[i], &b[i * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &b[i * 2], 2);
      v[i] = d == FG_F16 ? ref_f16(h) : ref_bf16(h);
    }
  }
  return v;
}

}  // namespace fgt
