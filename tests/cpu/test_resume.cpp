// Bit-exact resume from a halfway checkpoint directory: the model through the registry's
// state dict (model.safetensors), the optimizer's or set's save-state (optimizer.fucina) and
// trainer_state.json with the step. 2N steps in one go equal N steps, a save, fresh objects
// (parameters scrambled), a load and N more: every parameter and the final save-state bytes
// memcmp-equal. Kinds: SGD, AdamW, and a set with groups + warmup-cosine + global clip, the
// last also under gradient accumulation (loss scaled by 1/A, one clip per window, schedule
// keyed by the macro step, saves only at window boundaries).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/registry.h"
#include "testutil.h"

namespace {

using Bytes = std::vector<uint8_t>;

enum Kind { SGD, ADAMW, SET };

const fg_lr_schedule kSchedule = {FG_LR_WARMUP_COSINE, 8, 2, 0.1};
const float kClip = 0.75f;

// A tiny model: W [4,3] f32, bias [4] f32, h [3,2] bf16 (trainable, with an f32 master),
// pos [2] i64 frozen. The gradient of a micro-batch depends on the parameters' current
// values, so a resume that restored anything inexactly would diverge.
struct Trainer {
  Kind kind;
  uint64_t accum;
  fg_device *dev = nullptr;
  fg_tensor *w = nullptr, *b = nullptr, *h = nullptr, *pos = nullptr;
  fg_registry *reg = nullptr;
  fg_optim *o1 = nullptr, *o2 = nullptr;
  fg_optimset *set = nullptr;
  uint64_t step = 0; // micro-batches done

  Trainer(Kind k, uint64_t a, uint64_t init_seed) : kind(k), accum(a) {
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev));
    const uint64_t sw[2] = {4, 3}, sb[1] = {4}, sh[2] = {3, 2}, sp[1] = {2};
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, "W", FG_F32, 2, sw, &w));
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, "bias", FG_F32, 1, sb, &b));
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, "h", FG_BF16, 2, sh, &h));
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, "pos", FG_I64, 1, sp, &pos));
    std::vector<float> vw = fgt::gaussian(12, init_seed), vb = fgt::gaussian(4, init_seed + 1),
                       vh = fgt::gaussian(6, init_seed + 2);
    std::vector<uint16_t> hh(6);
    for (int i = 0; i < 6; i++) hh[i] = fg_f32_to_bf16(vh[i]);
    const int64_t pv[2] = {(int64_t)init_seed, -(int64_t)(init_seed << 40)};
    EXPECT_EQ(FG_OK, fg_tensor_upload(w, vw.data(), 48, nullptr));
    EXPECT_EQ(FG_OK, fg_tensor_upload(b, vb.data(), 16, nullptr));
    EXPECT_EQ(FG_OK, fg_tensor_upload(h, hh.data(), 12, nullptr));
    EXPECT_EQ(FG_OK, fg_tensor_upload(pos, pv, 16, nullptr));
    for (fg_tensor *t : {w, b, h}) EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(t));
    const fg_registry_entry table[] = {
        {"layers.0.weight", w, true}, {"layers.0.bias", b, true}, {"head.weight", h, true}, {"positions", pos, false}};
    EXPECT_EQ(FG_OK, fg_registry_create(table, 4, &reg));
    // Optimizers are created after the parameters' values are set (the masters widen them).
    if (kind == SGD) {
      fg_optim_config c = fg_optim_defaults(FG_OPTIM_SGD);
      c.lr = 0.05f, c.momentum = 0.9f, c.nesterov = true, c.weight_decay = 0.01f;
      EXPECT_EQ(FG_OK, fg_optim_create(dev, &c, &o1));
      EXPECT_EQ(FG_OK, fg_registry_add_to_optim(reg, o1));
    } else if (kind == ADAMW) {
      fg_optim_config c = fg_optim_defaults(FG_OPTIM_ADAMW);
      c.lr = 0.01f, c.state_dtype = FG_BF16, c.second_moment_dtype = FG_BF16;
      EXPECT_EQ(FG_OK, fg_optim_create(dev, &c, &o1));
      EXPECT_EQ(FG_OK, fg_registry_add_to_optim(reg, o1));
    } else { // groups: the matrix with decay; the bias and the 16-bit head without
      fg_optim_config c1 = fg_optim_defaults(FG_OPTIM_ADAMW), c2 = c1;
      c1.lr = 0.02f, c1.weight_decay = 0.1f;
      c2.lr = 0.01f, c2.weight_decay = 0.0f;
      EXPECT_EQ(FG_OK, fg_optim_create(dev, &c1, &o1));
      EXPECT_EQ(FG_OK, fg_optim_create(dev, &c2, &o2));
      EXPECT_EQ(FG_OK, fg_optim_add(o1, w, "layers.0.weight"));
      EXPECT_EQ(FG_OK, fg_optim_add(o2, b, "layers.0.bias"));
      EXPECT_EQ(FG_OK, fg_optim_add(o2, h, nullptr));
      EXPECT_EQ(FG_OK, fg_optimset_create(&set));
      EXPECT_EQ(FG_OK, fg_optimset_add(set, o1));
      EXPECT_EQ(FG_OK, fg_optimset_add(set, o2));
    }
  }
  ~Trainer() {
    fg_optimset_free(set);
    fg_optim_free(o1);
    fg_optim_free(o2);
    fg_registry_free(reg);
    for (fg_tensor *t : {w, b, h, pos}) fg_tensor_free(t);
    fg_device_close(dev);
  }

  // The gradient of micro-batch m: p - target(m), from the parameter's current values.
  static std::vector<float> values(const fg_tensor *t) {
    std::vector<float> v(t->numel);
    if (t->dtype == FG_F32) {
      EXPECT_EQ(FG_OK, fg_tensor_download(t, v.data(), t->nbytes, nullptr));
    } else {
      std::vector<uint16_t> hv(t->numel);
      EXPECT_EQ(FG_OK, fg_tensor_download(t, hv.data(), t->nbytes, nullptr));
      for (size_t i = 0; i < v.size(); i++) v[i] = fg_bf16_to_f32(hv[i]);
    }
    return v;
  }
  void accumulate(uint64_t micro) {
    const float inv = 1.0f / (float)accum; // the loss is scaled by 1/A
    int k = 0;
    for (fg_tensor *t : {w, b, h}) {
      std::vector<float> p = values(t), tgt = fgt::gaussian(t->numel, 1000 * micro + (uint64_t)k++, 2.0f);
      std::vector<float> g(t->numel);
      ASSERT_EQ(FG_OK, fg_device_copy(dev, g.data(), t->grad, t->numel * 4, FG_COPY_D2H));
      for (size_t i = 0; i < g.size(); i++) g[i] += (p[i] - tgt[i]) * inv;
      ASSERT_EQ(FG_OK, fg_device_copy(dev, t->grad, g.data(), t->numel * 4, FG_COPY_H2D));
    }
  }
  // One window of `accum` micro-batches, then one optimizer step (macro step step/accum).
  void window() {
    ASSERT_EQ(0u, step % accum);
    const uint64_t macro = step / accum;
    if (set) {
      ASSERT_EQ(FG_OK, fg_optimset_zero_grad(set, nullptr));
    } else {
      ASSERT_EQ(FG_OK, fg_optim_zero_grad(o1, nullptr));
    }
    for (uint64_t m = 0; m < accum; m++) accumulate(step + m);
    step += accum;
    if (set) { // the schedule is keyed by the macro step; one clip per window
      ASSERT_EQ(FG_OK, fg_optimset_apply_lr_factor(set, fg_lr_factor(&kSchedule, macro)));
      ASSERT_EQ(FG_OK, fg_optimset_clip_grad_norm(set, kClip, nullptr, nullptr));
      ASSERT_EQ(FG_OK, fg_optimset_step(set, nullptr)) << fg_last_error();
    } else {
      ASSERT_EQ(FG_OK, fg_optim_step(o1, nullptr)) << fg_last_error();
    }
  }
  Bytes state() {
    uint8_t *p = nullptr;
    size_t n = 0;
    EXPECT_EQ(FG_OK, set ? fg_optimset_save_state(set, &p, &n) : fg_optim_save_state(o1, &p, &n)) << fg_last_error();
    Bytes r(p, p + n);
    free(p);
    return r;
  }
  Bytes params() {
    Bytes r;
    for (fg_tensor *t : {w, b, h, pos}) {
      Bytes x(t->nbytes);
      EXPECT_EQ(FG_OK, fg_tensor_download(t, x.data(), x.size(), nullptr));
      r.insert(r.end(), x.begin(), x.end());
    }
    return r;
  }
  // Saves only at a window boundary (the trainer's rule; the step counts micro-batches).
  void save(const std::string &dir) {
    ASSERT_EQ(0u, step % accum);
    fg_registry_snapshot snap;
    ASSERT_EQ(FG_OK, fg_registry_snapshot_take(reg, false, &snap));
    const Bytes opt = state();
    fg_trainer_state ts;
    fg_trainer_state_init(&ts);
    ts.step = step;
    ts.seed = 0xF00DF00DF00DF00Dull;
    FG_TRAINER_STATE_SET(ts, accum_steps, accum);
    ASSERT_EQ(FG_OK, fg_ckpt_dir_save(dir.c_str(), FG_CKPT_DIR_MODEL, snap.entries, snap.n, opt.data(), opt.size(), &ts))
        << fg_last_error();
    fg_registry_snapshot_free(&snap);
  }
  // Weights first, then the optimizer (whose master records override the re-widened ones).
  void load(const std::string &dir) {
    fg_ckpt_dir *d = nullptr;
    ASSERT_EQ(FG_OK, fg_ckpt_dir_open(dir.c_str(), &d)) << fg_last_error();
    const fg_trainer_state *ts = fg_ckpt_dir_trainer_state(d);
    ASSERT_TRUE(ts->accum_steps.set);
    ASSERT_EQ(accum, ts->accum_steps.v);
    ASSERT_EQ(0u, ts->step % accum);
    ASSERT_EQ(FG_OK, fg_registry_load_file(reg, fg_ckpt_dir_weights_path(d, FG_CKPT_DIR_MODEL), nullptr, nullptr))
        << fg_last_error();
    const uint8_t *ob = nullptr;
    size_t on = 0;
    ASSERT_EQ(FG_OK, fg_ckpt_dir_optimizer(d, &ob, &on));
    ASSERT_EQ(FG_OK, set ? fg_optimset_load_state(set, ob, on) : fg_optim_load_state(o1, ob, on)) << fg_last_error();
    step = ts->step;
    fg_ckpt_dir_close(d);
  }
};

void check_resume(Kind kind, uint64_t accum) {
  const int n = 4;
  Trainer full(kind, accum, 7);
  for (int i = 0; i < 2 * n; i++) full.window();
  fgt::TempDir d;
  const std::string dir = d.file("ckpt");
  {
    Trainer first(kind, accum, 7);
    for (int i = 0; i < n; i++) first.window();
    first.save(dir);
  }
  Trainer second(kind, accum, 99); // other initial values: everything must come from the checkpoint
  ASSERT_NE(full.params(), second.params());
  second.load(dir);
  ASSERT_EQ((uint64_t)n * accum, second.step);
  for (int i = 0; i < n; i++) second.window();
  EXPECT_EQ(full.params(), second.params());
  EXPECT_EQ(full.state(), second.state());
  // And the checkpoint is what it claims: a second resume from it ends the same way.
  Trainer third(kind, accum, 5);
  third.load(dir);
  for (int i = 0; i < n; i++) third.window();
  EXPECT_EQ(full.params(), third.params());
}

}  // namespace

TEST(Resume, SgdIsBitExact) { check_resume(SGD, 1); }
TEST(Resume, AdamwIsBitExact) { check_resume(ADAMW, 1); }
TEST(Resume, SetWithGroupsScheduleAndClipIsBitExact) { check_resume(SET, 1); }
TEST(Resume, GradientAccumulationResumesAtAWindowBoundary) { check_resume(SET, 3); }

// A checkpoint of one optimizer does not load into another: the resume refuses, and
// nothing of the fresh objects changes.
TEST(Resume, AMismatchedCheckpointChangesNothing) {
  fgt::TempDir d;
  const std::string dir = d.file("ckpt");
  {
    Trainer t(SGD, 1, 7);
    t.window();
    t.save(dir);
  }
  Trainer other(ADAMW, 1, 3);
  other.window();
  const Bytes p = other.params(), s = other.state();
  fg_ckpt_dir *cd = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_dir_open(dir.c_str(), &cd));
  const uint8_t *ob = nullptr;
  size_t on = 0;
  ASSERT_EQ(FG_OK, fg_ckpt_dir_optimizer(cd, &ob, &on));
  EXPECT_EQ(FG_ERR_BAD_MAGIC, fg_optim_load_state(other.o1, ob, on));
  Trainer set(SET, 1, 3);
  const Bytes sp = set.params(), ss = set.state();
  EXPECT_EQ(FG_ERR_BAD_MAGIC, fg_optimset_load_state(set.set, ob, on));
  fg_ckpt_dir_close(cd);
  EXPECT_EQ(p, other.params());
  EXPECT_EQ(s, other.state());
  EXPECT_EQ(sp, set.params());
  EXPECT_EQ(ss, set.state());
}
