// Rank r's test value i for the all-reduce checks (es_mpi_check.cpp, nccl_check.cpp): a sign,
// an exponent in [-12, 12] and a mantissa from a hash, so that sums in different orders
// round differently.
#pragma once

#include <cmath>
#include <cstdint>

inline float rank_value(int r, uint64_t i) {
  uint64_t x = (static_cast<uint64_t>(r) + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xD1B54A32D192ED03ull);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  const float m = 1.0f + static_cast<float>(x & 0xFFFFFF) / 16777216.0f;
  const int e = static_cast<int>((x >> 24) % 25) - 12;
  return ((x >> 40) & 1 ? -1.0f : 1.0f) * std::ldexp(m, e);
}

// ((v0 + v1) + v2) + ... over size ranks: what the all-reduce must give, bit for bit.
inline float rank_ordered_sum(int size, uint64_t i) {
  float acc = rank_value(0, i);
  for (int r = 1; r < size; r++) acc = acc + rank_value(r, i);
  return acc;
}
