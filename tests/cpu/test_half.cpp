// f16/bf16 conversions against independent references: the compiler's IEEE _Float16
// (round to nearest even) for f16, and a nearest-candidate search in f64 for bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "forgia/elem/half.h"

static float bits_f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Half, F16ToF32IsExactForAll65536Patterns) {
  for (uint32_t h = 0; h < 65536; h++) {
    _Float16 ref;
    uint16_t hb = (uint16_t)h;
    std::memcpy(&ref, &hb, 2);
    float want = (float)ref, got = fg_f16_to_f32(hb);
    if (std::isnan(want)) {  // payload kept bit for bit (no quietening), on every device
      ASSERT_EQ(((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13), fg_f32_bits(got)) << h;
      continue;
    }
    ASSERT_EQ(0, std::memcmp(&want, &got, 4)) << "pattern " << h;
  }
}

static void check_f16(uint32_t u) {
  float f = bits_f(u);
  uint16_t got = fg_f32_to_f16(f);
  if (std::isnan(f)) {
    ASSERT_EQ(got, (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u)) << std::hex << u;
    return;
  }
  _Float16 r = (_Float16)f;
  uint16_t want;
  std::memcpy(&want, &r, 2);
  ASSERT_EQ(want, got) << "f32 bits 0x" << std::hex << u;
}

TEST(Half, F32ToF16MatchesIeeeRoundToNearestEven) {
  // A stride over the whole f32 space, plus every f16 value and its neighbourhood
  // (exact ties, one ulp either side), which is where rounding bugs live.
  for (uint64_t u = 0; u < (1ull << 32); u += 4099) check_f16((uint32_t)u);
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t b = fg_f32_bits(fg_f16_to_f32((uint16_t)h));
    for (int d = -4; d <= 4; d++) check_f16(b + (uint32_t)d);
    // midpoint between this value and the next one up
    uint32_t next = fg_f32_bits(fg_f16_to_f32((uint16_t)(h + 1)));
    if ((h & 0x7c00u) != 0x7c00u && ((h + 1) & 0x7fffu) != 0) {
      double mid = 0.5 * ((double)bits_f(b) + (double)bits_f(next));
      float mf = (float)mid;
      if ((double)mf == mid) check_f16(fg_f32_bits(mf));
    }
  }
  EXPECT_EQ(fg_f32_to_f16(65520.0f), 0x7c00);  // rounds to Inf
  EXPECT_EQ(fg_f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(fg_f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(fg_f32_to_f16(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(fg_f32_to_f16(2.9802322e-8f), 0x0000);  // exactly half of it: tie to even
}

static uint16_t bf16_reference(float f) {
  // Nearest of the two bf16 candidates around f, ties to the even pattern, in f64. Past the
  // largest finite bf16 the upper candidate is Inf, which IEEE rounding treats as 2^128.
  uint32_t u = fg_f32_bits(f);
  uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
  if ((u & 0xffffu) == 0) return lo;
  double x = f, a = fg_bf16_to_f32(lo);
  double b = ((hi & 0x7fffu) == 0x7f80u) ? std::copysign(std::ldexp(1.0, 128), x) : (double)fg_bf16_to_f32(hi);
  double da = std::fabs(x - a), db = std::fabs(x - b);
  if (da < db) return lo;
  if (db < da) return hi;
  return (lo & 1) ? hi : lo;
}

TEST(Half, F32ToBf16RoundsToNearestEven) {
  for (uint64_t u = 0; u < (1ull << 32); u += 3001) {
    float f = bits_f((uint32_t)u);
    uint16_t got = fg_f32_to_bf16(f);
    if (std::isnan(f)) {
      ASSERT_EQ(got, (uint16_t)((u >> 16) | 0x40)) << std::hex << u;  // quiet, sign and payload kept
      ASSERT_TRUE(std::isnan(fg_bf16_to_f32(got)));
      continue;
    }
    if (std::isinf(f)) {
      ASSERT_EQ(got, (uint16_t)(u >> 16));
      continue;
    }
    ASSERT_EQ(bf16_reference(f), got) << "f32 bits 0x" << std::hex << u;
  }
  EXPECT_EQ(fg_f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fg_f32_to_bf16(bits_f(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(fg_f32_to_bf16(bits_f(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(fg_f32_to_bf16(bits_f(0x00000001u)), 0x0000);  // subnormal rounds, not flushed
  EXPECT_EQ(fg_f32_to_bf16(bits_f(0x00018000u)), 0x0002);
  EXPECT_EQ(fg_f32_to_bf16(bits_f(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to Inf
  EXPECT_EQ(fg_f32_to_bf16(bits_f(0xff800001u)), 0xffc0);  // signalling NaN made quiet
}

TEST(Half, Bf16ToF32IsAShift) {
  for (uint32_t h = 0; h < 65536; h++) {
    float f = fg_bf16_to_f32((uint16_t)h);
    ASSERT_EQ(fg_f32_bits(f), h << 16);
  }
}
