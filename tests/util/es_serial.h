// A straight-line serial transcription of Fucina's ES float algebra (its src/es.zig: seeds,
// perturb, restore, update, anchored decay), element by element in Fucina's order, for the
// tests to compare the op layer's chunked, multi-threaded and device kernels with bit for bit.
// It shares only the pinned RNG primitives and the f16/bf16 roundings with the library.
#ifndef FORGIA_TEST_ES_SERIAL_H
#define FORGIA_TEST_ES_SERIAL_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/elem/rng.h"
#include "forgia/es.h"

namespace fgt {

// One float slot as host values: dtype and the raw element bits (f32, or u16 patterns).
struct EsSlot {
  fg_dtype dt;
  std::vector<uint32_t> bits;  // f32 bits, or the u16 pattern in the low half
  float get(size_t i) const {
    if (dt == FG_F32) {
      float f;
      std::memcpy(&f, &bits[i], 4);
      return f;
    }
    return dt == FG_F16 ? fg_f16_to_f32((uint16_t)bits[i]) : fg_bf16_to_f32((uint16_t)bits[i]);
  }
  void set(size_t i, float v) {
    if (dt == FG_F32) {
      std::memcpy(&bits[i], &v, 4);
      if (v != v) bits[i] = 0x7fc00000u;
    } else {
      bits[i] = dt == FG_F16 ? fg_f32_to_f16(v) : fg_f32_to_bf16(v);
    }
  }
  float round(float v) const {
    if (dt == FG_F16) return fg_f16_to_f32(fg_f32_to_f16(v));
    if (dt == FG_BF16) return fg_bf16_to_f32(fg_f32_to_bf16(v));
    return v;
  }
  size_t bytes() const { return bits.size() * (dt == FG_F32 ? 4 : 2); }
  std::vector<uint8_t> raw() const {
    std::vector<uint8_t> out(bytes());
    for (size_t i = 0; i < bits.size(); i++) {
      if (dt == FG_F32)
        std::memcpy(&out[4 * i], &bits[i], 4);
      else {
        uint16_t h = (uint16_t)bits[i];
        std::memcpy(&out[2 * i], &h, 2);
      }
    }
    return out;
  }
};

struct EsSerial {
  fg_es_config c;
  uint64_t iteration = 0;
  std::vector<EsSlot> slots;
  std::vector<EsSlot> anchor;

  float alpha() const { return c.has_alpha ? c.alpha : c.sigma / 2.0f; }
  uint64_t member_seed(uint64_t m) const {
    return fg_rng_at(c.seed ^ FG_RNG_DOMAIN_ES_SEEDS, iteration * c.population + m);
  }
  uint64_t stream_seed(uint64_t m, size_t k, float *sign) const {
    *sign = (c.antithetic && (m & 1u)) ? -1.0f : 1.0f;
    const uint64_t ms = member_seed(c.antithetic ? (m & ~1ull) : m);
    return c.noise == FG_ES_NOISE_IID ? fg_rng_at(ms ^ FG_RNG_DOMAIN_ES_NOISE, k) : ms;
  }
  static float eps(uint64_t seed, uint64_t j) { return fg_rng_gauss_fast_at(seed, j, 1.0f); }

  // sign +1 perturb, -1 regenerate-restore
  void perturb(uint64_t m, float sign) {
    for (size_t k = 0; k < slots.size(); k++) {
      float ns;
      const uint64_t seed = stream_seed(m, k, &ns);
      const float scaled = (sign * ns) * c.sigma;
      EsSlot &s = slots[k];
      for (size_t j = 0; j < s.bits.size(); j++) {
        const float t = s.round(scaled * eps(seed, j));
        s.set(j, s.get(j) + t);
      }
    }
  }

  void update(const std::vector<float> &r) {
    const size_t N = r.size();
    double sum = 0;
    for (float x : r) sum += (double)x;
    const double mean = sum / (double)N;
    double var = 0;
    for (float x : r) var += ((double)x - mean) * ((double)x - mean);
    const double sd = std::sqrt(var / (double)N);
    std::vector<float> C(N);
    if (c.reward_norm == FG_ES_REWARD_Z_SCORE) {
      for (size_t i = 0; i < N; i++) C[i] = (float)(((double)r[i] - mean) / (sd + 1e-8));
    } else if (c.reward_norm == FG_ES_REWARD_CENTERED_RANKS) {
      std::vector<size_t> o(N);
      std::iota(o.begin(), o.end(), 0);
      std::stable_sort(o.begin(), o.end(), [&](size_t a, size_t b) { return r[a] < r[b]; });
      for (size_t k = 0; k < N; k++) C[o[k]] = (float)k / (float)(N - 1) - 0.5f;
    } else {
      C = r;
    }
    const size_t S = c.antithetic ? N / 2 : N;
    std::vector<float> coef(S);
    for (size_t s = 0; s < S; s++) coef[s] = c.antithetic ? C[2 * s] - C[2 * s + 1] : C[s];
    const float scale = alpha() / (float)c.population;
    for (size_t k = 0; k < slots.size(); k++) {
      EsSlot &sl = slots[k];
      std::vector<uint64_t> seeds(S);
      for (size_t s = 0; s < S; s++) {
        float ns;
        seeds[s] = stream_seed(c.antithetic ? 2 * s : s, k, &ns);
      }
      for (size_t j = 0; j < sl.bits.size(); j++) {
        float acc = 0.0f;
        for (size_t s = 0; s < S; s++) acc = acc + coef[s] * eps(seeds[s], j);
        const float delta = sl.round(scale * acc);
        sl.set(j, sl.get(j) + delta);
      }
    }
    if (c.anchor_decay != FG_ES_ANCHOR_NONE) {
      const float step = alpha() * c.anchor_lambda;
      for (size_t k = 0; k < slots.size(); k++) {
        EsSlot &sl = slots[k];
        for (size_t j = 0; j < sl.bits.size(); j++) {
          const float a = anchor[k].get(j);
          const float d = sl.round(sl.get(j) - a);
          if (c.anchor_decay == FG_ES_ANCHOR_L2) {
            const float kept = sl.round(d * (1.0f - step));
            sl.set(j, kept + a);
          } else {
            const float th = sl.round(std::fabs(d) - step);
            const float cl = th > 0.0f ? th : 0.0f;
            sl.set(j, (d < 0.0f ? -cl : cl) + a);
          }
        }
      }
    }
    iteration++;
  }
};

}  // namespace fgt

#endif
