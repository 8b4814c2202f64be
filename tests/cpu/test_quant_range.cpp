// Block scales that overflow: a finite input whose f16 field (scale, min, Q8_1's sum) rounds
// beyond 65504 is refused with FG_ERR_RANGE naming the row, block and element, where ggml
// stores Inf and the block decodes to NaN. The edges below were found by bisection over the
// float bit patterns and checked ulp by ulp around them (scripted once, kept here as data);
// the test proves them both ways: against the public encoder (accepted / refused) and
// against the ggml-identical block encoders behind it (finite / non-finite field), so the
// refusal is exactly ggml's overflow.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "export_fixtures.h"
#include "formats/quant_internal.h"
#include "forgia/quant.h"
#include "quant_test_rows.h"
#include "testutil.h"

namespace {

enum Shape { kConst, kConstNeg, kSpike, kSpikeNeg };
const char *const kShapeName[] = {"every element x", "every element -x", "x then zeros", "-x then zeros"};

// A block of t shaped around x > 0.
std::vector<float> block(fg_dtype t, Shape s, float x) {
  const size_t be = fg_dtype_info(t)->block_elems;
  std::vector<float> v(be, 0.0f);
  const float sx = (s == kConstNeg || s == kSpikeNeg) ? -x : x;
  if (s == kConst || s == kConstNeg) std::fill(v.begin(), v.end(), sx);
  else v[0] = sx;
  return v;
}

fg_qblock_enc raw_encoder(fg_dtype t) {
  switch (t) {
    case FG_Q4_0: return fg_qenc_q4_0;
    case FG_Q4_1: return fg_qenc_q4_1;
    case FG_Q5_0: return fg_qenc_q5_0;
    case FG_Q5_1: return fg_qenc_q5_1;
    case FG_Q8_0: return fg_qenc_q8_0;
    case FG_Q8_1: return fg_qenc_q8_1;
    case FG_Q2_K: return fg_qenc_q2_K;
    case FG_Q3_K: return fg_qenc_q3_K;
    case FG_Q4_K: return fg_qenc_q4_K;
    case FG_Q5_K: return fg_qenc_q5_K;
    case FG_Q6_K: return fg_qenc_q6_K;
    case FG_TQ1_0: return fg_qenc_tq1_0;
    case FG_TQ2_0: return fg_qenc_tq2_0;
    case FG_IQ4_NL: return fg_qenc_iq4_nl;
    case FG_IQ4_XS: return fg_qenc_iq4_xs;
    case FG_Q1_0: return fg_qenc_q1_0;
    case FG_Q2_0: return fg_qenc_q2_0;
    case FG_Q8_K: return fg_qenc_q8_K;
    default: return nullptr;
  }
}

float f_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The public encoder on one block; on FG_OK, the block decodes to finite values and equals
// the raw encoder's bytes, whose half fields are finite; on FG_ERR_RANGE, the raw encoder's
// block (what ggml would have stored) holds a non-finite field or decodes to a non-finite
// value. Past 2^32 the search types are refused whatever the raw encoder gives (see below).
fg_status encode_checked(fg_dtype t, Shape s, float x) {
  const std::vector<float> v = block(t, s, x);
  const size_t bb = fg_dtype_info(t)->block_bytes;
  std::vector<uint8_t> q(bb, 0xA5), raw(bb, 0x5A);
  const fg_status st = fg_quant_encode_row(t, v.data(), (int64_t)v.size(), q.data(), bb);
  raw_encoder(t)(v.data(), raw.data());
  bool raw_over = !fgq::overflowed_blocks(t, raw.data(), 1).empty();
  std::vector<float> ry(v.size());
  EXPECT_EQ(fg_quant_decode_row(t, raw.data(), bb, ry.data(), (int64_t)ry.size()), FG_OK);
  for (float f : ry) raw_over |= !std::isfinite(f);
  raw_over |= x >= 4294967296.0f &&
              (t == FG_Q2_K || t == FG_Q3_K || t == FG_Q4_K || t == FG_Q5_K || t == FG_Q6_K || t == FG_IQ4_NL ||
               t == FG_IQ4_XS);
  const std::string what = std::string(fg_dtype_name(t)) + ", " + kShapeName[s] + ", x = " + std::to_string(x);
  if (st == FG_OK) {
    EXPECT_FALSE(raw_over) << what;
    EXPECT_EQ(std::memcmp(q.data(), raw.data(), bb), 0) << what;
    std::vector<float> y(v.size());
    EXPECT_EQ(fg_quant_decode_row(t, q.data(), bb, y.data(), (int64_t)y.size()), FG_OK);
    for (float f : y) EXPECT_TRUE(std::isfinite(f)) << what;
  } else {
    EXPECT_EQ(st, FG_ERR_RANGE) << what << ": " << fg_last_error();
    EXPECT_TRUE(raw_over) << what << ": refused, yet the ggml encoder's fields are finite";
  }
  return st;
}

struct Edge {
  fg_dtype t;
  Shape s;
  uint32_t last_ok;   // every x up to this (bits) is accepted
  uint32_t first_bad; // every x from this on is refused; in between the fit decides
};

// For Q4_K and Q5_K with positive values the least-squares fit may take a scale of x/14 or
// x/15 (x/30, x/31), so the edge is a band where the choice flips; every other edge is one
// ulp wide.
const Edge kEdges[] = {
    {FG_Q4_0, kConst, 0x48ffefffu, 0x48fff000u},  // 524159.969 .. 524160
    {FG_Q4_0, kConstNeg, 0x48ffefffu, 0x48fff000u},  // 524159.969 .. 524160
    {FG_Q4_0, kSpike, 0x48ffefffu, 0x48fff000u},  // 524159.969 .. 524160
    {FG_Q4_0, kSpikeNeg, 0x48ffefffu, 0x48fff000u},  // 524159.969 .. 524160
    {FG_Q4_1, kConst, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q4_1, kConstNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q4_1, kSpike, 0x496ff0ffu, 0x496ff100u},  // 982799.938 .. 982800
    {FG_Q4_1, kSpikeNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q5_0, kConst, 0x497fefffu, 0x497ff000u},  // 1048319.94 .. 1048320
    {FG_Q5_0, kConstNeg, 0x497fefffu, 0x497ff000u},  // 1048319.94 .. 1048320
    {FG_Q5_0, kSpike, 0x497fefffu, 0x497ff000u},  // 1048319.94 .. 1048320
    {FG_Q5_0, kSpikeNeg, 0x497fefffu, 0x497ff000u},  // 1048319.94 .. 1048320
    {FG_Q5_1, kConst, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q5_1, kConstNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q5_1, kSpike, 0x49f7f07fu, 0x49f7f080u},  // 2031119.88 .. 2031120
    {FG_Q5_1, kSpikeNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q8_0, kConst, 0x4afdf01fu, 0x4afdf020u},  // 8321039.5 .. 8321040
    {FG_Q8_0, kConstNeg, 0x4afdf01fu, 0x4afdf020u},  // 8321039.5 .. 8321040
    {FG_Q8_0, kSpike, 0x4afdf01fu, 0x4afdf020u},  // 8321039.5 .. 8321040
    {FG_Q8_0, kSpikeNeg, 0x4afdf01fu, 0x4afdf020u},  // 8321039.5 .. 8321040
    {FG_Q8_1, kConst, 0x44ffefffu, 0x44fff000u},  // 2047.49988 .. 2047.5
    {FG_Q8_1, kConstNeg, 0x44ffefffu, 0x44fff000u},  // 2047.49988 .. 2047.5
    {FG_Q8_1, kSpike, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q8_1, kSpikeNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q2_K, kConst, 0x4a33f4c0u, 0x4a33f4c1u},  // 2948400 .. 2948400.25
    {FG_Q2_K, kConstNeg, 0x496ff0ffu, 0x496ff100u},  // 982799.938 .. 982800
    {FG_Q2_K, kSpike, 0x4a33f4c0u, 0x4a33f4c1u},  // 2948400 .. 2948400.25
    {FG_Q2_K, kSpikeNeg, 0x496ff0ffu, 0x496ff100u},  // 982799.938 .. 982800
    {FG_Q3_K, kConst, 0x4afff000u, 0x4afff001u},  // 8386560 .. 8386560.5
    {FG_Q3_K, kConstNeg, 0x4afff000u, 0x4afff001u},  // 8386560 .. 8386560.5
    {FG_Q3_K, kSpike, 0x4afff000u, 0x4afff001u},  // 8386560 .. 8386560.5
    {FG_Q3_K, kSpikeNeg, 0x4afff000u, 0x4afff001u},  // 8386560 .. 8386560.5
    {FG_Q4_K, kConst, 0x4c5c72b8u, 0x4c6c313du},  // 57789152 .. 61916404
    {FG_Q4_K, kConstNeg, 0x4a7bf03fu, 0x4a7bf040u},  // 4127759.75 .. 4127760
    {FG_Q4_K, kSpike, 0x4c5c723au, 0x4c6c313cu},  // 57788648 .. 61916400
    {FG_Q4_K, kSpikeNeg, 0x4a7bf03fu, 0x4a7bf040u},  // 4127759.75 .. 4127760
    {FG_Q5_K, kConst, 0x4cef7cdfu, 0x4cf410bfu},  // 125560568 .. 127960568
    {FG_Q5_K, kConstNeg, 0x4a7bf03fu, 0x4a7bf040u},  // 4127759.75 .. 4127760
    {FG_Q5_K, kSpike, 0x4cef7ccdu, 0x4cf410beu},  // 125560424 .. 127960560
    {FG_Q5_K, kSpikeNeg, 0x4a7bf03fu, 0x4a7bf040u},  // 4127759.75 .. 4127760
    {FG_Q6_K, kConst, 0x4d7ff000u, 0x4d7ff001u},  // 268369920 .. 268369936
    {FG_Q6_K, kConstNeg, 0x4d7ff000u, 0x4d7ff001u},  // 268369920 .. 268369936
    {FG_Q6_K, kSpike, 0x4d7ff000u, 0x4d7ff001u},  // 268369920 .. 268369936
    {FG_Q6_K, kSpikeNeg, 0x4d7ff000u, 0x4d7ff001u},  // 268369920 .. 268369936
    {FG_TQ1_0, kConst, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_TQ1_0, kConstNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_TQ1_0, kSpike, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_TQ1_0, kSpikeNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_TQ2_0, kConst, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_TQ2_0, kConstNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_TQ2_0, kSpike, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_TQ2_0, kSpikeNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_IQ4_NL, kConst, 0x4ae1f1dbu, 0x4ae1f1eau},  // 7403757.5 .. 7403765
    {FG_IQ4_NL, kConstNeg, 0x4ae1f1dbu, 0x4ae1f1eau},  // 7403757.5 .. 7403765
    {FG_IQ4_NL, kSpike, 0x4ae1f1e0u, 0x4ae1f1e1u},  // 7403760 .. 7403760.5
    {FG_IQ4_NL, kSpikeNeg, 0x4ae1f1e0u, 0x4ae1f1e1u},  // 7403760 .. 7403760.5
    {FG_IQ4_XS, kConst, 0x4d61f1dbu, 0x4d61f1eau},  // 236920240 .. 236920480
    {FG_IQ4_XS, kConstNeg, 0x4d61f1dbu, 0x4d61f1eau},  // 236920240 .. 236920480
    {FG_IQ4_XS, kSpike, 0x4d61f1e0u, 0x4d61f1e1u},  // 236920320 .. 236920336
    {FG_IQ4_XS, kSpikeNeg, 0x4d61f1e0u, 0x4d61f1e1u},  // 236920320 .. 236920336
    {FG_Q1_0, kConst, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q1_0, kConstNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q1_0, kSpike, 0x4affefffu, 0x4afff000u},  // 8386559.5 .. 8386560
    {FG_Q1_0, kSpikeNeg, 0x4affefffu, 0x4afff000u},  // 8386559.5 .. 8386560
    {FG_Q2_0, kConst, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q2_0, kConstNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q2_0, kSpike, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    {FG_Q2_0, kSpikeNeg, 0x477fefffu, 0x477ff000u},  // 65519.9961 .. 65520
    // Q8_K: an f32 scale; only FLT_MAX makes scale x 127 overflow
    {FG_Q8_K, kConst, 0x7f7ffffeu, 0x7f7fffffu},
    {FG_Q8_K, kConstNeg, 0x7f7ffffeu, 0x7f7fffffu},
    {FG_Q8_K, kSpike, 0x7f7ffffeu, 0x7f7fffffu},
    {FG_Q8_K, kSpikeNeg, 0x7f7ffffeu, 0x7f7fffffu},
};

TEST(QuantRange, ExactEdgesEitherSide) {
  for (const Edge &e : kEdges) {
    const float lo = f_bits(e.last_ok), hi = f_bits(e.first_bad);
    EXPECT_EQ(encode_checked(e.t, e.s, lo), FG_OK);
    EXPECT_EQ(encode_checked(e.t, e.s, hi), FG_ERR_RANGE);
    if (e.first_bad != e.last_ok + 1) {  // a band: the first value past it refused, the last before it taken
      EXPECT_EQ(encode_checked(e.t, e.s, std::nextafter(lo, INFINITY)), FG_ERR_RANGE);
      EXPECT_EQ(encode_checked(e.t, e.s, std::nextafter(hi, 0.0f)), FG_OK);
    }
    EXPECT_EQ(encode_checked(e.t, e.s, lo / 2), FG_OK);
    if (e.t == FG_Q8_K) continue;  // its edge is FLT_MAX itself
    EXPECT_EQ(encode_checked(e.t, e.s, hi * 2), FG_ERR_RANGE);
    EXPECT_EQ(encode_checked(e.t, e.s, 1e9f), FG_ERR_RANGE);
    EXPECT_EQ(encode_checked(e.t, e.s, 3.0e38f), FG_ERR_RANGE);
  }
}

// The case: 1e7 in a q8_0 row needs a scale of 78740 > 65504.
TEST(QuantRange, MessageNamesRowBlockAndElement) {
  std::vector<float> x(4 * 256, 0.25f);
  x[2 * 256 + 100] = 1e7f;
  std::vector<uint8_t> q(fgq::row_bytes(FG_Q8_0, 256) * 4);
  ASSERT_EQ(fg_quant_encode_rows(FG_Q8_0, x.data(), 4, 256, q.data(), q.size()), FG_ERR_RANGE);
  const std::string m = fg_last_error();
  EXPECT_NE(m.find("q8_0"), std::string::npos) << m;
  EXPECT_NE(m.find("row 2, block 3 (elements 96..127)"), std::string::npos) << m;
  EXPECT_NE(m.find("10000000 at element 100"), std::string::npos) << m;
  // one row: no row in the message
  ASSERT_EQ(fg_quant_encode_row(FG_Q8_0, x.data() + 512, 256, q.data(), fgq::row_bytes(FG_Q8_0, 256)), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("q8_0: block 3 (elements 96..127)"), std::string::npos)
      << fg_last_error();
}

// The first problem in row-major order is reported, whatever the thread count: a NaN before
// an overflowing block is FG_ERR_NONFINITE, after it FG_ERR_RANGE.
TEST(QuantRange, FirstProblemWins) {
  const int64_t rows = 512, n = 256;
  std::vector<float> x((size_t)(rows * n), 0.5f);
  std::vector<uint8_t> q(fgq::row_bytes(FG_Q4_0, n) * rows);
  x[(size_t)(300 * n + 40)] = 1e9f;
  x[(size_t)(400 * n + 3)] = NAN;
  ASSERT_EQ(fg_quant_encode_rows(FG_Q4_0, x.data(), rows, n, q.data(), q.size()), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("row 300, block 1 (elements 32..63)"), std::string::npos)
      << fg_last_error();
  x[(size_t)(200 * n + 7)] = -INFINITY;
  ASSERT_EQ(fg_quant_encode_rows(FG_Q4_0, x.data(), rows, n, q.data(), q.size()), FG_ERR_NONFINITE);
  EXPECT_NE(std::string(fg_last_error()).find("-Inf at row 200, element 7"), std::string::npos) << fg_last_error();
}

// Past 2^32 the k-quant and IQ4 searches overflow f32 and may come out with finite but
// meaningless fields (the raw Q6_K encoder writes an all-zero block for 1e13 spread out);
// such blocks are refused before they are encoded. No block of these types holds more than
// 2^28, so nothing representable is lost.
TEST(QuantRange, SearchTypesRefuseBlocksBeyond2To32) {
  const fg_dtype search[] = {FG_Q2_K, FG_Q3_K, FG_Q4_K, FG_Q5_K, FG_Q6_K, FG_IQ4_NL, FG_IQ4_XS};
  for (fg_dtype t : search) {
    const size_t be = fg_dtype_info(t)->block_elems, bb = fg_dtype_info(t)->block_bytes;
    for (float big : {4294967296.0f, 1e13f, 1e20f, 3.0e38f}) {
      std::vector<float> v(be);
      for (size_t i = 0; i < be; i++) v[i] = (i % 3 == 0 ? big : 1.0f) * (i % 2 ? -1.0f : 1.0f) / (float)(1 + i % 7);
      v[0] = big;
      std::vector<uint8_t> q(bb);
      EXPECT_EQ(fg_quant_encode_row(t, v.data(), (int64_t)be, q.data(), bb), FG_ERR_RANGE)
          << fg_dtype_name(t) << " " << big;
    }
  }
  // what the guard prevents: the raw encoder's finite-looking block for such input
  std::vector<float> v(256);
  for (size_t i = 0; i < v.size(); i++) v[i] = (float)std::ldexp(1.0, 43 + (int)(i % 3)) * (i % 2 ? -1.0f : 1.0f);
  std::vector<uint8_t> raw(210), q(210);
  fg_qenc_q6_K(v.data(), raw.data());
  std::vector<float> y(256);
  ASSERT_EQ(fg_quant_decode_row(FG_Q6_K, raw.data(), raw.size(), y.data(), 256), FG_OK);
  bool garbage = false;
  for (size_t i = 0; i < y.size(); i++) garbage |= !(std::fabs(y[i] - v[i]) < 0.5f * std::fabs(v[i]));
  EXPECT_TRUE(garbage) << "the raw Q6_K encoder now handles 2^43..2^45; the guard may be unneeded";
  EXPECT_EQ(fg_quant_encode_row(FG_Q6_K, v.data(), 256, q.data(), q.size()), FG_ERR_RANGE);
}

// MXFP4 (an exponent) and NVFP4 (a scale that saturates at 448, as ggml's, so values beyond
// 2688 clip) take every finite value.
TEST(QuantRange, Fp4TypesTakeEveryFiniteValue) {
  for (fg_dtype t : {FG_MXFP4, FG_NVFP4}) {
    for (Shape s : {kConst, kConstNeg, kSpike, kSpikeNeg})
      for (float x : {1.0f, 65520.0f, 1e7f, 1e20f, 3.4028235e38f}) {
        const std::vector<float> v = block(t, s, x);
        std::vector<uint8_t> q(fg_dtype_info(t)->block_bytes);
        std::vector<float> y(v.size());
        ASSERT_EQ(fg_quant_encode_row(t, v.data(), (int64_t)v.size(), q.data(), q.size()), FG_OK)
            << fg_dtype_name(t) << " " << x << ": " << fg_last_error();
        ASSERT_EQ(fg_quant_decode_row(t, q.data(), q.size(), y.data(), (int64_t)y.size()), FG_OK);
        for (float f : y) EXPECT_TRUE(std::isfinite(f)) << fg_dtype_name(t) << " " << x;
      }
  }
}

// An export that meets such a block fails naming the tensor, and leaves no output.
TEST(QuantRange, ExportNamesTheTensor) {
  fgt::TempDir dir;
  std::vector<float> v(4 * 64, 0.125f);
  v[64 + 40] = 1e7f;
  fgx::Tensor ok{"blk.0.ok.weight", FG_F32, {4, 64}, {}}, bad{"blk.0.attn_q.weight", FG_F32, {4, 64}, {}};
  ok.data.resize(v.size() * 4, 0);
  bad.data.resize(v.size() * 4);
  std::memcpy(bad.data.data(), v.data(), bad.data.size());
  const std::string in = dir.file("m.safetensors"), out = dir.file("out.gguf");
  fgx::write_safetensors(in, {ok, bad});
  ASSERT_EQ(fgx::export_file(in, false, fgx::opts("q8_0"), out), FG_ERR_RANGE);
  const std::string m = fg_last_error();
  EXPECT_NE(m.find("blk.0.attn_q.weight"), std::string::npos) << m;
  EXPECT_NE(m.find("block 1 (elements 32..63)"), std::string::npos) << m;
  EXPECT_FALSE(std::ifstream(out).good());
}

}  // namespace
