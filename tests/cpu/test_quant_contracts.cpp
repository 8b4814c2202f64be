// Contracts of the row codecs: slice sizes, block multiples, non-finite input, unsupported
// types, and the capability queries.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "forgia/quant.h"
#include "quant_test_rows.h"
#include "testutil.h"

namespace {

bool has(const char *msg, const std::string &needle) { return std::string(msg).find(needle) != std::string::npos; }

TEST(QuantContracts, CapabilityLists) {
  for (fg_dtype t : fgq::encodable_types()) {
    EXPECT_TRUE(fg_quant_can_encode(t)) << fg_dtype_name(t);
    EXPECT_TRUE(fg_quant_can_decode(t)) << fg_dtype_name(t);
  }
  // The grid i-quants: decode only.
  for (fg_dtype t : {FG_IQ2_XXS, FG_IQ2_XS, FG_IQ2_S, FG_IQ3_XXS, FG_IQ3_S, FG_IQ1_S, FG_IQ1_M}) {
    EXPECT_FALSE(fg_quant_can_encode(t)) << fg_dtype_name(t);
    EXPECT_TRUE(fg_quant_can_decode(t)) << fg_dtype_name(t);
  }
  // Every ggml block type decodes.
  for (int v = 0; v < FG_GGML_TYPE_COUNT; v++) {
    if (fg_dtype_valid(v) && fg_dtype_info((fg_dtype)v)->is_quant) {
      EXPECT_TRUE(fg_quant_can_decode((fg_dtype)v)) << v;
    }
  }
  for (fg_dtype t : {FG_I8, FG_I32, FG_F64, FG_BOOL, FG_F8_E4M3, (fg_dtype)4, (fg_dtype)50, (fg_dtype)100}) {
    EXPECT_FALSE(fg_quant_can_encode(t)) << (int)t;
    EXPECT_FALSE(fg_quant_can_decode(t)) << (int)t;
  }
}

TEST(QuantContracts, SliceSizeMustMatch) {
  std::vector<float> x(256, 1.0f), y(256);
  for (fg_dtype t : fgq::encodable_types()) {
    const size_t rb = fgq::row_bytes(t, 256);
    std::vector<uint8_t> q(rb + 1);
    EXPECT_EQ(fg_quant_encode_row(t, x.data(), 256, q.data(), rb + 1), FG_ERR_BAD_ROW) << fg_dtype_name(t);
    EXPECT_TRUE(has(fg_last_error(), "expected " + std::to_string(rb))) << fg_last_error();
    EXPECT_EQ(fg_quant_encode_row(t, x.data(), 256, q.data(), rb - 1), FG_ERR_BAD_ROW) << fg_dtype_name(t);
    EXPECT_EQ(fg_quant_decode_row(t, q.data(), rb + 1, y.data(), 256), FG_ERR_BAD_ROW) << fg_dtype_name(t);
    EXPECT_EQ(fg_quant_decode_row(t, q.data(), 0, y.data(), 256), FG_ERR_BAD_ROW) << fg_dtype_name(t);
    std::vector<float> x2(512, 1.0f);
    std::vector<uint8_t> q2(2 * rb);
    EXPECT_EQ(fg_quant_encode_rows(t, x2.data(), 2, 256, q2.data(), 2 * rb), FG_OK) << fg_dtype_name(t);
    EXPECT_EQ(fg_quant_encode_rows(t, x2.data(), 1, 256, q2.data(), 2 * rb), FG_ERR_BAD_ROW) << fg_dtype_name(t);
  }
}

TEST(QuantContracts, RowLengthMustBeWholeBlocks) {
  std::vector<float> x(512, 1.0f), y(512);
  std::vector<uint8_t> q(4096);
  for (fg_dtype t : fgq::encodable_types()) {
    const fg_dtype_traits *tr = fg_dtype_info(t);
    if (tr->block_elems == 1) continue;
    const int64_t n = tr->block_elems + 1;
    EXPECT_EQ(fg_quant_encode_row(t, x.data(), n, q.data(), q.size()), FG_ERR_BAD_ROW) << fg_dtype_name(t);
    EXPECT_TRUE(has(fg_last_error(), "multiple of the " + std::to_string(tr->block_elems))) << fg_last_error();
    EXPECT_EQ(fg_quant_decode_row(t, q.data(), q.size(), y.data(), n), FG_ERR_BAD_ROW) << fg_dtype_name(t);
  }
}

TEST(QuantContracts, NonFiniteInputNamesTheElement) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (fg_dtype t : fgq::encodable_types()) {
    const fg_dtype_traits *tr = fg_dtype_info(t);
    if (!tr->is_quant) continue;
    for (float b : bad) {
      std::vector<float> x = fgt::gaussian(512, 1, 1.0f);
      x[301] = b;
      std::vector<uint8_t> q(fgq::row_bytes(t, 512));
      EXPECT_EQ(fg_quant_encode_row(t, x.data(), 512, q.data(), q.size()), FG_ERR_NONFINITE) << fg_dtype_name(t);
      EXPECT_TRUE(has(fg_last_error(), "element 301")) << fg_last_error();
      EXPECT_TRUE(has(fg_last_error(), fg_dtype_name(t))) << fg_last_error();
      // multi-row: the first bad value in row-major order is named by row and element
      x[40] = b;
      EXPECT_EQ(fg_quant_encode_rows(t, x.data(), 2, 256, q.data(), q.size()), FG_ERR_NONFINITE);
      EXPECT_TRUE(has(fg_last_error(), "row 0, element 40")) << fg_last_error();
      x[40] = 0.5f;
      EXPECT_EQ(fg_quant_encode_rows(t, x.data(), 2, 256, q.data(), q.size()), FG_ERR_NONFINITE);
      EXPECT_TRUE(has(fg_last_error(), "row 1, element 45")) << fg_last_error();
      // the caller adds the tensor name
      EXPECT_EQ(fg_fail_prefix(FG_ERR_NONFINITE, "tensor blk.0.attn_q.weight: "), FG_ERR_NONFINITE);
      EXPECT_TRUE(has(fg_last_error(), "tensor blk.0.attn_q.weight: quant encode")) << fg_last_error();
    }
  }
}

// The float types carry NaN and Inf, so their encoders pass them through.
TEST(QuantContracts, FloatTypesPassNonFiniteThrough) {
  std::vector<float> x(4, 1.0f), y(4);
  x[1] = std::numeric_limits<float>::infinity();
  x[2] = std::numeric_limits<float>::quiet_NaN();
  for (fg_dtype t : {FG_F32, FG_F16, FG_BF16}) {
    std::vector<uint8_t> q(fgq::row_bytes(t, 4));
    ASSERT_EQ(fg_quant_encode_row(t, x.data(), 4, q.data(), q.size()), FG_OK);
    ASSERT_EQ(fg_quant_decode_row(t, q.data(), q.size(), y.data(), 4), FG_OK);
    EXPECT_TRUE(std::isinf(y[1]) && std::isnan(y[2])) << fg_dtype_name(t);
  }
}

TEST(QuantContracts, UnsupportedTypesSaySo) {
  std::vector<float> x(256), y(256);
  std::vector<uint8_t> q(1024);
  EXPECT_EQ(fg_quant_encode_row(FG_IQ2_XXS, x.data(), 256, q.data(), 66), FG_ERR_UNSUPPORTED);
  EXPECT_TRUE(has(fg_last_error(), "iq2_xxs")) << fg_last_error();
  EXPECT_EQ(fg_quant_decode_row(FG_IQ1_M, q.data(), 56, y.data(), 256), FG_OK) << fg_last_error();  // decode only
  EXPECT_EQ(fg_quant_encode_row(FG_IQ1_M, x.data(), 256, q.data(), 56), FG_ERR_UNSUPPORTED);
  EXPECT_TRUE(has(fg_last_error(), "iq1_m")) << fg_last_error();
  EXPECT_EQ(fg_quant_encode_row(FG_I32, x.data(), 4, q.data(), 16), FG_ERR_UNSUPPORTED);
  EXPECT_EQ(fg_quant_decode_row((fg_dtype)5, q.data(), 18, y.data(), 32), FG_ERR_BAD_DTYPE);
}

TEST(QuantContracts, EmptyAndBadArguments) {
  std::vector<float> x(32), y(32);
  std::vector<uint8_t> q(64);
  EXPECT_EQ(fg_quant_encode_row(FG_Q4_0, nullptr, 0, nullptr, 0), FG_OK);
  EXPECT_EQ(fg_quant_decode_rows(FG_Q4_K, nullptr, 0, nullptr, 0, 256), FG_OK);
  EXPECT_EQ(fg_quant_encode_row(FG_Q4_0, x.data(), -32, q.data(), 0), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_quant_encode_row(FG_Q4_0, nullptr, 32, q.data(), 18), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_quant_decode_row(FG_Q4_0, q.data(), 18, nullptr, 32), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_quant_encode_rows(FG_Q8_0, x.data(), INT64_MAX / 2, 64, q.data(), 68), FG_ERR_OVERFLOW);
}

}  // namespace
