// The torch.optim trajectories of tests/data/golden/torch_optim.txt (generator:
// tests/data/torch_gen/gen_optim.py), the same cases run by Fucina in fucina_optim.txt
// (tests/data/fucina_gen/gen_optim.zig; `state=bf16` cases add bf16 moments), and a runner
// that replays one with forgia on any device.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/optim.h"
#include "forgia/rng.h"
#include "golden_reader.h"
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

inline std::vector<OptimCase> optim_cases(const char *golden = "torch_optim.txt") {
  std::vector<OptimCase> out;
  golden_lines(golden, [&](const std::string &tag, std::istream &ss, const std::string &line) {
    if (tag == "case") {
      OptimCase oc;
      oc.line = line;
      std::string kind;
      ss >> kind;
      oc.c = fg_optim_defaults(kind == "sgd" ? FG_OPTIM_SGD : kind == "adam" ? FG_OPTIM_ADAM : FG_OPTIM_ADAMW);
      golden_fields(ss, [&](const std::string &k, const std::string &v) {
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
        if (k == "state" && v == "bf16") {  // Fucina: every state buffer (SGD's one, Adam's two)
          oc.c.state_dtype = FG_BF16;
          if (fg_optim_kind_describe(oc.c.kind)->n_state > 1) oc.c.second_moment_dtype = FG_BF16;
        }
      });
      out.push_back(oc);
    } else if (!out.empty() && (tag == "p0" || tag == "p1")) {
      out.back().want.push_back(golden_hex_words<uint32_t>(ss));
    } else if (!out.empty() && (tag == "p0_16" || tag == "p1_16")) {
      out.back().want16.push_back(golden_hex_words<uint16_t>(ss));
    }
  });
  return out;
}

// Replays oc on dev; returns the final parameters as host bytes (their own dtype), and the
// optimizer's masters are reflected in the 16-bit parameters. masters (optional) receives
// each parameter's final f32 values: the master of a 16-bit parameter, else the parameter.
inline std::vector<std::vector<uint8_t>> optim_replay(fg_device *dev, const OptimCase &oc, std::vector<uint64_t> *counts = nullptr,
                                                     std::vector<std::vector<uint32_t>> *masters = nullptr) {
  const fg_dtype pd = oc.p16;
  std::vector<fg_tensor *> ps;
  fg_optim *opt = nullptr;
  EXPECT_EQ(FG_OK, fg_optim_create(dev, &oc.c, &opt)) << fg_last_error();
  for (size_t j = 0; j < optim_shapes().size(); j++) {
    const auto &sh = optim_shapes()[j];
    fg_tensor *t = nullptr;
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, pd, (int)sh.size(), sh.data(), &t));
    const std::vector<uint8_t> host = golden_narrow(golden_stream(100 + j, t->numel, 2.0f), pd);
    EXPECT_EQ(FG_OK, fg_tensor_upload(t, host.data(), host.size(), nullptr));
    EXPECT_EQ(FG_OK, fg_optim_add(opt, t, nullptr)) << fg_last_error();
    ps.push_back(t);
  }
  for (int k = 1; k <= oc.steps; k++) {
    // torch's p.grad = None at a skipped step
    golden_step(dev, opt, ps, k, std::find(oc.skip.begin(), oc.skip.end(), k) != oc.skip.end(), oc.clip);
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
