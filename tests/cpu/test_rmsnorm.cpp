// RMSNorm (forgia/rmsnorm.h) against an f64 model of its definition: forward values, the
// backward pass against the analytic f64 gradient and that gradient against central finite
// differences of the f64 forward, Gemma's 1 + w, and every refusal before anything is written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "testutil.h"

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~Cpu() { fg_device_close(dev); }
};

// y = x / sqrt(mean(x^2) + eps) * (w + off) in f64, one row.
std::vector<double> forward64(const std::vector<double> &x, const std::vector<double> &w, double eps, double off) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / (double)x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); i++) y[i] = x[i] * r * (w[i] + off);
  return y;
}

// The loss sum(dy * y) and its gradient in x by central differences.
std::vector<double> fd_grad(const std::vector<double> &x, const std::vector<double> &w, const std::vector<double> &dy,
                            double eps, double off) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); i++) {
    const double h = 1e-6 * std::max(1.0, std::fabs(x[i]));
    std::vector<double> xp = x, xm = x;
    xp[i] += h, xm[i] -= h;
    const std::vector<double> yp = forward64(xp, w, eps, off), ym = forward64(xm, w, eps, off);
    double lp = 0, lm = 0;
    for (size_t j = 0; j < x.size(); j++) lp += dy[j] * yp[j], lm += dy[j] * ym[j];
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

// The analytic gradient: dx = r g - r^3/n x (g . x), g = dy (w + off); dw = dy x r.
void grad64(const std::vector<double> &x, const std::vector<double> &w, const std::vector<double> &dy, double eps,
            double off, std::vector<double> *dx, std::vector<double> *dw) {
  const size_t n = x.size();
  double ss = 0, dot = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / (double)n + eps);
  for (size_t i = 0; i < n; i++) dot += dy[i] * (w[i] + off) * x[i];
  dx->resize(n), dw->resize(n);
  for (size_t i = 0; i < n; i++) {
    (*dx)[i] = r * dy[i] * (w[i] + off) - r * r * r / (double)n * x[i] * dot;
    (*dw)[i] = dy[i] * x[i] * r;
  }
}

TEST(RmsNorm, AnalyticGradientMatchesFiniteDifferencesInF64) {
  for (double off : {0.0, 1.0}) {
    const size_t n = 9;
    std::vector<double> x, w, dy, dx, dw;
    for (float v : fgt::gaussian(n, 3)) x.push_back(v);
    for (float v : fgt::gaussian(n, 4, 0.5f)) w.push_back(v);
    for (float v : fgt::gaussian(n, 5)) dy.push_back(v);
    grad64(x, w, dy, 1e-5, off, &dx, &dw);
    const std::vector<double> fd = fd_grad(x, w, dy, 1e-5, off);
    for (size_t i = 0; i < n; i++) EXPECT_NEAR(dx[i], fd[i], 1e-7 * (1 + std::fabs(fd[i]))) << i << " off " << off;
  }
}

TEST(RmsNorm, ForwardAndBackwardMatchTheF64Definition) {
  Cpu cpu;
  for (fg_dtype xt : {FG_F32, FG_F16, FG_BF16}) {
    for (float off : {0.0f, 1.0f}) {
      const size_t rows = 5, cols = 67;
      const float eps = 1e-6f;
      std::vector<float> xf = fgt::gaussian(rows * cols, 10 + xt, 3.0f), wf = fgt::gaussian(cols, 11, 0.5f),
                         dy = fgt::gaussian(rows * cols, 12);
      // x in its dtype; the f64 model reads the same (rounded) values.
      std::vector<uint16_t> xh(rows * cols);
      for (size_t i = 0; i < xf.size(); i++) {
        if (xt == FG_F16) xh[i] = fg_f32_to_f16(xf[i]), xf[i] = fg_f16_to_f32(xh[i]);
        if (xt == FG_BF16) xh[i] = fg_f32_to_bf16(xf[i]), xf[i] = fg_bf16_to_f32(xh[i]);
      }
      const void *xp = xt == FG_F32 ? (const void *)xf.data() : (const void *)xh.data();
      std::vector<float> y(rows * cols), rstd(rows), dx(rows * cols), dw(cols);
      ASSERT_EQ(FG_OK, fg_rmsnorm_forward(cpu.dev, xp, xt, wf.data(), FG_F32, rows, cols, eps, off, y.data(),
                                          rstd.data(), nullptr))
          << fg_last_error();
      ASSERT_EQ(FG_OK, fg_rmsnorm_backward(cpu.dev, xp, xt, wf.data(), FG_F32, rows, cols, off, rstd.data(), dy.data(),
                                           dx.data(), dw.data(), nullptr))
          << fg_last_error();
      std::vector<double> dw64(cols, 0.0);
      for (size_t r = 0; r < rows; r++) {
        std::vector<double> x(cols), w(cols), g(cols), dx64, dwr;
        for (size_t i = 0; i < cols; i++) x[i] = xf[r * cols + i], w[i] = wf[i], g[i] = dy[r * cols + i];
        const std::vector<double> y64 = forward64(x, w, eps, off);
        grad64(x, w, g, eps, off, &dx64, &dwr);
        for (size_t i = 0; i < cols; i++) {
          EXPECT_NEAR(y[r * cols + i], y64[i], 4e-7 * (1 + std::fabs(y64[i]))) << r << "," << i;
          EXPECT_NEAR(dx[r * cols + i], dx64[i], 4e-6 * (1 + std::fabs(dx64[i]))) << r << "," << i;
          dw64[i] += dwr[i];
        }
      }
      for (size_t i = 0; i < cols; i++) EXPECT_NEAR(dw[i], dw64[i], 4e-6 * (1 + std::fabs(dw64[i]))) << i;
    }
  }
}

TEST(RmsNorm, WeightsInHalfPrecisionEqualTheirWidenedF32) {
  Cpu cpu;
  const size_t rows = 3, cols = 40;
  std::vector<float> x = fgt::gaussian(rows * cols, 21), wf = fgt::gaussian(cols, 22), y1(rows * cols), y2(rows * cols);
  std::vector<uint16_t> wh(cols);
  for (size_t i = 0; i < cols; i++) wh[i] = fg_f32_to_bf16(wf[i]), wf[i] = fg_bf16_to_f32(wh[i]);
  ASSERT_EQ(FG_OK, fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, wh.data(), FG_BF16, rows, cols, 1e-5f, 0.0f, y1.data(),
                                      nullptr, nullptr));
  ASSERT_EQ(FG_OK, fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, wf.data(), FG_F32, rows, cols, 1e-5f, 0.0f, y2.data(),
                                      nullptr, nullptr));
  EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * 4));
}

TEST(RmsNorm, RefusesBadCallsBeforeWriting) {
  Cpu cpu;
  std::vector<float> x(8, 1.0f), w(4, 1.0f), y(8, 7.0f), rstd(2, 7.0f), dy(8, 1.0f), dx(8, 7.0f);
  const std::vector<float> y0 = y, dx0 = dx;
  struct Bad {
    fg_status st;
    const char *words;
    fg_status got;
  };
  std::vector<Bad> bad = {
      {FG_ERR_TYPE, "x has dtype q8_0",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_Q8_0, w.data(), FG_F32, 2, 4, 1e-6f, 0, y.data(), nullptr, nullptr)},
      {FG_ERR_TYPE, "w has dtype i32",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, w.data(), FG_I32, 2, 4, 1e-6f, 0, y.data(), nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "eps",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, -1.0f, 0, y.data(), nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "eps",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, NAN, 0, y.data(), nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "w_offset",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, 1e-6f, INFINITY, y.data(), nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "0 columns",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 0, 1e-6f, 0, y.data(), nullptr, nullptr)},
      {FG_ERR_OVERFLOW, "overflow",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, SIZE_MAX / 2, 4, 1e-6f, 0, y.data(), nullptr,
                          nullptr)},
      {FG_ERR_INVALID_ARG, "NULL y",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, 1e-6f, 0, nullptr, nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "NULL device",
       fg_rmsnorm_forward(nullptr, x.data(), FG_F32, w.data(), FG_F32, 2, 4, 1e-6f, 0, y.data(), nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "y overlaps",
       fg_rmsnorm_forward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, 1e-6f, 0, x.data() + 3, nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "both NULL",
       fg_rmsnorm_backward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, 0, rstd.data(), dy.data(), nullptr, nullptr,
                           nullptr)},
      {FG_ERR_INVALID_ARG, "NULL rstd",
       fg_rmsnorm_backward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, 0, nullptr, dy.data(), dx.data(), nullptr,
                           nullptr)},
      {FG_ERR_INVALID_ARG, "dx overlaps dy",
       fg_rmsnorm_backward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, 0, rstd.data(), dy.data(), dy.data(),
                           nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "dx overlaps dw",
       fg_rmsnorm_backward(cpu.dev, x.data(), FG_F32, w.data(), FG_F32, 2, 4, 0, rstd.data(), dy.data(), dx.data(),
                           dx.data() + 4, nullptr)},
  };
  for (const Bad &b : bad) EXPECT_EQ(b.st, b.got) << b.words;
  EXPECT_EQ(0, std::memcmp(y.data(), y0.data(), y.size() * 4));
  EXPECT_EQ(0, std::memcmp(dx.data(), dx0.data(), dx.size() * 4));
  EXPECT_EQ(FG_ERR_TYPE,
            fg_rmsnorm_forward(cpu.dev, x.data(), FG_Q8_0, w.data(), FG_F32, 2, 4, 1e-6f, 0, y.data(), nullptr, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "fg_rmsnorm_forward: x has dtype q8_0")) << fg_last_error();
  // Zero rows: nothing to do, nothing written.
  EXPECT_EQ(FG_OK, fg_rmsnorm_forward(cpu.dev, nullptr, FG_F32, nullptr, FG_F32, 0, 4, 1e-6f, 0, nullptr, nullptr, nullptr));
}

}  // namespace
