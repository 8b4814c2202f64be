// Float ES against Fucina's own es.Trainer: every scenario of tests/data/golden/fucina_es.txt
// (tests/data/fucina_gen/gen_es.zig) replayed through the public API on the CPU device, and
// every parameter byte after every perturb, restore, materialize and update, and every
// update's statistics, required to be Fucina's bits. Then the seeds and the values pinned by
// Fucina's src/es_tests.zig, which were computed independently of Fucina's build.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/es.h"
#include "es_fucina_cases.h"
#include "forgia/forgia.h"
#include "forgia/rng.h"
#include "golden_reader.h"

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~Cpu() { fg_device_close(dev); }
};

}  // namespace

using namespace fgt;

TEST(EsFucina, GoldenCoversTheScenarios) {
  const auto cases = load_cases();
  ASSERT_EQ(13u, cases.size());
  for (const char *n : {"A", "B", "C", "antithetic", "snapshot", "cache", "cache_antithetic_snapshot", "l1", "l2",
                        "materialize", "alpha", "large", "large_ranks_l2"}) {
    const EsCase *c = find_case(cases, n);
    ASSERT_NE(nullptr, c) << n;
    size_t updates = 0;
    for (const Event &e : c->events) updates += e.kind == "update";
    EXPECT_EQ(3u, updates) << n;
    EXPECT_EQ(4u, c->slots.size()) << n;
  }
}

TEST(EsFucina, EveryScenarioBitExact) {
  Cpu cpu;
  for (const EsCase &c : load_cases()) replay(cpu.dev, c);
}

// The chunked scenarios (slots past one 2048-element noise chunk and Fucina's update fan-out
// threshold) give Fucina's bits for any OpenMP team size.
TEST(EsFucina, LargeSlotsBitExactForAnyThreadCount) {
  Cpu cpu;
  const auto cases = load_cases();
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 7}) {
    SCOPED_TRACE(threads);
    omp_set_num_threads(threads);
    for (const char *n : {"large", "large_ranks_l2"}) replay(cpu.dev, *find_case(cases, n));
  }
  omp_set_num_threads(saved);
}

namespace {

// The values src/es_tests.zig pins came from a numpy generator with f64 libm, so they are
// compared within that test's tolerances, per dtype.
void expect_close(fg_tensor *t, const std::vector<float> &want, const char *what) {
  const std::vector<uint8_t> b = download(t);
  ASSERT_EQ(want.size(), t->numel) << what;
  const double tol = t->dtype == FG_F32 ? 1e-6 : t->dtype == FG_F16 ? 1e-3 : 1.6e-2;
  for (size_t i = 0; i < want.size(); i++) {
    float got;
    if (t->dtype == FG_F32) {
      std::memcpy(&got, &b[4 * i], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &b[2 * i], 2);
      got = t->dtype == FG_F16 ? fg_f16_to_f32(h) : fg_bf16_to_f32(h);
    }
    EXPECT_NEAR(want[i], got, tol) << what << "[" << i << "]";
  }
}

struct SheetSlots {
  Cpu cpu;
  std::vector<fg_tensor *> ts;
  fg_es *es = nullptr;
  explicit SheetSlots(const fg_es_config &c) {
    const char *names[4] = {"a", "b", "c", "d"};
    const fg_dtype dts[4] = {FG_F32, FG_F16, FG_BF16, FG_F32};
    EXPECT_EQ(FG_OK, fg_es_create(&c, &es)) << fg_last_error();
    for (int k = 0; k < 4; k++) {
      const std::vector<float> v = initial_values(names[k]);
      const uint64_t n = v.size();
      fg_tensor *t = nullptr;
      EXPECT_EQ(FG_OK, fg_tensor_create(cpu.dev, names[k], dts[k], 1, &n, &t)) << fg_last_error();
      const std::vector<uint8_t> b = fgt::golden_narrow(v, dts[k]);
      EXPECT_EQ(FG_OK, fg_tensor_upload(t, b.data(), b.size(), nullptr));
      EXPECT_EQ(FG_OK, fg_es_add(es, t, nullptr)) << fg_last_error();
      ts.push_back(t);
    }
  }
  ~SheetSlots() {
    fg_es_free(es);
    for (fg_tensor *t : ts) fg_tensor_free(t);
  }
};

fg_es_config sheet_a() {
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.05f;
  c.population = 4;
  c.noise = FG_ES_NOISE_IID;
  c.reward_norm = FG_ES_REWARD_Z_SCORE;
  c.seed = 42;
  return c;
}

}  // namespace

// Member seeds, iid slot stream seeds and the first noise values; the ternary seeds and the
// flip-count pins of src/es_tests.zig.
TEST(EsSheet, SeedsAndStreams) {
  SheetSlots s(sheet_a());
  const uint64_t member[4] = {0xE7F75BEC18A61C7Bull, 0x63DE59AD69024497ull, 0x22AD58F3DFBC870Full,
                              0xB03AC3280EF51CE8ull};
  for (uint64_t m = 0; m < 4; m++) EXPECT_EQ(member[m], fg_es_member_seed(s.es, m)) << m;
  const uint64_t slot[4] = {0xE01F929105F950D3ull, 0x50394BEB66F1D147ull, 0x9D5CC8D5811FC664ull,
                            0x4FC11874BC13B723ull};
  for (size_t k = 0; k < 4; k++) {
    float sign = 0;
    EXPECT_EQ(slot[k], fg_es_slot_stream_seed(s.es, 0, k, &sign)) << k;
    EXPECT_EQ(1.0f, sign);
  }
  fg_rng_spec r;
  std::memset(&r, 0, sizeof r);
  r.kind = FG_RNG_GAUSS_FAST;
  r.seed = 0xE01F929105F950D3ull;
  r.scale = 1.0f;
  float v[4];
  ASSERT_EQ(FG_OK, fg_rng_fill_host(&r, v, 4));
  const uint32_t first[4] = {0xBEEB37ACu, 0x3FB05F4Au, 0xBE821A69u, 0xBF3BE53Au};
  for (int i = 0; i < 4; i++) EXPECT_EQ(first[i], fg_f32_bits(v[i])) << i;
  EXPECT_EQ(0.025f, fg_es_alpha_value(s.es));
  EXPECT_EQ(4u, fg_es_param_count(s.es));
  EXPECT_EQ(27u, fg_es_element_count(s.es));

  fg_es_config t = fg_es_defaults();
  t.seed = 21;
  t.population = 2;
  t.ternary_flip_rate = 32.0f / 512.0f;
  fg_es *te = nullptr;
  ASSERT_EQ(FG_OK, fg_es_create(&t, &te)) << fg_last_error();
  const uint64_t tm = fg_es_ternary_member_seed(te, 0);
  EXPECT_EQ(0x580D8851E5BA1021ull, tm);
  EXPECT_EQ(0x9F4EF6BE384916FEull, fg_es_ternary_slot_stream_seed(tm, 0));
  EXPECT_EQ(32u, fg_es_ternary_flip_count(te, 512));
  fg_es_free(te);
}

// Scenario A: perturb(member 2), then two updates (stats after the first).
TEST(EsSheet, ScenarioA) {
  {
    SheetSlots s(sheet_a());
    ASSERT_EQ(FG_OK, fg_es_perturb(s.es, 2)) << fg_last_error();
    expect_close(s.ts[0], {0.77865386f, -1.1763682f, 0.5002475f, 2.0686219f, -0.23082645f, 1.5209504f, -0.79979795f},
                 "a");
    expect_close(s.ts[1],
                 {0.6044922f, -0.2626953f, 1.0126953f, -1.4921875f, 2.0058594f, 0.21887207f, -0.8979492f, 0.03668213f},
                 "b");
    expect_close(s.ts[2], {1.03125f, -1.9453125f, 0.515625f, -0.26171875f, 2.96875f}, "c");
    expect_close(s.ts[3], {-0.4979383f, 0.81982946f, -0.9709101f, 0.2605065f, 1.1253201f, -2.4784007f, 0.42369875f},
                 "d");
  }
  SheetSlots s(sheet_a());
  const float r0[4] = {0.1f, 0.9f, -0.4f, 0.35f}, r1[4] = {1.0f, -1.0f, 0.25f, 0.5f};
  fg_es_stats st;
  ASSERT_EQ(FG_OK, fg_es_update(s.es, r0, 4, &st)) << fg_last_error();
  EXPECT_NEAR(0.2375, st.mean_reward, 1e-7);
  EXPECT_EQ(-0.4f, st.min_reward);
  EXPECT_EQ(0.9f, st.max_reward);
  ASSERT_EQ(FG_OK, fg_es_update(s.es, r1, 4, &st)) << fg_last_error();
  EXPECT_EQ(2u, fg_es_iteration(s.es));
  expect_close(s.ts[0], {0.78395367f, -1.2750047f, 0.51845896f, 1.9830192f, -0.123018675f, 1.4779749f, -0.7360478f},
               "a");
  expect_close(s.ts[2], {0.99609375f, -2.0f, 0.50390625f, -0.23535156f, 2.984375f}, "c");
  expect_close(s.ts[3], {-0.48093694f, 0.7390066f, -1.0273292f, 0.24397261f, 1.1278526f, -2.4969428f, 0.38026085f},
               "d");
}

// Scenario B: correlated noise, raw rewards, explicit alpha, population 3.
TEST(EsSheet, ScenarioB) {
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.02f;
  c.has_alpha = true;
  c.alpha = 0.01f;
  c.population = 3;
  c.noise = FG_ES_NOISE_CORRELATED;
  c.reward_norm = FG_ES_REWARD_NONE;
  c.seed = 42;
  SheetSlots s(c);
  const float r[3] = {0.5f, -0.25f, 1.5f};
  ASSERT_EQ(FG_OK, fg_es_update(s.es, r, 3, nullptr)) << fg_last_error();
  expect_close(s.ts[0], {0.805725f, -1.2552462f, 0.50182354f, 1.9955155f, -0.12337347f, 1.4921284f, -0.7420049f},
               "a");
  expect_close(s.ts[2], {1.0078125f, -2.0f, 0.5f, -0.25390625f, 3.0f}, "c");
}

// Scenario C: A with centered ranks, one update.
TEST(EsSheet, ScenarioC) {
  fg_es_config c = sheet_a();
  c.reward_norm = FG_ES_REWARD_CENTERED_RANKS;
  SheetSlots s(c);
  const float r[4] = {0.1f, 0.9f, -0.4f, 0.35f};
  ASSERT_EQ(FG_OK, fg_es_update(s.es, r, 4, nullptr)) << fg_last_error();
  expect_close(s.ts[0], {0.7999262f, -1.2567196f, 0.5009102f, 1.9904276f, -0.121586315f, 1.498365f, -0.74659526f},
               "a");
  expect_close(s.ts[2], {1.0f, -1.9921875f, 0.5f, -0.25f, 3.0f}, "c");
}
