// forgia's ES ops against the reference implementations the seed cites, run unmodified on
// CPU by tests/data/es_gen/gen_es_reference.py (tests/data/golden/es_reference.txt):
// es-at-scale's perturb, restore and update (its WorkerExtension) and z_score, es-awd's
// anchored decay. The references draw torch noise that forgia does not reproduce, so the
// file carries it and the ops that read cached noise (elem/op_es.h) take it: what must match
// bit for bit is the algebra. The z-score is checked through fg_es_update itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/es.h"
#include "forgia/forgia.h"
#include "forgia/ops.h"
#include "forgia/rng.h"
#include "golden_reader.h"

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~Cpu() { fg_device_close(dev); }
};

// A line with its `v NAME WORDS` lines: the bytes per slot name.
struct Block {
  std::string head;  // the whole line
  std::string kind;  // init, noise, perturb, restore, zscore, update, anchor, decay
  std::vector<std::pair<std::string, std::vector<uint8_t>>> values;
};

struct RefCase {
  std::string name, line;
  std::map<std::string, std::string> cfg;
  std::vector<std::pair<std::string, fg_dtype>> slots;
  std::vector<uint64_t> n;
  std::vector<Block> blocks;
};

std::vector<uint8_t> hex_words_bytes(std::istream &ss) {
  std::vector<uint8_t> b;
  std::string w;
  while (ss >> w) {
    const uint32_t x = (uint32_t)std::stoul(w, nullptr, 16);
    for (size_t i = 0; i < w.size() / 2; i++) b.push_back((uint8_t)(x >> (8 * i)));
  }
  return b;
}

std::vector<RefCase> load() {
  std::vector<RefCase> cases;
  fgt::golden_lines("es_reference.txt", [&](const std::string &tag, std::istream &ss, const std::string &line) {
    if (tag.empty() || tag[0] == '#') return;
    if (tag == "case") {
      RefCase c;
      c.line = line;
      ss >> c.name;
      fgt::golden_fields(ss, [&](const std::string &k, const std::string &v) { c.cfg[k] = v; });
      cases.push_back(c);
      return;
    }
    ASSERT_FALSE(cases.empty()) << line;
    RefCase &c = cases.back();
    if (tag == "slot") {
      std::string name, dt;
      uint64_t n;
      ss >> name >> dt >> n;
      c.slots.push_back({name, dt == "f32" ? FG_F32 : dt == "f16" ? FG_F16 : FG_BF16});
      c.n.push_back(n);
    } else if (tag == "v") {
      ASSERT_FALSE(c.blocks.empty()) << line;
      std::string name;
      ss >> name;
      c.blocks.back().values.push_back({name, hex_words_bytes(ss)});
    } else {
      c.blocks.push_back(Block{line, tag, {}});
    }
  });
  return cases;
}

float f32_hex(const std::string &h) {
  const uint32_t b = (uint32_t)std::stoul(h, nullptr, 16);
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

double f64_hex(const std::string &h) {
  const uint64_t b = std::stoull(h, nullptr, 16);
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::string x;
  std::istringstream ss(s);
  while (std::getline(ss, x, sep)) out.push_back(x);
  return out;
}

// The `key=value` fields of a block's head line.
std::map<std::string, std::string> head_fields(const std::string &head) {
  std::map<std::string, std::string> m;
  std::istringstream ss(head);
  std::string tag;
  ss >> tag;
  fgt::golden_fields(ss, [&](const std::string &k, const std::string &v) { m[k] = v; });
  return m;
}

// The words after a block's tag (seeds).
std::vector<uint64_t> head_numbers(const std::string &head) {
  std::istringstream ss(head);
  std::string tag;
  ss >> tag;
  std::vector<uint64_t> v;
  uint64_t x;
  while (ss >> x) v.push_back(x);
  return v;
}

fg_tensor *make(fg_device *dev, fg_dtype d, uint64_t n, const std::vector<uint8_t> &bytes) {
  fg_tensor *t = nullptr;
  EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, d, 1, &n, &t)) << fg_last_error();
  if (!t) return nullptr;
  EXPECT_EQ(t->nbytes, bytes.size());
  if (t->nbytes == bytes.size()) {
    EXPECT_EQ(FG_OK, fg_tensor_upload(t, bytes.data(), bytes.size(), nullptr));
  }
  return t;
}

std::vector<uint8_t> download(const fg_tensor *t) {
  std::vector<uint8_t> b(t->nbytes);
  EXPECT_EQ(FG_OK, fg_tensor_download(t, b.data(), b.size(), nullptr)) << fg_last_error();
  return b;
}

// The parameters equal a block's bytes, slot by slot; false (with a failure) otherwise.
bool same(const std::vector<fg_tensor *> &ps, const RefCase &c, const Block &b) {
  EXPECT_EQ(ps.size(), b.values.size()) << b.head;
  bool ok = ps.size() == b.values.size();
  for (size_t k = 0; ok && k < ps.size(); k++) {
    EXPECT_EQ(c.slots[k].first, b.values[k].first) << b.head;
    const std::vector<uint8_t> got = download(ps[k]);
    if (got != b.values[k].second) {
      const size_t es = ps[k]->dtype == FG_F32 ? 4 : 2;
      size_t i = 0;
      while (i < got.size() && i < b.values[k].second.size() && got[i] == b.values[k].second[i]) i++;
      ADD_FAILURE() << b.head << ": slot " << c.slots[k].first << " differs from the reference at element " << i / es;
      ok = false;
    }
  }
  return ok;
}

// One op over one tensor's streams (the op layer groups lists by parameter dtype).
void op(fg_device *dev, fg_op_kind kind, float f0, fg_dtype pd, std::vector<void *> ptr, std::vector<fg_dtype> dt,
        uint64_t n) {
  fg_op_args a;
  std::memset(&a, 0, sizeof a);
  for (size_t i = 0; i < ptr.size(); i++) {
    a.ptr[i] = ptr[i];
    a.dtype[i] = dt[i];
  }
  a.n = (size_t)n;
  fg_op_params p;
  std::memset(&p, 0, sizeof p);
  p.f[0] = f0;
  p.u[1] = (uint64_t)pd;
  ASSERT_EQ(FG_OK, fg_op_run(dev, kind, &p, &a, 1, nullptr)) << fg_op_name(kind) << ": " << fg_last_error();
}

const RefCase *find(const std::vector<RefCase> &cs, const std::string &name) {
  for (const RefCase &c : cs)
    if (c.name == name) return &c;
  return nullptr;
}

void free_all(std::vector<fg_tensor *> &ts) {
  for (fg_tensor *t : ts) fg_tensor_free(t);
  ts.clear();
}

}  // namespace

TEST(EsReference, GoldenHasTheCases) {
  const auto cs = load();
  ASSERT_EQ(5u, cs.size());
  for (const char *n : {"es_at_scale", "awd_l2", "awd_l1", "awd_l2_small", "awd_l1_small"}) {
    const RefCase *c = find(cs, n);
    ASSERT_NE(nullptr, c) << n;
    EXPECT_EQ(4u, c->slots.size()) << n;
  }
  size_t updates = 0, zs = 0;
  for (const Block &b : find(cs, "es_at_scale")->blocks) {
    updates += b.kind == "update";
    zs += b.kind == "zscore";
  }
  EXPECT_EQ(3u, updates);
  EXPECT_EQ(3u, zs);
}

// es-at-scale's WorkerExtension: every member perturbed and restored in place (the drift
// kept), then update_weights_from_seeds with reward_shaping.z_score's coefficients, three
// iterations, on f32, f16 and bf16 parameters.
TEST(EsReference, EsAtScalePerturbRestoreUpdate) {
  Cpu cpu;
  const auto cs = load();
  const RefCase *c = find(cs, "es_at_scale");
  ASSERT_NE(nullptr, c);
  SCOPED_TRACE(c->line);
  const float sigma = f32_hex(c->cfg.at("sigma")), alpha = f32_hex(c->cfg.at("alpha"));
  const uint64_t pop = std::stoull(c->cfg.at("population"));
  const float scale = alpha / (float)pop;  // as fg_es_update derives it
  std::vector<fg_tensor *> ps, acc, noise_ts;
  std::map<uint64_t, std::vector<fg_tensor *>> noise;
  std::vector<float> coef;
  for (size_t k = 0; k < c->slots.size(); k++) {
    acc.push_back(make(cpu.dev, FG_F32, c->n[k], std::vector<uint8_t>(4 * c->n[k], 0)));
  }
  for (const Block &b : c->blocks) {
    if (b.kind == "init") {
      for (size_t k = 0; k < c->slots.size(); k++) ps.push_back(make(cpu.dev, c->slots[k].second, c->n[k], b.values[k].second));
      continue;
    }
    if (b.kind == "noise") {
      std::vector<fg_tensor *> &v = noise[head_numbers(b.head).at(0)];
      for (size_t k = 0; k < c->slots.size(); k++) {
        v.push_back(make(cpu.dev, FG_F32, c->n[k], b.values[k].second));
        noise_ts.push_back(v.back());
      }
      continue;
    }
    if (b.kind == "zscore") {
      coef.clear();
      for (const std::string &h : split(head_fields(b.head).at("coef"), ','))
        coef.push_back((float)f64_hex(h));  // torch casts the f64 coefficient to f32
      continue;
    }
    if (b.kind == "perturb" || b.kind == "restore") {
      const std::vector<fg_tensor *> &eps = noise.at(head_numbers(b.head).at(0));
      const float f = b.kind == "perturb" ? sigma : -sigma;
      for (size_t k = 0; k < ps.size(); k++)
        op(cpu.dev, FG_OP_ES_PERTURB_CACHED, f, ps[k]->dtype, {ps[k]->data, eps[k]->data}, {ps[k]->dtype, FG_F32},
           ps[k]->numel);
    } else if (b.kind == "update") {
      const std::vector<uint64_t> seeds = head_numbers(b.head);
      ASSERT_EQ(seeds.size(), coef.size()) << b.head;
      for (size_t k = 0; k < ps.size(); k++) {
        const std::vector<uint8_t> zero(4 * ps[k]->numel, 0);
        ASSERT_EQ(FG_OK, fg_tensor_upload(acc[k], zero.data(), zero.size(), nullptr));
        for (size_t s = 0; s < seeds.size(); s++)
          op(cpu.dev, FG_OP_ES_ACC_CACHED, coef[s], FG_F32, {acc[k]->data, noise.at(seeds[s])[k]->data},
             {FG_F32, FG_F32}, ps[k]->numel);
        op(cpu.dev, FG_OP_ES_APPLY, scale, ps[k]->dtype, {ps[k]->data, acc[k]->data}, {ps[k]->dtype, FG_F32},
           ps[k]->numel);
      }
    } else {
      FAIL() << "unknown block " << b.head;
    }
    if (!same(ps, *c, b)) break;
  }
  free_all(ps);
  free_all(acc);
  free_all(noise_ts);
}

// es-awd's apply_reference_weight_decay_ (l1 and l2, two step sizes) against es_anchor_l1 /
// es_anchor_l2 with the scalars fg_es_update derives from an f32 config.
TEST(EsReference, EsAwdAnchoredDecay) {
  Cpu cpu;
  for (const RefCase &c : load()) {
    if (c.name.rfind("awd_", 0) != 0) continue;
    SCOPED_TRACE(c.line);
    const float alpha = f32_hex(c.cfg.at("alpha")), lambda = f32_hex(c.cfg.at("lambda"));
    const float step = alpha * lambda;
    const bool l2 = c.cfg.at("kind") == "l2";
    std::vector<fg_tensor *> ps, anchor;
    for (const Block &b : c.blocks) {
      std::vector<fg_tensor *> &dst = b.kind == "init" ? ps : anchor;
      if (b.kind == "init" || b.kind == "anchor") {
        for (size_t k = 0; k < c.slots.size(); k++) dst.push_back(make(cpu.dev, c.slots[k].second, c.n[k], b.values[k].second));
        continue;
      }
      ASSERT_EQ("decay", b.kind);
      ASSERT_EQ(ps.size(), anchor.size());
      for (size_t k = 0; k < ps.size(); k++)
        op(cpu.dev, l2 ? FG_OP_ES_ANCHOR_L2 : FG_OP_ES_ANCHOR_L1, l2 ? 1.0f - step : step, ps[k]->dtype,
           {ps[k]->data, anchor[k]->data}, {ps[k]->dtype, ps[k]->dtype}, ps[k]->numel);
      same(ps, c, b);
    }
    free_all(ps);
    free_all(anchor);
  }
}

// reward_shaping.z_score (with np.mean and np.std, as es_trainer.py calls it) and fg_es_update's
// statistics and coefficients: the statistics are the same f64 bits (numpy sums fewer than 8
// values in order), and an update on zero parameters with forgia's own noise equals the
// accumulation of the reference's coefficients, cast to f32, over that noise.
TEST(EsReference, ZScoreIsTheReferences) {
  Cpu cpu;
  const auto cs = load();
  const RefCase *c = find(cs, "es_at_scale");
  ASSERT_NE(nullptr, c);
  const uint64_t pop = std::stoull(c->cfg.at("population"));
  const uint64_t n = 4096;
  size_t checked = 0;
  for (const Block &b : c->blocks) {
    if (b.kind != "zscore") continue;
    SCOPED_TRACE(b.head);
    const auto f = head_fields(b.head);
    std::vector<float> rewards;
    for (const std::string &h : split(f.at("rewards"), ',')) rewards.push_back(f32_hex(h));
    std::vector<float> coef;
    for (const std::string &h : split(f.at("coef"), ',')) coef.push_back((float)f64_hex(h));
    ASSERT_EQ(pop, rewards.size());

    fg_es_config cfg = fg_es_defaults();
    cfg.sigma = 0.02f;
    cfg.has_alpha = true;
    cfg.alpha = 0.01f;
    cfg.population = pop;
    cfg.seed = 9;
    fg_es *es = nullptr;
    ASSERT_EQ(FG_OK, fg_es_create(&cfg, &es)) << fg_last_error();
    fg_tensor *p = make(cpu.dev, FG_F32, n, std::vector<uint8_t>(4 * n, 0));
    fg_tensor *want = make(cpu.dev, FG_F32, n, std::vector<uint8_t>(4 * n, 0));
    fg_tensor *acc = make(cpu.dev, FG_F32, n, std::vector<uint8_t>(4 * n, 0));
    fg_tensor *eps = make(cpu.dev, FG_F32, n, std::vector<uint8_t>(4 * n, 0));
    ASSERT_EQ(FG_OK, fg_es_add(es, p, "p")) << fg_last_error();
    for (uint64_t m = 0; m < pop; m++) {
      fg_rng_spec r;
      std::memset(&r, 0, sizeof r);
      r.kind = FG_RNG_GAUSS_FAST;
      float sign = 0;
      r.seed = fg_es_slot_stream_seed(es, m, 0, &sign);
      r.scale = 1.0f;
      ASSERT_EQ(FG_OK, fg_rng_fill_tensor(eps, &r, nullptr)) << fg_last_error();
      op(cpu.dev, FG_OP_ES_ACC_CACHED, coef[m], FG_F32, {acc->data, eps->data}, {FG_F32, FG_F32}, n);
    }
    op(cpu.dev, FG_OP_ES_APPLY, cfg.alpha / (float)pop, FG_F32, {want->data, acc->data}, {FG_F32, FG_F32}, n);
    fg_es_stats st;
    ASSERT_EQ(FG_OK, fg_es_update(es, rewards.data(), rewards.size(), &st)) << fg_last_error();
    EXPECT_EQ(f64_hex(f.at("mean")), st.mean_reward);
    EXPECT_EQ(f64_hex(f.at("std")), st.std_reward);
    EXPECT_TRUE(download(p) == download(want)) << "the update's coefficients are not the reference's";
    fg_es_free(es);
    for (fg_tensor *t : {p, want, acc, eps}) fg_tensor_free(t);
    checked++;
  }
  EXPECT_EQ(3u, checked);
}
