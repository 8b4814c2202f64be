// Optimizers: torch.optim parity on committed trajectories (25 steps, skipped gradients,
// clipping, 16-bit parameters through f32 masters), Fucina's goldens, thread-count
// invariance, step counts and argument checks, all through the public API.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "optim_cases.h"
#include "testutil.h"

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  ~Cpu() { fg_device_close(dev); }
};

// Distance in units in the last place between two finite floats of the same width.
int64_t ulps32(uint32_t a, uint32_t b) {
  auto key = [](uint32_t u) { return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u; };
  return std::llabs(key(a) - key(b));
}
int64_t ulps16(uint16_t a, uint16_t b) {
  auto key = [](uint16_t u) { return (u & 0x8000u) ? -(int64_t)(u & 0x7fffu) : (int64_t)u; };
  return std::llabs(key(a) - key(b));
}

}  // namespace

// torch computes its scalars in Python floats and its elementwise ops in its own order;
// Fucina's (and so forgia's) step rounds each scalar once to f32, so after 25 steps the two
// stay within a few f32 ulps (a 16-bit parameter: within one unit of its own precision).
TEST(Optim, ReproducesTorchTrajectories) {
  Cpu cpu;
  const auto cases = fgt::optim_cases();
  ASSERT_EQ(11u, cases.size());
  for (const auto &oc : cases) {
    SCOPED_TRACE(oc.line);
    const auto got = fgt::optim_replay(cpu.dev, oc);
    int64_t worst = 0;
    for (size_t j = 0; j < got.size(); j++) {
      if (oc.p16 == FG_F32) {
        ASSERT_EQ(oc.want[j].size() * 4, got[j].size());
        for (size_t i = 0; i < oc.want[j].size(); i++) {
          uint32_t g;
          std::memcpy(&g, &got[j][i * 4], 4);
          worst = std::max(worst, ulps32(g, oc.want[j][i]));
        }
      } else {
        ASSERT_EQ(oc.want16[j].size() * 2, got[j].size());
        for (size_t i = 0; i < oc.want16[j].size(); i++) {
          uint16_t g;
          std::memcpy(&g, &got[j][i * 2], 2);
          worst = std::max(worst, ulps16(g, oc.want16[j][i]) * 1000);  // any 16-bit flip counts big
        }
      }
    }
    std::printf("%-75s worst %lld %s\n", oc.line.c_str(), (long long)(oc.p16 == FG_F32 ? worst : worst / 1000),
                oc.p16 == FG_F32 ? "f32 ulps" : "16-bit ulps");
    EXPECT_LE(worst, oc.p16 == FG_F32 ? 8 : 1000) << "worst distance " << worst;
  }
}

TEST(Optim, SkippedGradientsDoNotAdvanceTheStep) {
  Cpu cpu;
  for (const auto &oc : fgt::optim_cases()) {
    if (oc.skip.empty()) continue;
    std::vector<uint64_t> counts;
    fgt::optim_replay(cpu.dev, oc, &counts);
    EXPECT_EQ((uint64_t)oc.steps, counts[0]);
    EXPECT_EQ((uint64_t)(oc.steps - (int)oc.skip.size()), counts[1]);
  }
}

TEST(Optim, TrajectoriesDoNotDependOnThreadCount) {
  Cpu cpu;
  const int saved = omp_get_max_threads();
  for (const auto &oc : fgt::optim_cases()) {
    omp_set_num_threads(1);
    const auto a = fgt::optim_replay(cpu.dev, oc);
    omp_set_num_threads(7);
    const auto b = fgt::optim_replay(cpu.dev, oc);
    EXPECT_EQ(a, b) << oc.line;
  }
  omp_set_num_threads(saved);
}

// Fucina's own goldens (its src/optim_tests.zig): AdamW and nesterov SGD, three steps on a 2x3
// matrix.
TEST(Optim, ReproducesFucinaGoldens) {
  Cpu cpu;
  const float g[3][6] = {{.5f, -1, 2, .25f, -.75f, 1.25f}, {-.3f, .8f, -1.2f, .6f, .1f, -.9f}, {1.1f, .2f, -.4f, -1.3f, .7f, .05f}};
  struct Want {
    fg_optim_config c;
    float w[6];
  };
  fg_optim_config adamw = fg_optim_defaults(FG_OPTIM_ADAMW);
  adamw.lr = 0.1f, adamw.weight_decay = 0.1f;
  fg_optim_config sgd = fg_optim_defaults(FG_OPTIM_SGD);
  sgd.lr = 0.1f, sgd.momentum = 0.9f, sgd.weight_decay = 0.05f, sgd.nesterov = true;
  const Want wants[2] = {{adamw, {0.789949954f, -1.84225929f, 0.364398748f, 2.74388266f, -0.0998689979f, 1.33619833f}},
                         {sgd, {0.662476242f, -1.83479154f, 0.201548651f, 2.8810966f, -0.145868853f, 1.24946809f}}};
  for (const Want &w : wants) {
    const uint64_t shape[2] = {2, 3};
    fg_tensor *t = nullptr;
    ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "w", FG_F32, 2, shape, &t));
    const float w0[6] = {1, -2, 0.5f, 3, -0.25f, 1.5f};
    ASSERT_EQ(FG_OK, fg_tensor_upload(t, w0, sizeof w0, nullptr));
    ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));
    fg_optim *o = nullptr;
    ASSERT_EQ(FG_OK, fg_optim_create(cpu.dev, &w.c, &o));
    ASSERT_EQ(FG_OK, fg_optim_add(o, t, "w"));
    for (int k = 0; k < 3; k++) {
      std::memcpy(t->grad, g[k], sizeof g[k]);
      ASSERT_EQ(FG_OK, fg_optim_step(o, nullptr));
    }
    for (int i = 0; i < 6; i++) EXPECT_NEAR(w.w[i], ((float *)t->data)[i], 2e-6) << fg_optim_kind_name(w.c.kind) << " " << i;
    fg_optim_free(o);
    fg_tensor_free(t);
  }
}

TEST(Optim, ClipReportsTheTotalAndScalesOnlyAboveTheLimit) {
  Cpu cpu;
  const uint64_t shape[1] = {2};
  fg_tensor *a = nullptr, *b = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "a", FG_F32, 1, shape, &a));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "b", FG_BF16, 1, shape, &b));
  ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(a));
  ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(b));
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_SGD);
  fg_optim *o = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(cpu.dev, &c, &o));
  ASSERT_EQ(FG_OK, fg_optim_add(o, a, nullptr));
  ASSERT_EQ(FG_OK, fg_optim_add(o, b, nullptr));
  EXPECT_STREQ("param0", fg_optim_name_at(o, 0));
  EXPECT_STREQ("param1", fg_optim_name_at(o, 1));
  a->grad[0] = 3, a->grad[1] = 0, b->grad[0] = 0, b->grad[1] = 4;  // norm 5
  double sq = 0;
  ASSERT_EQ(FG_OK, fg_optim_grad_squared_norm(o, &sq, nullptr));
  EXPECT_EQ(25.0, sq);
  float total = 0;
  ASSERT_EQ(FG_OK, fg_optim_clip_grad_norm(o, 10.0f, &total, nullptr));
  EXPECT_EQ(5.0f, total);
  EXPECT_EQ(3.0f, a->grad[0]);  // under the limit: untouched
  ASSERT_EQ(FG_OK, fg_optim_clip_grad_norm(o, 1.0f, &total, nullptr));
  const float coef = 1.0f / (5.0f + 1e-6f);
  EXPECT_EQ(3.0f * coef, a->grad[0]);
  EXPECT_EQ(4.0f * coef, b->grad[1]);
  ASSERT_EQ(FG_OK, fg_optim_scale_gradients(o, 2.0f, nullptr));
  EXPECT_EQ(2.0f * (3.0f * coef), a->grad[0]);
  ASSERT_EQ(FG_OK, fg_optim_zero_grad(o, nullptr));
  EXPECT_EQ(0.0f, a->grad[0]);
  EXPECT_EQ(0.0f, b->grad[1]);
  fg_optim_free(o);
  fg_tensor_free(a);
  fg_tensor_free(b);
}

TEST(Optim, BadConfigsAndParametersChangeNothing) {
  Cpu cpu;
  fg_optim *o = nullptr;
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_SGD);
  c.nesterov = true;  // torch's rule: nesterov needs momentum
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_create(cpu.dev, &c, &o));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "nesterov")) << fg_last_error();
  c = fg_optim_defaults(FG_OPTIM_ADAM);
  c.beta2 = 1.0f;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_create(cpu.dev, &c, &o));
  c = fg_optim_defaults(FG_OPTIM_ADAMW);
  c.state_dtype = FG_F16;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_create(cpu.dev, &c, &o));
  c.state_dtype = FG_BF16;
  c.lr = NAN;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optim_create(cpu.dev, &c, &o));
  EXPECT_EQ(nullptr, o);
  c.lr = 1e-3f;
  ASSERT_EQ(FG_OK, fg_optim_create(cpu.dev, &c, &o));
  const uint64_t shape[1] = {4};
  fg_tensor *t = nullptr, *q = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "t", FG_F32, 1, shape, &t));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "q", FG_I32, 1, shape, &q));
  ASSERT_EQ(FG_OK, fg_optim_add(o, t, "w"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add(o, t, "w2"));
  EXPECT_EQ(FG_ERR_TYPE, fg_optim_add(o, q, "q"));
  fg_tensor *u = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "u", FG_F32, 1, shape, &u));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optim_add(o, u, "w"));
  u->readonly = true;
  EXPECT_EQ(FG_ERR_STATE, fg_optim_add(o, u, "u"));
  EXPECT_EQ(1u, fg_optim_count(o));
  EXPECT_EQ(FG_OK, fg_optim_step(o, nullptr));  // no gradient anywhere: a no-op
  EXPECT_EQ(0u, fg_optim_step_count_at(o, 0));
  fg_optim_free(o);
  fg_tensor_free(t);
  fg_tensor_free(q);
  fg_tensor_free(u);
  fg_optim_free(nullptr);
}

// bf16 state: the moments are stored narrowed and the trajectory stays close to f32 state.
TEST(Optim, Bf16MomentsStayCloseToF32) {
  Cpu cpu;
  auto cases = fgt::optim_cases();
  fgt::OptimCase oc = cases[4];  // adamw lr 0.01 wd 0.1
  const auto f32 = fgt::optim_replay(cpu.dev, oc);
  oc.c.state_dtype = FG_BF16;
  oc.c.second_moment_dtype = FG_BF16;
  const auto bf = fgt::optim_replay(cpu.dev, oc);
  EXPECT_NE(f32, bf);
  for (size_t j = 0; j < f32.size(); j++)
    for (size_t i = 0; i < f32[j].size() / 4; i++) {
      float a, b;
      std::memcpy(&a, &f32[j][i * 4], 4);
      std::memcpy(&b, &bf[j][i * 4], 4);
      EXPECT_NEAR(a, b, 2e-2) << j << " " << i;
    }
}

// Fucina's own SGD/Adam/AdamW on the torch cases (tests/data/golden/fucina_optim.txt, generator
// tests/data/fucina_gen/gen_optim.zig), each also with bf16 state: forgia's final parameters,
// f32 masters and 16-bit parameters are the same bits.
TEST(Optim, SameBitsAsFucina) {
  Cpu cpu;
  const auto cases = fgt::optim_cases("fucina_optim.txt");
  ASSERT_EQ(22u, cases.size());
  size_t bf16_state = 0;
  for (const auto &oc : cases) {
    SCOPED_TRACE(oc.line);
    bf16_state += oc.c.state_dtype == FG_BF16;
    std::vector<std::vector<uint32_t>> masters;
    const auto got = fgt::optim_replay(cpu.dev, oc, nullptr, &masters);
    ASSERT_EQ(oc.want.size(), masters.size());
    ASSERT_EQ(oc.p16 == FG_F32 ? 0u : got.size(), oc.want16.size());
    for (size_t j = 0; j < got.size(); j++) {
      ASSERT_EQ(oc.want[j].size(), masters[j].size());
      for (size_t i = 0; i < masters[j].size(); i++)
        EXPECT_EQ(oc.want[j][i], masters[j][i]) << "p" << j << "[" << i << "]";
      EXPECT_EQ(0, std::memcmp(oc.want[j].data(), masters[j].data(), masters[j].size() * 4)) << "p" << j;
      if (oc.p16 != FG_F32) {
        ASSERT_EQ(oc.want16[j].size() * 2, got[j].size());
        EXPECT_EQ(0, std::memcmp(oc.want16[j].data(), got[j].data(), got[j].size())) << "p" << j << "_16";
      }
    }
  }
  EXPECT_EQ(11u, bf16_state);
}
