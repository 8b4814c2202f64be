// A small ES problem shared by tests/cpu/test_comm.cpp (one process) and es_mpi_check.cpp
// (MPI ranks): three CPU parameters of f32, f16 and bf16 and a reward that is a
// deterministic function of their values, so any two runs with the same rewards agree.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "forgia/device.h"
#include "forgia/elem/half.h"
#include "forgia/es.h"
#include "forgia/tensor.h"

namespace esrig {

struct Param {
  fg_dtype dt;
  uint64_t n;
};
// Odd sizes, so that no kernel sees a round count.
constexpr Param kParams[3] = {{FG_F32, 37}, {FG_F16, 19}, {FG_BF16, 23}};

inline float value(const fg_tensor *t, uint64_t i) {
  switch (t->dtype) {
    case FG_F32: return static_cast<const float *>(t->data)[i];
    case FG_F16: return fg_f16_to_f32(static_cast<const uint16_t *>(t->data)[i]);
    default: return fg_bf16_to_f32(static_cast<const uint16_t *>(t->data)[i]);
  }
}

inline float target(size_t k, uint64_t i) { return static_cast<float>((i * 5 + k * 3) % 7) * 0.125f - 0.375f; }

struct Rig {
  fg_device *dev = nullptr;
  fg_tensor *t[3] = {};
  fg_es *es = nullptr;
  uint64_t fail_member = UINT64_MAX;  // the evaluator fails on this member (error paths)

  Rig() = default;
  Rig(const Rig &) = delete;
  Rig &operator=(const Rig &) = delete;
  ~Rig() {
    fg_es_free(es);
    for (fg_tensor *x : t) fg_tensor_free(x);
    fg_device_close(dev);
  }

  fg_status init(const fg_es_config &c) {
    fg_status st = fg_device_open("cpu", &dev);
    for (size_t k = 0; k < 3 && !st; k++) {
      const uint64_t shape[1] = {kParams[k].n};
      st = fg_tensor_create(dev, nullptr, kParams[k].dt, 1, shape, &t[k]);
      for (uint64_t i = 0; i < kParams[k].n && !st; i++) {
        const float v = static_cast<float>((i * 37 + k * 11) % 17) * 0.0625f - 0.5f;
        if (kParams[k].dt == FG_F32) static_cast<float *>(t[k]->data)[i] = v;
        else if (kParams[k].dt == FG_F16) static_cast<uint16_t *>(t[k]->data)[i] = fg_f32_to_f16(v);
        else static_cast<uint16_t *>(t[k]->data)[i] = fg_f32_to_bf16(v);
      }
    }
    if (!st) st = fg_es_create(&c, &es);
    static const char *const names[3] = {"w32", "w16", "wbf16"};
    for (size_t k = 0; k < 3 && !st; k++) st = fg_es_add(es, t[k], names[k]);
    return st;
  }

  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> b;
    for (const fg_tensor *x : t) {
      const uint8_t *p = static_cast<const uint8_t *>(x->data);
      b.insert(b.end(), p, p + x->nbytes);
    }
    return b;
  }
};

// -sum (x - target)^2 over every element, in double, in a fixed order.
inline fg_status reward(void *ctx, uint64_t member, float *r) {
  Rig *rig = static_cast<Rig *>(ctx);
  if (member == rig->fail_member) return fg_fail(FG_ERR_IO, "es_rig: member %llu fails on purpose", (unsigned long long)member);
  double s = 0;
  for (size_t k = 0; k < 3; k++)
    for (uint64_t i = 0; i < rig->t[k]->numel; i++) {
      const double d = static_cast<double>(value(rig->t[k], i)) - static_cast<double>(target(k, i));
      s += d * d;
    }
  *r = static_cast<float>(-s);
  return FG_OK;
}

// The configurations both tests run: plain, antithetic, correlated noise with centered
// ranks, snapshot restore with cached streams.
inline std::vector<fg_es_config> configs() {
  std::vector<fg_es_config> v;
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.05f;
  c.has_alpha = true;
  c.alpha = 0.02f;
  c.population = 6;
  c.seed = 1234;
  v.push_back(c);
  fg_es_config a = c;
  a.antithetic = true;
  v.push_back(a);
  fg_es_config r = c;
  r.noise = FG_ES_NOISE_CORRELATED;
  r.reward_norm = FG_ES_REWARD_CENTERED_RANKS;
  r.seed = 99;
  v.push_back(r);
  fg_es_config s = a;
  s.restore_mode = FG_ES_RESTORE_SNAPSHOT;
  s.cache_streams = true;
  s.population = 8;
  v.push_back(s);
  return v;
}

}  // namespace esrig
