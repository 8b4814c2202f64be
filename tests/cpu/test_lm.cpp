// The language-model runtime (forgia/lm.h) on tiny random checkpoints of every architecture:
// logits against an independent f64 forward pass (tests/util/lm_tiny.h), the GGUF and folder
// forms of one model agreeing, the cache (token by token == one batch, bit for bit, in exact
// mode), several sequences in one batch, thread counts, the NLL, and the errors.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "lm_tiny.h"
#include "testutil.h"

namespace {

using fgt::TempDir;
using fgt::TinyModel;
using fgt::TinyRef;
using fgt::TinySpec;

struct Dev {
  fg_device *d = nullptr;
  Dev() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &d)) << fg_last_error(); }
  ~Dev() { fg_device_close(d); }
};

struct Lm {
  fg_lm *lm = nullptr;
  Lm(const std::string &path, fg_device *dev, fg_gemm_mode mode = FG_GEMM_EXACT) {
    fg_lm_options o = {};
    o.mode = mode;
    EXPECT_EQ(FG_OK, fg_lm_open(path.c_str(), dev, &o, &lm)) << fg_last_error();
  }
  ~Lm() { fg_lm_free(lm); }
};

std::vector<int32_t> some_ids(size_t n, size_t v, uint64_t seed) {
  std::vector<int32_t> ids(n);
  for (auto &x : ids) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x = (int32_t)((seed >> 33) % v);
  }
  return ids;
}

// Every row's logits of one sequence, in one batch.
std::vector<float> run_batch(fg_lm *lm, const std::vector<int32_t> &ids) {
  fg_lm_cache *c = nullptr;
  EXPECT_EQ(FG_OK, fg_lm_cache_create(lm, 1, ids.size() + 4, &c)) << fg_last_error();
  const fg_lm_batch b = {ids.size(), ids.data(), nullptr, nullptr};
  const float *lg = nullptr;
  size_t rows = 0;
  EXPECT_EQ(FG_OK, fg_lm_forward(lm, c, &b, &lg, &rows)) << fg_last_error();
  const size_t V = fg_lm_get_config(lm)->n_vocab;
  std::vector<float> out(rows * V);
  if (lg) memcpy(out.data(), lg, out.size() * 4);
  fg_lm_cache_free(c);
  return out;
}

void expect_close(const std::vector<float> &got, const std::vector<double> &want, double tol, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double d = std::fabs((double)got[i] - want[i]) / (1.0 + std::fabs(want[i]));
    if (!(d <= worst)) worst = d, at = i;
  }
  EXPECT_LE(worst, tol) << what << ": element " << at << " is " << got[at] << ", the reference " << want[at];
}

struct ArchCase {
  const char *name;
  TinySpec spec;
};

std::vector<ArchCase> arch_cases() {
  std::vector<ArchCase> v;
  TinySpec s;
  v.push_back({"llama", s});
  s.arch = "qwen2";
  s.base = 1e6;
  v.push_back({"qwen2", s});
  s.arch = "qwen3";
  s.tied = false;
  v.push_back({"qwen3", s});
  TinySpec g;
  g.arch = "gemma3";
  g.L = 7;
  g.E = 32;
  g.H = 2;
  g.KV = 1;
  g.HD = 32;
  g.F = 64;
  g.window = 3;
  g.base = 1e6;
  g.eps = 1e-6f;
  v.push_back({"gemma3", g});
  return v;
}

class LmArch : public ::testing::TestWithParam<ArchCase> {};

TEST_P(LmArch, GgufAndFolderMatchTheReference) {
  TempDir td;
  const TinyModel m = fgt::tiny_make(GetParam().spec);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf"))) << fg_last_error();
  ASSERT_EQ(FG_OK, fgt::tiny_write_hf(m, td.path)) << fg_last_error();
  Dev dev;
  const auto ids = some_ids(9, m.s.V, 7);
  const auto want = TinyRef(m).forward(ids);
  Lm g(td.file("m.gguf"), dev.d), f(td.path, dev.d);
  ASSERT_TRUE(g.lm && f.lm);
  EXPECT_EQ(m.s.L, fg_lm_get_config(g.lm)->n_layer);
  EXPECT_EQ(!m.s.tied, !fg_lm_get_config(g.lm)->tied_output);
  expect_close(run_batch(g.lm, ids), want, 2e-4, std::string(GetParam().name) + " GGUF");
  expect_close(run_batch(f.lm, ids), want, 2e-4, std::string(GetParam().name) + " folder");
}

TEST_P(LmArch, TokenByTokenEqualsOneBatchBitForBit) {
  TempDir td;
  const TinyModel m = fgt::tiny_make(GetParam().spec);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf"))) << fg_last_error();
  Dev dev;
  Lm g(td.file("m.gguf"), dev.d);
  ASSERT_TRUE(g.lm);
  const auto ids = some_ids(8, m.s.V, 3);
  const auto whole = run_batch(g.lm, ids);
  fg_lm_cache *c = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_cache_create(g.lm, 1, 8, &c));
  std::vector<float> steps;
  for (size_t t = 0; t < ids.size(); t += 3) {  // chunks of 3, 3, 2
    const size_t n = std::min<size_t>(3, ids.size() - t);
    const fg_lm_batch b = {n, ids.data() + t, nullptr, nullptr};
    const float *lg = nullptr;
    size_t rows = 0;
    ASSERT_EQ(FG_OK, fg_lm_forward(g.lm, c, &b, &lg, &rows)) << fg_last_error();
    ASSERT_EQ(n, rows);
    steps.insert(steps.end(), lg, lg + rows * m.s.V);
  }
  EXPECT_EQ(ids.size(), fg_lm_cache_len(c, 0));
  ASSERT_EQ(whole.size(), steps.size());
  EXPECT_EQ(0, memcmp(whole.data(), steps.data(), whole.size() * 4));
  // A full cache refuses the next token and keeps what it holds.
  const int32_t one = 1;
  const fg_lm_batch b = {1, &one, nullptr, nullptr};
  const float *lg = nullptr;
  size_t rows = 0;
  EXPECT_EQ(FG_ERR_RANGE, fg_lm_forward(g.lm, c, &b, &lg, &rows));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "full")) << fg_last_error();
  EXPECT_EQ(ids.size(), fg_lm_cache_len(c, 0));
  // Truncating and refeeding gives the same rows again.
  ASSERT_EQ(FG_OK, fg_lm_cache_truncate(c, 0, 5));
  const fg_lm_batch rest = {3, ids.data() + 5, nullptr, nullptr};
  ASSERT_EQ(FG_OK, fg_lm_forward(g.lm, c, &rest, &lg, &rows)) << fg_last_error();
  EXPECT_EQ(0, memcmp(whole.data() + 5 * m.s.V, lg, 3 * m.s.V * 4));
  fg_lm_cache_free(c);
}

INSTANTIATE_TEST_SUITE_P(Archs, LmArch, ::testing::ValuesIn(arch_cases()),
                         [](const ::testing::TestParamInfo<ArchCase> &i) { return std::string(i.param.name); });

TEST(Lm, QuantizedWeightsMatchTheirDecodedValues) {
  for (fg_dtype t : {FG_Q8_0, FG_Q4_1, FG_Q4_K}) {
    TinySpec s;
    s.wtype = t;
    s.E = 256;
    s.F = 256;
    s.H = 4;
    s.KV = 2;
    s.HD = 64;
    TempDir td;
    const TinyModel m = fgt::tiny_make(s);
    ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf"))) << fg_last_error();
    Dev dev;
    Lm g(td.file("m.gguf"), dev.d);
    ASSERT_TRUE(g.lm);
    // The weights stay at their stored size on the device.
    uint64_t stored = 0;
    fg_gguf_file *f = nullptr;
    ASSERT_EQ(FG_OK, fg_gguf_open(td.file("m.gguf").c_str(), FG_MAP_MMAP, &f));
    for (size_t i = 0; i < fg_gguf_tensor_count(f); i++) stored += fg_gguf_tensor_at(f, i)->nbytes;
    fg_gguf_close(f);
    EXPECT_EQ(stored, fg_lm_weight_bytes(g.lm));
    const auto ids = some_ids(6, s.V, 11);
    expect_close(run_batch(g.lm, ids), TinyRef(m).forward(ids), 2e-4, fg_dtype_name(t));
  }
}

// transformers 5 writes rope_parameters (one object, or one per attention type for Gemma 3)
// where earlier versions wrote rope_theta and rope_local_base_freq: the same model either way.
TEST(Lm, FolderConfigOfTransformers5) {
  for (const char *arch : {"llama", "gemma3"}) {
    TinySpec s;
    s.arch = arch;
    s.base = 1e6;
    if (s.arch == "gemma3") s.L = 6, s.window = 2;
    TempDir td;
    const TinyModel m = fgt::tiny_make(s);
    ASSERT_EQ(FG_OK, fgt::tiny_write_hf(m, td.path)) << fg_last_error();
    Dev dev;
    const auto ids = some_ids(7, s.V, 13);
    std::vector<float> before;
    {
      Lm f(td.path, dev.d);
      ASSERT_TRUE(f.lm);
      before = run_batch(f.lm, ids);
    }
    const auto b = fgt::read_file(td.file("config.json"));
    std::string cfg(b.begin(), b.end());
    const size_t at = cfg.find("\"rope_theta\": 1000000");
    ASSERT_NE(std::string::npos, at) << cfg;
    cfg.replace(at, std::string("\"rope_theta\": 1000000").size(),
                s.arch == "gemma3" ? "\"rope_parameters\": {\"full_attention\": {\"rope_theta\": 1000000.0, \"rope_type\": "
                                     "\"default\"}, \"sliding_attention\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}}"
                                   : "\"rope_parameters\": {\"rope_theta\": 1000000.0, \"rope_type\": \"default\"}");
    const size_t loc = cfg.find("\"rope_local_base_freq\": 10000.0, ");
    if (loc != std::string::npos) cfg.erase(loc, std::string("\"rope_local_base_freq\": 10000.0, ").size());
    // Gemma: the layers' kinds listed instead of the pattern.
    const size_t pat = cfg.find("\"sliding_window_pattern\": 6");
    if (pat != std::string::npos)
      cfg.replace(pat, std::string("\"sliding_window_pattern\": 6").size(),
                  "\"layer_types\": [\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", "
                  "\"sliding_attention\", \"sliding_attention\", \"full_attention\"]");
    fgt::write_file(td.file("config.json"), cfg.data(), cfg.size());
    Lm f(td.path, dev.d);
    ASSERT_TRUE(f.lm) << cfg;
    const auto after = run_batch(f.lm, ids);
    ASSERT_EQ(before.size(), after.size());
    EXPECT_EQ(0, memcmp(before.data(), after.data(), before.size() * 4)) << arch << ": " << cfg;
    EXPECT_EQ(1e6, fg_lm_get_config(f.lm)->rope_base);
    if (s.arch != "gemma3") continue;
    // layer_types decides, not the pattern: all layers listed as full gives the unwindowed model,
    // which differs here (window 2 over 7 tokens); a list of the wrong length is refused.
    const size_t lt = cfg.find("\"layer_types\": [");
    std::string full = cfg.substr(0, lt) + "\"layer_types\": [\"full_attention\", \"full_attention\", \"full_attention\", "
                       "\"full_attention\", \"full_attention\", \"full_attention\"]" + cfg.substr(cfg.find(']', lt) + 1);
    fgt::write_file(td.file("config.json"), full.data(), full.size());
    {
      Lm g(td.path, dev.d);
      ASSERT_TRUE(g.lm);
      const auto nowin = run_batch(g.lm, ids);
      EXPECT_NE(0, memcmp(before.data(), nowin.data(), before.size() * 4));
    }
    std::string shortl = cfg.substr(0, lt) + "\"layer_types\": [\"full_attention\"]" + cfg.substr(cfg.find(']', lt) + 1);
    fgt::write_file(td.file("config.json"), shortl.data(), shortl.size());
    fg_lm *bad = nullptr;
    EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_open(td.path.c_str(), dev.d, nullptr, &bad));
    EXPECT_NE(nullptr, strstr(fg_last_error(), "layer_types")) << fg_last_error();
  }
}

TEST(Lm, SequencesInOneBatchEqualEachAlone) {
  TempDir td;
  TinySpec s;
  const TinyModel m = fgt::tiny_make(s);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf")));
  Dev dev;
  Lm g(td.file("m.gguf"), dev.d);
  ASSERT_TRUE(g.lm);
  const auto a = some_ids(5, s.V, 1), b = some_ids(4, s.V, 2);
  const auto ra = run_batch(g.lm, a), rb = run_batch(g.lm, b);
  // Interleaved: a0 b0 a1 b1 ... in one batch, each token its own sequence's next position.
  std::vector<int32_t> ids, seq;
  for (size_t i = 0; i < 5; i++) {
    ids.push_back(a[i]), seq.push_back(0);
    if (i < 4) ids.push_back(b[i]), seq.push_back(1);
  }
  fg_lm_cache *c = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_cache_create(g.lm, 2, 8, &c));
  const fg_lm_batch bt = {ids.size(), ids.data(), seq.data(), nullptr};
  const float *lg = nullptr;
  size_t rows = 0;
  ASSERT_EQ(FG_OK, fg_lm_forward(g.lm, c, &bt, &lg, &rows)) << fg_last_error();
  for (size_t r = 0, ia = 0, ib = 0; r < rows; r++) {
    const float *want = seq[r] == 0 ? &ra[(ia++) * s.V] : &rb[(ib++) * s.V];
    EXPECT_EQ(0, memcmp(want, lg + r * s.V, s.V * 4)) << "row " << r;
  }
  EXPECT_EQ(5u, fg_lm_cache_len(c, 0));
  EXPECT_EQ(4u, fg_lm_cache_len(c, 1));
  // Only the rows asked for: the last of each sequence.
  ASSERT_EQ(FG_OK, fg_lm_cache_truncate(c, 0, 0));
  ASSERT_EQ(FG_OK, fg_lm_cache_truncate(c, 1, 0));
  std::vector<uint8_t> want_rows(ids.size(), 0);
  want_rows[ids.size() - 1] = want_rows[ids.size() - 2] = 1;
  const fg_lm_batch bt2 = {ids.size(), ids.data(), seq.data(), want_rows.data()};
  ASSERT_EQ(FG_OK, fg_lm_forward(g.lm, c, &bt2, &lg, &rows)) << fg_last_error();
  ASSERT_EQ(2u, rows);
  EXPECT_EQ(0, memcmp(&rb[3 * s.V], lg, s.V * 4));
  EXPECT_EQ(0, memcmp(&ra[4 * s.V], lg + s.V, s.V * 4));
  fg_lm_cache_free(c);
}

TEST(Lm, ExactModeIgnoresTheThreadCount) {
  TempDir td;
  TinySpec s;
  s.arch = "gemma3";
  s.L = 6;
  s.window = 2;
  const TinyModel m = fgt::tiny_make(s);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf")));
  Dev dev;
  Lm g(td.file("m.gguf"), dev.d);
  ASSERT_TRUE(g.lm);
  const auto ids = some_ids(7, s.V, 5);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = run_batch(g.lm, ids);
  omp_set_num_threads(3);
  const auto three = run_batch(g.lm, ids);
  omp_set_num_threads(saved);
  EXPECT_EQ(0, memcmp(one.data(), three.data(), one.size() * 4));
}

TEST(Lm, FastModeStaysCloseToExact) {
  TempDir td;
  TinySpec s;
  s.wtype = FG_Q8_0;
  const TinyModel m = fgt::tiny_make(s);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf")));
  Dev dev;
  Lm e(td.file("m.gguf"), dev.d, FG_GEMM_EXACT), f(td.file("m.gguf"), dev.d, FG_GEMM_FAST);
  ASSERT_TRUE(e.lm && f.lm);
  const auto ids = some_ids(12, s.V, 9);
  const auto a = run_batch(e.lm, ids), b = run_batch(f.lm, ids);
  std::vector<double> ad(a.begin(), a.end());
  expect_close(b, ad, 1e-4, "fast vs exact");
}

TEST(Lm, NllIsTheLogSoftmaxOfTheLogits) {
  TempDir td;
  TinySpec s;
  const TinyModel m = fgt::tiny_make(s);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf")));
  Dev dev;
  Lm g(td.file("m.gguf"), dev.d);
  ASSERT_TRUE(g.lm);
  const auto ids = some_ids(10, s.V, 4);
  const auto lg = run_batch(g.lm, ids);
  for (size_t chunk : {0, 1, 4}) {
    std::vector<double> nll(ids.size() - 1);
    ASSERT_EQ(FG_OK, fg_lm_nll(g.lm, ids.data(), ids.size(), chunk, nll.data())) << fg_last_error();
    for (size_t i = 0; i + 1 < ids.size(); i++) {
      double mx = -INFINITY, sum = 0;
      for (size_t j = 0; j < s.V; j++) mx = std::max(mx, (double)lg[i * s.V + j]);
      for (size_t j = 0; j < s.V; j++) sum += std::exp((double)lg[i * s.V + j] - mx);
      const double want = mx + std::log(sum) - (double)lg[i * s.V + ids[i + 1]];
      EXPECT_NEAR(want, nll[i], 1e-6) << "token " << i << " chunk " << chunk;
    }
  }
  double one = 0;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_nll(g.lm, ids.data(), 1, 0, &one));
}

TEST(Lm, BadCheckpointsAndCallsAreRefused) {
  TempDir td;
  Dev dev;
  fg_lm *lm = nullptr;
  // Unknown architecture.
  TinySpec s;
  TinyModel m = fgt::tiny_make(s);
  m.s.arch = "mamba";
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("a.gguf")));
  EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_lm_open(td.file("a.gguf").c_str(), dev.d, nullptr, &lm));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "mamba")) << fg_last_error();
  // A missing tensor, named.
  m = fgt::tiny_make(s);
  m.w.erase("model.layers.1.mlp.up_proj.weight");
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("b.gguf")));
  EXPECT_EQ(FG_ERR_NOT_FOUND, fg_lm_open(td.file("b.gguf").c_str(), dev.d, nullptr, &lm));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "blk.1.ffn_up.weight")) << fg_last_error();
  // A shape that disagrees with the hyperparameters, named with both shapes.
  m = fgt::tiny_make(s);
  m.w["model.layers.0.mlp.gate_proj.weight"].resize((s.F - 1) * s.E);
  m.shape["model.layers.0.mlp.gate_proj.weight"] = {s.F - 1, s.E};
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("c.gguf")));
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_lm_open(td.file("c.gguf").c_str(), dev.d, nullptr, &lm));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "blk.0.ffn_gate.weight")) << fg_last_error();
  EXPECT_NE(nullptr, strstr(fg_last_error(), "[95, 64]")) << fg_last_error();
  EXPECT_EQ(nullptr, lm);
  // Calls on a good model.
  m = fgt::tiny_make(s);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("d.gguf")));
  Lm g(td.file("d.gguf"), dev.d);
  ASSERT_TRUE(g.lm);
  fg_lm_cache *c = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_cache_create(g.lm, 1, 4, &c));
  const int32_t bad[2] = {1, (int32_t)s.V};
  const fg_lm_batch b = {2, bad, nullptr, nullptr};
  const float *lg = nullptr;
  size_t rows = 0;
  EXPECT_EQ(FG_ERR_RANGE, fg_lm_forward(g.lm, c, &b, &lg, &rows));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "vocabulary")) << fg_last_error();
  EXPECT_EQ(0u, fg_lm_cache_len(c, 0));
  const int32_t seq[2] = {0, 3};
  const int32_t ok[2] = {1, 2};
  const fg_lm_batch b2 = {2, ok, seq, nullptr};
  EXPECT_EQ(FG_ERR_RANGE, fg_lm_forward(g.lm, c, &b2, &lg, &rows));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_cache_truncate(c, 0, 1));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_cache_create(g.lm, 0, 4, &c));
  fg_lm_cache_free(c);
  // A folder whose config names an architecture forgia does not run.
  fgt::write_file(td.file("config.json"), "{\"model_type\": \"bert\"}", 22);
  EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_lm_open(td.path.c_str(), dev.d, nullptr, &lm));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "bert")) << fg_last_error();
}

TEST(Sample, GreedyFiltersAndSeeds) {
  std::vector<float> lg = {0.0f, 3.0f, 1.0f, 3.0f, -INFINITY, 2.0f};
  fg_sample_params p;
  fg_sample_params_init(&p);
  int32_t id = -1;
  p.temp = 0.0f;
  ASSERT_EQ(FG_OK, fg_sample(&p, lg.data(), lg.size(), 0, &id));
  EXPECT_EQ(1, id);  // the first maximum
  // top-k 1 is greedy at any temperature (ties by lower id).
  p.temp = 5.0f;
  p.top_k = 1;
  p.min_p = 0.0f;
  p.top_p = 1.0f;
  for (uint64_t step = 0; step < 20; step++) {
    ASSERT_EQ(FG_OK, fg_sample(&p, lg.data(), lg.size(), step, &id));
    EXPECT_EQ(1, id);
  }
  // Without filters the draws follow the softmax: frequencies within 3 sigma; -inf never drawn.
  p.top_k = 0;
  p.temp = 1.0f;
  std::vector<int> count(lg.size(), 0);
  const int N = 20000;
  for (int i = 0; i < N; i++) {
    ASSERT_EQ(FG_OK, fg_sample(&p, lg.data(), lg.size(), (uint64_t)i, &id));
    count[id]++;
  }
  double z = 0;
  for (float v : lg) z += std::exp((double)v);
  for (size_t j = 0; j < lg.size(); j++) {
    const double pj = std::exp((double)lg[j]) / z;
    EXPECT_NEAR(pj * N, count[j], 3 * std::sqrt(N * pj * (1 - pj)) + 1) << "id " << j;
  }
  // min-p 0.5 keeps only ids within half the best weight: 1, 3 (e^0 vs e^-1 for 5 is out).
  p.min_p = 0.5f;
  for (int i = 0; i < 200; i++) {
    ASSERT_EQ(FG_OK, fg_sample(&p, lg.data(), lg.size(), (uint64_t)i, &id));
    EXPECT_TRUE(id == 1 || id == 3) << id;
  }
  // The same seed and step give the same draw; errors are named.
  p.min_p = 0.0f;
  int32_t a = 0, b = 0;
  p.seed = 42;
  fg_sample(&p, lg.data(), lg.size(), 7, &a);
  fg_sample(&p, lg.data(), lg.size(), 7, &b);
  EXPECT_EQ(a, b);
  lg[2] = NAN;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_sample(&p, lg.data(), lg.size(), 0, &id));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "logit 2")) << fg_last_error();
  p.top_p = 0.0f;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_sample(&p, lg.data(), lg.size(), 0, &id));
}

}  // namespace
