// Blocks of subnormals whose inverse scale overflows to +-Inf: the encoders take their general
// path there (the fast paths assume a finite id), and must write ggml's bytes without undefined
// conversions (the sanitizer build runs this). For x[j] = +-(j + 1) * 2^-140 ggml's
// quantize_row_*_ref gives: every code 0 (x * id is +-Inf, or NaN for x - min = 0, which x86's
// truncating conversion turns into INT32_MIN, low byte 0, and each type's clamp keeps 0); the
// f16 fields are zeros that keep their sign: Q4_0/Q5_0's d = max / -8 (/ -16) is -0 for a
// positive block, Q4_1/Q5_1's min is -0 for a negative one, everything else +0. Those bytes
// were checked against ggml_quantize_chunk of llama-cpp-python 0.3.36's ggml; the reasoning
// above is what they follow from.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "formats/quant_internal.h"
#include "forgia/quant.h"

namespace {

struct Case {
  fg_dtype t;
  fg_qblock_enc enc;
  size_t bytes;
  int neg_zero_at_pos, neg_zero_at_neg; // byte holding 0x80 (the high byte of a -0 f16), or -1
};

const Case kCases[] = {
  {FG_Q4_0, fg_qenc_q4_0, 18, 1, -1}, {FG_Q4_1, fg_qenc_q4_1, 20, -1, 3}, {FG_Q5_0, fg_qenc_q5_0, 22, 1, -1},
  {FG_Q5_1, fg_qenc_q5_1, 24, -1, 3}, {FG_Q8_0, fg_qenc_q8_0, 34, -1, -1},
};

TEST(QuantSubnormal, OverflowingInverseScaleGivesGgmlBytes) {
  for (const Case &c : kCases) {
    for (int neg = 0; neg < 2; neg++) {
      std::vector<float> x(32);
      for (int j = 0; j < 32; j++) x[j] = (neg ? -1.0f : 1.0f) * (float)(j + 1) * std::ldexp(1.0f, -140);
      std::vector<uint8_t> want(c.bytes, 0), got(c.bytes, 0xAA), raw(c.bytes, 0xAA);
      const int at = neg ? c.neg_zero_at_neg : c.neg_zero_at_pos;
      if (at >= 0) want[at] = 0x80;
      ASSERT_EQ(fg_quant_encode_row(c.t, x.data(), 32, got.data(), got.size()), FG_OK) << fg_last_error();
      c.enc(x.data(), raw.data());
      EXPECT_EQ(0, memcmp(got.data(), want.data(), want.size())) << fg_dtype_info(c.t)->name << " neg " << neg;
      EXPECT_EQ(0, memcmp(raw.data(), want.data(), want.size())) << fg_dtype_info(c.t)->name << " neg " << neg;
    }
  }
}

}  // namespace
