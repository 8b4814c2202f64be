// APOLLO and APOLLO-Mini: every step's parameters the same bits as Fucina's own Apollo
// (scalar backend; forgia's exact GEMM) on ten trajectories, the projection's scalar
// gaussian, state frames byte-equal to Fucina's, Fucina's frames loaded and continued,
// bit-exact resume, and mismatched frames refused without a change, all through the public API.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "apollo_cases.h"
#include "forgia/apollo.h"
#include "forgia/forgia.h"
#include "forgia/optim.h"
#include "forgia/rng.h"
#include "training/optim_apollo_internal.h" /* the rig reads masters and fallback slots */

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  ~Cpu() { fg_device_close(dev); }
};

}  // namespace

// A pin computed independently of Fucina's build: the projection stream of slot seed 1, chunk 0,
// rank 2 (scale 1/sqrt(2)), and the chunk-1 seed.
TEST(OptimApollo, ProjectionStreamPin) {
  fg_rng_spec r;
  std::memset(&r, 0, sizeof r);
  r.kind = FG_RNG_GAUSS;
  r.seed = 1;
  r.scale = 1.0f / std::sqrt(2.0f);
  float v[6];
  ASSERT_EQ(FG_OK, fg_rng_fill_host(&r, v, 6));
  const uint32_t want[6] = {0xBCA3A3D7u, 0xBF40E5BCu, 0xBE250807u, 0x3D70AA9Au, 0x3D954AA9u, 0xBF65D558u};
  for (int i = 0; i < 6; i++) EXPECT_EQ(want[i], fg_f32_bits(v[i])) << i;
  EXPECT_EQ(0x9E3779B97F4A7C16ull, 1ull + 1ull * 0x9E3779B97F4A7C15ull);
}

TEST(OptimApollo, FucinaTrajectoriesBitExact) {
  Cpu cpu;
  const auto cases = fgt::apollo_cases();
  ASSERT_EQ(12u, cases.size());
  for (const auto &ac : cases) {
    SCOPED_TRACE(ac.line);
    fgt::ApolloRig rig(cpu.dev, ac);
    ASSERT_EQ((size_t)ac.steps, ac.want.size());
    for (int k = 1; k <= ac.steps; k++) {
      rig.step(k);
      rig.expect_step(k);
    }
  }
}

// save_state after steps/2 and after the last step: Fucina's FZP3/FZP5 bytes exactly.
TEST(OptimApollo, SaveStateBytesAreFucinas) {
  Cpu cpu;
  for (const auto &ac : fgt::apollo_cases()) {
    SCOPED_TRACE(ac.line);
    ASSERT_EQ(2u, ac.state.size() + ac.state_fnv.size());
    fgt::ApolloRig rig(cpu.dev, ac);
    for (int k = 1; k <= ac.steps; k++) {
      rig.step(k);
      rig.expect_state(k);
    }
  }
}

// Fucina's halfway frame, loaded into a fresh optimizer whose parameters hold Fucina's
// halfway values, continues to Fucina's every later step bit for bit.
TEST(OptimApollo, FucinaStateLoadsAndContinues) {
  Cpu cpu;
  for (const auto &ac : fgt::apollo_cases()) {
    if (ac.big) continue;  // hashes only: no values to start from
    SCOPED_TRACE(ac.line);
    const int half = ac.steps / 2;
    fgt::ApolloRig rig(cpu.dev, ac);
    rig.set_params(ac.want[half - 1]);
    ASSERT_EQ(FG_OK, rig.load(ac.state.at(half))) << fg_last_error();
    EXPECT_EQ(ac.state.at(half), rig.save());
    for (int k = half + 1; k <= ac.steps; k++) {
      rig.step(k);
      rig.expect_step(k);
    }
    EXPECT_EQ(ac.state.at(ac.steps), rig.save());
  }
}

// Halfway save -> fresh optimizer -> load -> continue equals the uninterrupted run (memcmp of
// every parameter, master and state byte).
TEST(OptimApollo, HalfwayResumeEqualsUninterrupted) {
  Cpu cpu;
  for (const auto &ac : fgt::apollo_cases()) {
    SCOPED_TRACE(ac.line);
    const int half = ac.steps / 2;
    fgt::ApolloRig full(cpu.dev, ac), first(cpu.dev, ac);
    for (int k = 1; k <= ac.steps; k++) full.step(k);
    for (int k = 1; k <= half; k++) first.step(k);
    const auto bytes = first.save();
    fgt::ApolloRig second(cpu.dev, ac);
    second.set_params(first.snapshot());
    ASSERT_EQ(FG_OK, second.load(bytes)) << fg_last_error();
    for (int k = half + 1; k <= ac.steps; k++) second.step(k);
    EXPECT_EQ(full.snapshot(), second.snapshot());
    EXPECT_EQ(full.save(), second.save());
  }
}

namespace {

// Loads b into rig and requires error want with no byte of state or parameters changed.
void expect_refused(fgt::ApolloRig &rig, const std::vector<uint8_t> &b, fg_status want) {
  const auto state = rig.save();
  const auto params = rig.snapshot();
  EXPECT_EQ(want, rig.load(b)) << fg_last_error();
  EXPECT_EQ(state, rig.save());
  EXPECT_EQ(params, rig.snapshot());
}

}  // namespace

TEST(OptimApollo, MismatchedFramesAreRefusedAndChangeNothing) {
  Cpu cpu;
  const auto cases = fgt::apollo_cases();
  const fgt::ApolloCase &base = cases[0];  // apollo rank=2 gap=3, channel, limiter on
  const auto frame = base.state.at(base.steps);
  auto variant = [&](auto edit) {
    fgt::ApolloCase c = base;
    edit(c.c);
    return c;
  };
  const fgt::ApolloCase rank3 = variant([](fg_optim_config &c) { c.rank = 3; });
  const fgt::ApolloCase gap4 = variant([](fg_optim_config &c) { c.update_proj_gap = 4; });
  const fgt::ApolloCase tensor = variant([](fg_optim_config &c) { c.scale_type = FG_APOLLO_TENSOR; });
  const fgt::ApolloCase front = variant([](fg_optim_config &c) { c.scale_front = true; });
  const fgt::ApolloCase nolim = variant([](fg_optim_config &c) { c.disable_norm_growth_limiter = true; });
  const fgt::ApolloCase scale2 = variant([](fg_optim_config &c) { c.apollo_scale = 2.0f; });
  for (const auto *c : {&rank3, &gap4, &tensor, &front, &nolim, &scale2}) {
    fgt::ApolloRig rig(cpu.dev, *c);
    rig.step(1);
    expect_refused(rig, frame, FG_ERR_FRAME_CONFIG_MISMATCH);
  }
  fgt::ApolloRig rig(cpu.dev, base);
  rig.step(1);
  // A main slot renamed: "tall" is the first name of the frame, after the 32-byte header
  // (magic, rank, gap, scale, four flags, main count) and its u16 length.
  auto renamed = frame;
  ASSERT_EQ(0, std::memcmp(&renamed[34], "tall", 4));
  renamed[34] = 'T';
  expect_refused(rig, renamed, FG_ERR_FRAME_UNKNOWN_NAME);
  // An AdamW frame is not an APOLLO frame.
  auto magic = frame;
  std::memcpy(magic.data(), "FZA3", 4);
  EXPECT_NE(FG_OK, rig.load(magic));
  expect_refused(rig, magic, rig.load(magic));
  // A fallback parameter the frame lacks.
  fgt::ApolloRig extra(cpu.dev, base);
  fg_tensor *t = nullptr;
  const uint64_t shape[1] = {3};
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 1, shape, &t));
  ASSERT_EQ(FG_OK, fg_optim_add_fallback(extra.o, t, "extra"));
  extra.step(1);
  expect_refused(extra, frame, FG_ERR_FRAME_MISSING_ENTRY);
  // A frame with a fallback slot this optimizer does not have (case 3 has "head").
  for (const auto &c : cases) {
    if (!c.fb2d || c.p16 != FG_F32) continue;
    fgt::ApolloCase same = c;
    same.fb2d = false;
    fgt::ApolloRig fewer(cpu.dev, same);
    fewer.step(1);
    expect_refused(fewer, c.state.at(c.steps), FG_ERR_FRAME_UNKNOWN_NAME);
  }
  fg_optim_free(extra.o);
  extra.o = nullptr;
  fg_tensor_free(t);
}

// Registration: 2-D parameters take the low-rank path with seeds cfg.seed + index + 1,
// everything else the fallback (its own name space), and bad configs fail at create.
TEST(OptimApollo, RegistrationAndConfig) {
  Cpu cpu;
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_APOLLO);
  c.rank = 0;
  fg_optim *o = nullptr;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_create(cpu.dev, &c, &o));
  c = fg_optim_defaults(FG_OPTIM_APOLLO);
  c.update_proj_gap = 0;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_create(cpu.dev, &c, &o));
  c = fg_optim_defaults(FG_OPTIM_APOLLO_MINI);
  c.apollo_scale = 0.0f;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_create(cpu.dev, &c, &o));
  c.apollo_scale = INFINITY;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_create(cpu.dev, &c, &o));
  c = fg_optim_defaults(FG_OPTIM_APOLLO_MINI);
  EXPECT_EQ(1u, c.rank);
  EXPECT_EQ(FG_APOLLO_TENSOR, c.scale_type);
  EXPECT_EQ(128.0f, c.apollo_scale);
  c.seed = 41;
  ASSERT_EQ(FG_OK, fg_optim_create(cpu.dev, &c, &o));
  fg_tensor *w = nullptr, *x = nullptr, *b = nullptr, *s3 = nullptr;
  const uint64_t sw[2] = {4, 3}, sb[1] = {3}, s3d[3] = {2, 2, 2};
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 2, sw, &w));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 2, sw, &x));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 1, sb, &b));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F32, 3, s3d, &s3));
  EXPECT_EQ(FG_OK, fg_optim_add(o, w, nullptr));
  EXPECT_EQ(FG_OK, fg_optim_add(o, b, nullptr));   // 1-D: fallback param0
  EXPECT_EQ(FG_OK, fg_optim_add(o, s3, nullptr));  // 3-D: fallback param1
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add(o, b, "again"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add_fallback(o, w, "w"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add(o, x, "param0"));  // the main list's own name
  EXPECT_EQ(FG_OK, fg_optim_add(o, x, nullptr));
  ASSERT_EQ(2u, fg_optim_count(o));
  EXPECT_STREQ("param0", fg_optim_name_at(o, 0));
  EXPECT_STREQ("param1", fg_optim_name_at(o, 1));
  EXPECT_EQ(42u, o->apollo->mains[0].seed);
  EXPECT_EQ(43u, o->apollo->mains[1].seed);
  ASSERT_EQ(2u, o->apollo->nfb);
  EXPECT_STREQ("param0", o->apollo->fb[0].name);
  EXPECT_STREQ("param1", o->apollo->fb[1].name);
  // The frame: FZP3, rank 1, gap 200, scale 128 (0x43000000), tensor, bias on, front off,
  // limiter on, two main slots, then the two fallback slots.
  uint8_t *p = nullptr;
  size_t n = 0;
  ASSERT_EQ(FG_OK, fg_optim_save_state(o, &p, &n));
  ASSERT_GE(n, 32u);
  const uint8_t head[32] = {'F', 'Z', 'P', '3', 1, 0, 0, 0, 0, 0, 0, 0, 200, 0, 0, 0, 0, 0, 0, 0,
                            0, 0, 0, 0x43, 1, 1, 0, 0, 2, 0, 0, 0};
  EXPECT_EQ(0, std::memcmp(head, p, 32));
  free(p);
  fg_optim_free(o);
  for (fg_tensor *t : {w, x, b, s3}) fg_tensor_free(t);
}

// Larger shapes (several projection chunks, a bf16 parameter, a clip, on a stream): the same
// bytes with one thread as with all of them.
TEST(OptimApollo, LargerShapesIndependentOfThreadCount) {
  for (fg_optim_kind kind : {FG_OPTIM_APOLLO, FG_OPTIM_APOLLO_MINI}) {
    for (fg_apollo_scale_type st : {FG_APOLLO_CHANNEL, FG_APOLLO_TENSOR}) {
      const int nth = omp_get_max_threads();
      omp_set_num_threads(1);
      const auto one = fgt::apollo_run_big("cpu", kind, st);
      omp_set_num_threads(nth > 1 ? nth : 4);
      const auto many = fgt::apollo_run_big("cpu", kind, st);
      omp_set_num_threads(nth);
      ASSERT_EQ(one.size(), many.size());
      EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size())) << fg_optim_kind_name(kind) << " " << st;
    }
  }
}

// The reference itself (apollo-torch 1.0.3, its projection replaced by Fucina's regenerated
// gaussian, everything else its own code): forgia follows it for 12 steps within f32
// rounding. The two differ only in where they round: torch's BLAS sums, torch.norm in f32
// where Fucina sums in f64, the step size and decay in Python doubles.
TEST(OptimApollo, FollowsTheReferenceImplementation) {
  Cpu cpu;
  const auto cases = fgt::apollo_cases("torch_apollo.txt");
  ASSERT_EQ(5u, cases.size());
  for (const auto &ac : cases) {
    SCOPED_TRACE(ac.line);
    fgt::ApolloRig rig(cpu.dev, ac);
    double worst = 0.0;
    for (int k = 1; k <= ac.steps; k++) {
      rig.step(k);
      const auto got = rig.snapshot();
      for (const auto &kv : ac.want[k - 1]) {
        const auto &g = got.at(kv.first);
        ASSERT_EQ(kv.second.size(), g.size());
        for (size_t i = 0; i < g.size(); i++) {
          const float a = fg_bits_f32(g[i]), b = fg_bits_f32(kv.second[i]);
          // Relative, floored at 0.1: the parameters are O(1) and a value passing near zero
          // carries the absolute rounding of its larger neighbours.
          const double d = std::fabs((double)a - (double)b) / (0.1 + std::fabs((double)b));
          if (d > worst && std::getenv("FGT_APOLLO_DEBUG"))
            std::printf("step %d %s[%zu] got %.9g want %.9g\n", k, kv.first.c_str(), i, a, b);
          worst = std::max(worst, d);
        }
      }
    }
    std::printf("%-70s worst relative difference %.3g\n", ac.line.c_str(), worst);
    EXPECT_LT(worst, 1e-5);
  }
}

// The device kernels of forgia/apollo.h on their own: the channel factors against an f64
// recomputation, U, the limiter's memory, and the argument checks.
TEST(OptimApollo, KernelsOnTheirOwn) {
  Cpu cpu;
  const size_t rows = 3, cols = 5, rank = 2;  // wide: R is 2 x 5, one factor per column
  std::vector<float> m = fgt::gaussian(rank * cols, 1, 0.1f), v = fgt::gaussian(rank * cols, 2, 0.01f),
                     r = fgt::gaussian(rank * cols, 3, 1.0f), g = fgt::gaussian(rows * cols, 4, 1.0f);
  for (float &x : v) x = std::fabs(x);
  std::vector<float> s(cols), u(rows * cols);
  ASSERT_EQ(FG_OK, fg_apollo_scaling(cpu.dev, FG_APOLLO_LAYOUT_WIDE, rows, cols, rank, m.data(), v.data(), r.data(), 1e-6f,
                                     s.data(), nullptr));
  for (size_t c = 0; c < cols; c++) {
    double so = 0, sr = 0;
    for (size_t k = 0; k < rank; k++) {
      const float o = m[k * cols + c] / (std::sqrt(v[k * cols + c]) + 1e-6f);
      so += (double)o * o;
      sr += (double)r[k * cols + c] * r[k * cols + c];
    }
    EXPECT_EQ((float)(std::sqrt(so) / (std::sqrt(sr) + 1e-8)), s[c]) << c;
  }
  ASSERT_EQ(FG_OK, fg_apollo_build(cpu.dev, FG_APOLLO_LAYOUT_WIDE, rows, cols, g.data(), s.data(), 2.0f, u.data(), nullptr));
  for (size_t i = 0; i < u.size(); i++) EXPECT_EQ((g[i] * s[i % cols]) * 2.0f, u[i]) << i;
  // The limiter: the first norm is recorded (factor 1); growth beyond 1% is divided away.
  double sumsq = 4.0, lim = 0;
  float prev = -1.0f;
  ASSERT_EQ(FG_OK, fg_apollo_limit(cpu.dev, &sumsq, &prev, &lim, nullptr));
  EXPECT_EQ(1.0, lim);
  EXPECT_EQ(2.0f, prev);
  sumsq = 16.0;  // norm 4: twice the last
  ASSERT_EQ(FG_OK, fg_apollo_limit(cpu.dev, &sumsq, &prev, &lim, nullptr));
  const float want = (4.0f / (2.0f + 1e-8f)) / 1.01f;
  EXPECT_EQ((double)want, lim);
  EXPECT_EQ(4.0f / want, prev);
  // Layouts that do not fit the shape, NULLs and an overlapping output are refused.
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_apollo_scaling(cpu.dev, FG_APOLLO_LAYOUT_TALL, rows, cols, rank, m.data(), v.data(),
                                                   r.data(), 1e-6f, s.data(), nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_apollo_scaling(cpu.dev, (fg_apollo_layout)7, rows, cols, rank, m.data(), v.data(), r.data(), 1e-6f,
                                                   s.data(), nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_apollo_build(cpu.dev, FG_APOLLO_LAYOUT_WIDE, rows, cols, g.data(), s.data(), 1.0f,
                                                g.data() + 1, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_apollo_limit(cpu.dev, nullptr, &prev, &lim, nullptr));
}

// With the fast GEMM (BLAS), APOLLO differs from Fucina only through R's rounding: the
// fallback's parameters keep Fucina's bits, the low-rank ones stay within f32 rounding.
TEST(OptimApollo, FastGemmDiffersOnlyByRounding) {
  Cpu cpu;
  for (const auto &ac : fgt::apollo_cases()) {
    if (ac.big) continue;
    SCOPED_TRACE(ac.line);
    fgt::ApolloRig rig(cpu.dev, ac, FG_GEMM_FAST);
    double worst = 0.0;
    for (int k = 1; k <= ac.steps; k++) {
      rig.step(k);
      const auto got = rig.snapshot();
      for (const auto &kv : ac.want[k - 1]) {
        const auto &g = got.at(kv.first);
        if (kv.first[0] == 'f') {
          EXPECT_EQ(kv.second, g) << "step " << k << " " << kv.first;
          continue;
        }
        if (kv.first.size() > 2) continue;  // 16-bit bits: covered by their master
        for (size_t i = 0; i < g.size(); i++) {
          const double a = fg_bits_f32(g[i]), b = fg_bits_f32(kv.second[i]);
          worst = std::max(worst, std::fabs(a - b) / (0.1 + std::fabs(b)));
        }
      }
    }
    EXPECT_LT(worst, 1e-5);
  }
  EXPECT_EQ(FG_OK, fg_device_set_gemm_mode(cpu.dev, FG_GEMM_DEFAULT));
}
