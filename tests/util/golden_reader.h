// What the optimizer golden readers (optim_cases.h, muon_cases.h, apollo_cases.h) share: the
// generators' integer-exact input streams, the FNV-1a-64 that stands in for long values, and
// the line format of tests/data/golden/*.txt (a tag, then `key=value` fields or hex words).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/optim.h"
#include "forgia/rng.h"
#include "testutil.h"

namespace fgt {

// Value i of stream seed, as every generator builds it: ((at >> 40) * 2^-24 - 0.5) * scale,
// every operation exact in f32 (gen_optim.py, gen_optim.zig, gen_muon.zig, gen_apollo.zig).
inline std::vector<float> golden_stream(uint64_t seed, size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = ((float)(fg_rng_at(seed, i) >> 40) * 0x1p-24f - 0.5f) * scale;
  return v;
}

// FNV-1a-64 over bytes, as the generators print it (`fnv=`) for long tensors and states.
inline uint64_t golden_fnv(const void *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
  return h;
}

// Bytes of a run of hex digit pairs (a saveState dump).
inline std::vector<uint8_t> golden_hex_bytes(const std::string &h) {
  std::vector<uint8_t> b(h.size() / 2);
  for (size_t i = 0; i < b.size(); i++) b[i] = (uint8_t)std::stoul(h.substr(2 * i, 2), nullptr, 16);
  return b;
}

// Host bytes of values in dtype d (f32, f16 RNE, bf16 by Fucina's rule).
inline std::vector<uint8_t> golden_narrow(const std::vector<float> &v, fg_dtype d) {
  std::vector<uint8_t> b(v.size() * (d == FG_F32 ? 4 : 2));
  for (size_t i = 0; i < v.size(); i++) {
    if (d == FG_F32) {
      std::memcpy(&b[i * 4], &v[i], 4);
    } else {
      const uint16_t h = d == FG_F16 ? fg_f32_to_f16(v[i]) : fg_f32_to_bf16(v[i]);
      std::memcpy(&b[i * 2], &h, 2);
    }
  }
  return b;
}

// Calls on_line(tag, rest, line) for every line of tests/data/golden/<name>, rest positioned
// after the first word.
template <class F>
inline void golden_lines(const std::string &name, F on_line) {
  std::ifstream f(std::string(FORGIA_TEST_DATA) + "/golden/" + name);
  EXPECT_TRUE(f.good()) << "cannot open golden " << name;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string tag;
    ss >> tag;
    on_line(tag, ss, line);
  }
}

// Calls on_field(key, value) for every remaining `key=value` word of ss.
template <class F>
inline void golden_fields(std::istream &ss, F on_field) {
  std::string kv;
  while (ss >> kv) {
    const size_t eq = kv.find('=');
    on_field(kv.substr(0, eq), kv.substr(eq + 1));
  }
}

// The remaining words of ss as hex numbers (f32 or 16-bit bit patterns).
template <class T>
inline std::vector<T> golden_hex_words(std::istream &ss) {
  std::vector<T> b;
  std::string h;
  while (ss >> h) b.push_back((T)std::stoul(h, nullptr, 16));
  return b;
}

// One step as the generators take it: parameter j's gradient is stream 1000 * (j + 1) + k
// (scale 2), except that parameter 1 has none when skip1 (the generators leave it without a
// gradient, so the optimizer skips it); clip > 0 clips the global norm first.
inline void golden_step(fg_device *dev, fg_optim *opt, const std::vector<fg_tensor *> &ps, int k, bool skip1, float clip) {
  for (size_t j = 0; j < ps.size(); j++) {
    fg_tensor *t = ps[j];
    if (j == 1 && skip1) {
      fg_device_mem_free(dev, t->grad);
      t->grad = nullptr;
      continue;
    }
    EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(t));
    const std::vector<float> g = golden_stream(1000 * (j + 1) + (uint64_t)k, t->numel, 2.0f);
    EXPECT_EQ(FG_OK, fg_device_copy(dev, t->grad, g.data(), g.size() * 4, FG_COPY_H2D));
  }
  if (clip > 0) {
    EXPECT_EQ(FG_OK, fg_optim_clip_grad_norm(opt, clip, nullptr, nullptr)) << fg_last_error();
  }
  EXPECT_EQ(FG_OK, fg_optim_step(opt, nullptr)) << fg_last_error();
}

// The bytes fg_optim_save_state writes, to compare with a generator's saveState dump.
inline std::vector<uint8_t> golden_save(fg_optim *o) {
  uint8_t *p = nullptr;
  size_t n = 0;
  EXPECT_EQ(FG_OK, fg_optim_save_state(o, &p, &n)) << fg_last_error();
  std::vector<uint8_t> b(p, p + n);
  free(p);
  return b;
}

}  // namespace fgt
