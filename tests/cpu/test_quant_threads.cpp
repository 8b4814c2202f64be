// The multi-row codecs give identical bytes and floats for any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/quant.h"
#include "quant_test_rows.h"
#include "testutil.h"

namespace {

TEST(QuantThreads, SameBytesForAnyThreadCount) {
  const int64_t rows = 24, n = 2048;
  std::vector<float> all;
  for (int64_t r = 0; r < rows; r++) {
    const auto &k = fgq::row_kinds()[(size_t)r % fgq::row_kinds().size()];
    std::vector<float> v = k.make((size_t)n, 100 + (uint64_t)r);
    all.insert(all.end(), v.begin(), v.end());
  }
  const int saved = omp_get_max_threads();
  for (fg_dtype t : fgq::encodable_types()) {
    // the rows this type holds (a row with a block whose f16 scale overflows is refused)
    std::vector<float> x;
    bool some_refused = false;
    for (int64_t r = 0; r < rows; r++) {
      std::vector<uint8_t> one(fgq::row_bytes(t, n));
      const fg_status s = fg_quant_encode_row(t, all.data() + r * n, n, one.data(), one.size());
      ASSERT_TRUE(s == FG_OK || s == FG_ERR_RANGE) << fg_dtype_name(t) << ": " << fg_last_error();
      if (s == FG_OK) x.insert(x.end(), all.data() + r * n, all.data() + (r + 1) * n);
      some_refused |= s != FG_OK;
    }
    const int64_t nrows = (int64_t)(x.size() / (size_t)n);
    ASSERT_GT(nrows, 5) << fg_dtype_name(t);
    const size_t bytes = fgq::row_bytes(t, n) * (size_t)nrows;
    std::vector<uint8_t> q1, y1b;
    std::string refusal;
    for (int threads : {1, 2, 7}) {
      omp_set_num_threads(threads);
      std::vector<uint8_t> q(bytes, 0xAB);
      std::vector<float> y((size_t)(nrows * n));
      ASSERT_EQ(fg_quant_encode_rows(t, x.data(), nrows, n, q.data(), q.size()), FG_OK) << fg_last_error();
      ASSERT_EQ(fg_quant_decode_rows(t, q.data(), q.size(), y.data(), nrows, n), FG_OK) << fg_last_error();
      // the single-row entry points agree with the multi-row ones
      std::vector<uint8_t> qr(fgq::row_bytes(t, n));
      ASSERT_EQ(fg_quant_encode_row(t, x.data() + 5 * n, n, qr.data(), qr.size()), FG_OK);
      ASSERT_EQ(0, std::memcmp(qr.data(), q.data() + 5 * qr.size(), qr.size())) << fg_dtype_name(t);
      std::vector<uint8_t> yb(y.size() * 4);
      std::memcpy(yb.data(), y.data(), yb.size());
      // all rows: the same refusal (the first block in row order) for any thread count
      if (some_refused) {
        std::vector<uint8_t> qa(fgq::row_bytes(t, n) * (size_t)rows);
        ASSERT_EQ(fg_quant_encode_rows(t, all.data(), rows, n, qa.data(), qa.size()), FG_ERR_RANGE);
        if (refusal.empty()) refusal = fg_last_error();
        EXPECT_EQ(refusal, fg_last_error()) << fg_dtype_name(t) << " threads " << threads;
      }
      if (q1.empty()) {
        q1 = q;
        y1b = yb;
      } else {
        EXPECT_EQ(0, std::memcmp(q1.data(), q.data(), q.size())) << fg_dtype_name(t) << " threads " << threads;
        EXPECT_EQ(0, std::memcmp(y1b.data(), yb.data(), yb.size())) << fg_dtype_name(t) << " threads " << threads;
      }
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
