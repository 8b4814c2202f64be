// The torch.optim trajectories of tests/data/golden/torch_optim.txt (generator:
// tests/data/torch_gen/gen_optim.py), the same cases run by Fucina in fucina_optim.txt
// (tests/data/fucina_gen/gen_optim.zig; `state=bf16` cases add bf16 moments), and a runner
// that replays one with forgia on any device.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
#include "training/optim_internal.h"

namespace fgt {

struct OptimCase {
  std::string line;
  fg_optim_config c;
  int steps = 0;
  float clip = 0;
  std::vector<int> skip;
  fg_dtype p16 = FG_F32;  // FG_F32: f32 parameters
  std::vector<std::vector<uint32_t>> want;    // final f32 bits per parameter (torch's master)
  std::vector<std::vector<uint16_t>> want16;  // final 16-bit parameter bits
};

inline const std::vector<std::vector<uint64_t>> &optim_shapes() {
  static const std::vector<std::vector<uint64_t>> s = {{7}, {4, 5}};
  return s;
}

// Value i of stream seed, as the generator builds it (integer-exact).
inline std::vector<float> optim_stream(uint64_t seed, size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = ((float)(fg_rng_at(seed, i) >> 40) * 0x1p-24f - 0.5f) * scale;
  return v;
}

inline std::vector<OptimCase> optim_cases(const char *golden = "torch_optim.txt") {
  std::ifstream f(std::string(FORGIA_TEST_DATA) + "/golden/" + golden);
  std::vector<OptimCase> out;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string tag;
    ss >> tag;
    if (tag == "case") {
      OptimCase oc;
      oc.line = line;
      std::string kind, kv;
      ss >> kind;
      oc.c = fg_optim_defaults(kind == "sgd" ? FG_OPTIM_SGD : kind == "adam" ? FG_OPTIM_ADAM : FG_OPTIM_ADAMW);
      while (ss >> kv) {
        const size_t eq = kv.find('=');
        const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        if (k == "lr") oc.c.lr = std::stof(v);
        if (k == "momentum") oc.c.momentum = std::stof(v);
        if (k == "dampening") oc.c.dampening = std::stof(v);
        if (k == "weight_decay") oc.c.weight_decay = std::stof(v);
        if (k == "nesterov") oc.c.nesterov = v == "1";
        if (k == "beta1") oc.c.beta1 = std::stof(v);
        if (k == "beta2") oc.c.beta2 = std::stof(v);
        if (k == "eps") oc.c.eps = std::stof(v);
        if (k == "steps") oc.steps = std::stoi(v);
        if (k == "clip") oc.clip = std::stof(v);
        if (k == "skip" && v != "-") {
          std::istringstream sk(v);
          std::string x;
          while (std::getline(sk, x, ',')) oc.skip.push_back(std::stoi(x));
        }
        if (k == "p16") oc.p16 = v == "bfloat16" ? FG_BF16 : v == "float16" ? FG_F16 : FG_F32;
        if (k == "state" && v == "bf16") {  // Fucina: SGD's buffer, or both of Adam's moments
          oc.c.state_dtype = FG_BF16;
          if (oc.c.kind != FG_OPTIM_SGD) oc.c.second_moment_dtype = FG_BF16;
        }
      }
      out.push_back(oc);
    } else if (!out.empty() && (tag == "p0" || tag == "p1")) {
      std::vector<uint32_t> b;
      std::string h;
      while (ss >> h) b.push_back((uint32_t)std::stoul(h, nullptr, 16));
      out.back().want.push_back(b);
    } else if (!out.empty() && (tag == "p0_16" || tag == "p1_16")) {
      std::vector<uint16_t> b;
      std::string h;
      while (ss >> h) b.push_back((uint16_t)std::stoul(h, nullptr, 16));
      out.back().want16.push_back(b);
    }
  }
  return out;
}

// Replays oc on dev; returns the final parameters as host bytes (their own dtype), and the
// optimizer's masters are reflected in the 16-bit parameters. masters (optional) receives
// each parameter's final f32 values: the master of a 16-bit parameter, else the parameter.
inline std::vector<std::vector<uint8_t>> optim_replay(fg_device *dev, const OptimCase &oc, std::vector<uint64_t> *counts = nullptr,
                                                     std::vector<std::vector<uint32_t>> *masters = nullptr) {
  const fg_dtype pd = oc.p16;
  const size_t esz = pd == FG_F32 ? 4 : 2;
  std::vector<fg_tensor *> ps;
  fg_optim *opt = nullptr;
  EXPECT_EQ(FG_OK, fg_optim_create(dev, &oc.c, &opt)) << fg_last_error();
  for (size_t j = 0; j < optim_shapes().size(); j++) {
    const auto &sh = optim_shapes()[j];
    fg_tensor *t = nullptr;
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, pd, (int)sh.size(), sh.data(), &t));
    std::vector<float> v = optim_stream(100 + j, t->numel, 2.0f);
    std::vector<uint8_t> host(t->numel * esz);
    for (size_t i = 0; i < t->numel; i++) {
      if (pd == FG_F32) {
        std::memcpy(&host[i * 4], &v[i], 4);
      } else {
        uint16_t h = pd == FG_F16 ? fg_f32_to_f16(v[i]) : fg_f32_to_bf16(v[i]);
        std::memcpy(&host[i * 2], &h, 2);
      }
    }
    EXPECT_EQ(FG_OK, fg_tensor_upload(t, host.data(), host.size(), nullptr));
    EXPECT_EQ(FG_OK, fg_optim_add(opt, t, nullptr)) << fg_last_error();
    ps.push_back(t);
  }
  for (int k = 1; k <= oc.steps; k++) {
    for (size_t j = 0; j < ps.size(); j++) {
      fg_tensor *t = ps[j];
      const bool skip = j == 1 && std::find(oc.skip.begin(), oc.skip.end(), k) != oc.skip.end();
      if (skip) {  // no gradient this step: torch's p.grad = None
        fg_device_free(dev, t->grad);
        t->grad = nullptr;
        continue;
      }
      EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(t));
      std::vector<float> g = optim_stream(1000 * (j + 1) + (uint64_t)k, t->numel, 2.0f);
      EXPECT_EQ(FG_OK, fg_device_copy(dev, t->grad, g.data(), g.size() * 4, FG_COPY_H2D));
    }
    if (oc.clip > 0) {
      EXPECT_EQ(FG_OK, fg_optim_clip_grad_norm(opt, oc.clip, nullptr, nullptr)) << fg_last_error();
    }
    EXPECT_EQ(FG_OK, fg_optim_step(opt, nullptr)) << fg_last_error();
  }
  std::vector<std::vector<uint8_t>> out;
  for (size_t j = 0; j < ps.size(); j++) {
    std::vector<uint8_t> b(ps[j]->nbytes);
    EXPECT_EQ(FG_OK, fg_tensor_download(ps[j], b.data(), b.size(), nullptr));
    out.push_back(b);
    if (counts) counts->push_back(fg_optim_step_count_at(opt, j));
    if (masters) {
      std::vector<uint32_t> m(ps[j]->numel);
      if (pd == FG_F32) {
        std::memcpy(m.data(), b.data(), b.size());
      } else {
        EXPECT_EQ(FG_OK, fg_device_copy(dev, m.data(), opt->slots[j].master, m.size() * 4, FG_COPY_D2H));
      }
      masters->push_back(m);
    }
  }
  fg_optim_free(opt);
  for (fg_tensor *t : ps) fg_tensor_free(t);
  return out;
}

}  // namespace fgt
