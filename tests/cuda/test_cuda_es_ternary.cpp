// Ternary ES genomes on CUDA: the trit calls (sequential flips and undo, atomic moves of
// elements sharing bytes) and a trainer's perturb, restore, replicas and updates leave the
// same bytes as on the CPU (memcmp), for plain and antithetic populations.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/es.h"
#include "forgia/es_trits.h"
#include "forgia/forgia.h"
#include "testutil.h"

namespace {

uint64_t mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// len elements of codes mix(seed, e) % 3 (packed four to a byte, lane by lane: any valid
// TQ2_0 byte is a code per lane), block scales distinct.
std::vector<uint8_t> genome(uint64_t len, uint64_t seed) {
  std::vector<uint8_t> g(len / 256 * 66);
  for (size_t i = 0; i < g.size(); i++) {
    if (i % 66 >= 64) {
      g[i] = (uint8_t)((i / 66) * 7 + i % 66);
      continue;
    }
    uint8_t b = 0;
    for (int lane = 0; lane < 4; lane++) b |= (uint8_t)((mix(seed, i * 4 + lane) % 3) << (2 * lane));
    g[i] = b;
  }
  return g;
}

struct Dev {
  fg_device *dev = nullptr;
  explicit Dev(const char *spec) { EXPECT_EQ(FG_OK, fg_device_open(spec, &dev)) << fg_last_error(); }
  ~Dev() { fg_device_close(dev); }
};

struct Buf {
  fg_device *dev;
  void *p = nullptr;
  size_t n;
  Buf(fg_device *d, size_t bytes) : dev(d), n(bytes) { EXPECT_EQ(FG_OK, fg_device_mem_alloc(d, bytes, &p)); }
  ~Buf() { fg_device_mem_free(dev, p); }
  void put(const void *h) { ASSERT_EQ(FG_OK, fg_device_copy(dev, p, h, n, FG_COPY_H2D)); }
  std::vector<uint8_t> get() const {
    std::vector<uint8_t> h(n);
    EXPECT_EQ(FG_OK, fg_device_copy(dev, h.data(), p, n, FG_COPY_D2H));
    return h;
  }
};

// The trit calls on one device: flips with a log, a mirrored replica, undo, then moves of
// every other element (neighbours share bytes), returning every intermediate state.
std::vector<std::vector<uint8_t>> trit_calls(const char *spec) {
  Dev d(spec);
  const uint64_t len = 1 << 16, flips = 5000;
  const auto g0 = genome(len, 11);
  Buf g(d.dev, g0.size()), idx(d.dev, flips * 8), code(d.dev, flips), rep(d.dev, g0.size());
  g.put(g0.data());
  rep.put(g0.data());
  std::vector<std::vector<uint8_t>> out;
  EXPECT_EQ(FG_OK, fg_es_trits_flip(d.dev, (uint8_t *)g.p, len, 0x1234, flips, false, (uint64_t *)idx.p, (uint8_t *)code.p, nullptr));
  out.push_back(g.get());
  out.push_back(idx.get());
  out.push_back(code.get());
  EXPECT_EQ(FG_OK, fg_es_trits_flip(d.dev, (uint8_t *)rep.p, len, 0x1234, flips, true, nullptr, nullptr, nullptr));
  out.push_back(rep.get());
  EXPECT_EQ(FG_OK, fg_es_trits_undo(d.dev, (uint8_t *)g.p, len, (const uint64_t *)idx.p, (const uint8_t *)code.p, flips, nullptr));
  out.push_back(g.get());
  EXPECT_EQ(g0, out.back());
  std::vector<uint64_t> mi;
  std::vector<int8_t> md;
  for (uint64_t e = 0; e < len; e += 1 + (mix(5, e) & 1)) {
    mi.push_back(e);
    md.push_back((mix(6, e) & 1) ? 1 : -1);
  }
  Buf bi(d.dev, mi.size() * 8), bd(d.dev, md.size());
  bi.put(mi.data());
  bd.put(md.data());
  fg_stream *s = nullptr;
  EXPECT_EQ(FG_OK, fg_stream_create(d.dev, &s));
  EXPECT_EQ(FG_OK, fg_es_trits_move(d.dev, (uint8_t *)g.p, len, (const uint64_t *)bi.p, (const int8_t *)bd.p, mi.size(), s));
  EXPECT_EQ(FG_OK, fg_stream_sync(s));
  fg_stream_free(s);
  out.push_back(g.get());
  return out;
}

struct Trace {
  std::vector<std::vector<uint8_t>> states;
};

// A trainer with an f32 slot and two genomes: every member's perturbed genomes, its
// replicas, the restored genomes and the state after each of three updates.
Trace trainer_run(const char *spec, bool anti, fg_es_reward_norm norm) {
  Dev d(spec);
  Trace tr;
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.02f;
  c.population = 8;
  c.antithetic = anti;
  c.reward_norm = norm;
  c.ternary_flip_rate = 0.01f;
  c.ternary_update_fraction = 0.05f;
  c.ternary_update_decay = 0.25f;
  c.seed = 1234;
  fg_es *es = nullptr;
  EXPECT_EQ(FG_OK, fg_es_create(&c, &es));
  const uint64_t lens[2] = {1 << 15, 2560};
  fg_tensor *g[2] = {nullptr, nullptr}, *r[2] = {nullptr, nullptr}, *w = nullptr;
  const uint64_t wn = 1000;
  EXPECT_EQ(FG_OK, fg_tensor_create(d.dev, "w", FG_F32, 1, &wn, &w));
  std::vector<float> wv(wn);
  for (uint64_t i = 0; i < wn; i++) wv[i] = (float)((int)(mix(9, i) % 2001) - 1000) / 512.0f;
  EXPECT_EQ(FG_OK, fg_tensor_upload(w, wv.data(), wn * 4, nullptr));
  EXPECT_EQ(FG_OK, fg_es_add(es, w, nullptr));
  for (int k = 0; k < 2; k++) {
    EXPECT_EQ(FG_OK, fg_tensor_create(d.dev, "g", FG_TQ2_0, 1, &lens[k], &g[k]));
    EXPECT_EQ(FG_OK, fg_tensor_create(d.dev, "r", FG_TQ2_0, 1, &lens[k], &r[k]));
    const auto b = genome(lens[k], 100 + k);
    EXPECT_EQ(FG_OK, fg_tensor_upload(g[k], b.data(), b.size(), nullptr));
    EXPECT_EQ(FG_OK, fg_es_add_ternary(es, g[k], nullptr)) << fg_last_error();
  }
  auto snap = [&](const fg_tensor *t) {
    std::vector<uint8_t> h(t->nbytes);
    EXPECT_EQ(FG_OK, fg_tensor_download(t, h.data(), h.size(), nullptr));
    tr.states.push_back(h);
  };
  for (int it = 0; it < 3; it++) {
    std::vector<float> rewards(8);
    for (uint64_t m = 0; m < 8; m++) {
      EXPECT_EQ(FG_OK, fg_es_materialize_ternary(es, m, r, 2)) << fg_last_error();
      snap(r[0]);
      snap(r[1]);
      EXPECT_EQ(FG_OK, fg_es_perturb(es, m)) << fg_last_error();
      snap(g[0]);
      snap(g[1]);
      EXPECT_EQ(FG_OK, fg_es_restore(es, m)) << fg_last_error();
      snap(g[0]);
      snap(g[1]);
      rewards[m] = (float)((int)(mix(it, m) % 17) - 8) / 4.0f;
    }
    EXPECT_EQ(FG_OK, fg_es_update(es, rewards.data(), 8, nullptr)) << fg_last_error();
    snap(w);
    snap(g[0]);
    snap(g[1]);
  }
  fg_es_free(es);
  for (int k = 0; k < 2; k++) {
    fg_tensor_free(g[k]);
    fg_tensor_free(r[k]);
  }
  fg_tensor_free(w);
  return tr;
}

}  // namespace

TEST(CudaEsTernary, TritCallsMatchCpu) {
  FGT_REQUIRE_CUDA();
  const auto cpu = trit_calls("cpu"), gpu = trit_calls("cuda");
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); i++) {
    ASSERT_EQ(cpu[i].size(), gpu[i].size()) << i;
    EXPECT_EQ(0, std::memcmp(cpu[i].data(), gpu[i].data(), cpu[i].size())) << "state " << i;
  }
}

TEST(CudaEsTernary, TrainerMatchesCpu) {
  FGT_REQUIRE_CUDA();
  for (int anti = 0; anti < 2; anti++)
    for (fg_es_reward_norm norm : {FG_ES_REWARD_Z_SCORE, FG_ES_REWARD_CENTERED_RANKS, FG_ES_REWARD_NONE}) {
      SCOPED_TRACE(std::to_string(anti) + " " + fg_es_reward_norm_name(norm));
      const Trace cpu = trainer_run("cpu", anti, norm), gpu = trainer_run("cuda", anti, norm);
      ASSERT_EQ(cpu.states.size(), gpu.states.size());
      for (size_t i = 0; i < cpu.states.size(); i++) {
        ASSERT_EQ(cpu.states[i].size(), gpu.states[i].size()) << i;
        EXPECT_EQ(0, std::memcmp(cpu.states[i].data(), gpu.states[i].data(), cpu.states[i].size())) << "state " << i;
      }
    }
}
