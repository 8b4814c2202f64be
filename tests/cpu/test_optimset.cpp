// Param groups and schedules: a set of optimizers stepped, scaled and clipped as one, with
// Fucina's global norm (each member sums its parameters, then members in order), and the
// learning-rate factors of the seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/lr_schedule.h"
#include "forgia/optimset.h"
#include "forgia/reduce.h"
#include "testutil.h"

namespace {

struct Fixture {
  fg_device *dev = nullptr;
  std::vector<fg_tensor *> ts;
  fg_optim *a = nullptr, *b = nullptr;
  Fixture() {
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev));
    const uint64_t shapes[3][2] = {{33, 7}, {5, 1}, {40000, 1}};
    for (int i = 0; i < 3; i++) {
      fg_tensor *t = nullptr;
      EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, FG_F32, 2, shapes[i], &t));
      std::vector<float> v = fgt::gaussian(t->numel, 10 + i);
      EXPECT_EQ(FG_OK, fg_tensor_upload(t, v.data(), t->nbytes, nullptr));
      EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(t));
      std::vector<float> g = fgt::gaussian(t->numel, 20 + i, 3.0f);
      std::memcpy(t->grad, g.data(), t->nbytes);
      ts.push_back(t);
    }
    fg_optim_config ca = fg_optim_defaults(FG_OPTIM_ADAMW), cb = fg_optim_defaults(FG_OPTIM_SGD);
    cb.momentum = 0.9f;
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &ca, &a));
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &cb, &b));
    EXPECT_EQ(FG_OK, fg_optim_add(a, ts[0], "w"));
    EXPECT_EQ(FG_OK, fg_optim_add(a, ts[1], "bias"));
    EXPECT_EQ(FG_OK, fg_optim_add(b, ts[2], "emb"));
  }
  ~Fixture() {
    fg_optim_free(a);
    fg_optim_free(b);
    for (fg_tensor *t : ts) fg_tensor_free(t);
    fg_device_close(dev);
  }
  double sumsq(size_t i) {
    double r = 0;
    EXPECT_EQ(FG_OK, fg_reduce_array(dev, FG_REDUCE_SUMSQ, ts[i]->grad, FG_F32, ts[i]->numel, &r, nullptr));
    return r;
  }
};

}  // namespace

TEST(OptimSet, GlobalNormIsMembersInOrderAndClipScalesEveryMember) {
  Fixture f;
  fg_optimset *set = nullptr;
  ASSERT_EQ(FG_OK, fg_optimset_create(&set));
  ASSERT_EQ(FG_OK, fg_optimset_add(set, f.a));
  ASSERT_EQ(FG_OK, fg_optimset_add(set, f.b));
  const double m0 = (0.0 + f.sumsq(0)) + f.sumsq(1), m1 = 0.0 + f.sumsq(2);
  const double want = (0.0 + m0) + m1;
  double got = 0;
  ASSERT_EQ(FG_OK, fg_optimset_grad_squared_norm(set, &got, nullptr)) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(&want, &got, 8)) << want << " vs " << got;
  std::vector<std::vector<float>> before;
  for (fg_tensor *t : f.ts) before.emplace_back(t->grad, t->grad + t->numel);
  float total = 0;
  ASSERT_EQ(FG_OK, fg_optimset_clip_grad_norm(set, 1.0f, &total, nullptr));
  EXPECT_EQ((float)std::sqrt(want), total);
  const float coef = 1.0f / ((float)std::sqrt(want) + 1e-6f);
  for (size_t i = 0; i < f.ts.size(); i++)
    for (size_t k = 0; k < f.ts[i]->numel; k += 97) ASSERT_EQ(before[i][k] * coef, f.ts[i]->grad[k]) << i << " " << k;
  fg_optimset_free(set);
}

TEST(OptimSet, StepEqualsSteppingEachMember) {
  Fixture f, g;
  fg_optimset *set = nullptr;
  ASSERT_EQ(FG_OK, fg_optimset_create(&set));
  ASSERT_EQ(FG_OK, fg_optimset_add(set, f.a));
  ASSERT_EQ(FG_OK, fg_optimset_add(set, f.b));
  for (int k = 0; k < 3; k++) {
    ASSERT_EQ(FG_OK, fg_optimset_apply_lr_factor(set, 0.5 * (k + 1)));
    ASSERT_EQ(FG_OK, fg_optimset_step(set, nullptr));
    ASSERT_EQ(FG_OK, fg_optim_apply_lr_factor(g.a, 0.5 * (k + 1)));
    ASSERT_EQ(FG_OK, fg_optim_apply_lr_factor(g.b, 0.5 * (k + 1)));
    ASSERT_EQ(FG_OK, fg_optim_step(g.a, nullptr));
    ASSERT_EQ(FG_OK, fg_optim_step(g.b, nullptr));
  }
  EXPECT_EQ((float)(1e-3 * 1.5), fg_optim_lr(f.a));
  for (size_t i = 0; i < f.ts.size(); i++) EXPECT_EQ(0, std::memcmp(f.ts[i]->data, g.ts[i]->data, f.ts[i]->nbytes)) << i;
  ASSERT_EQ(FG_OK, fg_optimset_zero_grad(set, nullptr));
  EXPECT_EQ(0.0f, f.ts[2]->grad[5]);
  fg_optimset_free(set);
}

TEST(OptimSet, AParameterInTwoMembersIsRefused) {
  Fixture f;
  fg_optimset *set = nullptr;
  ASSERT_EQ(FG_OK, fg_optimset_create(&set));
  ASSERT_EQ(FG_OK, fg_optimset_add(set, f.a));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optimset_add(set, f.a));
  fg_optim *c = nullptr;
  fg_optim_config cc = fg_optim_defaults(FG_OPTIM_ADAM);
  ASSERT_EQ(FG_OK, fg_optim_create(f.dev, &cc, &c));
  ASSERT_EQ(FG_OK, fg_optim_add(c, f.ts[1], "b2"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optimset_add(set, c));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "'b2' is already in member 0 as 'bias'")) << fg_last_error();
  EXPECT_EQ(1u, fg_optimset_count(set));
  EXPECT_EQ(f.a, fg_optimset_member(set, 0));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_optimset_clip_grad_norm(set, -1.0f, nullptr, nullptr));
  fg_optim_free(c);
  fg_optimset_free(set);
  fg_optimset_free(nullptr);
}

// The fallback lists of Muon and APOLLO are slot lists too: a parameter in one member's
// fallback cannot join another member, in either direction.
TEST(OptimSet, AParameterInAFallbackIsRefusedToo) {
  Fixture f;
  fg_optim_config mc = fg_optim_defaults(FG_OPTIM_MUON), pc = fg_optim_defaults(FG_OPTIM_APOLLO);
  fg_optim_config ac = fg_optim_defaults(FG_OPTIM_ADAM);
  fg_optim *muon = nullptr, *apollo = nullptr, *adam = nullptr, *apollo2 = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(f.dev, &mc, &muon));
  ASSERT_EQ(FG_OK, fg_optim_create(f.dev, &pc, &apollo));
  ASSERT_EQ(FG_OK, fg_optim_create(f.dev, &pc, &apollo2));
  ASSERT_EQ(FG_OK, fg_optim_create(f.dev, &ac, &adam));
  ASSERT_EQ(FG_OK, fg_optim_add_fallback(muon, f.ts[1], "mb"));  // routed explicitly
  ASSERT_EQ(FG_OK, fg_optim_add_fallback(apollo, f.ts[2], "pb"));
  ASSERT_EQ(FG_OK, fg_optim_add_fallback(apollo2, f.ts[1], "pb2"));
  fg_optimset *set = nullptr;
  ASSERT_EQ(FG_OK, fg_optimset_create(&set));
  ASSERT_EQ(FG_OK, fg_optimset_add(set, muon));
  ASSERT_EQ(FG_OK, fg_optimset_add(set, apollo));
  ASSERT_EQ(FG_OK, fg_optim_add(adam, f.ts[2], "again"));
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optimset_add(set, adam));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "'again' is already in member 1 as 'pb'")) << fg_last_error();
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_optimset_add(set, apollo2));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "'pb2' is already in member 0 as 'mb'")) << fg_last_error();
  EXPECT_EQ(2u, fg_optimset_count(set));
  fg_optimset_free(set);
  fg_optim_free(muon);
  fg_optim_free(apollo);
  fg_optim_free(apollo2);
  fg_optim_free(adam);
}

// Fucina's warmupCosineFactor endpoints (its own test), and the linear and constant kinds.
TEST(LrSchedule, FactorsFollowTheSeed) {
  fg_lr_schedule s = {FG_LR_WARMUP_COSINE, 100, 10, 0.1};
  EXPECT_NEAR(0.1, fg_lr_factor(&s, 0), 1e-12);
  EXPECT_NEAR(1.0, fg_lr_factor(&s, 9), 1e-12);
  EXPECT_NEAR(0.1, fg_lr_factor(&s, 100), 1e-9);
  EXPECT_NEAR(0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * 0.5)), fg_lr_factor(&s, 55), 1e-12);
  EXPECT_EQ(0.1, fg_lr_factor(&s, 1000));
  s.kind = FG_LR_WARMUP_LINEAR;
  EXPECT_NEAR(0.1 + 0.9 * 0.5, fg_lr_factor(&s, 55), 1e-12);
  s.kind = FG_LR_CONSTANT;
  EXPECT_EQ(1.0, fg_lr_factor(&s, 55));
  fg_lr_schedule w = {FG_LR_WARMUP_COSINE, 5, 10, 0.25};
  EXPECT_EQ(0.25, fg_lr_factor(&w, 12));  // total <= warmup: min after the warmup
}
