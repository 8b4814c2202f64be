// The APOLLO / APOLLO-Mini trajectories of tests/data/golden/fucina_apollo.txt (generator
// tests/data/fucina_gen/gen_apollo.zig: Fucina's own optim.Apollo, scalar backend) and a rig
// that replays one with forgia on any device, step by step.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/optim.h"
#include "forgia/rng.h"
#include "golden_reader.h"
#include "testutil.h"
#include "training/optim_apollo_internal.h"

namespace fgt {

struct ApolloCase {
  std::string line;
  fg_optim_config c;
  int steps = 0;
  float clip = 0;
  int skip = 0;
  bool fb2d = false;
  fg_dtype p16 = FG_F32;
  bool big = false;  // [300,130] and [40,900] instead of [6,4] and [3,7]
  // Per step (index k - 1): tag (m0, f0, m0_16, ...) -> bits (f32, or 16-bit for _16 tags).
  std::vector<std::map<std::string, std::vector<uint32_t>>> want;
  std::map<int, std::vector<uint8_t>> state;  // step -> Fucina's saveState bytes
  // Beyond 64 values (4096 state bytes) the golden has FNV-1a-64 hashes instead.
  std::vector<std::map<std::string, uint64_t>> want_fnv;
  std::map<int, uint64_t> state_fnv;
};

// golden: fucina_apollo.txt, or torch_apollo.txt (the reference's trajectories, the same
// format without state lines; generator tests/data/torch_gen/gen_apollo.py).
inline std::vector<ApolloCase> apollo_cases(const char *golden = "fucina_apollo.txt") {
  std::vector<ApolloCase> out;
  golden_lines(golden, [&](const std::string &tag, std::istream &ss, const std::string &line) {
    if (tag == "case") {
      ApolloCase ac;
      ac.line = line;
      std::string kind;
      ss >> kind;
      ac.c = fg_optim_defaults(kind == "mini" ? FG_OPTIM_APOLLO_MINI : FG_OPTIM_APOLLO);
      golden_fields(ss, [&](const std::string &k, const std::string &v) {
        if (k == "rank") ac.c.rank = std::stoull(v);
        if (k == "gap") ac.c.update_proj_gap = std::stoull(v);
        if (k == "lr") ac.c.lr = std::stof(v);
        if (k == "beta1") ac.c.beta1 = std::stof(v);
        if (k == "beta2") ac.c.beta2 = std::stof(v);
        if (k == "eps") ac.c.eps = std::stof(v);
        if (k == "weight_decay") ac.c.weight_decay = std::stof(v);
        if (k == "scale") ac.c.apollo_scale = std::stof(v);
        if (k == "scale_type") ac.c.scale_type = v == "tensor" ? FG_APOLLO_TENSOR : FG_APOLLO_CHANNEL;
        if (k == "correct_bias") ac.c.correct_bias = v == "1";
        if (k == "scale_front") ac.c.scale_front = v == "1";
        if (k == "limiter") ac.c.disable_norm_growth_limiter = v == "0";
        if (k == "seed") ac.c.seed = std::stoull(v);
        if (k == "steps") ac.steps = std::stoi(v);
        if (k == "clip") ac.clip = std::stof(v);
        if (k == "skip") ac.skip = std::stoi(v);
        if (k == "fb2d") ac.fb2d = v == "1";
        if (k == "big") ac.big = v == "1";
        if (k == "p16") ac.p16 = v == "bf16" ? FG_BF16 : v == "f16" ? FG_F16 : FG_F32;
      });
      out.push_back(ac);
    } else if (tag == "step") {
      out.back().want.emplace_back();
      out.back().want_fnv.emplace_back();
    } else if (tag == "state") {
      int k = 0;
      std::string hex;
      ss >> k >> hex;
      if (hex.rfind("fnv=", 0) == 0) {
        out.back().state_fnv[k] = std::stoull(hex.substr(4), nullptr, 16);
        return;
      }
      out.back().state[k] = golden_hex_bytes(hex);
    } else if (!tag.empty() && tag[0] != '#') {
      std::vector<uint32_t> b;
      std::string h;
      while (ss >> h) {
        if (h.rfind("fnv=", 0) == 0) {
          out.back().want_fnv.back()[tag] = std::stoull(h.substr(4), nullptr, 16);
          break;
        }
        b.push_back((uint32_t)std::stoul(h, nullptr, 16));
      }
      if (!out.back().want_fnv.back().count(tag)) out.back().want.back()[tag] = b;
    }
  });
  return out;
}

// The generator's parameters: tall [6,4] "tall", wide [3,7] (param1), [5] (fallback param0),
// with fb2d a [2,3] "head" routed to the fallback.
struct ApolloRig {
  fg_device *dev = nullptr;
  const ApolloCase *ac = nullptr;
  fg_optim *o = nullptr;
  std::vector<fg_tensor *> ts;

  ApolloRig(fg_device *d, const ApolloCase &c, fg_gemm_mode mode = FG_GEMM_EXACT) : dev(d), ac(&c) {
    EXPECT_EQ(FG_OK, fg_device_set_gemm_mode(dev, mode));
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &c.c, &o)) << fg_last_error();
    std::vector<std::vector<uint64_t>> shapes = {{6, 4}, {3, 7}, {5}, {2, 3}};
    if (c.big) shapes[0] = {300, 130}, shapes[1] = {40, 900};
    for (size_t j = 0; j < (c.fb2d ? 4u : 3u); j++) {
      fg_tensor *t = nullptr;
      EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, c.p16, (int)shapes[j].size(), shapes[j].data(), &t));
      const std::vector<uint8_t> host = golden_narrow(golden_stream(100 + j, t->numel, 2.0f), t->dtype);
      EXPECT_EQ(FG_OK, fg_tensor_upload(t, host.data(), host.size(), nullptr));
      ts.push_back(t);
    }
    EXPECT_EQ(FG_OK, fg_optim_add(o, ts[0], "tall")) << fg_last_error();
    EXPECT_EQ(FG_OK, fg_optim_add(o, ts[1], nullptr)) << fg_last_error();
    EXPECT_EQ(FG_OK, fg_optim_add(o, ts[2], nullptr)) << fg_last_error();
    if (c.fb2d) {
      EXPECT_EQ(FG_OK, fg_optim_add_fallback(o, ts[3], "head")) << fg_last_error();
    }
  }
  ~ApolloRig() {
    fg_optim_free(o);
    for (fg_tensor *t : ts) fg_tensor_free(t);
  }

  // Step k's gradients (the wide parameter has none at the case's skip step), clip, step.
  void step(int k) { golden_step(dev, o, ts, k, k == ac->skip, ac->clip); }

  // The parameters as the generator prints them: tag -> bits (f32: the master of a 16-bit
  // parameter; tag_16: the 16-bit values).
  std::map<std::string, std::vector<uint32_t>> snapshot() {
    std::map<std::string, std::vector<uint32_t>> s;
    auto put = [&](const std::string &tag, const fg_optim_slot &sl) {
      const fg_tensor *t = sl.t;
      std::vector<uint32_t> f(t->numel);
      std::vector<uint8_t> b(t->nbytes);
      EXPECT_EQ(FG_OK, fg_tensor_download(t, b.data(), b.size(), nullptr));
      if (t->dtype == FG_F32) {
        std::memcpy(f.data(), b.data(), b.size());
      } else {
        EXPECT_EQ(FG_OK, fg_device_copy(dev, f.data(), sl.master, f.size() * 4, FG_COPY_D2H));
        std::vector<uint32_t> h(t->numel);
        for (size_t i = 0; i < h.size(); i++) h[i] = (uint32_t)b[2 * i] | ((uint32_t)b[2 * i + 1] << 8);
        s[tag + "_16"] = h;
      }
      s[tag] = f;
    };
    for (size_t j = 0; j < o->n; j++) put("m" + std::to_string(j), o->slots[j]);
    for (size_t j = 0; j < o->apollo->nfb; j++) put("f" + std::to_string(j), o->apollo->fb[j]);
    return s;
  }

  // Sets the parameters to a step's values as the golden prints them (16-bit parameters:
  // their 16-bit bits; the master comes from a loaded frame).
  void set_params(const std::map<std::string, std::vector<uint32_t>> &want) {
    for (size_t j = 0; j < ts.size(); j++) {
      fg_tensor *t = ts[j];
      const std::string tag = j < 2 ? "m" + std::to_string(j) : "f" + std::to_string(j - 2);
      std::vector<uint8_t> host(t->nbytes);
      if (t->dtype == FG_F32) {
        const auto &v = want.at(tag);
        std::memcpy(host.data(), v.data(), host.size());
      } else {
        const auto &v = want.at(tag + "_16");
        for (size_t i = 0; i < v.size(); i++) host[2 * i] = (uint8_t)v[i], host[2 * i + 1] = (uint8_t)(v[i] >> 8);
      }
      EXPECT_EQ(FG_OK, fg_tensor_upload(t, host.data(), host.size(), nullptr));
    }
  }

  // Requires the parameters after step k to be the golden's (bits, or hashes of them).
  void expect_step(int k) {
    const auto got = snapshot();
    const auto &want = ac->want[k - 1];
    const auto &want_fnv = ac->want_fnv[k - 1];
    EXPECT_EQ(want.size() + want_fnv.size(), got.size()) << "step " << k;
    for (const auto &kv : want) {
      auto it = got.find(kv.first);
      ASSERT_NE(it, got.end()) << kv.first;
      EXPECT_EQ(kv.second, it->second) << "step " << k << " " << kv.first;
    }
    for (const auto &kv : want_fnv) {
      auto it = got.find(kv.first);
      ASSERT_NE(it, got.end()) << kv.first;
      EXPECT_EQ(kv.second, golden_fnv(it->second.data(), it->second.size() * 4)) << "step " << k << " " << kv.first;
    }
  }

  // Requires save_state after step k to be the golden's bytes (or their hash), if it has them.
  void expect_state(int k) {
    auto it = ac->state.find(k);
    if (it != ac->state.end()) {
      EXPECT_EQ(it->second, save()) << "state after step " << k;
    }
    auto h = ac->state_fnv.find(k);
    if (h != ac->state_fnv.end()) {
      const auto b = save();
      EXPECT_EQ(h->second, golden_fnv(b.data(), b.size())) << "state after step " << k;
    }
  }

  fg_status load(const std::vector<uint8_t> &b) { return fg_optim_load_state(o, b.data(), b.size()); }

  std::vector<uint8_t> save() { return golden_save(o); }
};

// Larger parameters (tall, wide, a bf16 one, a vector), several projection chunks, a clip,
// all queued on the device's stream; returns every parameter byte, master and state byte.
inline std::vector<uint8_t> apollo_run_big(const char *spec, fg_optim_kind kind, fg_apollo_scale_type st) {
  fg_device *dev = nullptr;
  EXPECT_EQ(FG_OK, fg_device_open(spec, &dev));
  EXPECT_EQ(FG_OK, fg_device_set_gemm_mode(dev, FG_GEMM_EXACT));
  fg_optim_config c = fg_optim_defaults(kind);
  c.scale_type = st;
  c.update_proj_gap = 2;
  c.weight_decay = 0.01f;
  if (kind == FG_OPTIM_APOLLO) c.rank = 8;
  fg_optim *o = nullptr;
  EXPECT_EQ(FG_OK, fg_optim_create(dev, &c, &o));
  const std::vector<std::vector<uint64_t>> shapes = {{300, 200}, {64, 700}, {96, 96}, {1000}};
  std::vector<fg_tensor *> ts;
  for (size_t j = 0; j < shapes.size(); j++) {
    fg_tensor *t = nullptr;
    EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, j == 2 ? FG_BF16 : FG_F32, (int)shapes[j].size(),
                                      shapes[j].data(), &t));
    const std::vector<uint8_t> host = golden_narrow(gaussian(t->numel, 7 + j, 0.5f), t->dtype);
    EXPECT_EQ(FG_OK, fg_tensor_upload(t, host.data(), host.size(), nullptr));
    EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(t));
    EXPECT_EQ(FG_OK, fg_optim_add(o, t, nullptr)) << fg_last_error();
    ts.push_back(t);
  }
  fg_stream *s = fg_device_stream(dev);
  for (int k = 0; k < 5; k++) {
    for (size_t j = 0; j < ts.size(); j++) {
      std::vector<float> g = gaussian(ts[j]->numel, 100 + 10 * k + j, 2.0f);
      EXPECT_EQ(FG_OK, fg_device_copy(dev, ts[j]->grad, g.data(), g.size() * 4, FG_COPY_H2D));
    }
    EXPECT_EQ(FG_OK, fg_optim_clip_grad_norm(o, 20.0f, nullptr, s)) << fg_last_error();
    EXPECT_EQ(FG_OK, fg_optim_step(o, s)) << fg_last_error();
  }
  EXPECT_EQ(FG_OK, fg_stream_sync(s));
  std::vector<uint8_t> out;
  for (fg_tensor *t : ts) {
    std::vector<uint8_t> b(t->nbytes);
    EXPECT_EQ(FG_OK, fg_tensor_download(t, b.data(), b.size(), nullptr));
    out.insert(out.end(), b.begin(), b.end());
  }
  uint8_t *p = nullptr;
  size_t n = 0;
  EXPECT_EQ(FG_OK, fg_optim_save_state(o, &p, &n)) << fg_last_error();
  out.insert(out.end(), p, p + n);
  free(p);
  fg_optim_free(o);
  for (fg_tensor *t : ts) fg_tensor_free(t);
  fg_device_close(dev);
  return out;
}

}  // namespace fgt
