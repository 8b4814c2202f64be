// The linear layer's input gradient (forgia/linear.h: fg_linear_backward_x) on the CPU: for
// every dtype fg_linear takes, the exact mode against the scalar loop over elem/-decoded W
// (memcmp) and against an f64 sum over forgia/quant.h's decoding of W (a stated bound); the
// exact bits at several thread counts and on every kernel set; the exact mode against the
// forward's exact mode through W's transpose; the fast modes within rounding; accumulation;
// empty shapes; and every refusal before anything is written.
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

// Every dtype fg_linear takes: f32, f16, bf16 and the block types forgia decodes.
bool linear_type(fg_dtype t) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  if (!tr) return false;
  return t == FG_F32 || t == FG_F16 || t == FG_BF16 || (tr->is_quant && fg_quant_can_decode(t));
}

// W for a type: fgt::linear_weights for what forgia writes; arbitrary bytes (every field
// value reachable) for the block types it only decodes.
Bytes weights(fg_dtype t, size_t n_out, size_t n_in, uint64_t seed) {
  if (t == FG_F32 || t == FG_F16 || t == FG_BF16 || fg_quant_can_encode(t))
    return fgt::linear_weights(t, n_out, n_in, seed);
  const fg_dtype_traits *tr = fg_dtype_info(t);
  Bytes w(n_out * (n_in / tr->block_elems) * tr->block_bytes);
  uint64_t x = 0x243f6a8885a308d3ull + seed;
  for (uint8_t &b : w) x = x * 6364136223846793005ull + 1442695040888963407ull, b = (uint8_t)(x >> 56);
  return w;
}

struct Problem {
  size_t n_tok, n_out, n_in;
  fg_dtype t;
  std::vector<float> dy, dx0;
  Bytes w;
  Problem(size_t nt, size_t no, size_t ni, fg_dtype ty, uint64_t seed) : n_tok(nt), n_out(no), n_in(ni), t(ty) {
    dy = fgt::gaussian(nt * no, seed);
    dx0 = fgt::gaussian(nt * ni, seed + 1);
    w = weights(ty, no, ni, seed + 2);
  }
  std::vector<float> run(fg_device *dev, fg_gemm_mode mode, bool acc) const {
    std::vector<float> dx = dx0;
    EXPECT_EQ(FG_OK, fg_linear_backward_x(dev, mode, dy.data(), n_tok, n_out, w.data(), t, n_in, dx.data(), acc,
                                          nullptr))
        << fg_last_error();
    return dx;
  }
  std::vector<float> ref(bool acc) const {
    return fgt::linear_bwd_exact_ref(dy, n_tok, n_out, w, t, n_in, dx0, acc);
  }
  // W decoded by forgia/quant.h's host decoder (not elem/'s call path).
  std::vector<float> decoded() const {
    std::vector<float> rows(n_out * n_in);
    EXPECT_EQ(FG_OK, fg_quant_decode_rows(t, w.data(), w.size(), rows.data(), (int64_t)n_out, (int64_t)n_in))
        << fg_last_error();
    return rows;
  }
  // The f64 sums and sum |dy w| (the scale of an f32 sum's rounding error).
  void ref64(std::vector<double> &sum, std::vector<double> &mag) const {
    const std::vector<float> wd = decoded();
    sum.assign(n_tok * n_in, 0.0), mag.assign(n_tok * n_in, 0.0);
    for (size_t tk = 0; tk < n_tok; tk++)
      for (size_t o = 0; o < n_out; o++) {
        const double g = dy[tk * n_out + o];
        for (size_t i = 0; i < n_in; i++) {
          sum[tk * n_in + i] += g * (double)wd[o * n_in + i];
          mag[tk * n_in + i] += std::fabs(g * (double)wd[o * n_in + i]);
        }
      }
  }
};

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// |dx - dx64| <= n_out 2^-24 sum |dy w| bounds any f32 summation order (Higham's first-order
// bound, with slack), plus one rounding of the final add when accumulating. Outputs whose
// f64 sum is not finite (decode-only types' arbitrary scales) are left to the bitwise checks.
void expect_within_rounding(const Problem &p, const std::vector<float> &dx, bool acc, const char *what) {
  std::vector<double> want, mag;
  p.ref64(want, mag);
  for (size_t i = 0; i < dx.size(); i++) {
    const double w = want[i] + (acc ? (double)p.dx0[i] : 0.0);
    if (!std::isfinite(w) || !std::isfinite(mag[i])) continue;
    const double tol = (double)p.n_out * 0x1p-24 * mag[i] + (acc ? 0x1p-23 * std::fabs(w) : 0.0) + 1e-30;
    ASSERT_LE(std::fabs((double)dx[i] - w), tol) << what << " " << fg_dtype_name(p.t) << " acc " << acc << " "
                                                 << p.n_tok << "x" << p.n_out << "x" << p.n_in << " at " << i;
  }
}

TEST(LinearBwd, EveryDtypeExactEqualsScalarLoopAndF64) {
  Cpu c;
  size_t tested = 0;
  for (int d = 0; d < (int)FG_DTYPE_END; d++) {
    const fg_dtype t = (fg_dtype)d;
    if (!linear_type(t)) continue;
    Problem p(7, 70, 512, t, 100 + (uint64_t)d);  // 512: a whole number of every block
    for (bool acc : {false, true}) {
      const std::vector<float> dx = p.run(c.dev, FG_GEMM_EXACT, acc);
      EXPECT_TRUE(same_bits(dx, p.ref(acc))) << fg_dtype_name(t) << " acc " << acc;
      expect_within_rounding(p, dx, acc, "exact");
    }
    tested++;
  }
  EXPECT_GE(tested, 30u);  // f32, f16, bf16, 20 block types forgia writes, 7 it only decodes
}

// Shapes across the CPU kernels' edges: one token, token remainders after the many-token
// micro-kernel, more tokens than a token tile (120), rows of W over several panel chunks,
// columns that are not a whole number of 32-column tiles, column chunkings of odd widths.
TEST(LinearBwd, ExactEqualsScalarLoopAcrossShapes) {
  Cpu c;
  struct Shape {
    size_t n_tok, n_out, n_in;
  };
  const Shape shapes[] = {{1, 33, 256}, {7, 300, 512}, {13, 70, 768}, {250, 40, 256}, {5, 1100, 1024}};
  int k = 0;
  for (fg_dtype t : {FG_F32, FG_F16, FG_BF16, FG_Q4_0, FG_Q4_1, FG_Q5_0, FG_Q8_0, FG_Q4_K, FG_Q6_K})
    for (const Shape &s : shapes) {
      Problem p(s.n_tok, s.n_out, s.n_in, t, 300 + (uint64_t)k++);
      for (bool acc : {false, true})
        EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_EXACT, acc), p.ref(acc)))
            << fg_dtype_name(t) << " " << s.n_tok << "x" << s.n_out << "x" << s.n_in << " acc " << acc;
    }
  // Float weights of any width: tiles padded past the last column.
  for (size_t n_in : {1, 31, 45, 97}) {
    Problem p(9, 77, n_in, FG_F32, 400 + n_in);
    EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_EXACT, true), p.ref(true))) << "n_in " << n_in;
  }
}

TEST(LinearBwd, ExactBitsIndependentOfThreadsAndKernelSet) {
  Cpu c;
  const int saved = omp_get_max_threads();
  for (fg_dtype t : {FG_Q4_0, FG_Q4_K, FG_F16}) {
    Problem p(130, 300, 608 + (t == FG_Q4_K ? 160 : 0), t, 7);
    const std::vector<float> want = p.ref(true);
    for (const char *kern : {"", "generic"}) {
      setenv("FORGIA_CPU_LINEAR_KERNEL", kern, 1);
      for (int th : {1, 2, 3, 7}) {
        omp_set_num_threads(th);
        EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_EXACT, true), want))
            << fg_dtype_name(t) << " threads " << th << " kernel '" << kern << "'";
      }
    }
    unsetenv("FORGIA_CPU_LINEAR_KERNEL");
  }
  omp_set_num_threads(saved);
}

// The same sums through the forward: for f32 weights, dx = dy W is fg_linear's y = dy (W^T)^T
// with W^T stored, and both exact modes step o in order: the same bits from two kernels.
TEST(LinearBwd, ExactEqualsForwardThroughTheTranspose) {
  Cpu c;
  const size_t n_tok = 11, n_out = 200, n_in = 96;
  Problem p(n_tok, n_out, n_in, FG_F32, 21);
  std::vector<float> wt(n_in * n_out);
  for (size_t o = 0; o < n_out; o++)
    for (size_t i = 0; i < n_in; i++) std::memcpy(&wt[i * n_out + o], p.w.data() + 4 * (o * n_in + i), 4);
  for (bool acc : {false, true}) {
    std::vector<float> y = p.dx0;
    ASSERT_EQ(FG_OK, fg_linear(c.dev, FG_GEMM_EXACT, p.dy.data(), n_tok, n_out, wt.data(), FG_F32, n_in, y.data(), acc,
                               nullptr))
        << fg_last_error();
    EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_EXACT, acc), y)) << "acc " << acc;
  }
}

TEST(LinearBwd, DefaultModeFollowsTheDevice) {
  Cpu c;
  Problem p(20, 64, 256, FG_Q8_0, 9);
  ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(c.dev, FG_GEMM_EXACT));
  EXPECT_TRUE(same_bits(p.run(c.dev, FG_GEMM_DEFAULT, false), p.ref(false)));
  ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(c.dev, FG_GEMM_DEFAULT));
}

// The fast modes (sgemm on decoded tiles from 8 tokens, f32 weights handed over as they are;
// the exact path below) within the f64 bound, on both kernel sets, at 1 and 2 threads.
TEST(LinearBwd, FastModesWithinRoundingOfF64) {
  Cpu c;
  const int saved = omp_get_max_threads();
  int k = 0;
  for (const char *kern : {"", "generic"})
    for (fg_dtype t : {FG_F32, FG_F16, FG_BF16, FG_Q4_1, FG_Q5_0, FG_Q8_0, FG_Q4_K, FG_Q6_K})
      for (size_t n_tok : {1, 3, 20, 130}) {
        Problem p(n_tok, 300, 512, t, 700 + (uint64_t)k++);
        setenv("FORGIA_CPU_LINEAR_KERNEL", kern, 1);
        omp_set_num_threads(1 + k % 2);
        for (fg_gemm_mode mode : {FG_GEMM_FAST, FG_GEMM_FAST_TF32})
          for (bool acc : {false, true}) expect_within_rounding(p, p.run(c.dev, mode, acc), acc, kern);
        unsetenv("FORGIA_CPU_LINEAR_KERNEL");
      }
  omp_set_num_threads(saved);
}

TEST(LinearBwd, EmptyShapes) {
  Cpu c;
  const std::vector<float> dy(8, 1.0f), w(8, 1.0f);
  const std::vector<float> dx = {1.5f, -2.0f, 3.0f, 4.0f};
  // n_tok == 0 or n_in == 0: dx is empty, nothing runs, NULL buffers are fine.
  EXPECT_EQ(FG_OK, fg_linear_backward_x(c.dev, FG_GEMM_EXACT, nullptr, 0, 4, nullptr, FG_F32, 8, nullptr, false, nullptr));
  EXPECT_EQ(FG_OK, fg_linear_backward_x(c.dev, FG_GEMM_FAST, nullptr, 4, 8, nullptr, FG_Q4_0, 0, nullptr, false, nullptr));
  // n_out == 0: every sum is +0 (and W and dy have no bytes to read).
  for (fg_gemm_mode mode : {FG_GEMM_EXACT, FG_GEMM_FAST}) {
    std::vector<float> z = dx;
    EXPECT_EQ(FG_OK, fg_linear_backward_x(c.dev, mode, nullptr, 2, 0, nullptr, FG_F32, 2, z.data(), false, nullptr));
    for (float v : z) EXPECT_TRUE(v == 0.0f && !std::signbit(v));
    std::vector<float> q = fgt::gaussian(2 * 256, 5);
    const std::vector<float> q0 = q;
    EXPECT_EQ(FG_OK, fg_linear_backward_x(c.dev, mode, dy.data(), 2, 0, w.data(), FG_Q4_K, 256, q.data(), true, nullptr));
    EXPECT_TRUE(same_bits(q, q0));
  }
  EXPECT_EQ(FG_ERR_INVALID_ARG,
            fg_linear_backward_x(c.dev, FG_GEMM_EXACT, nullptr, 2, 0, nullptr, FG_F32, 2, nullptr, false, nullptr));
}

// A NaN anywhere in a sum gives the canonical quiet NaN in the exact mode.
TEST(LinearBwd, ExactNaNIsCanonical) {
  Cpu c;
  std::vector<float> dy(64, 1.0f), w(64 * 2, 0.5f), dx(2);
  const uint32_t payload = 0xffc12345u;
  std::memcpy(&dy[10], &payload, 4);
  ASSERT_EQ(FG_OK,
            fg_linear_backward_x(c.dev, FG_GEMM_EXACT, dy.data(), 1, 64, w.data(), FG_F32, 2, dx.data(), false, nullptr));
  for (float v : dx) EXPECT_EQ(0x7fc00000u, fg_f32_bits(v));
}

void expect_refusal(fg_status got, fg_status want, const char *word) {
  EXPECT_EQ(want, got) << word;
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), word)) << fg_last_error();
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "fg_linear_backward_x")) << fg_last_error();
}

TEST(LinearBwd, Refusals) {
  Cpu c;
  const size_t n_tok = 4, n_out = 8, n_in = 64;
  std::vector<float> dy(n_tok * n_out, 1.0f), dx(n_tok * n_in, 7.0f);
  Bytes w = fgt::linear_weights(FG_Q4_0, n_out, n_in, 1);
  const std::vector<float> dx_before = dx;
  const float *g = dy.data();
  float *x = dx.data();
  expect_refusal(fg_linear_backward_x(nullptr, FG_GEMM_EXACT, g, n_tok, n_out, w.data(), FG_Q4_0, n_in, x, false, nullptr),
                 FG_ERR_INVALID_ARG, "device");
  expect_refusal(fg_linear_backward_x(c.dev, (fg_gemm_mode)9, g, n_tok, n_out, w.data(), FG_Q4_0, n_in, x, false, nullptr),
                 FG_ERR_INVALID_ARG, "mode");
  expect_refusal(
      fg_linear_backward_x(c.dev, FG_GEMM_EXACT, nullptr, n_tok, n_out, w.data(), FG_Q4_0, n_in, x, false, nullptr),
      FG_ERR_INVALID_ARG, "NULL dy");
  expect_refusal(fg_linear_backward_x(c.dev, FG_GEMM_EXACT, g, n_tok, n_out, nullptr, FG_Q4_0, n_in, x, false, nullptr),
                 FG_ERR_INVALID_ARG, "NULL w");
  expect_refusal(
      fg_linear_backward_x(c.dev, FG_GEMM_EXACT, g, n_tok, n_out, w.data(), FG_Q4_0, n_in, nullptr, false, nullptr),
      FG_ERR_INVALID_ARG, "NULL dx");
  expect_refusal(fg_linear_backward_x(c.dev, FG_GEMM_EXACT, g, n_tok, n_out, w.data(), FG_Q4_0, 48, x, false, nullptr),
                 FG_ERR_BAD_ROW, "n_in 48");
  for (fg_dtype bad : {FG_F64, FG_I32, FG_F8_E4M3, (fg_dtype)4, (fg_dtype)100})
    expect_refusal(fg_linear_backward_x(c.dev, FG_GEMM_EXACT, g, n_tok, n_out, w.data(), bad, n_in, x, false, nullptr),
                   FG_ERR_TYPE, "dtype");
  expect_refusal(fg_linear_backward_x(c.dev, FG_GEMM_EXACT, g, (size_t)1 << 40, (size_t)1 << 30, w.data(), FG_F32, 8,
                                      x, false, nullptr),
                 FG_ERR_OVERFLOW, "overflow");
  // dx overlapping dy (dx starting inside dy's bytes) and w.
  std::vector<float> big(n_tok * (n_out + n_in), 1.0f);
  expect_refusal(fg_linear_backward_x(c.dev, FG_GEMM_EXACT, big.data(), n_tok, n_out, w.data(), FG_Q4_0, n_in,
                                      big.data() + 3, false, nullptr),
                 FG_ERR_INVALID_ARG, "dx overlaps dy");
  std::vector<float> wf(n_out * n_in, 1.0f);
  expect_refusal(
      fg_linear_backward_x(c.dev, FG_GEMM_EXACT, g, 1, n_out, wf.data(), FG_F32, n_in, wf.data() + 100, false, nullptr),
      FG_ERR_INVALID_ARG, "dx overlaps w");
  // A stream of another device.
  fg_device *other = nullptr;
  fg_stream *s = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &other)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_stream_create(other, &s)) << fg_last_error();
  expect_refusal(fg_linear_backward_x(c.dev, FG_GEMM_EXACT, g, n_tok, n_out, w.data(), FG_Q4_0, n_in, x, false, s),
                 FG_ERR_INVALID_ARG, "the stream belongs to");
  fg_stream_free(s);
  fg_device_close(other);
  EXPECT_TRUE(same_bits(dx, dx_before));
}

}  // namespace
