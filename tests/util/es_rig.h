// The ES test rig: slots uploaded to a device, registered in a trainer, and compared after
// each operation with the serial transcription (es_serial.h). Shared by the CPU and CUDA tests.
#ifndef FORGIA_TEST_ES_RIG_H
#define FORGIA_TEST_ES_RIG_H

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "es_serial.h"
#include "forgia/forgia.h"

namespace fgt {

// Deterministic slot values of a dtype: a cheap LCG over [-2, 2).
inline EsSlot make_slot(fg_dtype dt, size_t n, uint32_t salt) {
  EsSlot s{dt, std::vector<uint32_t>(n)};
  uint32_t x = 0x9E3779B9u ^ salt;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    s.set(i, ((float)(x >> 8) / 16777216.0f) * 4.0f - 2.0f);
  }
  return s;
}

struct Rig {
  fg_device *dev;
  fg_es *es = nullptr;
  std::vector<fg_tensor *> ts;
  EsSerial ref;

  Rig(fg_device *d, const fg_es_config &c, const std::vector<EsSlot> &slots) : dev(d) {
    ref.c = c;
    ref.slots = slots;
    EXPECT_EQ(FG_OK, fg_es_create(&c, &es)) << fg_last_error();
    for (size_t k = 0; k < slots.size(); k++) {
      const uint64_t shape[1] = {slots[k].bits.size()};
      fg_tensor *t = nullptr;
      EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, slots[k].dt, 1, shape, &t));
      auto raw = slots[k].raw();
      EXPECT_EQ(FG_OK, fg_tensor_upload(t, raw.data(), raw.size(), nullptr));
      EXPECT_EQ(FG_OK, fg_es_add(es, t, ("slot" + std::to_string(k)).c_str())) << fg_last_error();
      ts.push_back(t);
    }
  }
  ~Rig() {
    fg_es_free(es);
    for (auto *t : ts) fg_tensor_free(t);
  }
  std::vector<uint8_t> bytes(size_t k) const {
    std::vector<uint8_t> out(ts[k]->nbytes);
    EXPECT_EQ(FG_OK, fg_tensor_download(ts[k], out.data(), out.size(), nullptr));
    return out;
  }
  void expect_equal(const char *what) const {
    for (size_t k = 0; k < ts.size(); k++) {
      const auto want = ref.slots[k].raw();
      const auto got = bytes(k);
      ASSERT_EQ(want.size(), got.size());
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), got.size())) << what << ": slot " << k << " ("
                                                                     << fg_dtype_name(ref.slots[k].dt) << ")";
    }
  }
};

inline std::vector<EsSlot> mixed_slots(size_t big) {
  return {make_slot(FG_F32, 7, 1), make_slot(FG_F16, 8, 2), make_slot(FG_BF16, 5, 3), make_slot(FG_F32, big, 4),
          make_slot(FG_BF16, big / 3 + 1, 5)};
}

inline std::vector<float> rewards_for(uint64_t pop, int it) {
  std::vector<float> r(pop);
  for (uint64_t m = 0; m < pop; m++) r[m] = std::sin(0.7f * (float)m + 1.3f * (float)it) + (m == 1 ? 0.25f : 0.0f);
  if (pop > 3) r[3] = r[2];  // a tie, for centered ranks
  return r;
}

struct EsKnobs {
  bool anti;
  fg_es_noise noise;
  fg_es_reward_norm norm;
  fg_es_restore_mode restore;
  bool cache;
  fg_es_anchor_decay anchor;
};

inline const std::vector<EsKnobs> &es_knobs() {
  static const std::vector<EsKnobs> k = {
      {false, FG_ES_NOISE_IID, FG_ES_REWARD_Z_SCORE, FG_ES_RESTORE_REGENERATE, false, FG_ES_ANCHOR_NONE},
      {true, FG_ES_NOISE_IID, FG_ES_REWARD_CENTERED_RANKS, FG_ES_RESTORE_SNAPSHOT, false, FG_ES_ANCHOR_NONE},
      {false, FG_ES_NOISE_CORRELATED, FG_ES_REWARD_NONE, FG_ES_RESTORE_REGENERATE, true, FG_ES_ANCHOR_L2},
      {true, FG_ES_NOISE_CORRELATED, FG_ES_REWARD_Z_SCORE, FG_ES_RESTORE_SNAPSHOT, true, FG_ES_ANCHOR_L1},
  };
  return k;
}

// Three iterations of perturb, restore and update on dev, each compared with the serial
// transcription bitwise; big sets the size of the large slots.
inline void es_check_sequence(fg_device *dev, const EsKnobs &k, size_t big) {
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.05f;
  c.population = 6;
  c.antithetic = k.anti;
  c.noise = k.noise;
  c.reward_norm = k.norm;
  c.restore_mode = k.restore;
  c.cache_streams = k.cache;
  c.anchor_decay = k.anchor;
  c.anchor_lambda = k.anchor == FG_ES_ANCHOR_L1 ? 0.5f : 4.0f;
  c.seed = 0xDEADBEEFCAFEF00Dull;
  Rig rig(dev, c, mixed_slots(big));
  if (k.anchor != FG_ES_ANCHOR_NONE) {
    ASSERT_EQ(FG_OK, fg_es_capture_anchor(rig.es));
    rig.ref.anchor = rig.ref.slots;
  }
  for (int it = 0; it < 3; it++) {
    const uint64_t m = (uint64_t)(it + 1) % c.population;
    ASSERT_EQ(FG_OK, fg_es_perturb(rig.es, m)) << fg_last_error();
    auto saved = rig.ref.slots;
    rig.ref.perturb(m, 1.0f);
    rig.expect_equal("perturb");
    ASSERT_EQ(FG_OK, fg_es_restore(rig.es, m));
    if (k.restore == FG_ES_RESTORE_SNAPSHOT)
      rig.ref.slots = saved;
    else
      rig.ref.perturb(m, -1.0f);
    rig.expect_equal("restore");
    const auto r = rewards_for(c.population, it);
    fg_es_stats st;
    ASSERT_EQ(FG_OK, fg_es_update(rig.es, r.data(), r.size(), &st)) << fg_last_error();
    rig.ref.update(r);
    rig.expect_equal("update");
    EXPECT_EQ((uint64_t)it + 1, fg_es_iteration(rig.es));
  }
}

}  // namespace fgt

#endif
