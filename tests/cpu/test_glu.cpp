// The gated feed-forward ops of the op table (elem/op_nn.h): SwiGLU and GeGLU (tanh GELU)
// forward against f64 definitions, the backward passes against the analytic f64 gradients
// and against central finite differences of the f64 forward, the analytic gradients against
// those differences, in-place use, and non-finite inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~Cpu() { fg_device_close(dev); }
};

const double kK = 0.7978845608028654, kC = 0.044715;

double silu64(double g) { return g / (1.0 + std::exp(-g)); }
double gelu64(double g) { return 0.5 * g * (1.0 + std::tanh(kK * (g + kC * g * g * g))); }
double silu_grad64(double g) {
  const double s = 1.0 / (1.0 + std::exp(-g));
  return s * (1.0 + g * (1.0 - s));
}
double gelu_grad64(double g) {
  const double t = std::tanh(kK * (g + kC * g * g * g));
  return 0.5 * (1.0 + t) + 0.5 * g * (1.0 - t * t) * kK * (1.0 + 3.0 * kC * g * g);
}

struct Unit {
  const char *name;
  fg_op_kind fwd, bwd;
  double (*act)(double), (*grad)(double);
  // A bound on |act(g) - f32 act(g)| and on the f32 derivative's error: the f32 functions are
  // within a few ulps where they are not near a cancellation; 1 - s (SiLU) and 1 - t^2
  // (GELU) cancel to within 2^-23 absolute, which the slopes below carry.
  double (*act_err)(double), (*grad_err)(double);
};

const Unit kUnits[] = {
    {"swiglu", FG_OP_SWIGLU, FG_OP_SWIGLU_BACKWARD, silu64, silu_grad64,
     [](double g) { return 2e-7 * std::max(1.0, std::fabs(g)); },
     [](double g) { return 1.2e-7 * (2.0 + std::fabs(g)); }},
    {"geglu", FG_OP_GEGLU, FG_OP_GEGLU_BACKWARD, gelu64, gelu_grad64,
     [](double g) { return 2e-7 * std::max(1.0, std::fabs(g)); },
     [](double g) { return 1.2e-7 * (2.0 + 0.5 * std::fabs(g) * kK * (1.0 + 3.0 * kC * g * g)); }},
};

// Gates over the range where both activations bend, plus a dense sweep and large values.
std::vector<float> gates() {
  std::vector<float> g = fgt::gaussian(4000, 11, 3.0f);
  for (int i = -4000; i <= 4000; i++) g.push_back((float)i / 200.0f);  // [-20, 20]
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 104.0f, -104.0f, 1e6f, -1e6f, 1e30f, -1e30f,
                  3e19f, -3e19f})
    g.push_back(v);
  return g;
}

void run_op(fg_device *dev, fg_op_kind op, std::vector<float *> streams, size_t n) {
  fg_op_args a;
  std::memset(&a, 0, sizeof a);
  for (size_t k = 0; k < streams.size(); k++) a.ptr[k] = streams[k], a.dtype[k] = FG_F32;
  a.n = n;
  fg_op_params p;
  std::memset(&p, 0, sizeof p);
  ASSERT_EQ(FG_OK, fg_op_run(dev, op, &p, &a, 1, nullptr)) << fg_last_error();
}

TEST(Glu, ForwardMatchesTheF64Definition) {
  Cpu cpu;
  for (const Unit &u : kUnits) {
    std::vector<float> g = gates(), up = fgt::gaussian(g.size(), 12, 2.0f), out(g.size());
    run_op(cpu.dev, u.fwd, {out.data(), g.data(), up.data()}, g.size());
    for (size_t i = 0; i < g.size(); i++) {
      const double want = u.act(g[i]) * (double)up[i];
      const double tol = u.act_err(g[i]) * std::fabs((double)up[i]) + 1.2e-7 * std::fabs(want) + 1e-44;
      ASSERT_NEAR(want, (double)out[i], tol) << u.name << " gate " << g[i] << " up " << up[i];
    }
  }
}

TEST(Glu, AnalyticF64GradientsMatchFiniteDifferences) {
  for (const Unit &u : kUnits)
    for (int i = -400; i <= 400; i++) {
      const double g = i / 40.0, h = 1e-5;
      const double fd = (u.act(g + h) - u.act(g - h)) / (2 * h);
      EXPECT_NEAR(fd, u.grad(g), 1e-8) << u.name << " gate " << g;
    }
}

TEST(Glu, BackwardMatchesTheGradientAndFiniteDifferences) {
  Cpu cpu;
  for (const Unit &u : kUnits) {
    std::vector<float> g = gates();
    const size_t n = g.size();
    std::vector<float> up = fgt::gaussian(n, 13, 2.0f), dout = fgt::gaussian(n, 14), dg(n), du(n);
    run_op(cpu.dev, u.bwd, {dg.data(), du.data(), dout.data(), g.data(), up.data()}, n);
    for (size_t i = 0; i < n; i++) {
      const double gi = g[i], ui = up[i], di = dout[i];
      // The loss dout * act(gate) * up: its derivatives in gate and up, analytic and by
      // central differences of the f64 forward (step relative to the gate, so its error is
      // far below the f32 tolerance).
      const double want_dg = di * ui * u.grad(gi), want_du = di * u.act(gi);
      const double tol_dg = std::fabs(di * ui) * u.grad_err(gi) + 2.5e-7 * std::fabs(want_dg) + 1e-44;
      const double tol_du = std::fabs(di) * u.act_err(gi) + 1.2e-7 * std::fabs(want_du) + 1e-44;
      ASSERT_NEAR(want_dg, (double)dg[i], tol_dg) << u.name << " gate " << gi;
      ASSERT_NEAR(want_du, (double)du[i], tol_du) << u.name << " gate " << gi;
      if (std::fabs(gi) < 50) {
        const double h = 1e-5 * std::max(1.0, std::fabs(gi));
        const double fd_dg = di * ui * (u.act(gi + h) - u.act(gi - h)) / (2 * h);
        const double fd_du = di * (u.act(gi) * (ui + h) - u.act(gi) * (ui - h)) / (2 * h);
        EXPECT_NEAR(fd_dg, (double)dg[i], tol_dg + 1e-8 * std::fabs(di * ui)) << u.name << " gate " << gi;
        EXPECT_NEAR(fd_du, (double)du[i], tol_du + 1e-9 * std::fabs(fd_du)) << u.name << " gate " << gi;
      }
    }
  }
}

// The backward pass may write over its inputs (dgate over gate, dup over up), and the forward
// over either input: the same bits as separate buffers.
TEST(Glu, InPlaceGivesTheSameBits) {
  Cpu cpu;
  for (const Unit &u : kUnits) {
    const std::vector<float> g = gates(), up = fgt::gaussian(g.size(), 15), dout = fgt::gaussian(g.size(), 16);
    const size_t n = g.size();
    std::vector<float> out(n), dg(n), du(n);
    std::vector<float> g2 = g, up2 = up, dout2 = dout;
    run_op(cpu.dev, u.fwd, {out.data(), g2.data(), up2.data()}, n);
    run_op(cpu.dev, u.fwd, {g2.data(), g2.data(), up2.data()}, n);
    EXPECT_EQ(0, std::memcmp(out.data(), g2.data(), n * 4)) << u.name;
    g2 = g;
    std::vector<float> gi = g, ui = up;
    run_op(cpu.dev, u.bwd, {dg.data(), du.data(), dout2.data(), g2.data(), up2.data()}, n);
    run_op(cpu.dev, u.bwd, {gi.data(), ui.data(), dout2.data(), gi.data(), ui.data()}, n);
    EXPECT_EQ(0, std::memcmp(dg.data(), gi.data(), n * 4)) << u.name;
    EXPECT_EQ(0, std::memcmp(du.data(), ui.data(), n * 4)) << u.name;
  }
}

// Every finite gate gives finite values; an infinite one gives SiLU's NaN (as torch's
// x * sigmoid(x)) and GELU's limits; NaN inputs give the canonical NaN.
TEST(Glu, NonFiniteInputs) {
  Cpu cpu;
  const float inf = INFINITY;
  std::vector<float> g = {inf, -inf, NAN, 1.0f, 3.4e38f, -3.4e38f}, up = {1.0f, 1.0f, 1.0f, NAN, 1.0f, 1.0f};
  std::vector<float> dout(g.size(), 1.0f);
  const size_t n = g.size();
  std::vector<float> out(n), dg(n), du(n);
  run_op(cpu.dev, FG_OP_GEGLU_BACKWARD, {dg.data(), du.data(), dout.data(), g.data(), up.data()}, n);
  EXPECT_EQ(1.0f, dg[0]);
  EXPECT_EQ(0.0f, dg[1]);
  EXPECT_EQ(1.0f, dg[4]);
  EXPECT_EQ(0.0f, dg[5]);
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(dg[2]));
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(dg[3]));
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(du[2]));
  run_op(cpu.dev, FG_OP_SWIGLU_BACKWARD, {dg.data(), du.data(), dout.data(), g.data(), up.data()}, n);
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(dg[0]));
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(dg[1]));
  EXPECT_EQ(1.0f, dg[4]);
  EXPECT_EQ(0.0f, dg[5]);
  EXPECT_EQ(inf, du[0]);
  run_op(cpu.dev, FG_OP_SWIGLU, {out.data(), g.data(), up.data()}, n);
  EXPECT_EQ(inf, out[0]);
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(out[1]));  // -inf * sigmoid(-inf) = -inf * 0
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(out[3]));
  EXPECT_EQ(3.4e38f, out[4]);
  EXPECT_EQ(0.0f, out[5]);
}

}  // namespace
