// Softmax, nll and nll's gradient (forgia/softmax.h) against f64 models: values on rows as
// long as vocabularies, the gradient against its formula and against central differences
// of the nll, NaN for a target out of range, in place, and every refusal before anything is
// written. CPU == scalar loop at every thread count and CPU == CUDA are
// tests/cpu/test_families.cpp and tests/cuda/test_cuda_families.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~Cpu() { fg_device_close(dev); }
};

// Row r of x: its softmax and log-sum-exp in f64.
std::vector<double> softmax64(const float *x, size_t n, double *lse) {
  double m = -INFINITY, s = 0;
  for (size_t j = 0; j < n; j++) m = std::max(m, (double)x[j]);
  std::vector<double> y(n);
  for (size_t j = 0; j < n; j++) s += (y[j] = std::exp((double)x[j] - m));
  for (double &v : y) v /= s;
  *lse = m + std::log(s);
  return y;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint64_t bits64(double f) {
  uint64_t u;
  std::memcpy(&u, &f, 8);
  return u;
}

// Softmax, nll and its gradient on rows x cols logits against the f64 model.
void check_against_f64(size_t rows, size_t cols, float spread, uint64_t seed) {
  Cpu cpu;
  const std::vector<float> x = fgt::gaussian(rows * cols, seed, spread);
  std::vector<int32_t> tg(rows);
  for (size_t r = 0; r < rows; r++) tg[r] = (int32_t)((r * 104729 + 17) % cols);
  std::vector<float> y(rows * cols), dx(rows * cols);
  std::vector<double> nll(rows);
  const float scale = 0.25f;
  ASSERT_EQ(FG_OK, fg_softmax_rows(cpu.dev, x.data(), rows, cols, y.data(), nullptr)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_softmax_nll(cpu.dev, x.data(), rows, cols, tg.data(), nll.data(), nullptr)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_softmax_nll_backward(cpu.dev, x.data(), rows, cols, tg.data(), scale, dx.data(), nullptr))
      << fg_last_error();
  for (size_t r = 0; r < rows; r++) {
    double lse = 0;
    const std::vector<double> p = softmax64(&x[r * cols], cols, &lse);
    // nll = lse - x_t in f64 from f32 exponentials within 2 ulp: a few 1e-7 at most.
    EXPECT_NEAR(nll[r], lse - (double)x[r * cols + tg[r]], 1e-6 * (1 + std::fabs(lse))) << r;
    size_t bad_y = 0, bad_dx = 0;
    const float *xr = &x[r * cols];
    const float m = *std::max_element(xr, xr + cols);
    for (size_t j = 0; j < cols; j++) {
      // The contract rounds x_j - m to f32 before exp: a relative error of up to
      // |x_j - m| 2^-24 on e_j, beside exp's 2 ulp and the final rounding.
      const double tol = (4.0 + std::fabs((double)xr[j] - m)) * 0x1p-24;
      bad_y += !(std::fabs(y[r * cols + j] - p[j]) <= tol * p[j] + 1e-38);
      const double g = scale * (p[j] - ((int32_t)j == tg[r] ? 1.0 : 0.0));
      bad_dx += !(std::fabs(dx[r * cols + j] - g) <= tol * scale * p[j] + 0x1p-24 * std::fabs(g) + 1e-38);
    }
    EXPECT_EQ(0u, bad_y) << "row " << r;
    EXPECT_EQ(0u, bad_dx) << "row " << r;
  }
}

TEST(Softmax, ShortRowsMatchTheF64Model) { check_against_f64(9, 37, 3.0f, 1); }
TEST(Softmax, VocabularyRowsMatchTheF64Model) { check_against_f64(6, 49152, 4.0f, 2); }
TEST(Softmax, TheLongestVocabularyRowMatchesTheF64Model) { check_against_f64(2, 262144, 6.0f, 3); }
TEST(Softmax, OneColumnIsCertainty) { check_against_f64(4, 1, 3.0f, 4); }

// Logits far from 0 and masked (-inf) columns: the max is subtracted first.
TEST(Softmax, HugeAndMaskedLogits) {
  Cpu cpu;
  std::vector<float> x = {1e30f, 1e30f - 1e24f, -INFINITY, 1e30f, -1e30f, 3.0f, -INFINITY, 2.0f};
  std::vector<float> y(8);
  ASSERT_EQ(FG_OK, fg_softmax_rows(cpu.dev, x.data(), 2, 4, y.data(), nullptr)) << fg_last_error();
  EXPECT_EQ(0.5f, y[0]);
  EXPECT_EQ(0.0f, y[1]);
  EXPECT_EQ(0.0f, y[2]);
  EXPECT_EQ(0.5f, y[3]);
  EXPECT_EQ(0.0f, y[4]);
  EXPECT_EQ(0.0f, y[6]);
  EXPECT_NEAR(y[5], 1 / (1 + std::exp(-1.0)), 1e-7);
  EXPECT_NEAR(y[7], 1 / (1 + std::exp(1.0)), 1e-7);
  // nll in f64 keeps log 2 next to logits of 80 (not next to 1e30: f64 has no room there).
  const std::vector<float> xn = {80.0f, -30.0f, -INFINITY, 80.0f, -1e30f, 3.0f, -INFINITY, 2.0f};
  std::vector<int32_t> tg = {0, 1};
  std::vector<double> nll(2);
  ASSERT_EQ(FG_OK, fg_softmax_nll(cpu.dev, xn.data(), 2, 4, tg.data(), nll.data(), nullptr)) << fg_last_error();
  EXPECT_NEAR(nll[0], std::log(2.0), 1e-7);
  EXPECT_NEAR(nll[1], std::log1p(std::exp(-1.0)), 1e-7);
}

TEST(Softmax, InPlaceGivesTheBitsOfOutOfPlace) {
  Cpu cpu;
  const size_t rows = 37, cols = 4099;
  std::vector<float> x = fgt::gaussian(rows * cols, 5, 5.0f), y(rows * cols), z = x;
  ASSERT_EQ(FG_OK, fg_softmax_rows(cpu.dev, x.data(), rows, cols, y.data(), nullptr)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_softmax_rows(cpu.dev, z.data(), rows, cols, z.data(), nullptr)) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(y.data(), z.data(), y.size() * 4));
}

TEST(Softmax, TargetsOutOfRangeGiveNanRows) {
  Cpu cpu;
  const size_t rows = 4, cols = 10;
  const std::vector<float> x = fgt::gaussian(rows * cols, 6);
  const std::vector<int32_t> tg = {3, 10, -1, 9};
  std::vector<double> nll(rows);
  std::vector<float> dx(rows * cols);
  ASSERT_EQ(FG_OK, fg_softmax_nll(cpu.dev, x.data(), rows, cols, tg.data(), nll.data(), nullptr)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_softmax_nll_backward(cpu.dev, x.data(), rows, cols, tg.data(), 1.0f, dx.data(), nullptr))
      << fg_last_error();
  for (size_t r : {1, 2}) {
    EXPECT_EQ(0x7ff8000000000000ull, bits64(nll[r])) << r;
    for (size_t j = 0; j < cols; j++) EXPECT_EQ(0x7fc00000u, bits(dx[r * cols + j])) << r << "," << j;
  }
  for (size_t r : {0, 3}) {
    EXPECT_TRUE(std::isfinite(nll[r]) && nll[r] > 0) << r;
    for (size_t j = 0; j < cols; j++) EXPECT_TRUE(std::isfinite(dx[r * cols + j])) << r << "," << j;
  }
}

// The gradient is the derivative of scale * sum of nll: central differences of the
// library's own nll, one logit at a time (h a power of two, so x +- h is exact).
TEST(Softmax, BackwardIsTheDerivativeOfNll) {
  Cpu cpu;
  const size_t rows = 3, cols = 23;
  std::vector<float> x = fgt::gaussian(rows * cols, 7, 2.0f), dx(rows * cols);
  const std::vector<int32_t> tg = {4, 0, 22};
  const float scale = 0.5f, h = 1.0f / 1024;
  ASSERT_EQ(FG_OK, fg_softmax_nll_backward(cpu.dev, x.data(), rows, cols, tg.data(), scale, dx.data(), nullptr))
      << fg_last_error();
  auto loss = [&](const std::vector<float> &xs) {
    std::vector<double> nll(rows);
    EXPECT_EQ(FG_OK, fg_softmax_nll(cpu.dev, xs.data(), rows, cols, tg.data(), nll.data(), nullptr)) << fg_last_error();
    double s = 0;
    for (double v : nll) s += scale * v;
    return s;
  };
  for (size_t i = 0; i < rows * cols; i++) {
    std::vector<float> xp = x, xm = x;
    xp[i] += h, xm[i] -= h;
    const double fd = (loss(xp) - loss(xm)) / (2.0 * h);
    // Truncation h^2 / 6 * |f'''| < 1e-7; the f32 exponentials' rounding / h < 1e-4.
    EXPECT_NEAR(dx[i], fd, 2e-4) << i;
  }
}

TEST(Softmax, RefusesBadCallsBeforeWriting) {
  Cpu cpu;
  std::vector<float> x(8, 1.0f), y(8, 7.0f), dx(8, 7.0f);
  std::vector<double> nll(2, 7.0);
  std::vector<int32_t> tg = {0, 1};
  const std::vector<float> y0 = y, dx0 = dx;
  fg_device *d = cpu.dev;
  struct Bad {
    fg_status st;
    const char *words;
    std::function<fg_status()> call;
  };
  const std::vector<Bad> bad = {
      {FG_ERR_INVALID_ARG, "fg_softmax_rows: NULL device",
       [&] { return fg_softmax_rows(nullptr, x.data(), 2, 4, y.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_rows: NULL x",
       [&] { return fg_softmax_rows(d, nullptr, 2, 4, y.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_rows: NULL y",
       [&] { return fg_softmax_rows(d, x.data(), 2, 4, nullptr, nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_rows: 2 rows of 0 columns",
       [&] { return fg_softmax_rows(d, x.data(), 2, 0, y.data(), nullptr); }},
      {FG_ERR_OVERFLOW, "fg_softmax_rows: 2305843009213693951 x 4 values overflow",
       [&] { return fg_softmax_rows(d, x.data(), SIZE_MAX / 8, 4, y.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_rows: y overlaps x",
       [&] { return fg_softmax_rows(d, x.data(), 2, 4, x.data() + 1, nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll: NULL logits",
       [&] { return fg_softmax_nll(d, nullptr, 2, 4, tg.data(), nll.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll: NULL targets",
       [&] { return fg_softmax_nll(d, x.data(), 2, 4, nullptr, nll.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll: NULL nll",
       [&] { return fg_softmax_nll(d, x.data(), 2, 4, tg.data(), nullptr, nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll: nll overlaps logits",
       [&] { return fg_softmax_nll(d, x.data(), 2, 4, tg.data(), (double *)x.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll: nll overlaps targets",
       [&] { return fg_softmax_nll(d, x.data(), 2, 4, tg.data(), (double *)tg.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll: 2 rows of 0 columns",
       [&] { return fg_softmax_nll(d, x.data(), 2, 0, tg.data(), nll.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll_backward: scale",
       [&] { return fg_softmax_nll_backward(d, x.data(), 2, 4, tg.data(), NAN, dx.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll_backward: NULL dlogits",
       [&] { return fg_softmax_nll_backward(d, x.data(), 2, 4, tg.data(), 1.0f, nullptr, nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll_backward: NULL targets",
       [&] { return fg_softmax_nll_backward(d, x.data(), 2, 4, nullptr, 1.0f, dx.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll_backward: dlogits overlaps logits",
       [&] { return fg_softmax_nll_backward(d, x.data(), 2, 4, tg.data(), 1.0f, x.data(), nullptr); }},
      {FG_ERR_INVALID_ARG, "fg_softmax_nll_backward: dlogits overlaps targets",
       [&] { return fg_softmax_nll_backward(d, x.data(), 2, 4, tg.data(), 1.0f, (float *)tg.data(), nullptr); }},
  };
  for (const Bad &b : bad) {
    EXPECT_EQ(b.st, b.call()) << b.words;
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), b.words)) << fg_last_error();
  }
  EXPECT_EQ(0, std::memcmp(y.data(), y0.data(), y.size() * 4));
  EXPECT_EQ(0, std::memcmp(dx.data(), dx0.data(), dx.size() * 4));
  EXPECT_EQ(7.0, nll[0]);
  // No rows: nothing to do, no pointer read.
  EXPECT_EQ(FG_OK, fg_softmax_rows(d, nullptr, 0, 4, nullptr, nullptr));
  EXPECT_EQ(FG_OK, fg_softmax_nll(d, nullptr, 0, 0, nullptr, nullptr, nullptr));
  EXPECT_EQ(FG_OK, fg_softmax_nll_backward(d, nullptr, 0, 4, nullptr, 1.0f, nullptr, nullptr));
}

}  // namespace
