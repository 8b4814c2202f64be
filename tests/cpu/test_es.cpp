// The ES trainer through its public API: configuration rules, the pinned seeds, perturb /
// restore / update / anchor decay bit-equal to a serial transcription of Fucina's algebra
// (tests/util/es_serial.h) for f32, f16 and bf16 slots, every knob, several chunk-crossing
// sizes and 1, 2 and 7 threads; mutate-last failures; registration rules; the drivers
// (step, replicas, threaded evaluation) and trainer_state.json.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "es_rig.h"
#include "forgia/forgia.h"

using fgt::EsSlot;
using fgt::mixed_slots;
using fgt::Rig;
using fgt::rewards_for;

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  ~Cpu() { fg_device_close(dev); }
};

}  // namespace

TEST(Es, ConfigRules) {
  fg_es_config c = fg_es_defaults();
  EXPECT_EQ(FG_OK, fg_es_config_check(&c));
  EXPECT_FLOAT_EQ(0.001f, c.sigma);
  EXPECT_EQ(30u, c.population);
  EXPECT_EQ(42u, c.seed);
  auto bad = [](void (*mut)(fg_es_config &), const char *needle) {
    fg_es_config c = fg_es_defaults();
    mut(c);
    fg_es *es = nullptr;
    EXPECT_EQ(FG_ERR_INVALID_ARG, fg_es_create(&c, &es)) << needle;
    EXPECT_EQ(nullptr, es);
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), needle)) << fg_last_error();
  };
  bad([](fg_es_config &c) { c.sigma = 0; }, "sigma");
  bad([](fg_es_config &c) { c.sigma = NAN; }, "sigma");
  bad([](fg_es_config &c) { c.has_alpha = true, c.alpha = -1; }, "alpha");
  bad([](fg_es_config &c) { c.population = 1; }, "population");
  bad([](fg_es_config &c) { c.antithetic = true, c.population = 5; }, "even");
  bad([](fg_es_config &c) { c.ternary_flip_rate = 0; }, "ternary_flip_rate");
  bad([](fg_es_config &c) { c.ternary_update_fraction = 1.5f; }, "ternary_update_fraction");
  bad([](fg_es_config &c) { c.ternary_update_decay = -1; }, "ternary_update_decay");
  bad([](fg_es_config &c) { c.anchor_decay = FG_ES_ANCHOR_L1; }, "anchor_lambda");
  bad([](fg_es_config &c) { c.anchor_decay = FG_ES_ANCHOR_L2, c.has_alpha = true, c.alpha = 0.5f, c.anchor_lambda = 2; },
      "alpha * anchor_lambda");
  // l1 has no alpha*lambda bound
  c = fg_es_defaults();
  c.anchor_decay = FG_ES_ANCHOR_L1, c.has_alpha = true, c.alpha = 0.5f, c.anchor_lambda = 2;
  EXPECT_EQ(FG_OK, fg_es_config_check(&c));
  fg_es_noise n;
  EXPECT_EQ(FG_OK, fg_es_noise_parse("correlated", &n));
  EXPECT_EQ(FG_ES_NOISE_CORRELATED, n);
  fg_es_reward_norm rn;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_es_reward_norm_parse("zscore", &rn));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "z_score"));
  EXPECT_STREQ("centered_ranks", fg_es_reward_norm_name(FG_ES_REWARD_CENTERED_RANKS));
}

// Fucina's ES seed derivation, values computed independently of its build.
TEST(Es, PinnedSeeds) {
  fg_es_config c = fg_es_defaults();
  c.population = 4;
  fg_es *es;
  ASSERT_EQ(FG_OK, fg_es_create(&c, &es));
  const uint64_t want[4] = {0xE7F75BEC18A61C7Bull, 0x63DE59AD69024497ull, 0x22AD58F3DFBC870Full, 0xB03AC3280EF51CE8ull};
  for (int m = 0; m < 4; m++) EXPECT_EQ(want[m], fg_es_member_seed(es, m)) << m;
  const uint64_t iid[4] = {0xE01F929105F950D3ull, 0x50394BEB66F1D147ull, 0x9D5CC8D5811FC664ull, 0x4FC11874BC13B723ull};
  for (size_t k = 0; k < 4; k++) EXPECT_EQ(iid[k], fg_es_slot_stream_seed(es, 0, k, nullptr)) << k;
  EXPECT_FLOAT_EQ(0.0005f, fg_es_alpha_value(es));
  fg_es_free(es);
  c.noise = FG_ES_NOISE_CORRELATED;
  c.antithetic = true;
  ASSERT_EQ(FG_OK, fg_es_create(&c, &es));
  float sign;
  EXPECT_EQ(want[2], fg_es_slot_stream_seed(es, 3, 5, &sign));
  EXPECT_EQ(-1.0f, sign);
  EXPECT_EQ(want[2], fg_es_slot_stream_seed(es, 2, 0, &sign));
  EXPECT_EQ(1.0f, sign);
  fg_es_free(es);
}

// Every knob against the serial transcription, bitwise, over three updates with a member
// perturbed and restored in between; sizes cross the CPU op chunk (32768) and the ES block.
TEST(Es, MatchesSerialAlgebraBitwise) {
  Cpu cpu;
  for (const fgt::EsKnobs &k : fgt::es_knobs()) {
    for (int threads : {1, 2, 7}) {
      SCOPED_TRACE(testing::Message() << "anti " << k.anti << " noise " << k.noise << " norm " << k.norm << " restore "
                                      << k.restore << " cache " << k.cache << " anchor " << k.anchor << " threads "
                                      << threads);
      omp_set_num_threads(threads);
      fgt::es_check_sequence(cpu.dev, k, threads == 1 ? 70001 : 33001);
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}

// Snapshot restores bitwise; regenerate is within the drift of (x + t) - t.
TEST(Es, RestoreModes) {
  Cpu cpu;
  for (fg_es_restore_mode mode : {FG_ES_RESTORE_SNAPSHOT, FG_ES_RESTORE_REGENERATE}) {
    fg_es_config c = fg_es_defaults();
    c.sigma = 0.1f;
    c.population = 4;
    c.restore_mode = mode;
    Rig rig(cpu.dev, c, mixed_slots(1000));
    std::vector<std::vector<uint8_t>> before;
    for (size_t k = 0; k < rig.ts.size(); k++) before.push_back(rig.bytes(k));
    ASSERT_EQ(FG_OK, fg_es_perturb(rig.es, 3));
    EXPECT_NE(0, std::memcmp(before[3].data(), rig.bytes(3).data(), before[3].size()));
    ASSERT_EQ(FG_OK, fg_es_restore(rig.es, 3));
    for (size_t k = 0; k < rig.ts.size(); k++) {
      const auto after = rig.bytes(k);
      if (mode == FG_ES_RESTORE_SNAPSHOT) {
        EXPECT_EQ(0, std::memcmp(before[k].data(), after.data(), after.size())) << k;
      } else {
        fgt::EsSlot a{rig.ref.slots[k].dt, std::vector<uint32_t>(rig.ref.slots[k].bits.size())};
        for (size_t j = 0; j < a.bits.size(); j++) {
          if (a.dt == FG_F32) std::memcpy(&a.bits[j], &after[4 * j], 4);
          else {
            uint16_t h;
            std::memcpy(&h, &after[2 * j], 2);
            a.bits[j] = h;
          }
          const float want = rig.ref.slots[k].get(j);
          const float tol = a.dt == FG_F32 ? 1e-6f : a.dt == FG_F16 ? 4e-3f : 3e-2f;
          EXPECT_NEAR(want, a.get(j), tol * std::max(1.0f, std::fabs(want))) << k << " " << j;
        }
      }
    }
  }
}

TEST(Es, StateRulesAndMutateLast) {
  Cpu cpu;
  fg_es_config c = fg_es_defaults();
  c.population = 4;
  c.anchor_decay = FG_ES_ANCHOR_L2;
  c.anchor_lambda = 1.0f;
  Rig rig(cpu.dev, c, mixed_slots(100));
  const auto b0 = rig.bytes(3);
  std::vector<float> r = {0.1f, 0.2f, 0.3f, 0.4f};
  // no anchor yet
  EXPECT_EQ(FG_ERR_STATE, fg_es_update(rig.es, r.data(), 4, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "anchor"));
  ASSERT_EQ(FG_OK, fg_es_capture_anchor(rig.es));
  // wrong count, non-finite rewards: nothing changes
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_es_update(rig.es, r.data(), 3, nullptr));
  r[2] = NAN;
  EXPECT_EQ(FG_ERR_NONFINITE, fg_es_update(rig.es, r.data(), 4, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "reward 2"));
  r[2] = INFINITY;
  EXPECT_EQ(FG_ERR_NONFINITE, fg_es_update(rig.es, r.data(), 4, nullptr));
  EXPECT_EQ(0u, fg_es_iteration(rig.es));
  EXPECT_EQ(0, std::memcmp(b0.data(), rig.bytes(3).data(), b0.size()));
  // one member at a time
  EXPECT_EQ(FG_ERR_RANGE, fg_es_perturb(rig.es, 4));
  ASSERT_EQ(FG_OK, fg_es_perturb(rig.es, 1));
  EXPECT_EQ(1, fg_es_active_member(rig.es));
  EXPECT_EQ(FG_ERR_STATE, fg_es_perturb(rig.es, 2));
  EXPECT_EQ(FG_ERR_STATE, fg_es_restore(rig.es, 2));
  r[2] = 0.3f;
  EXPECT_EQ(FG_ERR_STATE, fg_es_update(rig.es, r.data(), 4, nullptr));
  const uint64_t shape[1] = {3};
  fg_tensor *extra;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "extra", FG_F32, 1, shape, &extra));
  EXPECT_EQ(FG_ERR_STATE, fg_es_add(rig.es, extra, nullptr));
  EXPECT_EQ(FG_ERR_STATE, fg_es_set_iteration(rig.es, 5));
  ASSERT_EQ(FG_OK, fg_es_restore(rig.es, 1));
  EXPECT_EQ(FG_ERR_STATE, fg_es_restore(rig.es, 1));
  EXPECT_EQ(-1, fg_es_active_member(rig.es));
  // registration rules
  EXPECT_EQ(FG_ERR_DUPLICATE, fg_es_add(rig.es, rig.ts[0], "again"));
  fg_tensor *i8;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "ids", FG_I64, 1, shape, &i8));
  EXPECT_EQ(FG_ERR_TYPE, fg_es_add(rig.es, i8, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "ids"));
  ASSERT_EQ(FG_OK, fg_es_add(rig.es, extra, nullptr));
  EXPECT_EQ(6u, fg_es_param_count(rig.es));
  // a new slot drops the anchor: the update asks for it again
  EXPECT_EQ(FG_ERR_STATE, fg_es_update(rig.es, r.data(), 4, nullptr));
  ASSERT_EQ(FG_OK, fg_es_capture_anchor(rig.es));
  EXPECT_EQ(FG_OK, fg_es_update(rig.es, r.data(), 4, nullptr));
  EXPECT_EQ(1u, fg_es_iteration(rig.es));
  fg_es_free(rig.es);
  rig.es = nullptr;
  fg_tensor_free(extra);
  fg_tensor_free(i8);
  // nothing registered
  fg_es *empty;
  ASSERT_EQ(FG_OK, fg_es_create(&c, &empty));
  EXPECT_EQ(FG_ERR_NOT_FOUND, fg_es_update(empty, r.data(), 4, nullptr));
  fg_es_free(empty);
}

// Registries: frozen entries included, tied storage perturbed once.
TEST(Es, RegistryRegistration) {
  Cpu cpu;
  const uint64_t s4[1] = {4}, s3[1] = {3};
  fg_tensor *w, *b, *frozen, *tied;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "w", FG_F32, 1, s4, &w));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "b", FG_BF16, 1, s3, &b));
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "pos", FG_F16, 1, s3, &frozen));
  ASSERT_EQ(FG_OK, fg_tensor_wrap(cpu.dev, "w_tied", FG_F32, 1, s4, w->data, &tied));
  fg_registry_entry table[] = {{"w", w, true}, {"b", b, true}, {"pos", frozen, false}, {"head", tied, true}};
  fg_registry *reg;
  ASSERT_EQ(FG_OK, fg_registry_create(table, 4, &reg));
  fg_es_config c = fg_es_defaults();
  fg_es *es;
  ASSERT_EQ(FG_OK, fg_es_create(&c, &es));
  size_t added = 99;
  ASSERT_EQ(FG_OK, fg_es_add_registry(es, reg, &added)) << fg_last_error();
  EXPECT_EQ(3u, added);
  EXPECT_EQ(10u, fg_es_element_count(es));
  ASSERT_EQ(FG_OK, fg_es_add_registry(es, reg, &added));
  EXPECT_EQ(0u, added);
  fg_es_free(es);
  fg_registry_free(reg);
  for (auto *t : {tied, w, b, frozen}) fg_tensor_free(t);
}

namespace {
struct Sphere {
  fg_tensor *theta;
  int fail_at = -1;
  static fg_status eval(void *ctx, uint64_t member, float *reward) {
    auto *s = (Sphere *)ctx;
    if ((int)member == s->fail_at) return fg_fail(FG_ERR_IO, "evaluator failed on member %llu", (unsigned long long)member);
    float v[4];
    fg_tensor_download(s->theta, v, sizeof v, nullptr);
    float sum = 0;
    for (float x : v) sum += x * x;
    *reward = -sum;
    return FG_OK;
  }
};
}  // namespace

// Fucina's sphere test, through fg_es_step; an evaluator error restores and stops.
TEST(Es, StepShrinksSphereAndRestoresOnError) {
  Cpu cpu;
  const uint64_t shape[1] = {4};
  fg_tensor *theta;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "theta", FG_F32, 1, shape, &theta));
  const float init[4] = {1, -2, 0.5f, 3};
  ASSERT_EQ(FG_OK, fg_tensor_upload(theta, init, sizeof init, nullptr));
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.05f, c.population = 8, c.seed = 7;
  c.restore_mode = FG_ES_RESTORE_SNAPSHOT;
  fg_es *es;
  ASSERT_EQ(FG_OK, fg_es_create(&c, &es));
  ASSERT_EQ(FG_OK, fg_es_add(es, theta, "theta"));
  Sphere s{theta};
  float r0;
  Sphere::eval(&s, 0, &r0);
  for (int i = 0; i < 200; i++) ASSERT_EQ(FG_OK, fg_es_step(es, Sphere::eval, &s, nullptr));
  float r1;
  Sphere::eval(&s, 0, &r1);
  EXPECT_GT(r1, r0);
  EXPECT_EQ(200u, fg_es_iteration(es));
  float before[4], after[4];
  fg_tensor_download(theta, before, sizeof before, nullptr);
  s.fail_at = 5;
  EXPECT_EQ(FG_ERR_IO, fg_es_step(es, Sphere::eval, &s, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "member 5"));
  EXPECT_EQ(-1, fg_es_active_member(es));
  EXPECT_EQ(200u, fg_es_iteration(es));
  fg_tensor_download(theta, after, sizeof after, nullptr);
  EXPECT_EQ(0, std::memcmp(before, after, sizeof after));
  fg_es_free(es);
  fg_tensor_free(theta);
}

namespace {
struct Replicas {
  const fg_es *es;
  std::vector<std::vector<fg_tensor *>> rep;  // per worker, per slot
  std::atomic<int> calls{0};
  int fail_member = -1;
  static fg_status eval(void *ctx, size_t worker, uint64_t member, float *reward) {
    auto *r = (Replicas *)ctx;
    r->calls++;
    if ((int)member == r->fail_member) return fg_fail(FG_ERR_RANGE, "replica eval refused member %llu", (unsigned long long)member);
    auto &mine = r->rep[worker];
    fg_status st = fg_es_materialize(r->es, member, mine.data(), mine.size());
    if (st) return st;
    double sum = 0;
    for (fg_tensor *t : mine) {
      std::vector<uint8_t> b(t->nbytes);
      fg_tensor_download(t, b.data(), b.size(), nullptr);
      for (size_t i = 0; i < b.size(); i++) sum += (double)b[i] * (double)(i % 7 + 1);
    }
    *reward = (float)std::fmod(sum, 1000.0);
    return FG_OK;
  }
};
}  // namespace

// Replicas equal the in-place perturbation bitwise; threaded evaluation gives the rewards of
// a serial one; the first error is returned after the workers join.
TEST(Es, ReplicasAndThreadedEvaluation) {
  Cpu cpu;
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.05f, c.population = 10, c.antithetic = true;
  Rig rig(cpu.dev, c, mixed_slots(5000));
  Replicas R;
  R.es = rig.es;
  const size_t workers = 4;
  R.rep.resize(workers);
  for (auto &w : R.rep)
    for (auto *t : rig.ts) {
      fg_tensor *r;
      ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, t->dtype, t->ndim, t->shape, &r));
      w.push_back(r);
    }
  // materialize == perturb
  for (uint64_t m : {0, 3}) {
    ASSERT_EQ(FG_OK, fg_es_materialize(rig.es, m, R.rep[0].data(), R.rep[0].size()));
    ASSERT_EQ(FG_OK, fg_es_perturb(rig.es, m));
    for (size_t k = 0; k < rig.ts.size(); k++) {
      std::vector<uint8_t> a(rig.ts[k]->nbytes), b(rig.ts[k]->nbytes);
      fg_tensor_download(rig.ts[k], a.data(), a.size(), nullptr);
      fg_tensor_download(R.rep[0][k], b.data(), b.size(), nullptr);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size())) << m << " " << k;
    }
    ASSERT_EQ(FG_OK, fg_es_restore(rig.es, m));
  }
  std::vector<float> serial(10), par(10);
  R.rep.resize(workers);
  for (uint64_t m = 0; m < 10; m++) ASSERT_EQ(FG_OK, Replicas::eval(&R, 0, m, &serial[m]));
  ASSERT_EQ(FG_OK, fg_es_evaluate_members(rig.es, Replicas::eval, &R, par.data(), 10, workers));
  EXPECT_EQ(0, std::memcmp(serial.data(), par.data(), sizeof(float) * 10));
  // workers clamp: 1000 asks for at most min(population, 64) threads (indices < workers we have)
  R.fail_member = 6;
  R.calls = 0;
  EXPECT_EQ(FG_ERR_RANGE, fg_es_evaluate_members(rig.es, Replicas::eval, &R, par.data(), 10, workers));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "member 6"));
  EXPECT_LE(R.calls.load(), 10);
  // shape mismatch
  std::vector<fg_tensor *> wrong = R.rep[0];
  std::swap(wrong[0], wrong[3]);
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_es_materialize(rig.es, 0, wrong.data(), wrong.size()));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_es_materialize(rig.es, 0, wrong.data(), 2));
  for (auto &w : R.rep)
    for (auto *t : w) fg_tensor_free(t);
}

TEST(Es, TrainerStateRoundTrip) {
  Cpu cpu;
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.02f, c.population = 6, c.antithetic = true, c.noise = FG_ES_NOISE_CORRELATED;
  c.anchor_decay = FG_ES_ANCHOR_L1, c.anchor_lambda = 0.01f, c.seed = 0xFFFFFFFFFFFFFFF1ull;
  Rig rig(cpu.dev, c, mixed_slots(10));
  ASSERT_EQ(FG_OK, fg_es_set_iteration(rig.es, 17));
  fg_trainer_state s;
  fg_trainer_state_init(&s);
  s.step = 17;
  ASSERT_EQ(FG_OK, fg_es_to_trainer_state(rig.es, &s));
  char *text;
  size_t len;
  ASSERT_EQ(FG_OK, fg_trainer_state_format(&s, &text, &len));
  EXPECT_NE(nullptr, std::strstr(text, "\"es_sigma\": 0.019999999552965164"));
  EXPECT_NE(nullptr, std::strstr(text, "\"es_noise\": 1"));
  EXPECT_NE(nullptr, std::strstr(text, "\"es_iteration\": 17"));
  fg_trainer_state back;
  ASSERT_EQ(FG_OK, fg_trainer_state_parse(text, len, nullptr, &back));
  free(text);
  fg_es *es2;
  ASSERT_EQ(FG_OK, fg_es_create(&c, &es2));
  ASSERT_EQ(FG_OK, fg_es_from_trainer_state(es2, &back)) << fg_last_error();
  EXPECT_EQ(17u, fg_es_iteration(es2));
  EXPECT_EQ(fg_es_member_seed(rig.es, 3), fg_es_member_seed(es2, 3));
  fg_es_free(es2);
  fg_es_config d = c;
  d.population = 8;
  ASSERT_EQ(FG_OK, fg_es_create(&d, &es2));
  EXPECT_EQ(FG_ERR_FRAME_CONFIG_MISMATCH, fg_es_from_trainer_state(es2, &back));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "es_population"));
  EXPECT_EQ(0u, fg_es_iteration(es2));
  fg_es_free(es2);
  back.es_iteration.set = false;
  ASSERT_EQ(FG_OK, fg_es_create(&c, &es2));
  EXPECT_EQ(FG_ERR_NOT_FOUND, fg_es_from_trainer_state(es2, &back));
  fg_es_free(es2);
}
