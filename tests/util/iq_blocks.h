// Random block bytes of the grid i-quants for decode tests: most rows with their scale
// fields forced to finite fp16 values (so every grid entry, sign pattern and sub-scale shows
// up as a finite float), the rest with random scales (NaN, Inf, subnormal). Shared by the
// gguf-py parity test (interop) and the CPU-against-CUDA decode test (cuda).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "forgia/forgia.h"

namespace fgt {
namespace iq {

constexpr int64_t kN = 4096;         // elements per row: 16 blocks of 256
constexpr int64_t kRows = 64;        // 1024 blocks a type
constexpr int64_t kFiniteRows = 48;  // rows whose blocks get finite scales

const fg_dtype kTypes[] = {FG_IQ2_XXS, FG_IQ2_XS, FG_IQ2_S, FG_IQ3_XXS, FG_IQ3_S, FG_IQ1_S, FG_IQ1_M};

struct Lcg {
  uint64_t s;
  uint8_t byte() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(s >> 56);
  }
  uint16_t u16() { return (uint16_t)(byte() | (byte() << 8)); }
};

// A finite fp16 (exponent field not all ones), subnormals and zeros included.
inline uint16_t finite_f16(Lcg &r) {
  uint16_t h = r.u16();
  while (((h >> 10) & 0x1f) == 0x1f) h = r.u16();
  return h;
}

// Random bytes for kRows rows of type t; the first kFiniteRows rows get finite scales.
inline std::vector<uint8_t> make_blocks(fg_dtype t, size_t row_bytes) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  std::vector<uint8_t> q(row_bytes * (size_t)kRows);
  Lcg r{0xC0FFEEull + (uint64_t)t};
  for (auto &b : q) b = r.byte();
  const size_t nfinite = row_bytes * (size_t)kFiniteRows / tr->block_bytes;
  for (size_t i = 0; i < nfinite; i++) {
    uint8_t *blk = q.data() + i * tr->block_bytes;
    const uint16_t d = finite_f16(r);
    if (t == FG_IQ1_M) {
      // d is the top nibbles of the four u16 scale words (bytes 48..55), word 0's lowest.
      for (int k = 0; k < 4; k++) {
        uint8_t &hi = blk[48 + 2 * k + 1];
        hi = (uint8_t)((hi & 0x0f) | (((d >> (4 * k)) & 15) << 4));
      }
    } else {
      blk[0] = (uint8_t)(d & 0xff);
      blk[1] = (uint8_t)(d >> 8);
    }
  }
  return q;
}

// Equal bits, or both NaN (any payload).
inline bool same_float(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}

}  // namespace iq
}  // namespace fgt
