// The float ES update algebra against a numpy transcription (tests/data/es_gen/es_numpy.py):
// forgia regenerates the noise (fg_rng_fill_host, FG_RNG_GAUSS_FAST, on the stream seeds
// fg_es_slot_stream_seed names), the script gets those values as files and replays perturb,
// restore, the update and anchored decay from Fucina's formulas, and every parameter byte
// and every statistic must be the same bits. Each numpy float32 ufunc rounds once and the
// statistics are binary64 Python floats in member order, so no tolerance is needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/es.h"
#include "forgia/forgia.h"
#include "forgia/rng.h"
#include "golden_reader.h"
#include "testutil.h"

namespace {

struct SlotSpec {
  fg_dtype dtype;
  uint64_t n;
  uint64_t seed;  // golden_stream seed of the initial values
  float scale;
};

struct Scenario {
  const char *name;
  fg_es_config cfg;
  std::vector<SlotSpec> slots;
  std::vector<std::vector<float>> rewards;  // one vector per iteration
};

const char *dtype_name(fg_dtype d) { return d == FG_F32 ? "f32" : d == FG_F16 ? "f16" : "bf16"; }

std::string hex32(float f) {
  char b[16];
  std::snprintf(b, sizeof b, "%08x", fg_f32_bits(f));
  return b;
}

std::vector<uint8_t> download(const fg_tensor *t) {
  std::vector<uint8_t> b(t->nbytes);
  EXPECT_EQ(FG_OK, fg_tensor_download(t, b.data(), b.size(), nullptr)) << fg_last_error();
  return b;
}

// forgia's bytes of one output, by the script's file name.
struct Recorded {
  std::string file;
  std::vector<uint8_t> bytes;
};

void run_scenario(const Scenario &sc) {
  SCOPED_TRACE(sc.name);
  fgt::TempDir dir;
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error();
  fg_es *es = nullptr;
  ASSERT_EQ(FG_OK, fg_es_create(&sc.cfg, &es)) << fg_last_error();
  std::vector<fg_tensor *> ts;
  std::ostringstream manifest;
  manifest << "config sigma=" << hex32(sc.cfg.sigma) << " alpha=" << (sc.cfg.has_alpha ? hex32(sc.cfg.alpha) : "none")
           << " population=" << sc.cfg.population << " antithetic=" << (sc.cfg.antithetic ? 1 : 0)
           << " norm=" << fg_es_reward_norm_name(sc.cfg.reward_norm)
           << " anchor=" << fg_es_anchor_decay_name(sc.cfg.anchor_decay) << " lambda=" << hex32(sc.cfg.anchor_lambda)
           << " iterations=" << sc.rewards.size() << "\n";
  for (size_t k = 0; k < sc.slots.size(); k++) {
    const SlotSpec &s = sc.slots[k];
    fg_tensor *t = nullptr;
    ASSERT_EQ(FG_OK, fg_tensor_create(dev, nullptr, s.dtype, 1, &s.n, &t)) << fg_last_error();
    const std::vector<uint8_t> b = fgt::golden_narrow(fgt::golden_stream(s.seed, s.n, s.scale), s.dtype);
    ASSERT_EQ(FG_OK, fg_tensor_upload(t, b.data(), b.size(), nullptr));
    fgt::write_file(dir.file("init_" + std::to_string(k) + ".bin"), b.data(), b.size());
    ASSERT_EQ(FG_OK, fg_es_add(es, t, nullptr)) << fg_last_error();
    ts.push_back(t);
    manifest << "slot s" << k << " " << dtype_name(s.dtype) << " " << s.n << "\n";
  }
  const std::string m = manifest.str();
  fgt::write_file(dir.file("manifest.txt"), m.data(), m.size());
  if (sc.cfg.anchor_decay != FG_ES_ANCHOR_NONE) {
    ASSERT_EQ(FG_OK, fg_es_capture_anchor(es)) << fg_last_error();
  }

  const uint64_t pop = sc.cfg.population;
  const uint64_t streams = sc.cfg.antithetic ? pop / 2 : pop;
  std::vector<Recorded> rec;
  std::vector<std::string> stats;
  for (size_t it = 0; it < sc.rewards.size(); it++) {
    const std::string is = std::to_string(it);
    // The noise of this iteration, as forgia names its streams.
    for (uint64_t s = 0; s < streams; s++) {
      const uint64_t member = sc.cfg.antithetic ? 2 * s : s;
      for (size_t k = 0; k < ts.size(); k++) {
        float sign = 0;
        fg_rng_spec r;
        std::memset(&r, 0, sizeof r);
        r.kind = FG_RNG_GAUSS_FAST;
        r.seed = fg_es_slot_stream_seed(es, member, k, &sign);
        r.scale = 1.0f;
        EXPECT_EQ(1.0f, sign);
        if (sc.cfg.antithetic) {
          float twin_sign = 0;
          EXPECT_EQ(r.seed, fg_es_slot_stream_seed(es, member + 1, k, &twin_sign));
          EXPECT_EQ(-1.0f, twin_sign);
        }
        std::vector<float> eps(ts[k]->numel);
        ASSERT_EQ(FG_OK, fg_rng_fill_host(&r, eps.data(), eps.size())) << fg_last_error();
        fgt::write_file(dir.file("noise_" + is + "_" + std::to_string(s) + "_" + std::to_string(k) + ".f32"),
                        eps.data(), eps.size() * 4);
      }
    }
    for (uint64_t mb = 0; mb < pop; mb++) {
      const std::string ms = is + "_" + std::to_string(mb) + "_";
      ASSERT_EQ(FG_OK, fg_es_perturb(es, mb)) << fg_last_error();
      for (size_t k = 0; k < ts.size(); k++) rec.push_back({"pert_" + ms + std::to_string(k) + ".bin", download(ts[k])});
      ASSERT_EQ(FG_OK, fg_es_restore(es, mb)) << fg_last_error();
      for (size_t k = 0; k < ts.size(); k++) rec.push_back({"rest_" + ms + std::to_string(k) + ".bin", download(ts[k])});
    }
    const std::vector<float> &r = sc.rewards[it];
    ASSERT_EQ(pop, r.size());
    fgt::write_file(dir.file("rewards_" + is + ".f32"), r.data(), r.size() * 4);
    fg_es_stats st;
    ASSERT_EQ(FG_OK, fg_es_update(es, r.data(), r.size(), &st)) << fg_last_error();
    for (size_t k = 0; k < ts.size(); k++) rec.push_back({"upd_" + is + "_" + std::to_string(k) + ".bin", download(ts[k])});
    uint64_t mean, sd;
    std::memcpy(&mean, &st.mean_reward, 8);
    std::memcpy(&sd, &st.std_reward, 8);
    char line[80];
    std::snprintf(line, sizeof line, "%016llx %016llx %08x %08x", (unsigned long long)mean, (unsigned long long)sd,
                  fg_f32_bits(st.min_reward), fg_f32_bits(st.max_reward));
    stats.push_back(line);
  }
  fg_es_free(es);
  for (fg_tensor *t : ts) fg_tensor_free(t);
  fg_device_close(dev);

  std::string out, err;
  const std::string cmd = std::string("'") + FORGIA_PYTHON + "' '" + FORGIA_SOURCE_DIR +
                          "/tests/data/es_gen/es_numpy.py' '" + dir.path + "'";
  ASSERT_EQ(0, fgt::run(cmd, &out, &err)) << "es_numpy.py failed: " << err;

  for (const Recorded &x : rec) {
    const std::vector<uint8_t> want = fgt::read_file(dir.file(x.file));
    ASSERT_EQ(want.size(), x.bytes.size()) << x.file;
    if (std::memcmp(want.data(), x.bytes.data(), want.size()) != 0) {
      size_t i = 0;
      while (want[i] == x.bytes[i]) i++;
      FAIL() << x.file << ": forgia differs from numpy at byte " << i;
    }
  }
  for (size_t it = 0; it < stats.size(); it++) {
    std::ifstream f(dir.file("stats_" + std::to_string(it) + ".txt"));
    std::string want;
    std::getline(f, want);
    EXPECT_EQ(want, stats[it]) << "stats of iteration " << it;
  }
}

fg_es_config base(float sigma, uint64_t pop, uint64_t seed) {
  fg_es_config c = fg_es_defaults();
  c.sigma = sigma;
  c.population = pop;
  c.seed = seed;
  return c;
}

// Slots of every dtype, one of them past a 2048-element noise chunk.
const std::vector<SlotSpec> kSlots = {
    {FG_F32, 7, 11, 2.0f}, {FG_F16, 8, 12, 2.0f}, {FG_BF16, 5, 13, 4.0f}, {FG_F32, 3000, 14, 2.0f}, {FG_F16, 2500, 15, 1.0f}};

}  // namespace

TEST(EsNumpy, ZScoreIid) {
  Scenario sc{"z_score iid", base(0.05f, 4, 42), kSlots,
              {{0.1f, 0.9f, -0.4f, 0.35f}, {1.0f, -1.0f, 0.25f, 0.5f}, {0.3f, 0.3f, 0.3f, 0.3f}}};
  run_scenario(sc);
}

TEST(EsNumpy, CenteredRanksAntitheticL2) {
  fg_es_config c = base(0.03f, 6, 7);
  c.has_alpha = true;
  c.alpha = 0.02f;
  c.antithetic = true;
  c.reward_norm = FG_ES_REWARD_CENTERED_RANKS;
  c.anchor_decay = FG_ES_ANCHOR_L2;
  c.anchor_lambda = 5.0f;
  Scenario sc{"centered_ranks antithetic l2", c, kSlots,
              {{0.2f, -0.1f, 0.6f, 0.4f, -0.3f, 0.05f},
               {0.5f, 0.5f, -1.0f, 0.25f, 0.5f, -1.0f},
               {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}}};
  run_scenario(sc);
}

TEST(EsNumpy, RawRewardsCorrelatedL1) {
  fg_es_config c = base(0.02f, 5, 0xDEADBEEFCAFEF00Dull);
  c.has_alpha = true;
  c.alpha = 0.01f;
  c.noise = FG_ES_NOISE_CORRELATED;
  c.reward_norm = FG_ES_REWARD_NONE;
  c.anchor_decay = FG_ES_ANCHOR_L1;
  c.anchor_lambda = 0.5f;
  Scenario sc{"none correlated l1", c, kSlots,
              {{0.5f, -0.25f, 1.5f, 0.0f, 2.0f}, {-1.0f, 0.75f, 0.125f, 3.0f, -2.5f}, {2.0f, 2.5f, -0.5f, 0.1f, 0.7f}}};
  run_scenario(sc);
}
