// Streamed decodes (non-temporal stores on x86-64, for the types whose decoders outrun
// memory: what the loader asks for, and what fg_quant_decode_rows does for output beyond the
// last-level cache) give the same floats as row-by-row decodes, which use plain stores, at
// any alignment of the output and any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "formats/quant_stream.h"
#include "forgia/quant.h"
#include "quant_test_rows.h"
#include "testutil.h"

namespace {

const int64_t kRow = 4096;
const int64_t kRows = 260;  // 4 MiB of floats: many L1 chunks per thread

TEST(QuantStreaming, StreamedDecodesEqualRowByRowDecodes) {
  const std::vector<float> x = fgt::gaussian((size_t)(kRow * kRows), 2026, 1.0f);
  const int saved = omp_get_max_threads();
  // every type that streams, and two that never do
  for (fg_dtype t : {FG_Q8_0, FG_Q8_1, FG_Q8_K, FG_Q4_0, FG_Q4_1, FG_Q4_K, FG_Q5_K, FG_TQ1_0, FG_TQ2_0,
                     FG_Q2_0, FG_Q6_K, FG_BF16}) {
    SCOPED_TRACE(fg_dtype_name(t));
    const size_t rb = fgq::row_bytes(t, kRow);
    std::vector<uint8_t> q(rb * (size_t)kRows);
    ASSERT_EQ(FG_OK, fg_quant_encode_rows(t, x.data(), kRows, kRow, q.data(), q.size())) << fg_last_error();
    // the reference: one row at a time (16 KiB of output per call: plain stores)
    std::vector<float> want((size_t)(kRow * kRows));
    for (int64_t r = 0; r < kRows; r++)
      ASSERT_EQ(FG_OK, fg_quant_decode_row(t, q.data() + (size_t)r * rb, rb, want.data() + r * kRow, kRow));
    // an output that starts 4, 8 and 0 bytes past a 16-byte boundary: unaligned heads and
    // tails go as plain stores
    std::vector<float> buf(want.size() + 8);
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      for (size_t shift : {1, 2, 0}) {
        float *y = buf.data() + shift;
        std::memset(buf.data(), 0xCD, buf.size() * 4);
        ASSERT_EQ(FG_OK, fg_quant_decode_streaming(t, q.data(), q.size(), y, kRow * kRows)) << fg_last_error();
        EXPECT_EQ(0, std::memcmp(y, want.data(), want.size() * 4)) << threads << " threads, shift " << shift;
        // nothing written outside the output
        uint32_t before, after;
        std::memcpy(&before, buf.data(), 4);
        std::memcpy(&after, y + want.size(), 4);
        if (shift) {
          EXPECT_EQ(0xCDCDCDCDu, before);
        }
        EXPECT_EQ(0xCDCDCDCDu, after);
      }
    }
  }
  omp_set_num_threads(saved);
}

// The size from which fg_quant_decode_rows streams by itself is the last-level cache's.
TEST(QuantStreaming, WorthItOnlyBeyondTheLastLevelCache) {
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  uint64_t llc = l3 > 0 ? (uint64_t)l3 : l2 > 0 ? (uint64_t)l2 : (uint64_t)32 << 20;
  EXPECT_FALSE(fg_quant_stream_worth(llc - 1));
  EXPECT_TRUE(fg_quant_stream_worth(llc));
}

}  // namespace
