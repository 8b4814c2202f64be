// Muon: Fucina's own trajectories bit for bit with the exact GEMM (fucina_muon.txt, from
// tests/data/fucina_gen/gen_muon.zig), its repo pins, Newton-Schulz against a double
// reference with the fast GEMM, routing, config checks, and state save/load.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <cstring>
#include <vector>

#include "forgia/muon.h"
#include "muon_cases.h"

using namespace fgt;

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() {
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev));
    EXPECT_EQ(FG_OK, fg_device_set_gemm_mode(dev, FG_GEMM_EXACT));
  }
  ~Cpu() { fg_device_close(dev); }
};

TEST(OptimMuon, GoldenHasEveryCase) {
  const auto cases = muon_cases();
  ASSERT_EQ(10u, cases.size());
  for (const auto &mc : cases) {
    ASSERT_EQ((size_t)mc.steps, mc.want.size()) << mc.line;
    EXPECT_TRUE(!mc.state3.empty() || mc.state3_fnv) << mc.line;
    for (const auto &step : mc.want)
      for (const auto &p : step) EXPECT_TRUE(!p.f32.empty() || p.fnv) << mc.line;
  }
}

// Every parameter after every step is Fucina's bits: spectral and match_rms_adamw, nesterov
// on and off, both lerp forms, decay, bf16 momentum and fallback moments, a skipped
// gradient, a clip over Muon and fallback together, 16-bit parameters with masters, a tall
// matrix of 39,000 elements (more than one chunk of the sum-of-squares grid).
TEST(OptimMuon, FucinaTrajectoriesBitExact) {
  Cpu cpu;
  for (const auto &mc : muon_cases()) {
    SCOPED_TRACE(mc.line);
    MuonRun r(cpu.dev, mc);
    EXPECT_EQ(3u, fg_optim_count(r.opt));  // b and e live in the fallback
    for (int k = 1; k <= mc.steps; k++) {
      r.step(k);
      r.expect_step(k);
    }
    EXPECT_EQ((uint64_t)mc.steps - (mc.skip ? 1 : 0), fg_optim_step_count_at(r.opt, 1));
  }
}

// With the fast GEMM only the GEMM's rounding differs: the momentum buffers and every
// fallback parameter are still Fucina's bits, Muon's parameters are close to them.
TEST(OptimMuon, FastGemmDiffersOnlyThroughGemmRounding) {
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(dev, FG_GEMM_FAST));
  for (const auto &mc : muon_cases()) {
    if (mc.big) continue;  // hashed only
    SCOPED_TRACE(mc.line);
    MuonRun r(dev, mc);
    for (int k = 1; k <= mc.steps; k++) {
      r.step(k);
      for (size_t j = 0; j < 5; j++) {
        const std::vector<uint32_t> got = r.f32(j);
        const MuonSnap &w = mc.want[(size_t)k - 1][j];
        if (j >= 3) {
          EXPECT_EQ(w.f32, got) << "step " << k << " " << kMuonNames[j];
          continue;
        }
        for (size_t i = 0; i < got.size(); i++) {
          float a, e;
          std::memcpy(&a, &got[i], 4);
          std::memcpy(&e, &w.f32[i], 4);
          EXPECT_NEAR(e, a, 1e-5) << "step " << k << " " << kMuonNames[j] << "[" << i << "]";
        }
      }
    }
    // The momentum buffers depend on the gradients alone: equal to an exact-GEMM run's.
    Cpu cpu;
    MuonRun x(cpu.dev, mc);
    for (int k = 1; k <= mc.steps; k++) x.step(k);
    for (size_t j = 0; j < 3; j++) {
      const size_t bytes = (size_t)r.ps[j]->numel * (mc.c.state_dtype == FG_BF16 ? 2 : 4);
      std::vector<uint8_t> m1(bytes), m2(bytes);
      ASSERT_EQ(FG_OK, fg_device_copy(dev, m1.data(), r.opt->slots[j].m, bytes, FG_COPY_D2H));
      ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, m2.data(), x.opt->slots[j].m, bytes, FG_COPY_D2H));
      EXPECT_EQ(m1, m2) << kMuonNames[j];
    }
  }
  fg_device_close(dev);
}

// optim_tests.zig "Muon matches the Keller reference over 3 steps (both scales)".
TEST(OptimMuon, FucinaRepoPins) {
  Cpu cpu;
  const float w0[6] = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f, 1.5f};
  const float g[3][6] = {{0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.25f},
                         {-0.3f, 0.8f, -1.2f, 0.6f, 0.1f, -0.9f},
                         {1.1f, 0.2f, -0.4f, -1.3f, 0.7f, 0.05f}};
  const float want[2][6] = {{0.969309151f, -1.99795902f, 0.490155995f, 3.00016975f, -0.226596415f, 1.49175036f},
                            {0.990889192f, -1.99856234f, 0.497000635f, 2.9987576f, -0.24327293f, 1.49702132f}};
  for (int sc = 0; sc < 2; sc++) {
    fg_optim_config c = fg_optim_defaults(FG_OPTIM_MUON);
    c.lr = 0.02f;
    c.weight_decay = 0.01f;
    c.muon_scale = sc ? FG_MUON_MATCH_RMS_ADAMW : FG_MUON_SPECTRAL;
    fg_optim *o = nullptr;
    ASSERT_EQ(FG_OK, fg_optim_create(cpu.dev, &c, &o));
    const uint64_t shape[2] = {3, 2};
    fg_tensor *w = nullptr;
    ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "w", FG_F32, 2, shape, &w));
    ASSERT_EQ(FG_OK, fg_tensor_upload(w, w0, sizeof w0, nullptr));
    ASSERT_EQ(FG_OK, fg_optim_add(o, w, nullptr));
    ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(w));
    for (const auto &gs : g) {
      ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, w->grad, gs, sizeof gs, FG_COPY_H2D));
      ASSERT_EQ(FG_OK, fg_optim_step(o, nullptr));
    }
    float got[6];
    ASSERT_EQ(FG_OK, fg_tensor_download(w, got, sizeof got, nullptr));
    for (int i = 0; i < 6; i++) EXPECT_NEAR(want[sc][i], got[i], 1e-4) << sc << " " << i;
    fg_optim_free(o);
    fg_tensor_free(w);
  }
}

// Keller Jordan's reference Muon with its auxiliary Adam, run in torch with an f32
// Newton-Schulz (tests/data/torch_gen/gen_muon.py): w [6,4], x [3,5] on Muon, b [5] on the
// fallback, every step within a few f32 ulps of the reference's rounding.
TEST(OptimMuon, KellerReferenceWithinTolerance) {
  std::ifstream f(std::string(FORGIA_TEST_DATA) + "/golden/torch_muon.txt");
  ASSERT_TRUE(f.good());
  struct Ref {
    fg_optim_config c;
    int steps = 0;
    std::vector<std::vector<std::vector<uint32_t>>> want;  // [step][param]
  };
  std::vector<Ref> refs;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string tag, kv;
    ss >> tag;
    if (tag == "case") {
      Ref r;
      r.c = fg_optim_defaults(FG_OPTIM_MUON);
      ss >> kv;
      while (ss >> kv) {
        const size_t eq = kv.find('=');
        const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        if (k == "lr") r.c.lr = std::stof(v);
        if (k == "momentum") r.c.momentum = std::stof(v);
        if (k == "nesterov") r.c.nesterov = v == "1";
        if (k == "weight_decay") r.c.weight_decay = std::stof(v);
        if (k == "steps") r.steps = std::stoi(v);
      }
      refs.push_back(r);
    } else if (!refs.empty() && tag.size() > 1 && tag[0] == 's') {
      const size_t k = (size_t)std::stoul(tag.substr(1));
      std::string name, h;
      ss >> name;
      std::vector<uint32_t> b;
      while (ss >> h) b.push_back((uint32_t)std::stoul(h, nullptr, 16));
      if (refs.back().want.size() < k) refs.back().want.resize(k);
      refs.back().want[k - 1].push_back(b);
    }
  }
  ASSERT_EQ(3u, refs.size());
  for (fg_gemm_mode mode : {FG_GEMM_FAST, FG_GEMM_EXACT}) {
    fg_device *dev = nullptr;
    ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
    ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(dev, mode));
    for (const Ref &r : refs) {
      ASSERT_EQ((size_t)r.steps, r.want.size());
      fg_optim *o = nullptr;
      ASSERT_EQ(FG_OK, fg_optim_create(dev, &r.c, &o));
      const std::vector<std::vector<uint64_t>> shapes = {{6, 4}, {3, 5}, {5}};
      std::vector<fg_tensor *> ps;
      for (size_t j = 0; j < shapes.size(); j++) {
        fg_tensor *t = nullptr;
        ASSERT_EQ(FG_OK, fg_tensor_create(dev, nullptr, FG_F32, (int)shapes[j].size(), shapes[j].data(), &t));
        const std::vector<float> v = golden_stream(100 + j, t->numel, 2.0f);
        ASSERT_EQ(FG_OK, fg_tensor_upload(t, v.data(), v.size() * 4, nullptr));
        ASSERT_EQ(FG_OK, fg_optim_add(o, t, nullptr));
        ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));
        ps.push_back(t);
      }
      for (int k = 1; k <= r.steps; k++) {
        for (size_t j = 0; j < ps.size(); j++) {
          const std::vector<float> g = golden_stream(1000 * (j + 1) + (uint64_t)k, ps[j]->numel, 2.0f);
          ASSERT_EQ(FG_OK, fg_device_copy(dev, ps[j]->grad, g.data(), g.size() * 4, FG_COPY_H2D));
        }
        ASSERT_EQ(FG_OK, fg_optim_step(o, nullptr));
        for (size_t j = 0; j < ps.size(); j++) {
          std::vector<float> got(ps[j]->numel), want(ps[j]->numel);
          ASSERT_EQ(FG_OK, fg_tensor_download(ps[j], got.data(), got.size() * 4, nullptr));
          ASSERT_EQ(want.size(), r.want[(size_t)k - 1][j].size());
          std::memcpy(want.data(), r.want[(size_t)k - 1][j].data(), want.size() * 4);
          for (size_t i = 0; i < got.size(); i++)
            EXPECT_NEAR(want[i], got[i], 2e-5) << "mode " << mode << " step " << k << " param " << j << "[" << i << "]";
        }
      }
      fg_optim_free(o);
      for (fg_tensor *t : ps) fg_tensor_free(t);
    }
    fg_device_close(dev);
  }
}

// NS5 in double precision, Fucina's formula, transposed when rows > cols.
std::vector<double> ns5_ref(const std::vector<float> &u, size_t rows, size_t cols, int steps) {
  const bool tall = rows > cols;
  const size_t r = tall ? cols : rows, c = tall ? rows : cols;
  std::vector<double> x(r * c), a(r * r), q(r * r), y(r * c);
  for (size_t i = 0; i < r; i++)
    for (size_t j = 0; j < c; j++) x[i * c + j] = tall ? u[j * cols + i] : u[i * cols + j];
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / (std::sqrt(ss) + 1e-7);
  for (double &v : x) v *= inv;
  for (int it = 0; it < steps; it++) {
    for (size_t i = 0; i < r; i++)
      for (size_t j = 0; j < r; j++) {
        double acc = 0;
        for (size_t p = 0; p < c; p++) acc += x[i * c + p] * x[j * c + p];
        a[i * r + j] = acc;
      }
    for (size_t i = 0; i < r; i++)
      for (size_t j = 0; j < r; j++) {
        double acc = 0;
        for (size_t p = 0; p < r; p++) acc += a[i * r + p] * a[p * r + j];
        q[i * r + j] = (double)FG_NS5_B * a[i * r + j] + (double)FG_NS5_C * acc;
      }
    for (size_t i = 0; i < r; i++)
      for (size_t j = 0; j < c; j++) {
        double acc = 0;
        for (size_t p = 0; p < r; p++) acc += q[i * r + p] * x[p * c + j];
        y[i * c + j] = (double)FG_NS5_A * x[i * c + j] + acc;
      }
    x.swap(y);
  }
  std::vector<double> o(rows * cols);
  for (size_t i = 0; i < r; i++)
    for (size_t j = 0; j < c; j++) (tall ? o[j * cols + i] : o[i * cols + j]) = x[i * c + j];
  return o;
}

TEST(OptimMuon, NewtonSchulzMatchesDoubleReference) {
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  const size_t dims[][2] = {{16, 40}, {40, 16}, {33, 33}, {1, 7}, {9, 1}, {200, 64}};
  for (fg_gemm_mode mode : {FG_GEMM_FAST, FG_GEMM_EXACT}) {
    for (const auto &d : dims) {
      const size_t rows = d[0], cols = d[1], n = rows * cols;
      std::vector<float> u = golden_stream(77 + rows * 1000 + cols, n, 2.0f), o(n, -1.0f);
      const std::vector<double> want = ns5_ref(u, rows, cols, 5);
      float *du = nullptr;
      ASSERT_EQ(FG_OK, fg_device_mem_alloc(dev, n * 4, (void **)&du));
      ASSERT_EQ(FG_OK, fg_device_copy(dev, du, u.data(), n * 4, FG_COPY_H2D));
      // Caller-owned workspace, out of place.
      const size_t wb = fg_muon_newton_schulz5_workspace(rows, cols);
      std::vector<uint8_t> work(wb);
      ASSERT_EQ(FG_OK, fg_muon_newton_schulz5(dev, mode, du, rows, cols, 5, o.data(), work.data(), wb, nullptr)) << fg_last_error();
      double worst = 0;
      for (size_t i = 0; i < n; i++) worst = std::fmax(worst, std::fabs((double)o[i] - want[i]));
      EXPECT_LT(worst, 2e-5) << rows << "x" << cols << " mode " << mode;
      // In place with its own workspace: the same bits.
      ASSERT_EQ(FG_OK, fg_muon_newton_schulz5(dev, mode, du, rows, cols, 5, du, nullptr, 0, nullptr)) << fg_last_error();
      std::vector<float> o2(n);
      ASSERT_EQ(FG_OK, fg_device_copy(dev, o2.data(), du, n * 4, FG_COPY_D2H));
      EXPECT_EQ(0, std::memcmp(o.data(), o2.data(), n * 4));
      fg_device_mem_free(dev, du);
    }
  }
  float bad[4] = {0};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_muon_newton_schulz5(dev, FG_GEMM_EXACT, bad, 2, 2, 0, bad, nullptr, 0, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_muon_newton_schulz5(dev, FG_GEMM_EXACT, bad, 0, 2, 5, bad, nullptr, 0, nullptr));
  uint8_t small[8];
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_muon_newton_schulz5(dev, FG_GEMM_EXACT, bad, 2, 2, 5, bad, small, sizeof small, nullptr));
  EXPECT_EQ(0u, fg_muon_newton_schulz5_workspace(SIZE_MAX / 2, 3));
  fg_device_close(dev);
}

TEST(OptimMuon, ConfigChecks) {
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_MUON);
  EXPECT_EQ(FG_OK, fg_optim_config_check(&c));
  EXPECT_EQ(0.02f, c.lr);
  EXPECT_EQ(0.95f, c.momentum);
  EXPECT_TRUE(c.nesterov);
  EXPECT_EQ(5u, c.ns_steps);
  EXPECT_EQ(1e-10f, c.fallback.eps);
  fg_optim_config b = c;
  b.ns_steps = 0;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_config_check(&b));
  b = c;
  b.momentum = 1.0f;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_config_check(&b));
  b.momentum = -0.1f;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_config_check(&b));
  b = c;
  b.muon_scale = (fg_muon_scale)2;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_config_check(&b));
  b = c;
  b.fallback.eps = 0.0f;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_config_check(&b));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "fallback"));
  b = c;
  b.fallback.second_moment_dtype = FG_F16;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_config_check(&b));
  b = c;
  b.state_dtype = FG_F16;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_config_check(&b));
}

TEST(OptimMuon, RoutingAndDuplicates) {
  Cpu cpu;
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_MUON);
  fg_optim *o = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(cpu.dev, &c, &o));
  const uint64_t s2[2] = {4, 3}, s1[1] = {5};
  fg_tensor *m = nullptr, *v = nullptr, *s = nullptr, *e = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 2, s2, &m));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 1, s1, &v));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 0, s1, &s));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 2, s2, &e));
  EXPECT_EQ(FG_OK, fg_optim_add(o, m, nullptr));
  EXPECT_EQ(FG_OK, fg_optim_add(o, v, nullptr));  // 1-D: the fallback's param0
  EXPECT_EQ(FG_OK, fg_optim_add(o, s, nullptr));  // 0-D: the fallback's param1
  EXPECT_EQ(FG_OK, fg_optim_add_fallback(o, e, "param0x"));
  EXPECT_EQ(1u, fg_optim_count(o));
  EXPECT_STREQ("param0", fg_optim_name_at(o, 0));
  ASSERT_EQ(3u, fg_optim_count(o->fallback));
  EXPECT_STREQ("param0", fg_optim_name_at(o->fallback, 0));
  EXPECT_STREQ("param1", fg_optim_name_at(o->fallback, 1));
  // A tensor registered on either side, on either side again: refused, nothing changes.
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add(o, m, "again"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add_fallback(o, m, "again"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add(o, e, "again"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add(o, v, "again"));
  EXPECT_EQ(1u, fg_optim_count(o));
  EXPECT_EQ(3u, fg_optim_count(o->fallback));
  fg_optim_free(o);
  for (fg_tensor *t : {m, v, s, e}) fg_tensor_free(t);
}

// The clip and the squared norm run over the fallback first, then Muon's own slots:
// ((0 + f1) + f2) + m with f1 = f2 = 2^-53 and m = 1 is 1 + 2^-52, while Muon's slots
// first would round each 2^-53 away.
TEST(OptimMuon, GradSquaredNormFallbackFirst) {
  Cpu cpu;
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_MUON);
  fg_optim *o = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(cpu.dev, &c, &o));
  const uint64_t s2[2] = {1, 1}, s1[1] = {2};
  fg_tensor *m = nullptr, *f1 = nullptr, *f2 = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 2, s2, &m));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 1, s1, &f1));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 1, s1, &f2));
  ASSERT_EQ(FG_OK, fg_optim_add(o, m, nullptr));
  ASSERT_EQ(FG_OK, fg_optim_add(o, f1, nullptr));
  ASSERT_EQ(FG_OK, fg_optim_add(o, f2, nullptr));
  const float one = 1.0f, tiny[2] = {0x1p-27f, 0x1p-27f};
  for (fg_tensor *t : {m, f1, f2}) ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));
  ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, m->grad, &one, 4, FG_COPY_H2D));
  ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, f1->grad, tiny, 8, FG_COPY_H2D));
  ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, f2->grad, tiny, 8, FG_COPY_H2D));
  double *d = nullptr, host = 0;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(cpu.dev, 8, (void **)&d));
  ASSERT_EQ(FG_OK, fg_optim_grad_squared_norm(o, d, nullptr));
  ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, &host, d, 8, FG_COPY_D2H));
  EXPECT_EQ(1.0 + 0x1p-52, host);
  float total = 0;
  ASSERT_EQ(FG_OK, fg_optim_clip_grad_norm(o, 0.5f, &total, nullptr));
  EXPECT_EQ(1.0f, total);
  float gm = 0, gf[2] = {0, 0};
  ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, &gm, m->grad, 4, FG_COPY_D2H));
  ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, gf, f2->grad, 8, FG_COPY_D2H));
  const float coef = 0.5f / (1.0f + 1e-6f);
  EXPECT_EQ(one * coef, gm);
  EXPECT_EQ(tiny[1] * coef, gf[1]);  // the fallback's gradients are clipped too
  ASSERT_EQ(FG_OK, fg_optim_zero_grad(o, nullptr));
  ASSERT_EQ(FG_OK, fg_device_copy(cpu.dev, gf, f1->grad, 8, FG_COPY_D2H));
  EXPECT_EQ(0.0f, gf[0]);
  fg_device_mem_free(cpu.dev, d);
  fg_optim_free(o);
  for (fg_tensor *t : {m, f1, f2}) fg_tensor_free(t);
}

// save_state writes Fucina's saveState bytes: FZM3/4/5 by Muon's own slots, then the full
// AdamW frame of the fallback (its version chosen by its own state).
TEST(OptimMuon, SaveStateIsFucinasBytes) {
  Cpu cpu;
  for (const auto &mc : muon_cases()) {
    SCOPED_TRACE(mc.line);
    MuonRun r(cpu.dev, mc);
    for (int k = 1; k <= mc.steps; k++) {
      r.step(k);
      if (k != 3 && k != mc.steps) continue;
      const std::vector<uint8_t> got = r.save();
      const bool third = k == 3 && mc.steps != 3;
      const std::vector<uint8_t> &want = third ? mc.state3 : mc.state_end;
      if (!want.empty()) {
        EXPECT_EQ(want, got) << "after step " << k;
      } else {
        EXPECT_EQ(third ? mc.state3_len : mc.state_end_len, got.size());
        EXPECT_EQ(third ? mc.state3_fnv : mc.state_end_fnv, golden_fnv(got.data(), got.size()));
      }
    }
  }
}

// Fucina's own bytes after step 3, loaded into a fresh optimizer whose parameters hold
// Fucina's step-3 values, continue to Fucina's bits at every later step.
TEST(OptimMuon, LoadsFucinasStateAndContinues) {
  Cpu cpu;
  for (const auto &mc : muon_cases()) {
    if (mc.state3.empty()) continue;  // only hashed (the 39,000-element case)
    SCOPED_TRACE(mc.line);
    std::vector<std::vector<uint8_t>> init;
    for (size_t j = 0; j < 5; j++) {
      const MuonSnap &w = mc.want[2][j];
      std::vector<uint8_t> b;
      if (mc.p16 == FG_F32) {
        b.resize(w.f32.size() * 4);
        std::memcpy(b.data(), w.f32.data(), b.size());
      } else {
        b.resize(w.p16.size() * 2);
        std::memcpy(b.data(), w.p16.data(), b.size());
      }
      init.push_back(b);
    }
    MuonRun r(cpu.dev, mc, init);
    ASSERT_EQ(FG_OK, fg_optim_load_state(r.opt, mc.state3.data(), mc.state3.size())) << fg_last_error();
    EXPECT_EQ(mc.state3, r.save());
    for (int k = 4; k <= mc.steps; k++) {
      r.step(k);
      r.expect_step(k);
    }
  }
}

// Save halfway, load into a fresh optimizer over copies of the parameters, continue: the
// same bytes as the uninterrupted run (parameters, masters, state).
TEST(OptimMuon, HalfwayResumeIsBitExact) {
  Cpu cpu;
  for (const auto &mc : muon_cases()) {
    SCOPED_TRACE(mc.line);
    MuonRun a(cpu.dev, mc), b(cpu.dev, mc);
    for (int k = 1; k <= mc.steps; k++) a.step(k);
    for (int k = 1; k <= 3; k++) b.step(k);
    const std::vector<uint8_t> st = b.save();
    MuonRun c(cpu.dev, mc, b.all_bytes());
    ASSERT_EQ(FG_OK, fg_optim_load_state(c.opt, st.data(), st.size())) << fg_last_error();
    for (int k = 4; k <= mc.steps; k++) c.step(k);
    EXPECT_EQ(a.all_bytes(), c.all_bytes());
    for (size_t j = 0; j < 5; j++) EXPECT_EQ(a.f32(j), c.f32(j)) << j;
    EXPECT_EQ(a.save(), c.save());
  }
}

// A frame that does not fit gives its error and leaves every parameter and state byte as it
// was; Muon's own records are valid in the fallback cases, so this also shows Muon commits
// nothing before its fallback validates.
TEST(OptimMuon, MismatchedFramesChangeNothing) {
  Cpu cpu;
  const auto cases = muon_cases();
  const MuonCase &base = cases[0];
  MuonRun src(cpu.dev, base);
  for (int k = 1; k <= 3; k++) src.step(k);
  const std::vector<uint8_t> good = src.save();
  struct Bad {
    const char *what;
    fg_status want;
    std::function<void(MuonCase &)> cfg;
    std::function<void(std::vector<uint8_t> &)> bytes;
  };
  const std::vector<Bad> bad = {
      {"ns_steps", FG_ERR_FRAME_CONFIG_MISMATCH, [](MuonCase &m) { m.c.ns_steps = 4; }, nullptr},
      {"nesterov", FG_ERR_FRAME_CONFIG_MISMATCH, [](MuonCase &m) { m.c.nesterov = false; }, nullptr},
      {"scale", FG_ERR_FRAME_CONFIG_MISMATCH, [](MuonCase &m) { m.c.muon_scale = FG_MUON_MATCH_RMS_ADAMW; }, nullptr},
      {"momentum dtype", FG_ERR_FRAME_DTYPE_MISMATCH, [](MuonCase &m) { m.c.state_dtype = FG_BF16; }, nullptr},
      {"fallback dtype", FG_ERR_FRAME_DTYPE_MISMATCH,
       [](MuonCase &m) { m.c.fallback.state_dtype = FG_BF16; }, nullptr},
      // The fallback's slot "e" renamed "f" in the embedded frame: Muon's records all match.
      {"fallback slot name", FG_ERR_FRAME_UNKNOWN_NAME, nullptr,
       [](std::vector<uint8_t> &b) {
         const uint8_t rec[3] = {1, 0, 'e'};
         auto it = std::search(b.begin(), b.end(), rec, rec + 3);
         ASSERT_NE(b.end(), it);
         it[2] = 'f';
       }},
      {"embedded magic", FG_ERR_BAD_MAGIC, nullptr,
       [](std::vector<uint8_t> &b) {
         const uint8_t m[4] = {'F', 'Z', 'A', '3'};
         auto it = std::search(b.begin(), b.end(), m, m + 4);
         ASSERT_NE(b.end(), it);
         it[3] = 'D';  // FZAD: an Adam frame where the AdamW one belongs
       }},
      {"embedded frame cut short", FG_ERR_TRUNCATED, nullptr, [](std::vector<uint8_t> &b) { b.resize(b.size() - 3); }},
      {"embedded frame missing", FG_ERR_TRUNCATED, nullptr,
       [](std::vector<uint8_t> &b) {
         const uint8_t m[3] = {'F', 'Z', 'A'};
         auto it = std::search(b.begin(), b.end(), m, m + 3);
         ASSERT_NE(b.end(), it);
         b.erase(it, b.end());
       }},
  };
  for (const Bad &x : bad) {
    SCOPED_TRACE(x.what);
    MuonCase mc = base;
    if (x.cfg) x.cfg(mc);
    std::vector<uint8_t> frame = good;
    if (x.bytes) x.bytes(frame);
    MuonRun dst(cpu.dev, mc);
    for (int k = 11; k <= 12; k++) dst.step(k);  // state unlike the frame's
    const auto params = dst.all_bytes();
    const std::vector<uint8_t> state = dst.save();
    const fg_status st = fg_optim_load_state(dst.opt, frame.data(), frame.size());
    EXPECT_EQ(x.want, st) << fg_last_error();
    EXPECT_EQ(params, dst.all_bytes());
    EXPECT_EQ(state, dst.save());
  }
}

}  // namespace
