// Optimizer state frames (forgia/optim_frame.h): the AdamW bytes Fucina's optim tests pin,
// every frame Fucina's own optimizers wrote (tests/data/golden/fucina_frames, made by
// tests/data/fucina_gen/gen_frames.zig) parsed, checked field by field and re-written byte
// for byte, every malformed variant failing with its status and no output, and the
// slot matcher's error classes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/optim_frame.h"
#include "testutil.h"

namespace {

using Bytes = std::vector<uint8_t>;

const char *const kGoldens[] = {"adamw_v3",       "adamw_v4",        "adamw_v5",        "adam_v3",
                                "adam_v4",        "adam_v5",         "sgd_plain_v3",    "sgd_momentum_v3",
                                "sgd_nesterov_v4", "sgd_plain_v5",   "sgd_momentum_v5", "muon_v3",
                                "muon_v4",        "muon_v5",         "apollo_v3",       "apollo_mini_v3",
                                "apollo_v5",      "set_v3",          "tensors"};

Bytes golden(const std::string &name) {
  return fgt::read_file(std::string(FORGIA_TEST_DATA) + "/golden/fucina_frames/" + name + ".bin");
}

struct Parsed {
  fg_oframe *f = nullptr;
  fg_status st = FG_OK;
  explicit Parsed(const Bytes &b) { st = fg_optim_frame_parse(b.data(), b.size(), &f); }
  ~Parsed() { fg_optim_frame_free(f); }
  Parsed(const Parsed &) = delete;
  Parsed &operator=(const Parsed &) = delete;
};

Bytes serialize(const fg_oframe *f, fg_status *st = nullptr) {
  uint8_t *out = nullptr;
  size_t n = 0;
  fg_status s = fg_optim_frame_serialize(f, &out, &n);
  if (st) *st = s;
  Bytes b;
  if (s == FG_OK) b.assign(out, out + n);
  std::free(out);
  return b;
}

float f32_at(const uint8_t *p, size_t i) {
  float v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}
uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
float bf16_at(const uint8_t *p, size_t i) {
  uint32_t b = (uint32_t)(p[2 * i] | (p[2 * i + 1] << 8)) << 16;
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}
// Fucina's dtype.f32ToBf16 for finite values: round to nearest even.
float to_bf16(float v) {
  uint32_t b = bits_of(v);
  b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &b, 4);
  return r;
}
std::string name_of(const fg_oframe_slot &s) { return std::string(s.name, s.name_len); }

void put_u32(Bytes &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; i++) b[at + i] = (uint8_t)(v >> (8 * i));
}
void put_u64(Bytes &b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; i++) b[at + i] = (uint8_t)(v >> (8 * i));
}

// The fixed inputs of gen_frames.zig.
const float kW6[6] = {1.0f, -2.0f, 0.5f, 3.0f, -0.25f, 1.5f};
const float kG6[2][6] = {{0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.25f}, {-0.3f, 0.8f, -1.2f, 0.6f, 0.1f, -0.9f}};
const float kB3[3] = {0.25f, -0.75f, 0.5f};
const float kGB3[2][3] = {{0.5f, -1.0f, 0.25f}, {-0.125f, 0.375f, 2.0f}};
const float kW12[12] = {0.1f, -0.2f, 0.3f, -0.4f, 0.5f, -0.6f, 0.7f, -0.8f, 0.9f, -1.0f, 1.1f, -1.2f};

// AdamW/Adam (without decay) moments after two steps with gradients g0, g1 (Fucina's update).
void adam_moments(float g0, float g1, float *m, float *v) {
  const float omb1 = (float)(1.0 - (double)0.9f), omb2 = (float)(1.0 - (double)0.999f), beta2 = 0.999f;
  float mm = 0, vv = 0;
  for (float g : {g0, g1}) {
    mm = mm + omb1 * (g - mm);
    vv = beta2 * vv + (omb2 * g) * g;
  }
  *m = mm;
  *v = vv;
}

}  // namespace

// The frame Fucina's src/optim_tests.zig pins, written from plain data, then the v4 variant
// with bf16 m.
TEST(OptimFrame, PinnedAdamWBytes) {
  float m[2] = {0.25f, -0.5f}, v[2] = {0.125f, 2.0f};
  char name[] = "a";
  fg_oframe_slot s = {};
  s.name = name;
  s.name_len = 1;
  s.rows = 2;
  s.cols = 1;
  s.step = 3;
  s.bufs[0] = {FG_OFRAME_DTYPE_F32, 2, (uint8_t *)m};
  s.bufs[1] = {FG_OFRAME_DTYPE_F32, 2, (uint8_t *)v};
  fg_oframe f = {};
  f.kind = FG_OFRAME_KIND_ADAMW;
  f.n_slots = 1;
  f.slots = &s;
  Bytes want = {'F', 'Z', 'A', '3', 1, 0, 0, 0, 1, 0, 'a', 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
                3, 0, 0, 0, 0, 0, 0, 0};
  want.insert(want.end(), (uint8_t *)m, (uint8_t *)m + 8);
  want.insert(want.end(), (uint8_t *)v, (uint8_t *)v + 8);
  fg_status st;
  EXPECT_EQ(serialize(&f, &st), want) << fg_last_error();

  Parsed p(want);
  ASSERT_EQ(p.st, FG_OK) << fg_last_error();
  EXPECT_EQ(p.f->kind, FG_OFRAME_KIND_ADAMW);
  EXPECT_EQ(p.f->version, 3);
  ASSERT_EQ(p.f->n_slots, 1u);
  EXPECT_STREQ(p.f->slots[0].name, "a");
  EXPECT_EQ(p.f->slots[0].step, 3u);
  EXPECT_EQ(f32_at(p.f->slots[0].bufs[1].data, 1), 2.0f);

  uint16_t mb[2] = {0x3e80, 0xbf00};  // bf16 0.25, -0.5
  s.bufs[0] = {FG_OFRAME_DTYPE_BF16, 2, (uint8_t *)mb};
  Bytes want4(want.begin(), want.begin() + 35);
  want4[3] = '4';
  want4.push_back(1);
  want4.insert(want4.end(), (uint8_t *)mb, (uint8_t *)mb + 4);
  want4.push_back(0);
  want4.insert(want4.end(), (uint8_t *)v, (uint8_t *)v + 8);
  EXPECT_EQ(serialize(&f, &st), want4) << fg_last_error();
  f.version = 3;  // v3 cannot hold a bf16 buffer
  EXPECT_TRUE(serialize(&f, &st).empty());
  EXPECT_EQ(st, FG_ERR_INVALID_ARG);
  f.version = 5;  // an explicit v5 writes has = 0 records
  Bytes b5 = serialize(&f, &st);
  ASSERT_EQ(st, FG_OK) << fg_last_error();
  EXPECT_EQ(b5.size(), want4.size() + 1);
  EXPECT_EQ(b5[3], '5');
  EXPECT_EQ(b5.back(), 0);
}

// Every Fucina frame parses and re-serializes (writer picking the version) to its bytes.
TEST(OptimFrame, FucinaGoldensRoundTrip) {
  const struct {
    const char *name;
    fg_oframe_kind kind;
    int version;
  } want[] = {{"adamw_v3", FG_OFRAME_KIND_ADAMW, 3},      {"adamw_v4", FG_OFRAME_KIND_ADAMW, 4},
              {"adamw_v5", FG_OFRAME_KIND_ADAMW, 5},      {"adam_v3", FG_OFRAME_KIND_ADAM, 3},
              {"adam_v4", FG_OFRAME_KIND_ADAM, 4},        {"adam_v5", FG_OFRAME_KIND_ADAM, 5},
              {"sgd_plain_v3", FG_OFRAME_KIND_SGD, 3},    {"sgd_momentum_v3", FG_OFRAME_KIND_SGD, 3},
              {"sgd_nesterov_v4", FG_OFRAME_KIND_SGD, 4}, {"sgd_plain_v5", FG_OFRAME_KIND_SGD, 5},
              {"sgd_momentum_v5", FG_OFRAME_KIND_SGD, 5}, {"muon_v3", FG_OFRAME_KIND_MUON, 3},
              {"muon_v4", FG_OFRAME_KIND_MUON, 4},        {"muon_v5", FG_OFRAME_KIND_MUON, 5},
              {"apollo_v3", FG_OFRAME_KIND_APOLLO, 3},    {"apollo_mini_v3", FG_OFRAME_KIND_APOLLO, 3},
              {"apollo_v5", FG_OFRAME_KIND_APOLLO, 5},    {"set_v3", FG_OFRAME_KIND_SET, 3},
              {"tensors", FG_OFRAME_KIND_TENSORS, 1}};
  for (const auto &w : want) {
    SCOPED_TRACE(w.name);
    Bytes b = golden(w.name);
    ASSERT_FALSE(b.empty());
    Parsed p(b);
    ASSERT_EQ(p.st, FG_OK) << fg_last_error();
    EXPECT_EQ(p.f->kind, w.kind);
    EXPECT_EQ(p.f->version, w.version);
    size_t used = 0;
    fg_oframe *q = nullptr;
    ASSERT_EQ(fg_optim_frame_parse_prefix(b.data(), b.size(), &used, &q), FG_OK);
    EXPECT_EQ(used, b.size());
    fg_optim_frame_free(q);
    fg_status st;
    EXPECT_EQ(serialize(p.f, &st), b) << fg_last_error();  // with the parsed versions
    // The writer's own version choice must be Fucina's.
    auto clear = [](fg_oframe *f) { f->version = 0; };
    clear(p.f);
    if (p.f->embedded) clear(p.f->embedded);
    for (size_t i = 0; i < p.f->n_members; i++) {
      clear(&p.f->members[i]);
      if (p.f->members[i].embedded) clear(p.f->members[i].embedded);
    }
    EXPECT_EQ(serialize(p.f, &st), b) << fg_last_error();
  }
}

TEST(OptimFrame, AdamWFieldsAndMoments) {
  Parsed p(golden("adamw_v3"));
  ASSERT_EQ(p.st, FG_OK) << fg_last_error();
  ASSERT_EQ(p.f->n_slots, 2u);
  const fg_oframe_slot &w = p.f->slots[0], &b = p.f->slots[1];
  EXPECT_EQ(name_of(w), "w");
  EXPECT_EQ(name_of(b), "param1");  // the auto-name of slot 1
  EXPECT_EQ(w.rows, 2u);
  EXPECT_EQ(w.cols, 3u);
  EXPECT_EQ(b.rows, 3u);
  EXPECT_EQ(b.cols, 1u);
  EXPECT_EQ(w.step, 2u);
  EXPECT_EQ(b.step, 2u);
  ASSERT_EQ(w.n_bufs, 2);
  for (int i = 0; i < 6; i++) {
    float m, v;
    adam_moments(kG6[0][i], kG6[1][i], &m, &v);
    EXPECT_EQ(bits_of(f32_at(w.bufs[0].data, i)), bits_of(m)) << i;
    EXPECT_EQ(bits_of(f32_at(w.bufs[1].data, i)), bits_of(v)) << i;
  }
  for (int i = 0; i < 3; i++) {
    float m, v;
    adam_moments(kGB3[0][i], kGB3[1][i], &m, &v);
    EXPECT_EQ(bits_of(f32_at(b.bufs[0].data, i)), bits_of(m)) << i;
  }

  // v4: bf16 m (narrowed each step from the f32 update of the narrowed value), f32 v.
  Parsed p4(golden("adamw_v4"));
  ASSERT_EQ(p4.st, FG_OK) << fg_last_error();
  const fg_oframe_slot &w4 = p4.f->slots[0];
  EXPECT_EQ(w4.bufs[0].dtype, FG_OFRAME_DTYPE_BF16);
  EXPECT_EQ(w4.bufs[1].dtype, FG_OFRAME_DTYPE_F32);
  const float omb1 = (float)(1.0 - (double)0.9f);
  for (int i = 0; i < 6; i++) {
    float m = 0;
    for (int s = 0; s < 2; s++) m = to_bf16(m + omb1 * (kG6[s][i] - m));
    EXPECT_EQ(bits_of(bf16_at(w4.bufs[0].data, i)), bits_of(m)) << i;
  }

  // v5: the bf16 param carries a master, the f32 ones do not.
  Parsed p5(golden("adamw_v5"));
  ASSERT_EQ(p5.st, FG_OK) << fg_last_error();
  ASSERT_EQ(p5.f->n_slots, 3u);
  EXPECT_FALSE(p5.f->slots[0].has_master);
  EXPECT_FALSE(p5.f->slots[1].has_master);
  EXPECT_EQ(name_of(p5.f->slots[2]), "w16");
  EXPECT_TRUE(p5.f->slots[2].has_master);
  EXPECT_EQ(p5.f->slots[2].bufs[1].dtype, FG_OFRAME_DTYPE_BF16);
}

TEST(OptimFrame, SgdFields) {
  Parsed plain(golden("sgd_plain_v3"));
  ASSERT_EQ(plain.st, FG_OK) << fg_last_error();
  EXPECT_EQ(plain.f->sgd.momentum_bits, 0u);
  EXPECT_EQ(name_of(plain.f->slots[0]), "param0");
  EXPECT_EQ(name_of(plain.f->slots[1]), "bias");
  EXPECT_EQ(plain.f->slots[0].bufs[0].count, 0u);  // no momentum, no buffer

  Parsed mom(golden("sgd_momentum_v3"));
  ASSERT_EQ(mom.st, FG_OK) << fg_last_error();
  EXPECT_EQ(mom.f->sgd.momentum_bits, bits_of(0.9f));
  EXPECT_EQ(mom.f->sgd.dampening_bits, bits_of(0.1f));
  EXPECT_EQ(mom.f->sgd.nesterov, 0);
  EXPECT_EQ(mom.f->slots[0].bufs[0].count, 6u);

  // Nesterov, bf16 buffer, no decay: b1 = g0, b2 = N((0.9 * b1) + (1 * g1)).
  Parsed nes(golden("sgd_nesterov_v4"));
  ASSERT_EQ(nes.st, FG_OK) << fg_last_error();
  EXPECT_EQ(nes.f->sgd.nesterov, 1);
  const fg_oframe_slot &w = nes.f->slots[0];
  ASSERT_EQ(w.bufs[0].dtype, FG_OFRAME_DTYPE_BF16);
  for (int i = 0; i < 6; i++) {
    float b1 = to_bf16(kG6[0][i]);
    float b2 = to_bf16(0.9f * b1 + 1.0f * kG6[1][i]);
    EXPECT_EQ(bits_of(bf16_at(w.bufs[0].data, i)), bits_of(b2)) << i;
  }

  // v5 without momentum: a tag 0 and no bytes per slot, and the f16 param's master after
  // two plain steps p -= 0.1 * g from the f16 values (exact in f16).
  Parsed p5(golden("sgd_plain_v5"));
  ASSERT_EQ(p5.st, FG_OK) << fg_last_error();
  ASSERT_EQ(p5.f->n_slots, 3u);
  const fg_oframe_slot &h = p5.f->slots[2];
  EXPECT_EQ(name_of(h), "param2");
  ASSERT_TRUE(h.has_master);
  EXPECT_EQ(h.bufs[0].count, 0u);
  for (int i = 0; i < 6; i++) {
    float m = kW6[i];
    m = m - 0.1f * kG6[1][i];
    m = m - 0.1f * kG6[0][i];
    EXPECT_EQ(bits_of(f32_at(h.master, i)), bits_of(m)) << i;
  }
}

TEST(OptimFrame, MuonFields) {
  Parsed p(golden("muon_v3"));
  ASSERT_EQ(p.st, FG_OK) << fg_last_error();
  EXPECT_EQ(p.f->muon.scale, 0);
  EXPECT_EQ(p.f->muon.nesterov, 1);
  EXPECT_EQ(p.f->muon.ns_steps, 5u);
  ASSERT_EQ(p.f->n_slots, 2u);
  EXPECT_EQ(name_of(p.f->slots[0]), "w");
  EXPECT_EQ(name_of(p.f->slots[1]), "param1");
  EXPECT_EQ(p.f->slots[1].rows, 4u);
  EXPECT_EQ(p.f->slots[0].step, 0u);  // Muon writes no step
  // Lerp momentum, beta 0.95: m = m + (0.05 * (g - m)) while w = 1 - beta < 0.5.
  const float w = (float)(1.0 - (double)0.95f);
  for (int i = 0; i < 6; i++) {
    float m = 0;
    for (int s = 0; s < 2; s++) m = m + w * (kG6[s][i] - m);
    EXPECT_EQ(bits_of(f32_at(p.f->slots[0].bufs[0].data, i)), bits_of(m)) << i;
  }
  // The fallback: the 1-D bias (by rank) and the explicitly routed [3,2] matrix, each
  // auto-named within the fallback's own list.
  ASSERT_NE(p.f->embedded, nullptr);
  EXPECT_EQ(p.f->embedded->kind, FG_OFRAME_KIND_ADAMW);
  EXPECT_EQ(p.f->embedded->version, 3);
  ASSERT_EQ(p.f->embedded->n_slots, 2u);
  EXPECT_EQ(name_of(p.f->embedded->slots[0]), "param0");
  EXPECT_EQ(name_of(p.f->embedded->slots[1]), "param1");
  EXPECT_EQ(p.f->embedded->slots[1].rows, 3u);
  EXPECT_EQ(p.f->embedded->slots[1].cols, 2u);

  Parsed p4(golden("muon_v4"));
  ASSERT_EQ(p4.st, FG_OK) << fg_last_error();
  EXPECT_EQ(p4.f->muon.scale, 1);
  EXPECT_EQ(p4.f->muon.nesterov, 0);
  EXPECT_EQ(p4.f->muon.ns_steps, 3u);
  EXPECT_EQ(p4.f->embedded->version, 3);  // the fallback picks its own version

  Parsed p5(golden("muon_v5"));
  ASSERT_EQ(p5.st, FG_OK) << fg_last_error();
  EXPECT_EQ(p5.f->version, 5);
  EXPECT_EQ(p5.f->embedded->version, 4);  // bf16 fallback state, no 16-bit fallback param
  EXPECT_TRUE(p5.f->slots[2].has_master);
}

TEST(OptimFrame, ApolloFields) {
  Parsed p(golden("apollo_v3"));
  ASSERT_EQ(p.st, FG_OK) << fg_last_error();
  const fg_oframe_apollo_config &c = p.f->apollo;
  EXPECT_EQ(c.rank, 2u);
  EXPECT_EQ(c.update_proj_gap, 1u);
  EXPECT_EQ(c.scale_bits, bits_of(1.0f));
  EXPECT_EQ(c.scale_type, 0);
  EXPECT_EQ(c.correct_bias, 1);
  ASSERT_EQ(p.f->n_slots, 2u);
  ASSERT_EQ(p.f->n_fallback, 1u);
  const fg_oframe_slot &tall = p.f->slots[0], &wide = p.f->slots[1];
  EXPECT_EQ(name_of(tall), "tall");
  EXPECT_EQ(name_of(wide), "param1");
  EXPECT_EQ(name_of(p.f->fallback[0]), "param0");  // its own name space
  EXPECT_EQ(tall.seed, 8u);                         // config seed 7 + slot index + 1
  EXPECT_EQ(wide.seed, 9u);
  EXPECT_EQ(tall.step, 2u);
  EXPECT_EQ(tall.bufs[0].count, 4u * 2);  // rows x rank
  EXPECT_EQ(wide.bufs[0].count, 2u * 6);  // rank x cols
  EXPECT_NE(tall.prev_norm_bits, 0xbf800000u);  // the limiter recorded a norm
  float pn;
  std::memcpy(&pn, &tall.prev_norm_bits, 4);
  EXPECT_GT(pn, 0.0f);
  // The fallback is legacy-HF AdamW: m = (b1 * m) + (omb1 * g).
  const float omb1 = (float)(1.0 - (double)0.9f);
  for (int i = 0; i < 3; i++) {
    float m = 0;
    for (int s = 0; s < 2; s++) m = 0.9f * m + omb1 * kGB3[s][i];
    EXPECT_EQ(bits_of(f32_at(p.f->fallback[0].bufs[0].data, i)), bits_of(m)) << i;
  }

  Parsed mini(golden("apollo_mini_v3"));
  ASSERT_EQ(mini.st, FG_OK) << fg_last_error();
  EXPECT_EQ(mini.f->apollo.rank, 1u);
  EXPECT_EQ(mini.f->apollo.scale_bits, bits_of(128.0f));
  EXPECT_EQ(mini.f->apollo.scale_type, 1);
  EXPECT_EQ(mini.f->apollo.correct_bias, 0);
  EXPECT_EQ(mini.f->apollo.scale_front, 1);
  EXPECT_EQ(mini.f->apollo.disable_limiter, 1);
  EXPECT_EQ(mini.f->slots[0].prev_norm_bits, 0xbf800000u);  // limiter off: never recorded

  Parsed p5(golden("apollo_v5"));
  ASSERT_EQ(p5.st, FG_OK) << fg_last_error();
  ASSERT_EQ(p5.f->n_fallback, 2u);
  EXPECT_EQ(name_of(p5.f->fallback[1]), "b16");
  EXPECT_TRUE(p5.f->fallback[1].has_master);
  EXPECT_FALSE(p5.f->slots[0].has_master);
}

TEST(OptimFrame, SetAndTensors) {
  Parsed p(golden("set_v3"));
  ASSERT_EQ(p.st, FG_OK) << fg_last_error();
  ASSERT_EQ(p.f->n_members, 3u);
  EXPECT_EQ(p.f->members[0].kind, FG_OFRAME_KIND_ADAMW);
  EXPECT_EQ(p.f->members[0].version, 4);
  EXPECT_EQ(p.f->members[1].kind, FG_OFRAME_KIND_SGD);
  EXPECT_EQ(p.f->members[1].sgd.momentum_bits, bits_of(0.9f));
  EXPECT_EQ(p.f->members[2].kind, FG_OFRAME_KIND_MUON);
  EXPECT_EQ(name_of(p.f->members[2].slots[0]), "t");
  ASSERT_NE(p.f->members[2].embedded, nullptr);
  EXPECT_EQ(p.f->members[2].embedded->n_slots, 0u);

  Parsed t(golden("tensors"));
  ASSERT_EQ(t.st, FG_OK) << fg_last_error();
  ASSERT_EQ(t.f->n_tensors, 3u);
  EXPECT_EQ(t.f->tensors[0].rank, 2u);
  EXPECT_EQ(t.f->tensors[0].dims[1], 3u);
  EXPECT_EQ(t.f->tensors[1].rank, 1u);
  EXPECT_EQ(t.f->tensors[2].count, 12u);
  for (int i = 0; i < 6; i++) EXPECT_EQ(f32_at(t.f->tensors[0].data, i), kW6[i]);
  for (int i = 0; i < 3; i++) EXPECT_EQ(f32_at(t.f->tensors[1].data, i), kB3[i]);
  for (int i = 0; i < 12; i++) EXPECT_EQ(f32_at(t.f->tensors[2].data, i), kW12[i]);
}

// Every proper prefix of every golden is truncated; one more byte is trailing.
TEST(OptimFrameMalformed, TruncationsAndTrailingBytes) {
  for (const char *name : kGoldens) {
    SCOPED_TRACE(name);
    Bytes b = golden(name);
    for (size_t n = 0; n < b.size(); n++) {
      fg_oframe *f = reinterpret_cast<fg_oframe *>(1);
      ASSERT_EQ(fg_optim_frame_parse(b.data(), n, &f), FG_ERR_TRUNCATED) << n << ": " << fg_last_error();
      ASSERT_EQ(f, nullptr);
    }
    Bytes more = b;
    more.push_back(0);
    fg_oframe *f = reinterpret_cast<fg_oframe *>(1);
    EXPECT_EQ(fg_optim_frame_parse(more.data(), more.size(), &f), FG_ERR_FRAME_TRAILING_BYTES);
    EXPECT_EQ(f, nullptr);
    EXPECT_NE(std::string(fg_last_error()).find("offset"), std::string::npos);
  }
}

namespace {
fg_status parse_status(const Bytes &b, std::string *msg = nullptr) {
  fg_oframe *f = reinterpret_cast<fg_oframe *>(1);
  fg_status st = fg_optim_frame_parse(b.data(), b.size(), &f);
  if (msg) *msg = fg_last_error();
  if (st != FG_OK) {
    EXPECT_EQ(f, nullptr);
  }
  fg_optim_frame_free(st == FG_OK ? f : nullptr);
  return st;
}
}  // namespace

TEST(OptimFrameMalformed, MagicsVersionsAndTags) {
  Bytes b = golden("adamw_v4");
  struct {
    const char *magic;
    fg_status want;
  } cases[] = {{"FZA6", FG_ERR_BAD_VERSION}, {"FZP4", FG_ERR_BAD_VERSION}, {"FZO4", FG_ERR_BAD_VERSION},
               {"FZX3", FG_ERR_BAD_MAGIC},   {"XZA3", FG_ERR_BAD_MAGIC},   {"fza3", FG_ERR_BAD_MAGIC}};
  for (const auto &c : cases) {
    Bytes x = b;
    std::memcpy(x.data(), c.magic, 4);
    EXPECT_EQ(parse_status(x), c.want) << c.magic;
  }
  // adamw_v4: "FZA4", count, name "w" (2+1), dims (16), step (8), then m's tag at 35.
  ASSERT_EQ(b[35], 1);
  Bytes x = b;
  x[35] = 2;
  std::string msg;
  EXPECT_EQ(parse_status(x, &msg), FG_ERR_BAD_DTYPE);
  EXPECT_NE(msg.find("offset 35"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"w\""), std::string::npos) << msg;
  // A v4 frame relabelled v3 reads the tags as data and then runs short or long.
  x = b;
  x[3] = '3';
  EXPECT_NE(parse_status(x), FG_OK);

  // Muon's fallback must be AdamW; a set never nests nor holds FZT1.
  Bytes m = golden("muon_v3");
  size_t at = 0;
  for (size_t i = 4; i + 4 <= m.size(); i++) {
    if (std::memcmp(&m[i], "FZA3", 4) == 0) at = i;
  }
  ASSERT_GT(at, 0u);
  std::memcpy(&m[at], "FZAD", 4);
  EXPECT_EQ(parse_status(m, &msg), FG_ERR_BAD_MAGIC);
  EXPECT_NE(msg.find("AdamW"), std::string::npos) << msg;
  Bytes nested = {'F', 'Z', 'O', '3', 1, 0, 0, 0, 'F', 'Z', 'O', '3', 0, 0, 0, 0};
  EXPECT_EQ(parse_status(nested), FG_ERR_BAD_MAGIC);
  Bytes holds_t1 = {'F', 'Z', 'O', '3', 1, 0, 0, 0, 'F', 'Z', 'T', '1', 0, 0, 0, 0};
  EXPECT_EQ(parse_status(holds_t1), FG_ERR_BAD_MAGIC);
  Bytes empty_set = {'F', 'Z', 'O', '3', 0, 0, 0, 0};
  EXPECT_EQ(parse_status(empty_set), FG_OK);
}

TEST(OptimFrameMalformed, HugeCountsAndDims) {
  Bytes b = golden("adamw_v3");
  // Counts far beyond the input: no allocation is attempted (ASan would report one).
  for (uint32_t n : {3u, 1000u, 0x7fffffffu, 0xffffffffu}) {
    Bytes x = b;
    put_u32(x, 4, n);
    EXPECT_EQ(parse_status(x), FG_ERR_TRUNCATED) << n;
  }
  // Name length 65535 with a few bytes left.
  Bytes x = b;
  x[8] = 0xff;
  x[9] = 0xff;
  EXPECT_EQ(parse_status(x), FG_ERR_TRUNCATED);
  // Dims whose buffers exceed the input, and dims whose product overflows.
  x = b;
  put_u64(x, 11, 1ull << 40);
  EXPECT_EQ(parse_status(x), FG_ERR_TRUNCATED);
  x = b;
  put_u64(x, 11, 1ull << 62);
  put_u64(x, 19, 8);
  EXPECT_EQ(parse_status(x), FG_ERR_BAD_SHAPE);
  x = b;
  put_u64(x, 11, 1ull << 61);  // n fits, n * 4 bytes does not
  put_u64(x, 19, 2);
  EXPECT_EQ(parse_status(x), FG_ERR_BAD_SHAPE);
  // APOLLO rank so large rows * rank overflows.
  Bytes a = golden("apollo_v3");
  put_u64(a, 4, 1ull << 63);
  EXPECT_EQ(parse_status(a), FG_ERR_BAD_SHAPE);
  // FZT1: a huge tensor count, rank, and dims.
  Bytes t = golden("tensors");
  Bytes y = t;
  put_u32(y, 4, 0xffffffffu);
  EXPECT_EQ(parse_status(y), FG_ERR_TRUNCATED);
  y = t;
  put_u32(y, 8, 0xffffffffu);
  EXPECT_EQ(parse_status(y), FG_ERR_TRUNCATED);
  y = t;
  put_u64(y, 12, 1ull << 62);
  EXPECT_EQ(parse_status(y), FG_ERR_BAD_SHAPE);
  // The set's member count.
  Bytes s = golden("set_v3");
  put_u32(s, 4, 0xffffffffu);
  EXPECT_EQ(parse_status(s), FG_ERR_TRUNCATED);
}

TEST(OptimFrameMalformed, NamesAndHeaderBytes) {
  // adamw_v3: slot 0 "w" at 10, slot 1 "param1" (length at 83, bytes from 85).
  Bytes b = golden("adamw_v3");
  ASSERT_EQ(b[10], 'w');
  ASSERT_EQ(std::memcmp(&b[85], "param1", 6), 0);
  Bytes x = b;
  x[10] = 0xff;
  std::string msg;
  EXPECT_EQ(parse_status(x, &msg), FG_ERR_BAD_STRING);
  EXPECT_NE(msg.find("offset 10"), std::string::npos) << msg;
  x = b;
  x[10] = 0;
  EXPECT_EQ(parse_status(x), FG_ERR_BAD_STRING);
  x = b;
  x[86] = 0xc0;  // an overlong lead byte
  x[87] = 0x80;
  EXPECT_EQ(parse_status(x), FG_ERR_BAD_STRING);
  x = b;
  x[8] = 0;  // empty name
  x[9] = 0;
  EXPECT_EQ(parse_status(x), FG_ERR_BAD_STRING);
  // Duplicate: rename "param1" to "w" by building the frame with both names "w".
  Parsed p(b);
  ASSERT_EQ(p.st, FG_OK);
  char w[] = "w";
  char *keep = p.f->slots[1].name;
  size_t keep_len = p.f->slots[1].name_len;
  p.f->slots[1].name = w;
  p.f->slots[1].name_len = 1;
  fg_status st;
  EXPECT_TRUE(serialize(p.f, &st).empty());
  EXPECT_EQ(st, FG_ERR_DUPLICATE);
  // The same bytes as a hostile input.
  Bytes dup(b.begin(), b.begin() + 83);
  dup.push_back(1);
  dup.push_back(0);
  dup.push_back('w');
  dup.insert(dup.end(), b.begin() + 91, b.end());
  EXPECT_EQ(parse_status(dup, &msg), FG_ERR_DUPLICATE);
  EXPECT_NE(msg.find("slot 1"), std::string::npos) << msg;
  p.f->slots[1].name = keep;
  p.f->slots[1].name_len = keep_len;
  // APOLLO main and fallback lists are separate name spaces: "param0" in both is fine
  // (apollo_v3 has main "param1" and fallback "param0"); rename main's to "param0".
  Bytes a = golden("apollo_v3");
  size_t at = 0;
  for (size_t i = 0; i + 6 <= a.size(); i++) {
    if (std::memcmp(&a[i], "param1", 6) == 0) at = i;
  }
  ASSERT_GT(at, 0u);
  a[at + 5] = '0';
  EXPECT_EQ(parse_status(a), FG_OK);

  // Bool and enum bytes outside 0/1; nesterov without momentum.
  Bytes s = golden("sgd_momentum_v3");
  Bytes y = s;
  y[12] = 2;
  EXPECT_EQ(parse_status(y), FG_ERR_RANGE);
  y = golden("sgd_plain_v3");
  y[12] = 1;
  EXPECT_EQ(parse_status(y), FG_ERR_RANGE);
  Bytes m = golden("muon_v3");
  m[4] = 2;
  EXPECT_EQ(parse_status(m), FG_ERR_RANGE);
  Bytes ap = golden("apollo_v3");
  ap[24] = 3;  // scale_type
  EXPECT_EQ(parse_status(ap), FG_ERR_RANGE);
  // v5 master flag 2 (sgd_plain_v5 slot 0: tag at 49, flag at 50).
  Bytes v5 = golden("sgd_plain_v5");
  ASSERT_EQ(v5[49], 0);
  ASSERT_EQ(v5[50], 0);
  v5[50] = 2;
  EXPECT_EQ(parse_status(v5), FG_ERR_RANGE);
}

TEST(OptimFrameWriter, RejectsLayoutsTheWireCannotHold) {
  Parsed p(golden("adamw_v3"));
  ASSERT_EQ(p.st, FG_OK);
  fg_status st;
  p.f->slots[0].bufs[0].count = 5;
  EXPECT_TRUE(serialize(p.f, &st).empty());
  EXPECT_EQ(st, FG_ERR_INVALID_ARG);
  p.f->slots[0].bufs[0].count = 6;
  p.f->slots[0].has_master = true;  // master in v3
  EXPECT_TRUE(serialize(p.f, &st).empty());
  EXPECT_EQ(st, FG_ERR_INVALID_ARG);
  p.f->slots[0].has_master = false;
  p.f->version = 4;
  EXPECT_FALSE(serialize(p.f, &st).empty());
  char nul[] = "a\0b";
  char *keep = p.f->slots[0].name;
  p.f->slots[0].name = nul;
  p.f->slots[0].name_len = 3;
  EXPECT_TRUE(serialize(p.f, &st).empty());
  EXPECT_EQ(st, FG_ERR_BAD_STRING);
  p.f->slots[0].name = keep;
  p.f->slots[0].name_len = 1;

  Parsed a(golden("apollo_v3"));
  ASSERT_EQ(a.st, FG_OK);
  a.f->version = 4;
  EXPECT_TRUE(serialize(a.f, &st).empty());
  EXPECT_EQ(st, FG_ERR_INVALID_ARG);

  Parsed m(golden("muon_v3"));
  ASSERT_EQ(m.st, FG_OK);
  m.f->embedded->kind = FG_OFRAME_KIND_ADAM;
  EXPECT_TRUE(serialize(m.f, &st).empty());
  EXPECT_EQ(st, FG_ERR_INVALID_ARG);
  m.f->embedded->kind = FG_OFRAME_KIND_ADAMW;

  Parsed s(golden("sgd_nesterov_v4"));
  ASSERT_EQ(s.st, FG_OK);
  s.f->sgd.dampening_bits = bits_of(0.5f);
  EXPECT_TRUE(serialize(s.f, &st).empty());
  EXPECT_EQ(st, FG_ERR_RANGE);
}

TEST(OptimFrameMatch, FucinaErrorClasses) {
  Parsed p(golden("adamw_v5"));  // "w" [2,3], "param1" [3,1], "w16" [2,3] bf16 state, master
  ASSERT_EQ(p.st, FG_OK) << fg_last_error();
  const fg_oframe_dtype F = FG_OFRAME_DTYPE_F32, B = FG_OFRAME_DTYPE_BF16;
  fg_oframe_expect e[3] = {{"w16", 3, 2, 3, {B, B}, true}, {"w", 1, 2, 3, {B, B}, false},
                           {"param1", 6, 3, 1, {B, B}, false}};
  size_t map[3];
  ASSERT_EQ(fg_optim_frame_match(p.f, false, e, 3, map), FG_OK) << fg_last_error();
  EXPECT_EQ(map[0], 2u);
  EXPECT_EQ(map[1], 0u);
  EXPECT_EQ(map[2], 1u);

  fg_oframe_expect x[3];
  std::memcpy(x, e, sizeof e);
  x[1].name = "v";
  EXPECT_EQ(fg_optim_frame_match(p.f, false, x, 3, map), FG_ERR_FRAME_UNKNOWN_NAME);
  EXPECT_NE(std::string(fg_last_error()).find("\"w\""), std::string::npos) << fg_last_error();
  std::memcpy(x, e, sizeof e);
  EXPECT_EQ(fg_optim_frame_match(p.f, false, x, 2, map), FG_ERR_FRAME_UNKNOWN_NAME);  // param1 not expected
  fg_oframe_expect four[4] = {e[0], e[1], e[2], {"extra", 5, 1, 1, {B, B}, false}};
  EXPECT_EQ(fg_optim_frame_match(p.f, false, four, 4, map), FG_ERR_FRAME_MISSING_ENTRY);
  std::memcpy(x, e, sizeof e);
  x[1].rows = 3;
  x[1].cols = 2;
  EXPECT_EQ(fg_optim_frame_match(p.f, false, x, 3, map), FG_ERR_FRAME_SHAPE_MISMATCH);
  std::memcpy(x, e, sizeof e);
  x[2].dtypes[1] = F;
  EXPECT_EQ(fg_optim_frame_match(p.f, false, x, 3, map), FG_ERR_FRAME_DTYPE_MISMATCH);
  std::memcpy(x, e, sizeof e);
  x[0].is16 = false;  // a master into an f32 param
  EXPECT_EQ(fg_optim_frame_match(p.f, false, x, 3, map), FG_ERR_FRAME_DTYPE_MISMATCH);
  // A 16-bit param whose record has no master is accepted (re-widened on load).
  std::memcpy(x, e, sizeof e);
  x[1].is16 = true;
  EXPECT_EQ(fg_optim_frame_match(p.f, false, x, 3, map), FG_OK);

  Parsed a(golden("apollo_v3"));
  ASSERT_EQ(a.st, FG_OK);
  fg_oframe_expect fb[1] = {{"param0", 6, 3, 1, {F, F}, false}};
  EXPECT_EQ(fg_optim_frame_match(a.f, true, fb, 1, map), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_optim_frame_match(p.f, true, fb, 1, map), FG_ERR_INVALID_ARG);  // AdamW has no fallback list

  // Header: kind and structural config.
  Parsed s(golden("sgd_momentum_v3"));
  ASSERT_EQ(s.st, FG_OK);
  fg_oframe want = {};
  want.kind = FG_OFRAME_KIND_SGD;
  want.sgd = {bits_of(0.9f), bits_of(0.1f), 0};
  EXPECT_EQ(fg_optim_frame_check_header(s.f, &want), FG_OK) << fg_last_error();
  want.sgd.nesterov = 1;
  EXPECT_EQ(fg_optim_frame_check_header(s.f, &want), FG_ERR_FRAME_CONFIG_MISMATCH);
  want.kind = FG_OFRAME_KIND_ADAMW;
  EXPECT_EQ(fg_optim_frame_check_header(s.f, &want), FG_ERR_BAD_MAGIC);
  fg_oframe ap = {};
  ap.kind = FG_OFRAME_KIND_APOLLO;
  ap.apollo = a.f->apollo;
  EXPECT_EQ(fg_optim_frame_check_header(a.f, &ap), FG_OK);
  ap.apollo.update_proj_gap = 200;
  EXPECT_EQ(fg_optim_frame_check_header(a.f, &ap), FG_ERR_FRAME_CONFIG_MISMATCH);
  EXPECT_NE(std::string(fg_last_error()).find("update_proj_gap"), std::string::npos) << fg_last_error();
}
