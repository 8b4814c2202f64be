// Fucina's float ES goldens (tests/data/golden/fucina_es.txt, made by
// tests/data/fucina_gen/gen_es.zig): the parser and a replay of one scenario through the
// public API on any device, bytes compared after every event. Shared by the CPU and CUDA suites.
#ifndef FORGIA_TEST_ES_FUCINA_CASES_H
#define FORGIA_TEST_ES_FUCINA_CASES_H

#include <gtest/gtest.h>
#include <omp.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>
#include "forgia/es.h"
#include "forgia/forgia.h"
#include "forgia/rng.h"
#include "golden_reader.h"

namespace fgt {

struct Values {
  std::string name;
  std::vector<uint8_t> bytes;  // empty when only the hash is given
  bool hashed = false;
  uint64_t fnv = 0;
};

struct Event {
  std::string kind;  // init, anchor, perturb, restore, materialize, update
  uint64_t member = 0;
  std::vector<float> rewards;
  uint64_t mean = 0, std_ = 0;
  uint32_t min = 0, max = 0;
  std::vector<Values> values;
  std::string line;
};

struct SlotDecl {
  std::string name;
  fg_dtype dtype;
  uint64_t n;
};

struct EsCase {
  std::string line;
  std::string name;
  fg_es_config cfg;
  std::vector<SlotDecl> slots;
  std::vector<Event> events;
};

inline float f32_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

inline uint32_t hex32(const std::string &s) { return (uint32_t)std::stoul(s, nullptr, 16); }
inline uint64_t hex64(const std::string &s) { return std::stoull(s, nullptr, 16); }

inline fg_es_config parse_config(std::istream &ss) {
  fg_es_config c = fg_es_defaults();
  fgt::golden_fields(ss, [&](const std::string &k, const std::string &v) {
    if (k == "sigma") c.sigma = f32_of(hex32(v));
    if (k == "alpha") {
      c.has_alpha = v != "none";
      if (c.has_alpha) c.alpha = f32_of(hex32(v));
    }
    if (k == "population") c.population = std::stoull(v);
    if (k == "antithetic") c.antithetic = v == "1";
    if (k == "noise") {
      EXPECT_EQ(FG_OK, fg_es_noise_parse(v.c_str(), &c.noise)) << v;
    }
    if (k == "restore") {
      EXPECT_EQ(FG_OK, fg_es_restore_mode_parse(v.c_str(), &c.restore_mode)) << v;
    }
    if (k == "cache") c.cache_streams = v == "1";
    if (k == "anchor") {
      EXPECT_EQ(FG_OK, fg_es_anchor_decay_parse(v.c_str(), &c.anchor_decay)) << v;
    }
    if (k == "lambda") c.anchor_lambda = f32_of(hex32(v));
    if (k == "norm") {
      EXPECT_EQ(FG_OK, fg_es_reward_norm_parse(v.c_str(), &c.reward_norm)) << v;
    }
    if (k == "seed") c.seed = hex64(v);
  });
  return c;
}

// `v NAME w0 w1 ...` (8 hex digits per f32 word, 4 per 16-bit word) or `v NAME fnv=H`.
inline Values parse_values(std::istream &ss) {
  Values v;
  ss >> v.name;
  std::string w;
  while (ss >> w) {
    if (w.rfind("fnv=", 0) == 0) {
      v.hashed = true;
      v.fnv = hex64(w.substr(4));
      continue;
    }
    const uint32_t x = hex32(w);
    const size_t k = w.size() / 2;  // bytes of the word
    for (size_t i = 0; i < k; i++) v.bytes.push_back((uint8_t)(x >> (8 * i)));
  }
  return v;
}

inline std::vector<EsCase> load_cases() {
  std::vector<EsCase> cases;
  fgt::golden_lines("fucina_es.txt", [&](const std::string &tag, std::istream &ss, const std::string &line) {
    if (tag.empty() || tag[0] == '#') return;
    if (tag == "case") {
      EsCase c;
      c.line = line;
      ss >> c.name;
      c.cfg = parse_config(ss);
      cases.push_back(c);
      return;
    }
    ASSERT_FALSE(cases.empty()) << line;
    EsCase &c = cases.back();
    if (tag == "slot") {
      SlotDecl s;
      std::string dt;
      ss >> s.name >> dt >> s.n;
      s.dtype = dt == "f32" ? FG_F32 : dt == "f16" ? FG_F16 : FG_BF16;
      c.slots.push_back(s);
    } else if (tag == "v") {
      ASSERT_FALSE(c.events.empty()) << line;
      c.events.back().values.push_back(parse_values(ss));
    } else if (tag == "stats") {
      Event &e = c.events.back();
      fgt::golden_fields(ss, [&](const std::string &k, const std::string &v) {
        if (k == "mean") e.mean = hex64(v);
        if (k == "std") e.std_ = hex64(v);
        if (k == "min") e.min = hex32(v);
        if (k == "max") e.max = hex32(v);
      });
    } else {
      Event e;
      e.kind = tag;
      e.line = line;
      if (tag == "perturb" || tag == "restore" || tag == "materialize") ss >> e.member;
      if (tag == "update")
        for (uint32_t b : fgt::golden_hex_words<uint32_t>(ss)) e.rewards.push_back(f32_of(b));
      c.events.push_back(e);
    }
  });
  return cases;
}

// The generator's inputs by slot name: the values of Fucina's src/es_tests.zig, or the
// integer-exact streams of common.zig (gen_es.zig's `large` layout), narrowed to the slot's
// dtype.
inline std::vector<float> initial_values(const std::string &name) {
  if (name == "a") return {0.8f, -1.25f, 0.5f, 2.0f, -0.125f, 1.5f, -0.75f};
  if (name == "b") return {0.5f, -0.25f, 1.0f, -1.5f, 2.0f, 0.125f, -0.875f, 0.0625f};
  if (name == "c") return {1.0f, -2.0f, 0.5f, -0.25f, 3.0f};
  if (name == "d") return {-0.5f, 0.75f, -1.0f, 0.25f, 1.125f, -2.5f, 0.375f};
  if (name == "big") return fgt::golden_stream(1001, 5000, 2.0f);
  if (name == "bigh") return fgt::golden_stream(1002, 4100, 2.0f);
  if (name == "bigb") return fgt::golden_stream(1003, 3000, 4.0f);
  ADD_FAILURE() << "no inputs for slot " << name;
  return {};
}

inline std::vector<uint8_t> download(const fg_tensor *t) {
  std::vector<uint8_t> b(t->nbytes);
  EXPECT_EQ(FG_OK, fg_tensor_download(t, b.data(), b.size(), nullptr)) << fg_last_error();
  return b;
}

// True when t holds want's bytes (or their hash); reports the first differing element.
inline bool same_bits(const fg_tensor *t, const Values &want, const std::string &where) {
  const std::vector<uint8_t> got = download(t);
  if (want.hashed) {
    const uint64_t h = fgt::golden_fnv(got.data(), got.size());
    EXPECT_EQ(want.fnv, h) << where << ": slot " << want.name << " fnv";
    return want.fnv == h;
  }
  if (got.size() == want.bytes.size() && std::memcmp(got.data(), want.bytes.data(), got.size()) == 0) return true;
  const size_t es = t->dtype == FG_F32 ? 4 : 2;
  size_t i = 0;
  while (i + es <= got.size() && i + es <= want.bytes.size() && std::memcmp(&got[i], &want.bytes[i], es) == 0) i += es;
  ADD_FAILURE() << where << ": slot " << want.name << " differs from Fucina at element " << i / es << " (bytes "
                << got.size() << " vs " << want.bytes.size() << ")";
  return false;
}

// Replays one case on dev; stops at its first mismatch so that one bug reads as one failure.
inline void replay(fg_device *dev, const EsCase &c) {
  SCOPED_TRACE(c.line);
  std::vector<fg_tensor *> ts;
  for (const SlotDecl &s : c.slots) {
    fg_tensor *t = nullptr;
    ASSERT_EQ(FG_OK, fg_tensor_create(dev, s.name.c_str(), s.dtype, 1, &s.n, &t)) << fg_last_error();
    const std::vector<uint8_t> b = fgt::golden_narrow(initial_values(s.name), s.dtype);
    ASSERT_EQ(FG_OK, fg_tensor_upload(t, b.data(), b.size(), nullptr)) << fg_last_error();
    ts.push_back(t);
  }
  struct Free {
    std::vector<fg_tensor *> &ts;
    ~Free() {
      for (fg_tensor *t : ts) fg_tensor_free(t);
    }
  } free_ts{ts};
  fg_es *es = nullptr;
  ASSERT_EQ(FG_OK, fg_es_create(&c.cfg, &es)) << fg_last_error();
  struct FreeEs {
    fg_es *es;
    ~FreeEs() { fg_es_free(es); }
  } free_es{es};
  for (fg_tensor *t : ts) ASSERT_EQ(FG_OK, fg_es_add(es, t, nullptr)) << fg_last_error();
  ASSERT_EQ(ts.size(), fg_es_param_count(es));

  for (const Event &e : c.events) {
    std::vector<fg_tensor *> shown = ts;
    std::vector<fg_tensor *> replicas;
    if (e.kind == "anchor") {
      ASSERT_EQ(FG_OK, fg_es_capture_anchor(es)) << fg_last_error();
      shown.clear();  // the generator prints no values after capturing
    } else if (e.kind == "perturb") {
      ASSERT_EQ(FG_OK, fg_es_perturb(es, e.member)) << fg_last_error();
    } else if (e.kind == "restore") {
      ASSERT_EQ(FG_OK, fg_es_restore(es, e.member)) << fg_last_error();
    } else if (e.kind == "materialize") {
      for (const SlotDecl &s : c.slots) {
        fg_tensor *r = nullptr;
        ASSERT_EQ(FG_OK, fg_tensor_create(dev, s.name.c_str(), s.dtype, 1, &s.n, &r)) << fg_last_error();
        replicas.push_back(r);
      }
      const fg_status st = fg_es_materialize(es, e.member, replicas.data(), replicas.size());
      EXPECT_EQ(FG_OK, st) << fg_last_error();
      shown = replicas;
    } else if (e.kind == "update") {
      fg_es_stats st;
      ASSERT_EQ(FG_OK, fg_es_update(es, e.rewards.data(), e.rewards.size(), &st)) << fg_last_error();
      uint64_t mean, sd;
      std::memcpy(&mean, &st.mean_reward, 8);
      std::memcpy(&sd, &st.std_reward, 8);
      EXPECT_EQ(e.mean, mean) << e.line << ": mean";
      EXPECT_EQ(e.std_, sd) << e.line << ": std";
      EXPECT_EQ(e.min, fg_f32_bits(st.min_reward)) << e.line << ": min";
      EXPECT_EQ(e.max, fg_f32_bits(st.max_reward)) << e.line << ": max";
    } else {
      ASSERT_EQ("init", e.kind) << "unknown event " << e.line;
    }
    EXPECT_EQ(shown.size(), e.values.size()) << e.line;
    bool ok = true;
    for (size_t k = 0; k < shown.size() && k < e.values.size(); k++) {
      EXPECT_EQ(c.slots[k].name, e.values[k].name) << e.line;
      ok = same_bits(shown[k], e.values[k], e.line) && ok;
    }
    for (fg_tensor *r : replicas) fg_tensor_free(r);
    if (!ok || ::testing::Test::HasFailure()) return;
  }
}

const EsCase *find_case(const std::vector<EsCase> &cases, const std::string &name) {
  for (const EsCase &c : cases)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace fgt

#endif
