// The linear layer (forgia/linear.h) on the CPU: the exact mode against the scalar loop over
// ggml-dequantized rows (memcmp) for float and block weights, at several thread counts and
// on every kernel set; accumulation; the exact and fast modes against an f64 model of the sum;
// n_in == 0; and every refusal before anything is written.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "family_cases.h"
#include "forgia/forgia.h"
#include "testutil.h"

namespace {

using fgt::Bytes;

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~Cpu() { fg_device_close(dev); }
};

struct Problem {
  size_t n_tok, n_in, n_out;
  fg_dtype t;
  std::vector<float> x, y0;
  Bytes w;
  Problem(size_t nt, size_t ni, size_t no, fg_dtype ty, uint64_t seed) : n_tok(nt), n_in(ni), n_out(no), t(ty) {
    x = fgt::gaussian(nt * ni, seed);
    y0 = fgt::gaussian(nt * no, seed + 1);
    w = fgt::linear_weights(ty, no, ni, seed + 2);
  }
  std::vector<float> run(fg_device *dev, fg_gemm_mode mode, bool acc) const {
    std::vector<float> y = y0;
    EXPECT_EQ(FG_OK, fg_linear(dev, mode, x.data(), n_tok, n_in, w.data(), t, n_out, y.data(), acc, nullptr))
        << fg_last_error();
    return y;
  }
  std::vector<float> ref(bool acc) const { return fgt::linear_exact_ref(x, n_tok, n_in, w, t, n_out, y0, acc); }
  // The f64 sum over ggml's dequantized rows (forgia/quant.h's decoder, not elem/).
  std::vector<double> ref64() const {
    std::vector<float> rows(n_out * n_in);
    EXPECT_EQ(FG_OK, fg_quant_decode_rows(t, w.data(), w.size(), rows.data(), (int64_t)n_out, (int64_t)n_in))
        << fg_last_error();
    std::vector<double> y(n_tok * n_out);
    for (size_t tk = 0; tk < n_tok; tk++)
      for (size_t o = 0; o < n_out; o++) {
        double s = 0;
        for (size_t i = 0; i < n_in; i++) s += (double)x[tk * n_in + i] * (double)rows[o * n_in + i];
        y[tk * n_out + o] = s;
      }
    return y;
  }
  // sum |x_i w_i|: the scale of a sum's rounding error.
  std::vector<double> mag64() const {
    std::vector<float> rows(n_out * n_in);
    EXPECT_EQ(FG_OK, fg_quant_decode_rows(t, w.data(), w.size(), rows.data(), (int64_t)n_out, (int64_t)n_in));
    std::vector<double> m(n_tok * n_out);
    for (size_t tk = 0; tk < n_tok; tk++)
      for (size_t o = 0; o < n_out; o++) {
        double s = 0;
        for (size_t i = 0; i < n_in; i++) s += std::fabs((double)x[tk * n_in + i] * (double)rows[o * n_in + i]);
        m[tk * n_out + o] = s;
      }
    return m;
  }
};

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

const fg_dtype kTypes[] = {FG_F32, FG_F16, FG_BF16, FG_Q4_0, FG_Q4_1, FG_Q5_0, FG_Q8_0, FG_Q4_K, FG_Q6_K};

// Shapes that cross the CPU kernels' edges: one token, a token remainder after the
// many-token micro-kernel, a partial output tile, several input chunks, more tokens than a
// token tile.
struct Shape {
  size_t n_tok, n_in, n_out;
};
const Shape kShapes[] = {{1, 256, 33}, {7, 512, 70}, {13, 768, 31}, {300, 256, 40}};

TEST(Linear, ExactEqualsScalarLoop) {
  Cpu c;
  int k = 0;
  for (fg_dtype t : kTypes)
    for (const Shape &s : kShapes) {
      Problem p(s.n_tok, s.n_in, s.n_out, t, 100 + (uint64_t)k++);
      for (bool acc : {false, true})
        EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_EXACT, acc), p.ref(acc)))
            << fg_dtype_name(t) << " " << s.n_tok << "x" << s.n_in << "x" << s.n_out << " acc " << acc;
    }
}

// Scales at the edges of f16 (subnormal, -0, infinity, quiet and signalling NaN) decode to
// elem/'s floats on every kernel set, so the exact sums still equal the scalar loop's.
TEST(Linear, ExactEqualsScalarLoopWithSpecialScales) {
  Cpu c;
  const uint16_t specials[] = {0x0001, 0x03ff, 0x8000, 0x7c00, 0xfc00, 0x7d00, 0x7e01, 0x0400, 0x7bff};
  int k = 0;
  for (fg_dtype t : {FG_Q4_0, FG_Q4_1, FG_Q5_0, FG_Q8_0, FG_Q4_K, FG_Q6_K}) {
    Problem p(3, 256, 40, t, 500 + (uint64_t)k++);
    const fg_dtype_traits *tr = fg_dtype_info(t);
    // Row r < 9 gets special r as one block's d (and, for Q4_1 / Q4_K, special r + 4 as an m
    // or dmin), so each special shows in its own outputs instead of a NaN swamping them all.
    const size_t per_row = 256 / tr->block_elems;
    for (size_t r = 0; r < 9; r++) {
      uint8_t *row = p.w.data() + r * per_row * tr->block_bytes;
      std::memcpy(row + (r % per_row) * tr->block_bytes, &specials[r], 2);
      if (t == FG_Q6_K)  /* Q6_K's d is its last two bytes */
        std::memcpy(row + (r % per_row) * tr->block_bytes + 208, &specials[r], 2);
      if (t != FG_Q4_0 && t != FG_Q8_0 && t != FG_Q5_0 && t != FG_Q6_K)
        std::memcpy(row + ((r + 3) % per_row) * tr->block_bytes + 2, &specials[(r + 4) % 9], 2);
    }
    for (const char *kern : {"", "generic"}) {
      setenv("FORGIA_CPU_LINEAR_KERNEL", kern, 1);
      EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_EXACT, false), p.ref(false)))
          << fg_dtype_name(t) << " '" << kern << "'";
    }
    unsetenv("FORGIA_CPU_LINEAR_KERNEL");
  }
}

TEST(Linear, ExactBitsIndependentOfThreadsAndKernelSet) {
  Cpu c;
  Problem p(19, 1024, 150, FG_Q4_1, 7);
  const std::vector<float> want = p.ref(true);
  const int saved = omp_get_max_threads();
  for (const char *kern : {"", "generic"}) {
    setenv("FORGIA_CPU_LINEAR_KERNEL", kern, 1);
    for (int th : {1, 2, 3}) {
      omp_set_num_threads(th);
      EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_EXACT, true), want)) << "threads " << th << " kernel '" << kern << "'";
    }
  }
  unsetenv("FORGIA_CPU_LINEAR_KERNEL");
  omp_set_num_threads(saved);
}

TEST(Linear, DefaultModeFollowsTheDevice) {
  Cpu c;
  Problem p(3, 256, 20, FG_Q8_0, 9);
  ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(c.dev, FG_GEMM_EXACT));
  EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_DEFAULT, false), p.ref(false)));
  ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(c.dev, FG_GEMM_DEFAULT));
}

// Both modes against the f64 sum: |y - y64| <= n_in * 2^-24 * sum |x_i w_i| bounds any f32
// summation order (Higham's bound, first order, with slack); the exact mode is held to it as
// well, so its arithmetic is checked against a model it does not share.
TEST(Linear, ModesWithinRoundingOfF64) {
  Cpu c;
  int k = 0;
  for (fg_dtype t : kTypes)
    for (const Shape &s : {Shape{1, 1536, 57}, Shape{4, 768, 64}, Shape{64, 512, 48}, Shape{130, 256, 21}}) {
      Problem p(s.n_tok, s.n_in, s.n_out, t, 300 + (uint64_t)k++);
      const std::vector<double> want = p.ref64(), mag = p.mag64();
      for (fg_gemm_mode mode : {FG_GEMM_EXACT, FG_GEMM_FAST, FG_GEMM_FAST_TF32})
        for (bool acc : {false, true}) {
          const std::vector<float> y = p.run(c.dev, mode, acc);
          for (size_t i = 0; i < y.size(); i++) {
            const double w = want[i] + (acc ? (double)p.y0[i] : 0.0);
            const double tol = (double)s.n_in * 0x1p-24 * mag[i] + (acc ? 0x1p-23 * std::fabs(w) : 0.0) + 1e-30;
            ASSERT_LE(std::fabs((double)y[i] - w), tol)
                << fg_dtype_name(t) << " mode " << mode << " acc " << acc << " " << s.n_tok << "x" << s.n_in << "x"
                << s.n_out << " at " << i;
          }
        }
    }
}

// The fast mode's portable paths (no fused AVX2 row products), and an F16 row whose length
// is not a whole number of the fused kernel's 32-value steps.
TEST(Linear, FastPortablePathsWithinRounding) {
  Cpu c;
  int k = 0;
  for (const char *kern : {"generic", ""})
    for (fg_dtype t : {FG_F16, FG_Q4_1, FG_Q5_0, FG_Q8_0, FG_Q4_K, FG_Q6_K})
      for (size_t n_tok : {1, 3, 20}) {
        const size_t n_in = (t == FG_Q4_K || t == FG_Q6_K) ? 512 : t == FG_F16 ? 40 : 96;
        Problem p(n_tok, n_in, 45, t, 700 + (uint64_t)k++);
        setenv("FORGIA_CPU_LINEAR_KERNEL", kern, 1);
        const std::vector<float> y = p.run(c.dev, FG_GEMM_FAST, false);
        unsetenv("FORGIA_CPU_LINEAR_KERNEL");
        const std::vector<double> want = p.ref64(), mag = p.mag64();
        for (size_t i = 0; i < y.size(); i++)
          ASSERT_LE(std::fabs((double)y[i] - want[i]), (double)n_in * 0x1p-24 * mag[i] + 1e-30)
              << fg_dtype_name(t) << " kernel '" << kern << "' n_tok " << n_tok << " at " << i;
      }
}

TEST(Linear, EmptyShapes) {
  Cpu c;
  std::vector<float> y = {1.5f, -2.0f, 3.0f, 4.0f};
  const std::vector<float> x(8, 1.0f), w(8, 1.0f);
  // n_tok == 0 or n_out == 0: nothing runs, NULL buffers are fine.
  EXPECT_EQ(FG_OK, fg_linear(c.dev, FG_GEMM_EXACT, nullptr, 0, 8, nullptr, FG_F32, 4, nullptr, false, nullptr));
  EXPECT_EQ(FG_OK, fg_linear(c.dev, FG_GEMM_FAST, nullptr, 4, 32, nullptr, FG_Q4_0, 0, nullptr, false, nullptr));
  // n_in == 0: every sum is +0.
  for (fg_gemm_mode mode : {FG_GEMM_EXACT, FG_GEMM_FAST}) {
    std::vector<float> z = y;
    EXPECT_EQ(FG_OK, fg_linear(c.dev, mode, x.data(), 2, 0, w.data(), FG_F32, 2, z.data(), false, nullptr));
    for (float v : z) EXPECT_TRUE(v == 0.0f && !std::signbit(v));
    z = y;
    EXPECT_EQ(FG_OK, fg_linear(c.dev, mode, x.data(), 2, 0, w.data(), FG_Q4_K, 2, z.data(), true, nullptr));
    EXPECT_TRUE(same_bits(z, y));
  }
}

// A NaN anywhere in a sum gives the canonical quiet NaN in the exact mode.
TEST(Linear, ExactNaNIsCanonical) {
  Cpu c;
  std::vector<float> x(64, 1.0f), w(64 * 2, 0.5f), y(2);
  uint32_t payload = 0xffc12345u;
  std::memcpy(&x[10], &payload, 4);
  ASSERT_EQ(FG_OK, fg_linear(c.dev, FG_GEMM_EXACT, x.data(), 1, 64, w.data(), FG_F32, 2, y.data(), false, nullptr));
  for (float v : y) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    EXPECT_EQ(0x7fc00000u, b);
  }
}

void expect_refusal(fg_status got, fg_status want, const char *word) {
  EXPECT_EQ(want, got);
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), word)) << fg_last_error();
}

TEST(Linear, Refusals) {
  Cpu c;
  std::vector<float> x(4 * 64, 1.0f), y(4 * 8, 7.0f);
  Bytes w = fgt::linear_weights(FG_Q4_0, 8, 64, 1);
  const std::vector<float> y_before = y;
  const float *xp = x.data();
  float *yp = y.data();
  expect_refusal(fg_linear(nullptr, FG_GEMM_EXACT, xp, 4, 64, w.data(), FG_Q4_0, 8, yp, false, nullptr),
                 FG_ERR_INVALID_ARG, "device");
  expect_refusal(fg_linear(c.dev, (fg_gemm_mode)9, xp, 4, 64, w.data(), FG_Q4_0, 8, yp, false, nullptr),
                 FG_ERR_INVALID_ARG, "mode");
  expect_refusal(fg_linear(c.dev, FG_GEMM_EXACT, nullptr, 4, 64, w.data(), FG_Q4_0, 8, yp, false, nullptr),
                 FG_ERR_INVALID_ARG, "x");
  expect_refusal(fg_linear(c.dev, FG_GEMM_EXACT, xp, 4, 64, nullptr, FG_Q4_0, 8, yp, false, nullptr),
                 FG_ERR_INVALID_ARG, "w");
  expect_refusal(fg_linear(c.dev, FG_GEMM_EXACT, xp, 4, 64, w.data(), FG_Q4_0, 8, nullptr, false, nullptr),
                 FG_ERR_INVALID_ARG, "y");
  expect_refusal(fg_linear(c.dev, FG_GEMM_EXACT, xp, 4, 48, w.data(), FG_Q4_0, 8, yp, false, nullptr), FG_ERR_BAD_ROW,
                 "n_in 48");
  for (fg_dtype bad : {FG_F64, FG_I32, FG_F8_E4M3, (fg_dtype)4, (fg_dtype)100})
    expect_refusal(fg_linear(c.dev, FG_GEMM_EXACT, xp, 4, 64, w.data(), bad, 8, yp, false, nullptr), FG_ERR_TYPE,
                   "dtype");
  expect_refusal(fg_linear(c.dev, FG_GEMM_EXACT, xp, (size_t)1 << 40, (size_t)1 << 30, w.data(), FG_F32, 8, yp, false,
                           nullptr),
                 FG_ERR_OVERFLOW, "overflow");
  // y overlapping x (y inside x's bytes) and w.
  expect_refusal(fg_linear(c.dev, FG_GEMM_EXACT, xp, 2, 64, w.data(), FG_Q4_0, 8, x.data() + 64, false, nullptr),
                 FG_ERR_INVALID_ARG, "y overlaps x");
  std::vector<float> wf(8 * 64, 1.0f);
  expect_refusal(fg_linear(c.dev, FG_GEMM_EXACT, xp, 1, 64, wf.data(), FG_F32, 8, wf.data() + 100, false, nullptr),
                 FG_ERR_INVALID_ARG, "y overlaps w");
  EXPECT_TRUE(same_bits(y, y_before));
}

}  // namespace
