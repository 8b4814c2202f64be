// Q8_0 and Q8_K decode each code as (float)code * scale, whatever the output's alignment: on
// x86-64 with AVX2 their decoders are vector forms that peel or split by the output address
// (formats/quant_rows_x86.c), so every 4-byte offset from a 32-byte boundary is checked
// against the definition worked out here from the block bytes, and against writing outside.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/quant.h"
#include "quant_test_rows.h"
#include "testutil.h"

namespace {

const int64_t kRow = 1024;
const int64_t kRows = 5;

// The definition: a scale (f16 for Q8_0, f32 for Q8_K) and int8 codes per block.
std::vector<float> by_definition(fg_dtype t, const std::vector<uint8_t> &q, int64_t n) {
  const bool k = t == FG_Q8_K;
  const int64_t be = k ? 256 : 32, bb = k ? 292 : 34, head = k ? 4 : 2;
  std::vector<float> y((size_t)n);
  for (int64_t b = 0; b < n / be; b++) {
    const uint8_t *blk = q.data() + b * bb;
    float d;
    if (k) {
      std::memcpy(&d, blk, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, blk, 2);
      d = fg_f16_to_f32(h);
    }
    for (int64_t j = 0; j < be; j++) y[(size_t)(b * be + j)] = (float)(int8_t)blk[head + j] * d;
  }
  return y;
}

TEST(QuantScaleCodes, EveryOutputAlignmentDecodesToCodeTimesScale) {
  const int64_t n = kRow * kRows;
  const std::vector<float> x = fgt::gaussian((size_t)n, 77, 3.0f);
  for (fg_dtype t : {FG_Q8_0, FG_Q8_K}) {
    SCOPED_TRACE(fg_dtype_name(t));
    const size_t rb = fgq::row_bytes(t, kRow);
    std::vector<uint8_t> q(rb * (size_t)kRows);
    ASSERT_EQ(FG_OK, fg_quant_encode_rows(t, x.data(), kRows, kRow, q.data(), q.size())) << fg_last_error();
    const std::vector<float> want = by_definition(t, q, n);
    // not every code is zero and not every scale one: the check can tell a wrong product
    ASSERT_NE(want[0], want[1]);
    // a 64-byte aligned buffer with room for the output at any of the 8 float offsets past
    // a 32-byte boundary, and a guard float on each side
    void *mem = std::aligned_alloc(64, (size_t)(n + 16) * 4 + 64);
    ASSERT_NE(nullptr, mem);
    float *base = static_cast<float *>(mem);
    for (int shift = 0; shift < 8; shift++) {
      SCOPED_TRACE(shift);
      std::memset(base, 0xCD, (size_t)(n + 16) * 4);
      float *y = base + 1 + shift;
      ASSERT_EQ(FG_OK, fg_quant_decode_rows(t, q.data(), q.size(), y, kRows, kRow)) << fg_last_error();
      EXPECT_EQ(0, std::memcmp(y, want.data(), want.size() * 4));
      uint32_t before, after;
      std::memcpy(&before, y - 1, 4);
      std::memcpy(&after, y + n, 4);
      EXPECT_EQ(0xCDCDCDCDu, before);
      EXPECT_EQ(0xCDCDCDCDu, after);
      // one row at a time, as the loader's pieces call it
      std::memset(base, 0xCD, (size_t)(n + 16) * 4);
      for (int64_t r = 0; r < kRows; r++)
        ASSERT_EQ(FG_OK, fg_quant_decode_row(t, q.data() + (size_t)r * rb, rb, y + r * kRow, kRow));
      EXPECT_EQ(0, std::memcmp(y, want.data(), want.size() * 4));
    }
    std::free(mem);
  }
}

}  // namespace
