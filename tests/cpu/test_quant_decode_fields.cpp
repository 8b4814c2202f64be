// The decoders' field helpers against their plain definitions, on every input where the input
// is a byte or a half (exhaustive), bit for bit: the fast forms (fp16 scale load, E2M1 and
// UE4M3 built from bits, TQ1_0 trits with a constant power of 3)
// must give exactly the values the one-at-a-time forms give. The goldens check whole blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "forgia/elem/quant_decode.h"

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(QuantDecodeFields, Fp16ScaleLoadIsTheHalfConversionOnEveryCode) {
  for (uint32_t h = 0; h < 65536; h++) {
    const uint8_t p[2] = {(uint8_t)(h & 0xff), (uint8_t)(h >> 8)};
    ASSERT_EQ(bits(fg_ld_f16(p)), bits(fg_f16_to_f32((uint16_t)h))) << "fp16 code 0x" << std::hex << h;
  }
}

TEST(QuantDecodeFields, E2M1FromBitsIsTheDoubledCodeValue) {
  const int want[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (uint32_t q = 0; q < 16; q++) {
    EXPECT_EQ(bits(fg_e2m1x2_f32(q)), bits((float)want[q])) << "code " << q;  // code 8 is +0, as ggml's
    EXPECT_EQ(bits(fg_e2m1x2_f32(q)), bits(fg_e2m1x2_value((int)q))) << "code " << q;
  }
}

TEST(QuantDecodeFields, Ue4m3HalfOnEveryByte) {
  for (int x = 0; x < 256; x++) {
    // the definition: 0 and 0x7F are 0, exponent 0 is m * 2^-9, else (1 + m/8) * 2^(e-7); halved
    const int e = (x >> 3) & 15, m = x & 7;
    float want = 0.0f;
    if (x != 0 && x != 0x7f) want = (e == 0 ? std::ldexp((float)m, -9) : std::ldexp(1.0f + (float)m / 8.0f, e - 7)) * 0.5f;
    ASSERT_EQ(bits(fg_ue4m3_to_f32_half((uint8_t)x)), bits(want)) << "byte " << x;
  }
}

TEST(QuantDecodeFields, Tq1TritsOnEveryByte) {
  const float d = 0.3f;
  uint8_t p3 = 1;
  for (int n = 0; n < 5; n++, p3 = (uint8_t)(p3 * 3)) {
    for (int byte = 0; byte < 256; byte++) {
      uint8_t t = (uint8_t)byte;  // trit n: n multiplications by 3 modulo 256, then the top trit
      for (int i = 0; i < n; i++) t = (uint8_t)(t * 3u);
      const int trit = (int)(((unsigned)t * 3u) >> 8);
      ASSERT_EQ(bits(fg_tq1_value((uint8_t)byte, p3, d)), bits((float)(trit - 1) * d)) << "byte " << byte << " trit " << n;
    }
  }
}

}  // namespace
