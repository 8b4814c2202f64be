// forgia es: `spirals` trains the two-spirals MLP from scratch without gradients to its
// target (float and ternary genome; the saved model is checked again by an independent f64
// forward pass here), K iterations + save + resume in a new process to N equal N straight
// byte for byte and for any worker count; `replay` applied to recorded rewards gives the
// bytes of an in-process fg_es_update run (memcmp) for several configs and reproduces every
// float trajectory of the Fucina golden file (tests/data/golden/fucina_es.txt, made by
// Fucina 0.2.0 itself) from its recorded rewards, and bad configs,
// reward logs and parameter files are refused with a message naming the field or entry.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "es_fucina_cases.h"
#include "forgia/forgia.h"
#include "spirals_data.h"
#include "testutil.h"

namespace {

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }
std::string spirals(const std::string &args) { return cli("es spirals --device cpu " + args); }

// The value after `key` on the "final:" line (-1 when absent).
double final_field(const std::string &out, const char *key) {
  const size_t p = out.find("final: iteration ");
  if (p == std::string::npos) return -1;
  const size_t a = out.find(key, p);
  return a == std::string::npos ? -1 : std::atof(out.c_str() + a + std::strlen(key));
}

std::string line_of(const std::string &out, const char *prefix) {
  const size_t p = out.find(prefix);
  if (p == std::string::npos) return "";
  return out.substr(p, out.find('\n', p) - p);
}



// Correct predictions of the saved model.safetensors (f64 forward written here), and for a
// ternary run whether every fc2.weight value is -d, 0 or +d of one d.
int host_correct(const std::string &model, uint64_t seed, bool *ternary_values) {
  std::vector<float> w1(128), b1(64), w2(4096), b2(64), w3(128), b3(2);
  const uint64_t s_w1[2] = {64, 2}, s_b1[1] = {64}, s_w2[2] = {64, 64}, s_b2[1] = {64}, s_w3[2] = {2, 64},
                 s_b3[1] = {2};
  const fg_state_dict_dest d[] = {{"fc1.weight", FG_F32, 2, s_w1, w1.data(), 512},
                                  {"fc1.bias", FG_F32, 1, s_b1, b1.data(), 256},
                                  {"fc2.weight", FG_F32, 2, s_w2, w2.data(), 16384},
                                  {"fc2.bias", FG_F32, 1, s_b2, b2.data(), 256},
                                  {"fc3.weight", FG_F32, 2, s_w3, w3.data(), 512},
                                  {"fc3.bias", FG_F32, 1, s_b3, b3.data(), 8}};
  EXPECT_EQ(FG_OK, fg_state_dict_load_file(model.c_str(), d, 6, nullptr, nullptr)) << fg_last_error();
  if (ternary_values) {
    float mag = 0;
    bool ok = true;
    for (float v : w2) {
      if (v == 0) continue;
      if (mag == 0) mag = std::fabs(v);
      ok = ok && std::fabs(v) == mag;
    }
    *ternary_values = ok && mag > 0;
  }
  std::vector<float> xy;
  std::vector<int> label;
  fgt::spirals_data(seed, xy, label);
  int ok = 0;
  for (int n = 0; n < 200; n++) {
    double h1[64], h2[64], l[2];
    for (int j = 0; j < 64; j++)
      h1[j] = std::max(0.0, (double)w1[2 * j] * xy[2 * n] + (double)w1[2 * j + 1] * xy[2 * n + 1] + b1[j]);
    for (int j = 0; j < 64; j++) {
      double z = b2[j];
      for (int k = 0; k < 64; k++) z += (double)w2[64 * j + k] * h1[k];
      h2[j] = std::max(0.0, z);
    }
    for (int c = 0; c < 2; c++) {
      double z = b3[c];
      for (int k = 0; k < 64; k++) z += (double)w3[64 * c + k] * h2[k];
      l[c] = z;
    }
    ok += (l[1] > l[0] ? 1 : 0) == label[n];
  }
  return ok;
}

TEST(EsCli, FloatSpiralsReachTheTargetWithoutGradients) {
  fgt::TempDir d;
  std::string out, err;
  ASSERT_EQ(0, fgt::run(spirals("--threads 2 --save " + d.file("ck")), &out, &err)) << out << err;
  EXPECT_NE(std::string::npos, out.find("PASS")) << out;
  const double acc = final_field(out, "accuracy ");
  EXPECT_GE(acc, 0.90) << out;
  // The saved model classifies as the run says, by an independent forward pass.
  EXPECT_NEAR(acc * 200, host_correct(d.file("ck/model.safetensors"), 1, nullptr), 2.0);
  fg_trainer_state ts;
  ASSERT_EQ(FG_OK, fg_trainer_state_load(d.file("ck/trainer_state.json").c_str(), &ts)) << fg_last_error();
  EXPECT_EQ(500u, ts.es_iteration.v);
  EXPECT_EQ(64u, ts.es_population.v);
  EXPECT_FALSE(ts.es_ternary_flip_rate.set);
}

TEST(EsCli, TernaryGenomeSpiralsReachTheTarget) {
  fgt::TempDir d;
  std::string out, err;
  ASSERT_EQ(0, fgt::run(spirals("--ternary --threads 2 --save " + d.file("ck")), &out, &err)) << out << err;
  EXPECT_NE(std::string::npos, out.find("ternary")) << out;
  const double acc = final_field(out, "accuracy ");
  EXPECT_GE(acc, 0.90) << out;
  bool trits = false;
  EXPECT_NEAR(acc * 200, host_correct(d.file("ck/model.safetensors"), 1, &trits), 2.0);
  EXPECT_TRUE(trits) << "fc2.weight of a ternary run holds values other than -d, 0, +d";
  fg_trainer_state ts;
  ASSERT_EQ(FG_OK, fg_trainer_state_load(d.file("ck/trainer_state.json").c_str(), &ts)) << fg_last_error();
  EXPECT_TRUE(ts.es_ternary_flip_rate.set);
}

TEST(EsCli, BelowTheTargetExitsNonzero) {
  std::string out, err;
  EXPECT_EQ(1, fgt::run(spirals("--iterations 3 --target 0.99"), &out, &err)) << out;
  EXPECT_NE(std::string::npos, err.find("below the target")) << err;
  EXPECT_NE(std::string::npos, out.find("FAIL")) << out;
}

TEST(EsCli, ResumeContinuesBitExactlyForAnyWorkerCount) {
  fgt::TempDir d;
  for (const std::string mode : {"", "--ternary "}) {
    SCOPED_TRACE(mode);
    const std::string m = mode + "--target 0 --seed 3 ";
    const std::string a = d.file("a" + std::to_string(mode.size())), b = d.file("b" + std::to_string(mode.size()));
    std::string straight, half, resumed, err;
    ASSERT_EQ(0, fgt::run(spirals(m + "--iterations 40 --threads 2 --save " + a), &straight, &err)) << err;
    ASSERT_EQ(0, fgt::run(spirals(m + "--iterations 17 --threads 1 --save " + b), &half, &err)) << err;
    ASSERT_EQ(0, fgt::run(spirals(mode + "--target 0 --iterations 40 --threads 3 --resume " + b +
                                  " --save " + b),
                          &resumed, &err))
        << err;
    EXPECT_NE(std::string::npos, resumed.find("iterations 17..40")) << resumed;
    ASSERT_NE("", line_of(straight, "params: fnv1a64 "));
    EXPECT_EQ(line_of(straight, "params: fnv1a64 "), line_of(resumed, "params: fnv1a64 "));
    EXPECT_EQ(line_of(straight, "final: "), line_of(resumed, "final: "));
    EXPECT_NE(line_of(straight, "params: fnv1a64 "), line_of(half, "params: fnv1a64 "));
    EXPECT_TRUE(fgt::same_bytes(a + "/model.safetensors", b + "/model.safetensors"));
    EXPECT_TRUE(fgt::same_bytes(a + "/trainer_state.json", b + "/trainer_state.json"));
  }
}

TEST(EsCli, BadUsageAndMismatchedCheckpointsAreRefused) {
  fgt::TempDir d;
  std::string out, err;
  EXPECT_EQ(2, fgt::run(cli("es"), &out, &err));
  EXPECT_EQ(2, fgt::run(cli("es mnist"), &out, &err));
  EXPECT_NE(std::string::npos, err.find("unknown task")) << err;
  EXPECT_EQ(0, fgt::run(cli("help es"), &out, &err));
  EXPECT_NE(std::string::npos, out.find("es replay")) << out;
  EXPECT_EQ(2, fgt::run(spirals("--population 7"), &out, &err));
  EXPECT_NE(std::string::npos, err.find("--population")) << err;
  EXPECT_EQ(2, fgt::run(spirals("--target 1.5"), &out, &err));
  EXPECT_EQ(2, fgt::run(spirals("--threads 0"), &out, &err));
  EXPECT_EQ(2, fgt::run(spirals("--resume x --seed 3"), &out, &err));
  EXPECT_EQ(2, fgt::run(spirals("--bogus"), &out, &err));
  const std::string ck = d.file("ck");
  ASSERT_EQ(0, fgt::run(spirals("--ternary --iterations 4 --target 0 --save " + ck), &out, &err)) << err;
  EXPECT_EQ(1, fgt::run(spirals("--iterations 8 --target 0 --resume " + ck), &out, &err));
  EXPECT_NE(std::string::npos, err.find("--ternary")) << err;
  EXPECT_EQ(1, fgt::run(spirals("--ternary --population 32 --iterations 8 --target 0 --resume " + ck), &out, &err));
  EXPECT_NE(std::string::npos, err.find("es_population")) << err;
  EXPECT_EQ(1, fgt::run(spirals("--ternary --iterations 2 --target 0 --resume " + ck), &out, &err));
  EXPECT_NE(std::string::npos, err.find("past --iterations")) << err;
  EXPECT_EQ(1, (int)std::count(err.begin(), err.end(), '\n')) << err;
}

// ---- replay ----

struct Param {
  const char *name;
  fg_dtype dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> bytes;
};

std::vector<Param> make_params() {
  std::vector<Param> ps = {{"a", FG_F32, {3, 5}, {}}, {"b", FG_BF16, {7}, {}}, {"c", FG_F16, {2, 2}, {}},
                           {"unused", FG_F32, {2}, {}}};
  uint64_t k = 1;
  for (Param &p : ps) {
    uint64_t n = 1;
    for (uint64_t s : p.shape) n *= s;
    const auto v = fgt::gaussian(n, 100 + k++, 0.5f);
    const size_t es = fg_dtype_info(p.dtype)->block_bytes;
    p.bytes.resize(n * es);
    for (uint64_t i = 0; i < n; i++) {
      if (p.dtype == FG_F32) std::memcpy(&p.bytes[4 * i], &v[i], 4);
      uint16_t h = 0;
      if (p.dtype == FG_BF16) {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        h = (uint16_t)(u >> 16);
      }
      if (p.dtype == FG_F16) h = (uint16_t)(0x3800 + (i * 97) % 0x800); // values in [0.5, 1)
      if (p.dtype != FG_F32) std::memcpy(&p.bytes[2 * i], &h, 2);
    }
  }
  return ps;
}

void save_params(const std::string &path, const std::vector<Param> &ps) {
  std::vector<fg_st_write_tensor> w;
  for (const Param &p : ps)
    w.push_back({p.name, p.dtype, (int)p.shape.size(), p.shape.data(), p.bytes.data(), (uint64_t)p.bytes.size()});
  ASSERT_EQ(FG_OK, fg_st_save(path.c_str(), w.data(), w.size(), nullptr, 0)) << fg_last_error();
}

std::vector<float> make_rewards(size_t iters, size_t pop, uint64_t seed) {
  std::vector<float> r = fgt::gaussian(iters * pop, seed, 1.0f);
  r[1] = r[0]; // a tie, for centered ranks
  return r;
}

std::string rewards_json(const std::vector<float> &r, size_t pop) {
  std::string s = "[";
  char buf[64];
  for (size_t i = 0; i < r.size(); i++) {
    if (i % pop == 0) s += i ? "],\n [" : "[";
    std::snprintf(buf, sizeof buf, "%s%.9g", i % pop ? ", " : "", (double)r[i]);
    s += buf;
  }
  return s + (r.empty() ? "]" : "]]");
}

// The same replay through the library in this process: the parameters after the updates.
std::vector<std::vector<uint8_t>> in_process(const fg_es_config &c, const std::vector<Param> &ps,
                                             const std::vector<std::string> &order, const std::vector<float> &r) {
  fg_device *dev = nullptr;
  EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev));
  fg_es *es = nullptr;
  EXPECT_EQ(FG_OK, fg_es_create(&c, &es)) << fg_last_error();
  std::vector<fg_tensor *> ts;
  for (const std::string &name : order)
    for (const Param &p : ps)
      if (name == p.name) {
        fg_tensor *t = nullptr;
        EXPECT_EQ(FG_OK, fg_tensor_create(dev, p.name, p.dtype, (int)p.shape.size(), p.shape.data(), &t));
        EXPECT_EQ(FG_OK, fg_tensor_upload(t, p.bytes.data(), p.bytes.size(), nullptr));
        EXPECT_EQ(FG_OK, fg_es_add(es, t, p.name)) << fg_last_error();
        ts.push_back(t);
      }
  if (c.anchor_decay != FG_ES_ANCHOR_NONE) {
    EXPECT_EQ(FG_OK, fg_es_capture_anchor(es)) << fg_last_error();
  }
  for (size_t k = 0; k < r.size() / c.population; k++)
    EXPECT_EQ(FG_OK, fg_es_update(es, &r[k * c.population], c.population, nullptr)) << fg_last_error();
  std::vector<std::vector<uint8_t>> out;
  for (fg_tensor *t : ts) {
    std::vector<uint8_t> b(t->nbytes);
    EXPECT_EQ(FG_OK, fg_tensor_download(t, b.data(), b.size(), nullptr));
    out.push_back(b);
    fg_tensor_free(t);
  }
  fg_es_free(es);
  fg_device_close(dev);
  return out;
}

std::string replay(const fgt::TempDir &d, const std::string &config, const std::string &rewards) {
  fgt::write_file(d.file("config.json"), config.data(), config.size());
  fgt::write_file(d.file("rewards.json"), rewards.data(), rewards.size());
  return cli("es replay --config " + d.file("config.json") + " --params " + d.file("p.safetensors") +
             " --rewards " + d.file("rewards.json") + " --out " + d.file("out.safetensors"));
}

TEST(EsCli, ReplayOfRecordedRewardsGivesTheInProcessBits) {
  fgt::TempDir d;
  const auto ps = make_params();
  save_params(d.file("p.safetensors"), ps);
  struct Case {
    const char *json;
    std::vector<std::string> order;
    fg_es_config c;
  };
  std::vector<Case> cases;
  {
    fg_es_config c = fg_es_defaults();
    c.sigma = 0.02f;
    c.population = 6;
    c.antithetic = true;
    c.noise = FG_ES_NOISE_CORRELATED;
    c.restore_mode = FG_ES_RESTORE_SNAPSHOT;
    c.reward_norm = FG_ES_REWARD_CENTERED_RANKS;
    c.anchor_decay = FG_ES_ANCHOR_L2;
    c.anchor_lambda = 0.5f;
    c.cache_streams = true;
    c.seed = 18446744073709551557ull; // above 2^53: a double would lose its low bits
    cases.push_back({"{\"sigma\": 0.02, \"population\": 6, \"antithetic\": true, \"noise\": \"correlated\",\n"
                     " \"restore_mode\": \"snapshot\", \"reward_norm\": \"centered_ranks\", \"anchor_decay\": \"l2\",\n"
                     " \"anchor_lambda\": 0.5, \"cache_streams\": true, \"seed\": 18446744073709551557,\n"
                     " \"params\": [\"b\", \"a\"]}",
                     {"b", "a"},
                     c});
  }
  {
    fg_es_config c = fg_es_defaults();
    c.sigma = 0.05f;
    c.has_alpha = true;
    c.alpha = 0.01f;
    c.population = 5;
    c.anchor_decay = FG_ES_ANCHOR_L1;
    c.anchor_lambda = 0.1f;
    c.seed = 9007199254740993ull; // 2^53 + 1
    cases.push_back({"{\"params\": [\"a\", \"c\", \"b\"], \"sigma\": 0.05, \"alpha\": 0.01, \"population\": 5,\n"
                     " \"noise\": \"iid\", \"reward_norm\": \"z_score\", \"anchor_decay\": \"l1\",\n"
                     " \"anchor_lambda\": 0.1, \"seed\": \"9007199254740993\", \"ternary_flip_rate\": 0.01}",
                     {"a", "c", "b"},
                     c});
    cases.back().c.ternary_flip_rate = 0.01f;
  }
  {
    fg_es_config c = fg_es_defaults();
    c.sigma = 0.1f;
    c.population = 4;
    c.reward_norm = FG_ES_REWARD_NONE;
    c.seed = 3;
    cases.push_back({"{\"sigma\": 0.1, \"population\": 4, \"reward_norm\": \"none\", \"seed\": 3, \"params\": [\"c\"]}",
                     {"c"},
                     c});
  }
  for (const Case &k : cases) {
    SCOPED_TRACE(k.json);
    const auto r = make_rewards(4, k.c.population, k.c.seed);
    std::string out, err;
    ASSERT_EQ(0, fgt::run(replay(d, k.json, rewards_json(r, k.c.population)), &out, &err)) << err;
    EXPECT_NE(std::string::npos, out.find("replayed 4 iterations of population " + std::to_string(k.c.population) +
                                          " over " + std::to_string(k.order.size()) + " tensor"))
        << out;
    const auto want = in_process(k.c, ps, k.order, r);
    fg_st_file *f = nullptr;
    ASSERT_EQ(FG_OK, fg_st_open(d.file("out.safetensors").c_str(), FG_MAP_READ, &f)) << fg_last_error();
    EXPECT_EQ(k.order.size(), fg_st_count(f));
    for (size_t i = 0; i < k.order.size(); i++) {
      const fg_st_tensor *t = fg_st_find(f, k.order[i].c_str());
      ASSERT_NE(nullptr, t) << k.order[i];
      ASSERT_EQ(want[i].size(), t->nbytes);
      EXPECT_EQ(0, std::memcmp(want[i].data(), t->data, want[i].size())) << k.order[i];
      // and the updates moved it
      for (const Param &p : ps)
        if (k.order[i] == p.name) {
          EXPECT_NE(0, std::memcmp(p.bytes.data(), t->data, p.bytes.size())) << p.name;
        }
    }
    fg_st_close(f);
  }
  // No reward vectors: the parameters come back unchanged.
  std::string out, err;
  ASSERT_EQ(0, fgt::run(replay(d, cases[2].json, "[]"), &out, &err)) << err;
  fg_st_file *f = nullptr;
  ASSERT_EQ(FG_OK, fg_st_open(d.file("out.safetensors").c_str(), FG_MAP_READ, &f)) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(ps[2].bytes.data(), fg_st_find(f, "c")->data, ps[2].bytes.size()));
  fg_st_close(f);
}

std::string fmt9(float f) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", (double)f);
  return b;
}

// A golden case's config in CONFIG.json's words.
std::string config_json(const fgt::EsCase &c) {
  const fg_es_config &k = c.cfg;
  std::string j = "{\"sigma\": " + fmt9(k.sigma) + (k.has_alpha ? ", \"alpha\": " + fmt9(k.alpha) : "") +
                  ", \"population\": " + std::to_string(k.population) +
                  ", \"antithetic\": " + (k.antithetic ? "true" : "false") + ", \"noise\": \"" +
                  fg_es_noise_name(k.noise) + "\", \"restore_mode\": \"" + fg_es_restore_mode_name(k.restore_mode) +
                  "\", \"cache_streams\": " + (k.cache_streams ? "true" : "false") + ", \"anchor_decay\": \"" +
                  fg_es_anchor_decay_name(k.anchor_decay) + "\", \"anchor_lambda\": " + fmt9(k.anchor_lambda) +
                  ", \"reward_norm\": \"" + fg_es_reward_norm_name(k.reward_norm) +
                  "\", \"seed\": " + std::to_string(k.seed) + ", \"params\": [";
  for (size_t i = 0; i < c.slots.size(); i++) j += (i ? ", \"" : "\"") + c.slots[i].name + "\"";
  return j + "]}";
}

// Every case of Fucina's own float ES trajectories (tests/data/golden/fucina_es.txt): its
// initial parameters, config and recorded rewards through `forgia es replay` give Fucina's
// parameters after the last update (--in-place for the runs that perturbed and restored
// members in place between updates; the `materialize` case used replicas).
TEST(EsCli, ReplayReproducesFucinasTrajectoriesFromTheirRewards) {
  const auto cases = fgt::load_cases();
  ASSERT_EQ(13u, cases.size());
  fgt::TempDir d;
  for (const fgt::EsCase &c : cases) {
    SCOPED_TRACE(c.line);
    std::vector<Param> ps;
    for (const fgt::SlotDecl &sd : c.slots)
      ps.push_back({sd.name.c_str(), sd.dtype, {sd.n}, fgt::golden_narrow(fgt::initial_values(sd.name), sd.dtype)});
    save_params(d.file("p.safetensors"), ps);
    std::string rw = "[";
    bool in_place = false;
    const fgt::Event *last = nullptr;
    for (const fgt::Event &e : c.events) {
      in_place = in_place || e.kind == "perturb";
      if (e.kind != "update") continue;
      rw += last ? ", [" : "[";
      for (size_t m = 0; m < e.rewards.size(); m++) rw += (m ? ", " : "") + fmt9(e.rewards[m]);
      rw += "]";
      last = &e;
    }
    rw += "]";
    ASSERT_NE(nullptr, last);
    EXPECT_EQ(c.name != "materialize", in_place);
    std::string out, err;
    ASSERT_EQ(0, fgt::run(replay(d, config_json(c), rw) + (in_place ? " --in-place" : ""), &out, &err)) << err;
    fg_st_file *f = nullptr;
    ASSERT_EQ(FG_OK, fg_st_open(d.file("out.safetensors").c_str(), FG_MAP_READ, &f)) << fg_last_error();
    ASSERT_EQ(c.slots.size(), last->values.size());
    for (const fgt::Values &want : last->values) {
      const fg_st_tensor *t = fg_st_find(f, want.name.c_str());
      ASSERT_NE(nullptr, t) << want.name;
      if (want.hashed) {
        EXPECT_EQ(want.fnv, fgt::golden_fnv(t->data, t->nbytes)) << want.name;
      } else {
        ASSERT_EQ(want.bytes.size(), t->nbytes) << want.name;
        EXPECT_EQ(0, std::memcmp(want.bytes.data(), t->data, t->nbytes)) << want.name;
      }
    }
    fg_st_close(f);
  }
}

TEST(EsCli, ReplayRefusesBadInputNamingIt) {
  fgt::TempDir d;
  save_params(d.file("p.safetensors"), make_params());
  const std::string ok_cfg = "{\"sigma\": 0.1, \"population\": 2, \"params\": [\"a\"]}";
  const std::string ok_rw = "[[1, 2], [3, 4]]";
  struct Bad {
    std::string config, rewards, needle;
  };
  const std::vector<Bad> bad = {
      {"{\"sigma\": 0.1, \"population\": 2, \"noise\": \"gaussian\", \"params\": [\"a\"]}", ok_rw, "noise"},
      {"{\"sigma\": 0.1, \"population\": 2, \"noise\": \"gaussian\", \"params\": [\"a\"]}", ok_rw, "gaussian"},
      {"{\"sigma\": 0.1, \"population\": 2, \"reward_norm\": \"ranks\", \"params\": [\"a\"]}", ok_rw, "reward_norm"},
      {"{\"sigma\": 0.1, \"population\": 2, \"anchor_decay\": \"l3\", \"params\": [\"a\"]}", ok_rw, "anchor_decay"},
      {"{\"sigma\": 0.1, \"population\": 2, \"restore_mode\": 1, \"params\": [\"a\"]}", ok_rw, "restore_mode"},
      {"{\"sigma\": 0.1, \"population\": 2, \"sigmaa\": 1, \"params\": [\"a\"]}", ok_rw, "sigmaa: unknown field"},
      {"{\"sigma\": 0.1, \"population\": 2, \"seed\": 1.5, \"params\": [\"a\"]}", ok_rw, "seed"},
      {"{\"sigma\": 0.1, \"population\": 2, \"seed\": -1, \"params\": [\"a\"]}", ok_rw, "seed"},
      {"{\"sigma\": 0.1, \"population\": 2, \"seed\": 18446744073709551616, \"params\": [\"a\"]}", ok_rw, "seed"},
      {"{\"sigma\": 0.1, \"population\": 3, \"antithetic\": true, \"params\": [\"a\"]}", "[[1, 2, 3]]", "population"},
      {"{\"sigma\": -0.1, \"population\": 2, \"params\": [\"a\"]}", ok_rw, "sigma"},
      {"{\"sigma\": 0.1, \"population\": 2}", ok_rw, "params"},
      {"{\"sigma\": 0.1, \"population\": 2, \"params\": [\"a\", \"a\"]}", ok_rw, "listed twice"},
      {"{\"sigma\": 0.1, \"population\": 2, \"params\": [\"zz\"]}", ok_rw, "no tensor 'zz'"},
      {"{\"sigma\": 0.1, \"population\": 2, \"anchor_decay\": \"l2\", \"params\": [\"a\"]}", ok_rw, "anchor_lambda"},
      {"[1, 2]", ok_rw, "config.json"},
      {"{\"sigma\": 0.1,", ok_rw, "config.json"},
      {ok_cfg, "[[1, 2], [3, 4, 5]]", "iteration 1 has 3 rewards, the population is 2"},
      {ok_cfg, "[[1, 2], [3, 1e39]]", "not a finite"},
      {ok_cfg, "[[1, 2], [3, \"x\"]]", "iteration 1, member 1"},
      {ok_cfg, "[1, 2]", "iteration 0"},
      {ok_cfg, "{\"r\": []}", "rewards.json"},
      {ok_cfg, "[[1, 2]", "rewards.json"},
  };
  for (const Bad &b : bad) {
    SCOPED_TRACE(b.config + " / " + b.rewards);
    std::remove(d.file("out.safetensors").c_str());
    std::string out, err;
    EXPECT_NE(0, fgt::run(replay(d, b.config, b.rewards), &out, &err));
    EXPECT_NE(std::string::npos, err.find(b.needle)) << err;
    EXPECT_EQ(1, (int)std::count(err.begin(), err.end(), '\n')) << err;
    EXPECT_TRUE(fgt::read_file(d.file("out.safetensors")).empty()) << "a failed replay wrote its output";
  }
  // A missing flag is bad usage; an unreadable config is named.
  std::string out, err;
  EXPECT_EQ(2, fgt::run(cli("es replay --config x --params y --rewards z"), &out, &err));
  EXPECT_NE(std::string::npos, err.find("--out")) << err;
  EXPECT_EQ(1, fgt::run(cli("es replay --config " + d.file("nowhere.json") + " --params y --rewards z --out o"), &out,
                        &err));
  EXPECT_NE(std::string::npos, err.find("nowhere.json")) << err;
}

}  // namespace
