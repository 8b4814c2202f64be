// The tiny model of tests/data/fucina_gen/ckpt_gen.zig, as state-dict entries: the inputs
// Fucina wrote tests/data/golden/fucina_ckpt/model.safetensors from. Change both together.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "forgia/state_dict.h"
#include "forgia/trainer_state.h"

namespace fgt {

struct FucinaModel {
  float w[6] = {0.5f, -1.25f, 3.0f, 0.001f, -0.0f, 1.0e-30f};
  float e[6] = {1, 2, 3, 4, 5, 6};
  float s[1] = {0.1f};
  uint16_t nrm[3] = {0x3f80, 0xbf00, 0x4049};
  uint16_t hb[2] = {0x3c00, 0xc000};
  int64_t pos[4] = {0, 1, -7, int64_t(1) << 40};
  uint64_t sh_w[2] = {2, 3}, sh_e[2] = {3, 2}, sh_s[1] = {1}, sh_n[1] = {3}, sh_h[1] = {2}, sh_p[2] = {2, 2};

  std::vector<fg_state_dict_entry> entries() const {
    return {
        {"layers.0.weight", FG_F32, 2, sh_w, w, sizeof w},
        {"embed", FG_F32, 2, sh_e, e, sizeof e},
        {"bl\xc3\xb6" "ck.scale", FG_F32, 1, sh_s, s, sizeof s},
        {"norm.weight", FG_BF16, 1, sh_n, nrm, sizeof nrm},
        {"head.bias", FG_F16, 1, sh_h, hb, sizeof hb},
        {"positions", FG_I64, 2, sh_p, pos, sizeof pos},
    };
  }
};

// Destinations shaped like FucinaModel, filled with a marker byte.
struct FucinaDests {
  FucinaModel m;
  FucinaDests() {
    memset(m.w, 0xAB, sizeof m.w);
    memset(m.e, 0xAB, sizeof m.e);
    memset(m.s, 0xAB, sizeof m.s);
    memset(m.nrm, 0xAB, sizeof m.nrm);
    memset(m.hb, 0xAB, sizeof m.hb);
    memset(m.pos, 0xAB, sizeof m.pos);
  }
  std::vector<fg_state_dict_dest> dests() {
    std::vector<fg_state_dict_dest> d;
    for (const auto &e : m.entries())
      d.push_back({e.name, e.dtype, e.ndim, e.shape, const_cast<void *>(e.data), e.nbytes});
    return d;
  }
  bool equals(const FucinaModel &o) const {
    return !memcmp(m.w, o.w, sizeof o.w) && !memcmp(m.e, o.e, sizeof o.e) && !memcmp(m.s, o.s, sizeof o.s) &&
           !memcmp(m.nrm, o.nrm, sizeof o.nrm) && !memcmp(m.hb, o.hb, sizeof o.hb) &&
           !memcmp(m.pos, o.pos, sizeof o.pos);
  }
  bool untouched() const { return equals(FucinaDests().m); }
};

// The trainer state of golden/fucina_ckpt/trainer_state.json.
inline fg_trainer_state fucina_trainer_state() {
  fg_trainer_state s;
  fg_trainer_state_init(&s);
  s.step = 1200;
  s.seed = 0xDEADBEEFCAFEF00Dull;
  FG_TRAINER_STATE_SET(s, lora_rank, 8);
  FG_TRAINER_STATE_SET(s, lora_alpha, 16);
  FG_TRAINER_STATE_SET(s, lora_dropout_p, 0.05f);
  FG_TRAINER_STATE_SET(s, learning_rate, 3e-4f);
  FG_TRAINER_STATE_SET(s, accum_steps, 4);
  FG_TRAINER_STATE_SET(s, data_seed, (1ull << 53) + 1);
  FG_TRAINER_STATE_SET(s, data_epoch, 2);
  FG_TRAINER_STATE_SET(s, data_index, 37);
  FG_TRAINER_STATE_SET(s, es_sigma, 0.001f);
  FG_TRAINER_STATE_SET(s, es_alpha, 0.0005);
  FG_TRAINER_STATE_SET(s, es_population, 30);
  FG_TRAINER_STATE_SET(s, es_noise, 1);
  FG_TRAINER_STATE_SET(s, es_antithetic, 1);
  FG_TRAINER_STATE_SET(s, es_anchor_decay, 2);
  FG_TRAINER_STATE_SET(s, es_anchor_lambda, 10.0);
  FG_TRAINER_STATE_SET(s, es_ternary_flip_rate, 0.001);
  FG_TRAINER_STATE_SET(s, es_ternary_update_fraction, 0.005);
  FG_TRAINER_STATE_SET(s, es_ternary_update_decay, 0.015);
  FG_TRAINER_STATE_SET(s, es_iteration, 17);
  return s;
}

}  // namespace fgt
