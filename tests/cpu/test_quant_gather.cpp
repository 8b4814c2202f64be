// fg_quant_gather_rows: rows of a block-quantized matrix gathered into a new matrix without
// decoding. The bytes equal copying each named row's blocks by hand, the decoded values
// equal the source rows' (so no value was re-encoded), a fused q|gate matrix splits into
// halves that concatenate back to it, and bad arguments fail before dst is written.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/quant.h"
#include "testutil.h"

namespace {

struct Mat {
  fg_dtype t;
  int64_t rows, cols;
  size_t row_bytes;
  std::vector<uint8_t> bytes;
};

Mat encode(fg_dtype t, int64_t rows, int64_t cols, uint64_t seed) {
  Mat m{t, rows, cols, 0, {}};
  uint64_t rb = 0;
  EXPECT_EQ(FG_OK, fg_dtype_nbytes(t, (uint64_t)cols, &rb));
  m.row_bytes = (size_t)rb;
  m.bytes.resize(m.row_bytes * (size_t)rows);
  std::vector<float> v = fgt::gaussian((size_t)(rows * cols), seed);
  EXPECT_EQ(FG_OK, fg_quant_encode_rows(t, v.data(), rows, cols, m.bytes.data(), m.bytes.size())) << fg_last_error();
  return m;
}

const fg_dtype kTypes[] = {FG_Q8_0, FG_Q4_0, FG_Q5_1, FG_Q4_K, FG_Q6_K, FG_IQ4_NL, FG_IQ4_XS, FG_TQ2_0, FG_MXFP4};

TEST(QuantGather, BytesAreTheNamedRowsBlocks) {
  for (fg_dtype t : kTypes) {
    SCOPED_TRACE(fg_dtype_name(t));
    ASSERT_TRUE(fg_quant_can_encode(t));
    Mat m = encode(t, 9, 512, 11 + (uint64_t)t);
    const std::vector<int64_t> idx = {3, 0, 8, 8, 5};
    std::vector<uint8_t> got(m.row_bytes * idx.size(), 0xCD), want;
    ASSERT_EQ(FG_OK, fg_quant_gather_rows(t, m.bytes.data(), m.bytes.size(), m.rows, m.cols, idx.data(),
                                          (int64_t)idx.size(), got.data(), got.size()))
        << fg_last_error();
    for (int64_t r : idx)
      want.insert(want.end(), m.bytes.begin() + r * (int64_t)m.row_bytes,
                  m.bytes.begin() + (r + 1) * (int64_t)m.row_bytes);
    EXPECT_TRUE(want == got);
    // The gathered matrix decodes to exactly the source rows' values.
    std::vector<float> all((size_t)(m.rows * m.cols)), part(idx.size() * (size_t)m.cols);
    ASSERT_EQ(FG_OK, fg_quant_decode_rows(t, m.bytes.data(), m.bytes.size(), all.data(), m.rows, m.cols));
    ASSERT_EQ(FG_OK, fg_quant_decode_rows(t, got.data(), got.size(), part.data(), (int64_t)idx.size(), m.cols));
    for (size_t i = 0; i < idx.size(); i++)
      EXPECT_EQ(0, memcmp(&part[i * (size_t)m.cols], &all[(size_t)idx[i] * (size_t)m.cols], (size_t)m.cols * 4))
          << "row " << i;
  }
}

TEST(QuantGather, SplitsAFusedQueryGateMatrix) {
  // A fused [q; gate] projection of 2h rows: the two halves stay quantized and put back
  // together are the original bytes.
  const int64_t h = 24;
  Mat m = encode(FG_Q8_0, 2 * h, 256, 77);
  std::vector<int64_t> qi, gi;
  for (int64_t r = 0; r < h; r++) {
    qi.push_back(r);
    gi.push_back(h + r);
  }
  std::vector<uint8_t> q(m.row_bytes * (size_t)h), g(m.row_bytes * (size_t)h);
  ASSERT_EQ(FG_OK, fg_quant_gather_rows(FG_Q8_0, m.bytes.data(), m.bytes.size(), m.rows, m.cols, qi.data(), h,
                                        q.data(), q.size()));
  ASSERT_EQ(FG_OK, fg_quant_gather_rows(FG_Q8_0, m.bytes.data(), m.bytes.size(), m.rows, m.cols, gi.data(), h,
                                        g.data(), g.size()));
  std::vector<uint8_t> back = q;
  back.insert(back.end(), g.begin(), g.end());
  EXPECT_TRUE(back == m.bytes);
  EXPECT_FALSE(q == g);
}

TEST(QuantGather, FloatRowsAndEmptyGather) {
  std::vector<float> v = fgt::gaussian(4 * 3, 5);
  const int64_t idx[] = {2, 1};
  std::vector<float> out(2 * 3);
  ASSERT_EQ(FG_OK, fg_quant_gather_rows(FG_F32, v.data(), v.size() * 4, 4, 3, idx, 2, out.data(), out.size() * 4));
  EXPECT_EQ(0, memcmp(out.data(), &v[6], 12));
  EXPECT_EQ(0, memcmp(&out[3], &v[3], 12));
  // No indices: nothing to write, a zero-byte destination.
  EXPECT_EQ(FG_OK, fg_quant_gather_rows(FG_F32, v.data(), v.size() * 4, 4, 3, nullptr, 0, nullptr, 0));
}

TEST(QuantGather, RefusesBadArgumentsBeforeWriting) {
  Mat m = encode(FG_Q8_0, 6, 64, 3);
  std::vector<uint8_t> dst(m.row_bytes * 3, 0xAB);
  const std::vector<uint8_t> untouched = dst;
  auto gather = [&](const std::vector<int64_t> &idx, int64_t cols, size_t src_bytes, size_t dst_bytes) {
    return fg_quant_gather_rows(FG_Q8_0, m.bytes.data(), src_bytes, m.rows, cols, idx.data(), (int64_t)idx.size(),
                                dst.data(), dst_bytes);
  };
  // The bad index comes after good ones: nothing is copied before it is found.
  EXPECT_EQ(FG_ERR_RANGE, gather({0, 1, 6}, 64, m.bytes.size(), dst.size()));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("index 2 is row 6")) << fg_last_error();
  EXPECT_TRUE(dst == untouched);
  EXPECT_EQ(FG_ERR_RANGE, gather({0, -1, 2}, 64, m.bytes.size(), dst.size()));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("row -1")) << fg_last_error();
  EXPECT_TRUE(dst == untouched);
  // 48 columns are not whole 32-element blocks.
  EXPECT_EQ(FG_ERR_BAD_ROW, gather({0, 1, 2}, 48, m.bytes.size(), dst.size()));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("row length 48")) << fg_last_error();
  // Slices of the wrong size, either side.
  EXPECT_EQ(FG_ERR_BAD_ROW, gather({0, 1, 2}, 64, m.bytes.size() - 1, dst.size()));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("source is")) << fg_last_error();
  EXPECT_EQ(FG_ERR_BAD_ROW, gather({0, 1, 2}, 64, m.bytes.size(), dst.size() - m.row_bytes));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("destination is")) << fg_last_error();
  EXPECT_TRUE(dst == untouched);
  const int64_t one = 0;
  EXPECT_EQ(FG_ERR_BAD_DTYPE, fg_quant_gather_rows((fg_dtype)4, m.bytes.data(), m.bytes.size(), m.rows, 64, &one, 1,
                                                   dst.data(), m.row_bytes));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_quant_gather_rows(FG_Q8_0, m.bytes.data(), m.bytes.size(), m.rows, 64, nullptr, 1,
                                                     dst.data(), m.row_bytes));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_quant_gather_rows(FG_Q8_0, m.bytes.data(), m.bytes.size(), -1, 64, &one, 1,
                                                     dst.data(), m.row_bytes));
}

}  // namespace
