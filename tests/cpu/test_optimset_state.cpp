// A set's saved state: FZO3 byte-identical to Fucina's OptimizerSet.saveState after steps
// with groups, a global clip and a warmup-cosine schedule (tests/data/fucina_gen/gen_set.zig),
// a round trip that reproduces the bytes, and loads that fail on one member without changing
// any member.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/lr_schedule.h"
#include "forgia/optim_frame.h"
#include "forgia/optimset.h"
#include "testutil.h"

namespace {

using Bytes = std::vector<uint8_t>;

const float w6[6] = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f, 1.5f};
const float g6[2][6] = {{0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.25f}, {-0.3f, 0.8f, -1.2f, 0.6f, 0.1f, -0.9f}};
const float w12[12] = {0.1f, -0.2f, 0.3f, -0.4f, 0.5f, -0.6f, 0.7f, -0.8f, 0.9f, -1.0f, 1.1f, -1.2f};
const float g12[2][12] = {{0.5f, -0.25f, 0.125f, 1.0f, -1.5f, 0.75f, 0.3f, -0.6f, 0.9f, -1.2f, 0.2f, 0.4f},
                          {-0.1f, 0.2f, -0.3f, 0.4f, -0.5f, 0.6f, -0.7f, 0.8f, -0.9f, 1.0f, -1.1f, 1.2f}};
const float b3[3] = {0.25f, -0.75f, 0.5f};
const float gb3[2][3] = {{0.5f, -1.0f, 0.25f}, {-0.125f, 0.375f, 2.0f}};

// gen_set.zig's set: AdamW(lr 0.05, wd 0.1) on w "w", AdamW(lr 0.02, wd 0) on b (unnamed),
// SGD(lr 0.1, momentum 0.9, nesterov) on t "t". sgd_name/sgd_kind vary it for mismatches.
struct GenSet {
  fg_device *dev = nullptr;
  fg_tensor *w = nullptr, *b = nullptr, *t = nullptr;
  fg_optim *ow = nullptr, *ob = nullptr, *ot = nullptr;
  fg_optimset *set = nullptr;
  explicit GenSet(const char *t_name = "t", fg_optim_kind t_kind = FG_OPTIM_SGD, bool third = true) {
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev));
    const uint64_t sw[2] = {2, 3}, sb[1] = {3}, st[2] = {4, 3};
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, "w", FG_F32, 2, sw, &w));
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, "b", FG_F32, 1, sb, &b));
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, "t", FG_F32, 2, st, &t));
    EXPECT_EQ(FG_OK, fg_tensor_upload(w, w6, sizeof w6, nullptr));
    EXPECT_EQ(FG_OK, fg_tensor_upload(b, b3, sizeof b3, nullptr));
    EXPECT_EQ(FG_OK, fg_tensor_upload(t, w12, sizeof w12, nullptr));
    for (fg_tensor *x : {w, b, t}) EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(x));
    fg_optim_config cw = fg_optim_defaults(FG_OPTIM_ADAMW), cb = cw, ct = fg_optim_defaults(t_kind);
    cw.lr = 0.05f;
    cw.weight_decay = 0.1f;
    cb.lr = 0.02f;
    cb.weight_decay = 0.0f;
    ct.lr = 0.1f;
    if (t_kind == FG_OPTIM_SGD) {
      ct.momentum = 0.9f;
      ct.nesterov = true;
    }
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &cw, &ow));
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &cb, &ob));
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &ct, &ot));
    EXPECT_EQ(FG_OK, fg_optim_add(ow, w, "w"));
    EXPECT_EQ(FG_OK, fg_optim_add(ob, b, nullptr));
    EXPECT_EQ(FG_OK, fg_optim_add(ot, t, t_name));
    EXPECT_EQ(FG_OK, fg_optimset_create(&set));
    EXPECT_EQ(FG_OK, fg_optimset_add(set, ow));
    EXPECT_EQ(FG_OK, fg_optimset_add(set, ob));
    if (third) {
      EXPECT_EQ(FG_OK, fg_optimset_add(set, ot));
    }
  }
  ~GenSet() {
    fg_optimset_free(set);
    fg_optim_free(ow);
    fg_optim_free(ob);
    fg_optim_free(ot);
    fg_tensor_free(w);
    fg_tensor_free(b);
    fg_tensor_free(t);
    fg_device_close(dev);
  }
  // gen_set.zig's loop: schedule factor of step s, clip 0.5, step.
  void steps(int from, int to) {
    const fg_lr_schedule sch = {FG_LR_WARMUP_COSINE, 4, 1, 0.1};
    for (int s = from; s < to; s++) {
      std::memcpy(w->grad, g6[s % 2], sizeof g6[0]);
      std::memcpy(b->grad, gb3[s % 2], sizeof gb3[0]);
      std::memcpy(t->grad, g12[s % 2], sizeof g12[0]);
      ASSERT_EQ(FG_OK, fg_optimset_apply_lr_factor(set, fg_lr_factor(&sch, (uint64_t)s)));
      ASSERT_EQ(FG_OK, fg_optimset_clip_grad_norm(set, 0.5f, nullptr, nullptr));
      ASSERT_EQ(FG_OK, fg_optimset_step(set, nullptr)) << fg_last_error();
    }
  }
  Bytes save() {
    uint8_t *p = nullptr;
    size_t n = 0;
    EXPECT_EQ(FG_OK, fg_optimset_save_state(set, &p, &n)) << fg_last_error();
    Bytes r(p, p + n);
    free(p);
    return r;
  }
  // Every parameter's bytes, then the set's state bytes.
  Bytes snapshot() {
    Bytes r;
    for (fg_tensor *x : {w, b, t}) r.insert(r.end(), (uint8_t *)x->data, (uint8_t *)x->data + x->nbytes);
    Bytes s = save();
    r.insert(r.end(), s.begin(), s.end());
    return r;
  }
};

Bytes golden(const char *name) {
  return fgt::read_file(std::string(FORGIA_TEST_DATA) + "/golden/fucina_frames/" + name + ".bin");
}

}  // namespace

TEST(OptimSetState, SavedBytesAndParamsAreFucinas) {
  GenSet g;
  g.steps(0, 2);
  const Bytes want = golden("set_sched");
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(want, g.save());
  const Bytes pw = golden("set_sched_params");
  fg_oframe *f = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_frame_parse(pw.data(), pw.size(), &f)) << fg_last_error();
  ASSERT_EQ(FG_OFRAME_KIND_TENSORS, f->kind);
  ASSERT_EQ(3u, f->n_tensors);
  const fg_tensor *ps[3] = {g.w, g.b, g.t};
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(ps[i]->numel, f->tensors[i].count);
    EXPECT_EQ(0, std::memcmp(ps[i]->data, f->tensors[i].data, ps[i]->nbytes)) << "param " << i;
  }
  fg_optim_frame_free(f);
}

TEST(OptimSetState, FucinasBytesLoadAndTheRoundTripIsExact) {
  GenSet ref;
  ref.steps(0, 4);
  GenSet g;
  g.steps(0, 2);
  GenSet h; // fresh objects, the first two steps' state loaded from Fucina's bytes
  const Bytes fz = golden("set_sched");
  ASSERT_EQ(FG_OK, fg_optimset_load_state(h.set, fz.data(), fz.size())) << fg_last_error();
  EXPECT_EQ(fz, h.save());
  // Parameters are not optimizer state: carry them over as a checkpoint would.
  for (int i = 0; i < 3; i++) {
    fg_tensor *src = i == 0 ? g.w : i == 1 ? g.b : g.t, *dst = i == 0 ? h.w : i == 1 ? h.b : h.t;
    std::memcpy(dst->data, src->data, src->nbytes);
  }
  h.steps(2, 4);
  EXPECT_EQ(ref.snapshot(), h.snapshot());
}

TEST(OptimSetState, AFailingMemberChangesNoMember) {
  GenSet src;
  src.steps(0, 2);
  const Bytes good = src.save();
  GenSet other_name("t_renamed"), other_kind("t", FG_OPTIM_ADAMW), two("t", FG_OPTIM_SGD, false);
  other_name.steps(0, 1);
  other_kind.steps(0, 1);
  two.steps(0, 1);
  struct Case {
    GenSet *dst;
    fg_status want;
  } cases[] = {{&other_name, FG_ERR_FRAME_UNKNOWN_NAME},
               {&other_kind, FG_ERR_BAD_MAGIC},
               {&two, FG_ERR_FRAME_SHAPE_MISMATCH}};
  for (const Case &c : cases) {
    const Bytes before = c.dst->snapshot();
    EXPECT_EQ(c.want, fg_optimset_load_state(c.dst->set, good.data(), good.size())) << fg_last_error();
    EXPECT_EQ(before, c.dst->snapshot());
  }
  // The same bytes do load into a matching set, so the failures above came from member 2.
  GenSet ok;
  ASSERT_EQ(FG_OK, fg_optimset_load_state(ok.set, good.data(), good.size())) << fg_last_error();
  EXPECT_EQ(good, ok.save());
}

TEST(OptimSetState, DamagedStreamsChangeNothing) {
  GenSet src;
  src.steps(0, 2);
  const Bytes good = src.save();
  GenSet dst;
  dst.steps(0, 1);
  const Bytes before = dst.snapshot();
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    EXPECT_NE(FG_OK, fg_optimset_load_state(dst.set, good.data(), cut)) << cut;
    ASSERT_EQ(before, dst.snapshot()) << cut;
  }
  Bytes longer = good;
  longer.push_back(0);
  EXPECT_EQ(FG_ERR_FRAME_TRAILING_BYTES, fg_optimset_load_state(dst.set, longer.data(), longer.size()));
  uint8_t *single = nullptr;
  size_t n = 0;
  ASSERT_EQ(FG_OK, fg_optim_save_state(src.ow, &single, &n));
  EXPECT_EQ(FG_ERR_BAD_MAGIC, fg_optimset_load_state(dst.set, single, n)); // a member's frame, not a set's
  free(single);
  EXPECT_EQ(before, dst.snapshot());
}
