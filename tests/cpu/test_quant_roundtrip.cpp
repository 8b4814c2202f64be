// Round trips f32 -> TYPE -> f32 for every encodable type: error bounds on gaussian rows,
// exactness where the format is exact, and layout facts of the reference quantizers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "forgia/elem/half.h"
#include "forgia/quant.h"
#include "quant_test_rows.h"
#include "testutil.h"

namespace {

struct RoundTrip {
  std::vector<uint8_t> q;
  std::vector<float> y;
};

RoundTrip round_trip(fg_dtype t, const std::vector<float> &x) {
  RoundTrip r;
  const int64_t n = (int64_t)x.size();
  r.q.resize(fgq::row_bytes(t, n));
  r.y.resize(x.size());
  EXPECT_EQ(fg_quant_encode_row(t, x.data(), n, r.q.data(), r.q.size()), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_quant_decode_row(t, r.q.data(), r.q.size(), r.y.data(), n), FG_OK) << fg_last_error();
  return r;
}

double rel_rmse(const std::vector<float> &x, const std::vector<float> &y) {
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); i++) {
    e += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
    s += (double)x[i] * x[i];
  }
  return std::sqrt(e / s);
}

// Relative RMS error on unit gaussians; measured values (n = 65536) with about 15% headroom.
// Ternary and 1-bit types are coarse by design; the bound still catches a broken layout.
const std::map<fg_dtype, double> kBound = {
    {FG_F32, 0.0},     {FG_F16, 0.0003},  {FG_BF16, 0.002},  {FG_Q8_0, 0.0065}, {FG_Q4_0, 0.10},
    {FG_Q4_1, 0.09},   {FG_Q5_0, 0.05},   {FG_Q5_1, 0.045},  {FG_Q8_1, 0.0065}, {FG_Q2_K, 0.34},
    {FG_Q3_K, 0.175},  {FG_Q4_K, 0.083},  {FG_Q5_K, 0.042},  {FG_Q6_K, 0.021},  {FG_Q8_K, 0.0081},
    {FG_TQ1_0, 0.85},  {FG_TQ2_0, 0.85},  {FG_IQ4_NL, 0.088}, {FG_IQ4_XS, 0.089}, {FG_MXFP4, 0.133},
    {FG_NVFP4, 0.109}, {FG_Q1_0, 0.62},   {FG_Q2_0, 0.75}};

TEST(QuantRoundTrip, GaussianErrorBounds) {
  const std::vector<float> x = fgt::gaussian(65536, 42, 1.0f);
  for (fg_dtype t : fgq::encodable_types()) {
    RoundTrip r = round_trip(t, x);
    const double e = rel_rmse(x, r.y);
    EXPECT_LE(e, kBound.at(t)) << fg_dtype_name(t);
    // A working codec is much better than decoding to zeros (rel. error 1).
    if (t != FG_TQ1_0 && t != FG_TQ2_0 && t != FG_Q1_0 && t != FG_Q2_0) {
      EXPECT_LT(e, 0.4) << fg_dtype_name(t);
    }
  }
}

TEST(QuantRoundTrip, EveryRowKindDecodesFinite) {
  for (fg_dtype t : fgq::encodable_types()) {
    for (const auto &k : fgq::row_kinds()) {
      std::vector<float> x = k.make(1024, 7);
      if (std::string(k.name) == "outlier" && (t == FG_F16 || t == FG_Q4_1 || t == FG_Q5_1 || t == FG_Q8_0 ||
                                               t == FG_Q8_1))
        x[(7 * 7919u) % 1024] = 60000.0f;  // keep fp16 scales finite for the fp16-based types
      if (t == FG_Q8_1 && std::string(k.name) == "large") {
        // values of ~1e4: a block's sum field (sum of codes x scale) passes f16's 65504, which
        // ggml would store as Inf; refused instead
        std::vector<uint8_t> q(fgq::row_bytes(t, 1024));
        EXPECT_EQ(fg_quant_encode_row(t, x.data(), 1024, q.data(), q.size()), FG_ERR_RANGE);
        continue;
      }
      RoundTrip r = round_trip(t, x);
      for (size_t i = 0; i < r.y.size(); i++)
        ASSERT_TRUE(std::isfinite(r.y[i])) << fg_dtype_name(t) << " " << k.name << " element " << i;
    }
  }
}

TEST(QuantRoundTrip, ZeroRowsStayZero) {
  const std::vector<float> x(1024, 0.0f);
  for (fg_dtype t : fgq::encodable_types()) {
    RoundTrip r = round_trip(t, x);
    for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(r.y[i], 0.0f) << fg_dtype_name(t) << " " << i;
  }
}

TEST(QuantRoundTrip, ScalarTypesMatchHalfHelpers) {
  const std::vector<float> x = fgt::gaussian(256, 3, 100.0f);
  RoundTrip f32 = round_trip(FG_F32, x), f16 = round_trip(FG_F16, x), bf16 = round_trip(FG_BF16, x);
  EXPECT_EQ(0, std::memcmp(f32.y.data(), x.data(), x.size() * 4));
  for (size_t i = 0; i < x.size(); i++) {
    uint16_t h = (uint16_t)(f16.q[2 * i] | (f16.q[2 * i + 1] << 8));
    uint16_t b = (uint16_t)(bf16.q[2 * i] | (bf16.q[2 * i + 1] << 8));
    ASSERT_EQ(h, fg_f32_to_f16(x[i]));
    ASSERT_EQ(b, fg_f32_to_bf16(x[i]));
    ASSERT_EQ(f16.y[i], fg_f16_to_f32(h));
    ASSERT_EQ(bf16.y[i], fg_bf16_to_f32(b));
  }
}

// Q4_0 and Q8_0 are exact on values that sit on their grids.
TEST(QuantRoundTrip, ExactOnGrid) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; i++) x[i] = (float)((i % 16) - 8) * 0.25f;  // max |x| = 2 at -8 * 0.25
  RoundTrip r = round_trip(FG_Q4_0, x);
  for (int i = 0; i < 32; i++) EXPECT_EQ(r.y[i], x[i]) << i;
  for (int i = 0; i < 32; i++) x[i] = (float)(i * 8 - 127);
  r = round_trip(FG_Q8_0, x);
  for (int i = 0; i < 32; i++) EXPECT_EQ(r.y[i], x[i]) << i;
}

// The signed max of a Q4_0 block maps to code 0 (d = max / -8), as in ggml.
TEST(QuantRoundTrip, Q4_0MaxMapsToCodeZero) {
  std::vector<float> x = fgt::gaussian(32, 5, 1.0f);
  x[9] = 5.0f;
  RoundTrip r = round_trip(FG_Q4_0, x);
  EXPECT_EQ(r.q[2 + 9] & 0x0f, 0);
  EXPECT_EQ(r.y[9], 5.0f);
}

// No contraction: x*id + 8.5 is rounded twice (plain f32), which gives 13 here; a fused
// multiply-add would give 12. gguf-py's numpy reference agrees with the plain form.
TEST(QuantRoundTrip, Q4_0UsesUncontractedArithmetic) {
  std::vector<float> x = fgq::row_fma_tie(32, 0);
  RoundTrip r = round_trip(FG_Q4_0, x);
  EXPECT_EQ(r.q[2 + 1] & 0x0f, 13);  // element 1
  EXPECT_EQ(r.q[2 + 1] >> 4, 13);    // element 17
}

// Q2_0 never produces code 3; TQ2_0 codes are 0..2.
TEST(QuantRoundTrip, TernaryCodesInRange) {
  const std::vector<float> x = fgt::gaussian(4096, 11, 1.0f);
  RoundTrip q2 = round_trip(FG_Q2_0, x), tq2 = round_trip(FG_TQ2_0, x);
  for (size_t b = 0; b < q2.q.size(); b += 18)
    for (int j = 0; j < 16; j++)
      for (int s = 0; s < 4; s++) ASSERT_NE((q2.q[b + 2 + j] >> (2 * s)) & 3, 3);
  for (size_t b = 0; b < tq2.q.size(); b += 66)
    for (int j = 0; j < 64; j++)
      for (int s = 0; s < 4; s++) ASSERT_NE((tq2.q[b + j] >> (2 * s)) & 3, 3);
}

// TQ1_0 and TQ2_0 encode the same trits, so they decode to the same floats.
TEST(QuantRoundTrip, TernaryTypesAgree) {
  const std::vector<float> x = fgt::gaussian(2048, 12, 1.0f);
  RoundTrip a = round_trip(FG_TQ1_0, x), b = round_trip(FG_TQ2_0, x);
  EXPECT_EQ(0, std::memcmp(a.y.data(), b.y.data(), a.y.size() * 4));
}

// Re-encoding a decoded row is a fixed point for the types whose reference quantizer picks
// the scale from the absmax alone and decodes exactly onto its grid.
TEST(QuantRoundTrip, ReencodeIsStable) {
  const std::vector<float> x = fgt::gaussian(4096, 13, 1.0f);
  for (fg_dtype t : {FG_Q8_0, FG_TQ2_0, FG_TQ1_0, FG_F16, FG_BF16}) {
    RoundTrip a = round_trip(t, x);
    RoundTrip b = round_trip(t, a.y);
    EXPECT_EQ(0, std::memcmp(a.y.data(), b.y.data(), a.y.size() * 4)) << fg_dtype_name(t);
  }
}

}  // namespace

extern "C" {
#include "formats/quant_internal.h"
}

namespace {

// The inline half-away rounding used by the Q8/Q2_0/ternary encoders equals roundf.
TEST(QuantRoundTrip, RoundAwayEqualsRoundf) {
  uint64_t s = 99;
  for (int i = 0; i < 2000000; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t u = (uint32_t)(s >> 32);
    if (i & 1) u = (u & 0x80000000u) | (0x3e800000u + (u & 0x07ffffffu));  // dense in [0.25, 2^25)
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    const float a = fg_round_away(f), b = std::round(f);
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    ASSERT_EQ(ua, ub) << f;
  }
  for (float f : {0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 0.49999997f, 8388607.5f, -0.0f})
    ASSERT_EQ(fg_round_away(f), std::round(f)) << f;
}

}  // namespace
