// The Muon trajectories of tests/data/golden/fucina_muon.txt (generator:
// tests/data/fucina_gen/gen_muon.zig, Fucina's own optim.Muon on its scalar backend) and a
// runner that replays one with forgia on any device, step by step.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/gemm.h"
#include "forgia/optim.h"
#include "forgia/rng.h"
#include "golden_reader.h"
#include "testutil.h"
#include "training/optim_internal.h"

namespace fgt {

// One parameter after one step: its f32 bits (the master of a 16-bit one) or, for a large
// one, the FNV-1a-64 of their bytes; and the 16-bit bits (or their FNV).
struct MuonSnap {
  std::vector<uint32_t> f32;
  std::vector<uint16_t> p16;
  uint64_t fnv = 0, fnv16 = 0;
};

struct MuonCase {
  std::string line;
  fg_optim_config c;
  int steps = 0, skip = 0;
  float clip = 0;
  bool big = false;
  fg_dtype p16 = FG_F32;
  std::vector<std::vector<MuonSnap>> want;  // [step - 1][param]
  std::vector<uint8_t> state3, state_end;   // saveState bytes (empty when only hashed)
  uint64_t state3_fnv = 0, state_end_fnv = 0;
  size_t state3_len = 0, state_end_len = 0;
};

// Registration order of the generator: w x c on Muon, b by rank and e explicitly on the fallback.
inline const char *const kMuonNames[5] = {"w", "x", "c", "b", "e"};

inline std::vector<std::vector<uint64_t>> muon_shapes(bool big) {
  return {{big ? 300u : 6u, big ? 130u : 4u}, {3, 5}, {2, 3, 4}, {5}, {4, 3}};
}

inline std::vector<MuonCase> muon_cases() {
  std::vector<MuonCase> out;
  golden_lines("fucina_muon.txt", [&](const std::string &tag, std::istream &ss, const std::string &line) {
    if (tag == "case") {
      MuonCase mc;
      mc.line = line;
      mc.c = fg_optim_defaults(FG_OPTIM_MUON);
      std::string kind;
      ss >> kind;
      golden_fields(ss, [&](const std::string &k, const std::string &v) {
        if (k == "lr") mc.c.lr = std::stof(v);
        if (k == "momentum") mc.c.momentum = std::stof(v);
        if (k == "weight_decay") mc.c.weight_decay = std::stof(v);
        if (k == "nesterov") mc.c.nesterov = v == "1";
        if (k == "ns_steps") mc.c.ns_steps = (uint32_t)std::stoul(v);
        if (k == "scale") mc.c.muon_scale = v == "match_rms_adamw" ? FG_MUON_MATCH_RMS_ADAMW : FG_MUON_SPECTRAL;
        if (k == "state" && v == "bf16") mc.c.state_dtype = FG_BF16;
        if (k == "fb_state" && v == "bf16") mc.c.fallback.state_dtype = mc.c.fallback.second_moment_dtype = FG_BF16;
        if (k == "fb_lr") mc.c.fallback.lr = std::stof(v);
        if (k == "fb_wd") mc.c.fallback.weight_decay = std::stof(v);
        if (k == "steps") mc.steps = std::stoi(v);
        if (k == "clip") mc.clip = std::stof(v);
        if (k == "skip") mc.skip = std::stoi(v);
        if (k == "big") mc.big = v == "1";
        if (k == "p16") mc.p16 = v == "bfloat16" ? FG_BF16 : v == "float16" ? FG_F16 : FG_F32;
      });
      out.push_back(mc);
    } else if (!out.empty() && tag.size() > 1 && tag[0] == 's' && tag.compare(0, 5, "state") != 0) {
      MuonCase &mc = out.back();
      const size_t k = (size_t)std::stoul(tag.substr(1));
      std::string name, h;
      ss >> name;
      const bool is16 = name.size() > 3 && name.compare(name.size() - 3, 3, "_16") == 0;
      const std::string base = is16 ? name.substr(0, name.size() - 3) : name;
      size_t j = 0;
      while (j < 5 && base != kMuonNames[j]) j++;
      if (mc.want.size() < k) mc.want.resize(k, std::vector<MuonSnap>(5));
      MuonSnap &sn = mc.want[k - 1][j];
      while (ss >> h) {
        if (h.compare(0, 4, "fnv=") == 0) {
          (is16 ? sn.fnv16 : sn.fnv) = std::stoull(h.substr(4), nullptr, 16);
        } else if (is16) {
          sn.p16.push_back((uint16_t)std::stoul(h, nullptr, 16));
        } else {
          sn.f32.push_back((uint32_t)std::stoul(h, nullptr, 16));
        }
      }
    } else if (!out.empty() && tag.compare(0, 5, "state") == 0) {
      MuonCase &mc = out.back();
      const bool third = std::stoi(tag.substr(5)) == 3 && mc.steps != 3;
      std::string h;
      while (ss >> h) {
        if (h.compare(0, 4, "len=") == 0) (third ? mc.state3_len : mc.state_end_len) = std::stoul(h.substr(4));
        else if (h.compare(0, 4, "fnv=") == 0) (third ? mc.state3_fnv : mc.state_end_fnv) = std::stoull(h.substr(4), nullptr, 16);
        else (third ? mc.state3 : mc.state_end) = golden_hex_bytes(h);
      }
    }
  });
  return out;
}

// The generator's run of mc with forgia on dev (the device's GEMM mode as set by the caller).
struct MuonRun {
  fg_device *dev;
  const MuonCase &mc;
  std::vector<fg_tensor *> ps;
  fg_optim *opt = nullptr;

  // init: the parameters' initial bytes per parameter (empty: the generator's values).
  MuonRun(fg_device *d, const MuonCase &c, const std::vector<std::vector<uint8_t>> &init = {}) : dev(d), mc(c) {
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &mc.c, &opt)) << fg_last_error();
    const auto shapes = muon_shapes(mc.big);
    for (size_t j = 0; j < shapes.size(); j++) {
      fg_tensor *t = nullptr;
      EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, mc.p16, (int)shapes[j].size(), shapes[j].data(), &t));
      std::vector<uint8_t> host = j < init.size() ? init[j] : golden_narrow(golden_stream(100 + j, t->numel, 2.0f), mc.p16);
      EXPECT_EQ(FG_OK, fg_tensor_upload(t, host.data(), host.size(), nullptr));
      if (j == 4) {
        EXPECT_EQ(FG_OK, fg_optim_add_fallback(opt, t, kMuonNames[j])) << fg_last_error();
      } else {
        EXPECT_EQ(FG_OK, fg_optim_add(opt, t, kMuonNames[j])) << fg_last_error();
      }
      ps.push_back(t);
    }
  }
  ~MuonRun() {
    fg_optim_free(opt);
    for (fg_tensor *t : ps) fg_tensor_free(t);
  }

  void step(int k) { golden_step(dev, opt, ps, k, k == mc.skip, mc.clip); }

  std::vector<uint8_t> bytes(size_t j) const {
    std::vector<uint8_t> b(ps[j]->nbytes);
    EXPECT_EQ(FG_OK, fg_tensor_download(ps[j], b.data(), b.size(), nullptr));
    return b;
  }
  std::vector<std::vector<uint8_t>> all_bytes() const {
    std::vector<std::vector<uint8_t>> v;
    for (size_t j = 0; j < ps.size(); j++) v.push_back(bytes(j));
    return v;
  }

  // Parameter j's f32 values: the master of a 16-bit one.
  std::vector<uint32_t> f32(size_t j) const {
    std::vector<uint32_t> m(ps[j]->numel);
    if (mc.p16 == FG_F32) {
      std::vector<uint8_t> b = bytes(j);
      std::memcpy(m.data(), b.data(), b.size());
    } else {
      const fg_optim_slot *sl = j < 3 ? &opt->slots[j] : &opt->fallback->slots[j - 3];
      EXPECT_EQ(FG_OK, fg_device_copy(dev, m.data(), sl->master, m.size() * 4, FG_COPY_D2H));
    }
    return m;
  }

  std::vector<uint8_t> save() const { return golden_save(opt); }

  // Every parameter matches the golden after step k (1-based).
  void expect_step(int k) const {
    for (size_t j = 0; j < ps.size(); j++) {
      const MuonSnap &w = mc.want[(size_t)k - 1][j];
      const std::vector<uint32_t> got = f32(j);
      if (w.fnv) {
        EXPECT_EQ(w.fnv, golden_fnv(got.data(), got.size() * 4)) << mc.line << " step " << k << " " << kMuonNames[j];
      } else {
        EXPECT_EQ(w.f32, got) << mc.line << " step " << k << " " << kMuonNames[j];
      }
      if (mc.p16 == FG_F32) continue;
      const std::vector<uint8_t> b = bytes(j);
      if (w.fnv16) {
        EXPECT_EQ(w.fnv16, golden_fnv(b.data(), b.size())) << mc.line << " step " << k << " " << kMuonNames[j] << "_16";
      } else {
        std::vector<uint16_t> h(b.size() / 2);
        std::memcpy(h.data(), b.data(), b.size());
        EXPECT_EQ(w.p16, h) << mc.line << " step " << k << " " << kMuonNames[j] << "_16";
      }
    }
  }
};

}  // namespace fgt
