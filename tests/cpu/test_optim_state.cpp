// Optimizer state through Fucina's frames: two steps of SGD, Adam and AdamW (f32 and bf16
// state, 16-bit parameters with masters) save the very bytes Fucina's own optimizers saved
// for the same inputs (tests/data/golden/fucina_frames, gen_frames.zig); those files load
// and save back unchanged; a resume from a saved state continues bit for bit; a damaged or
// mismatched frame changes nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/optim.h"
#include "testutil.h"

namespace {

const float w6[6] = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f, 1.5f};
const float g6[2][6] = {{0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.25f}, {-0.3f, 0.8f, -1.2f, 0.6f, 0.1f, -0.9f}};
const float b3[3] = {0.25f, -0.75f, 0.5f};
const float gb3[2][3] = {{0.5f, -1.0f, 0.25f}, {-0.125f, 0.375f, 2.0f}};

struct Case {
  const char *file;
  fg_optim_config c;
  bool with16;
};

fg_optim_config cfg(fg_optim_kind k, float lr, float wd, fg_dtype sd, fg_dtype sd2, float mom = 0, float damp = 0,
                    bool nest = false) {
  fg_optim_config c = fg_optim_defaults(k);
  c.lr = lr;
  if (k != FG_OPTIM_ADAMW || wd >= 0) c.weight_decay = wd < 0 ? 0.0f : wd;
  c.state_dtype = sd;
  c.second_moment_dtype = sd2;
  c.momentum = mom, c.dampening = damp, c.nesterov = nest;
  return c;
}

// gen_frames.zig's runMoment / runSgd: the same parameters, names and gradients.
struct Trajectory {
  fg_device *dev = nullptr;
  fg_optim *o = nullptr;
  std::vector<fg_tensor *> ts;
  bool sgd;
  Trajectory(const Case &k) : sgd(k.c.kind == FG_OPTIM_SGD) {
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev));
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &k.c, &o)) << fg_last_error();
    const uint64_t s23[2] = {2, 3}, s3[1] = {3};
    ts.push_back(make(FG_F32, 2, s23, w6));
    ts.push_back(make(FG_F32, 1, s3, b3));
    if (k.with16) ts.push_back(make(sgd ? FG_F16 : FG_BF16, 2, s23, w6));
    EXPECT_EQ(FG_OK, fg_optim_add(o, ts[0], sgd ? nullptr : "w"));
    EXPECT_EQ(FG_OK, fg_optim_add(o, ts[1], sgd ? "bias" : nullptr));
    if (k.with16) {
      EXPECT_EQ(FG_OK, fg_optim_add(o, ts[2], sgd ? nullptr : "w16"));
    }
  }
  fg_tensor *make(fg_dtype d, int nd, const uint64_t *sh, const float *v) {
    fg_tensor *t = nullptr;
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, d, nd, sh, &t));
    for (size_t i = 0; i < t->numel; i++) {
      if (d == FG_F32) {
        ((float *)t->data)[i] = v[i];
      } else {
        ((uint16_t *)t->data)[i] = d == FG_F16 ? fg_f32_to_f16(v[i]) : fg_f32_to_bf16(v[i]);
      }
    }
    EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(t));
    return t;
  }
  void step(int s) {
    std::memcpy(ts[0]->grad, g6[s], sizeof g6[s]);
    std::memcpy(ts[1]->grad, gb3[s], sizeof gb3[s]);
    if (ts.size() == 3) std::memcpy(ts[2]->grad, g6[1 - s], sizeof g6[1 - s]);
    ASSERT_EQ(FG_OK, fg_optim_step(o, nullptr)) << fg_last_error();
  }
  std::vector<uint8_t> save() {
    uint8_t *p = nullptr;
    size_t n = 0;
    EXPECT_EQ(FG_OK, fg_optim_save_state(o, &p, &n)) << fg_last_error();
    std::vector<uint8_t> v(p, p + n);
    free(p);
    return v;
  }
  ~Trajectory() {
    fg_optim_free(o);
    for (fg_tensor *t : ts) fg_tensor_free(t);
    fg_device_close(dev);
  }
};

std::vector<Case> cases() {
  const fg_dtype F = FG_F32, B = FG_BF16;
  return {
      {"adamw_v3", cfg(FG_OPTIM_ADAMW, 0.1f, 0.1f, F, F), false},
      {"adamw_v4", cfg(FG_OPTIM_ADAMW, 0.1f, -1, B, F), false},
      {"adamw_v5", cfg(FG_OPTIM_ADAMW, 0.01f, -1, B, B), true},
      {"adam_v3", cfg(FG_OPTIM_ADAM, 0.1f, 0.05f, F, F), false},
      {"adam_v4", cfg(FG_OPTIM_ADAM, 0.1f, 0, F, B), false},
      {"adam_v5", cfg(FG_OPTIM_ADAM, 0.01f, 0, F, F), true},
      {"sgd_plain_v3", cfg(FG_OPTIM_SGD, 0.1f, 0, F, F), false},
      {"sgd_momentum_v3", cfg(FG_OPTIM_SGD, 0.1f, 0.05f, F, F, 0.9f, 0.1f), false},
      {"sgd_nesterov_v4", cfg(FG_OPTIM_SGD, 0.1f, 0, B, F, 0.9f, 0, true), false},
      {"sgd_plain_v5", cfg(FG_OPTIM_SGD, 0.1f, 0, F, F), true},
      {"sgd_momentum_v5", cfg(FG_OPTIM_SGD, 0.1f, 0, F, F, 0.5f), true},
  };
}

std::vector<uint8_t> golden(const char *name) {
  return fgt::read_file(std::string(FORGIA_TEST_DATA) + "/golden/fucina_frames/" + name + ".bin");
}

}  // namespace

TEST(OptimState, TwoStepsSaveFucinasBytes) {
  for (const Case &k : cases()) {
    Trajectory r(k);
    r.step(0);
    r.step(1);
    const std::vector<uint8_t> want = golden(k.file);
    ASSERT_FALSE(want.empty()) << k.file;
    EXPECT_EQ(want, r.save()) << k.file;
  }
}

TEST(OptimState, FucinasFramesLoadAndSaveBack) {
  for (const Case &k : cases()) {
    Trajectory r(k);
    const std::vector<uint8_t> g = golden(k.file);
    ASSERT_EQ(FG_OK, fg_optim_load_state(r.o, g.data(), g.size())) << k.file << ": " << fg_last_error();
    EXPECT_EQ(2u, fg_optim_step_count_at(r.o, 0)) << k.file;
    EXPECT_EQ(g, r.save()) << k.file;  // masters included: the loaded ones are Fucina's
  }
}

// Step 1, save, a fresh optimizer over the stepped parameters loads it, step 2: the same
// bits as two uninterrupted steps (parameters and state).
TEST(OptimState, ResumeContinuesBitForBit) {
  for (const Case &k : cases()) {
    Trajectory whole(k), first(k), second(k);
    whole.step(0);
    whole.step(1);
    first.step(0);
    const std::vector<uint8_t> mid = first.save();
    for (size_t i = 0; i < first.ts.size(); i++) std::memcpy(second.ts[i]->data, first.ts[i]->data, first.ts[i]->nbytes);
    ASSERT_EQ(FG_OK, fg_optim_load_state(second.o, mid.data(), mid.size())) << k.file << ": " << fg_last_error();
    second.step(1);
    for (size_t i = 0; i < whole.ts.size(); i++)
      EXPECT_EQ(0, std::memcmp(whole.ts[i]->data, second.ts[i]->data, whole.ts[i]->nbytes)) << k.file << " " << i;
    EXPECT_EQ(whole.save(), second.save()) << k.file;
  }
}

TEST(OptimState, DamagedOrMismatchedFramesChangeNothing) {
  const Case k = cases()[1];  // adamw_v4
  Trajectory r(k);
  r.step(0);
  const std::vector<uint8_t> before = r.save();
  std::vector<float> w0(r.ts[0]->numel);
  std::memcpy(w0.data(), r.ts[0]->data, r.ts[0]->nbytes);
  const std::vector<uint8_t> g = golden(k.file);
  for (size_t cut = 0; cut < g.size(); cut += 7)
    EXPECT_NE(FG_OK, fg_optim_load_state(r.o, g.data(), cut)) << cut;
  // Another kind, another config, another name set: each its error.
  const std::vector<uint8_t> sgd = golden("sgd_momentum_v3");
  EXPECT_EQ(FG_ERR_BAD_MAGIC, fg_optim_load_state(r.o, sgd.data(), sgd.size()));
  const std::vector<uint8_t> f32state = golden("adamw_v3");  // m stored f32, configured bf16
  EXPECT_EQ(FG_ERR_FRAME_DTYPE_MISMATCH, fg_optim_load_state(r.o, f32state.data(), f32state.size()));
  Case sk = cases()[8];  // sgd_nesterov_v4 into an SGD with another momentum
  sk.c.momentum = 0.8f;
  Trajectory s(sk);
  const std::vector<uint8_t> nest = golden("sgd_nesterov_v4");
  EXPECT_EQ(FG_ERR_FRAME_CONFIG_MISMATCH, fg_optim_load_state(s.o, nest.data(), nest.size()));
  Case extra = k;
  Trajectory e(extra);
  const uint64_t s1[1] = {1};
  fg_tensor *t = e.make(FG_F32, 1, s1, w6);
  ASSERT_EQ(FG_OK, fg_optim_add(e.o, t, "not-in-the-file"));
  e.ts.push_back(t);
  EXPECT_EQ(FG_ERR_FRAME_MISSING_ENTRY, fg_optim_load_state(e.o, g.data(), g.size()));
  EXPECT_EQ(0u, fg_optim_step_count_at(e.o, 0));
  EXPECT_EQ(before, r.save());
  EXPECT_EQ(0, std::memcmp(w0.data(), r.ts[0]->data, r.ts[0]->nbytes));
}
