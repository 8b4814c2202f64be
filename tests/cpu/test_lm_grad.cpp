// Gradients of the language-model runtime (forgia/lm_grad.h) and LoRA adapters on it
// (forgia/lm_adapters.h), on tiny random checkpoints of every architecture: the loss is
// fg_lm_nll's bits, the adapters' gradients match central finite differences of the loss, exact
// mode ignores the thread count, adapters save and load, attach at inference, and bad batches
// are refused before anything runs.
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
using fgt::TinySpec;

struct Dev {
  fg_device *d = nullptr;
  Dev() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &d)) << fg_last_error(); }
  ~Dev() { fg_device_close(d); }
};

struct Lm {
  fg_lm *lm = nullptr;
  Lm(const std::string &path, fg_device *dev) {
    fg_lm_options o = {};
    o.mode = FG_GEMM_EXACT;
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

struct ArchCase {
  const char *name;
  TinySpec spec;
  bool gguf;
};

std::vector<ArchCase> cases() {
  std::vector<ArchCase> v;
  TinySpec s;
  s.L = 2, s.E = 32, s.H = 4, s.KV = 2, s.HD = 8, s.F = 48, s.V = 37;
  v.push_back({"llama_gguf", s, true});
  v.push_back({"llama_folder", s, false});
  s.arch = "qwen2";
  v.push_back({"qwen2", s, true});
  s.arch = "qwen3";
  s.tied = false;
  v.push_back({"qwen3", s, true});
  TinySpec g;
  g.arch = "gemma3";
  g.L = 3, g.E = 32, g.H = 2, g.KV = 1, g.HD = 16, g.F = 48, g.V = 37;
  g.window = 3;
  g.eps = 1e-6f;
  v.push_back({"gemma3", g, true});
  return v;
}

class LmGrad : public ::testing::TestWithParam<ArchCase> {
 protected:
  void SetUp() override {
    m = fgt::tiny_make(GetParam().spec);
    if (GetParam().gguf) {
      path = td.file("m.gguf");
      ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, path)) << fg_last_error();
    } else {
      path = td.path;
      ASSERT_EQ(FG_OK, fgt::tiny_write_hf(m, path)) << fg_last_error();
    }
  }
  TempDir td;
  TinyModel m;
  std::string path;
};

// Two sequences of different lengths, one with only some targets.
struct Batch {
  std::vector<int32_t> ids;
  std::vector<size_t> len;
  std::vector<uint8_t> pred;
  fg_lm_train_batch b = {};
  explicit Batch(size_t V) {
    const auto a = some_ids(7, V, 11), c = some_ids(5, V, 12);
    ids = a;
    ids.insert(ids.end(), c.begin(), c.end());
    len = {7, 5};
    pred.assign(12, 1);
    pred[0] = pred[7] = 0;
    pred[9] = 0;  // a token of the second sequence that is context only
    b = {2, len.data(), ids.data(), pred.data()};
  }
};

std::vector<float> grads(const fg_lm_adapters *ad) {
  const fg_lora_slot *s = nullptr;
  const size_t n = fg_lm_adapters_slots(ad, &s);
  std::vector<float> out;
  for (size_t i = 0; i < n; i++)
    for (const fg_tensor *t : {s[i].lora->a, s[i].lora->b}) out.insert(out.end(), t->grad, t->grad + t->numel);
  return out;
}

void zero_grads(fg_lm_adapters *ad) {
  const fg_lora_slot *s = nullptr;
  const size_t n = fg_lm_adapters_slots(ad, &s);
  for (size_t i = 0; i < n; i++) {
    ASSERT_EQ(FG_OK, fg_tensor_grad_zero(s[i].lora->a, nullptr));
    ASSERT_EQ(FG_OK, fg_tensor_grad_zero(s[i].lora->b, nullptr));
  }
}

// B of every adapter random (a new adapter's B is zero, which would leave A's gradient zero).
void randomize_b(fg_lm_adapters *ad, uint64_t seed) {
  const fg_lora_slot *s = nullptr;
  const size_t n = fg_lm_adapters_slots(ad, &s);
  for (size_t i = 0; i < n; i++) {
    fg_tensor *b = s[i].lora->b;
    std::vector<float> v(b->numel);
    for (auto &x : v) x = fgt::tiny_rand(seed) * 0.5f;
    ASSERT_EQ(FG_OK, fg_tensor_upload(b, v.data(), v.size() * 4, nullptr));
  }
}

TEST_P(LmGrad, LossIsTheNllOfTheRuntime) {
  Dev dev;
  Lm g(path, dev.d);
  ASSERT_TRUE(g.lm);
  Batch bt(m.s.V);
  double sum = 0;
  size_t np = 0;
  ASSERT_EQ(FG_OK, fg_lm_grad(g.lm, &bt.b, 1.0f, nullptr, &sum, &np)) << fg_last_error();
  EXPECT_EQ(9u, np);
  EXPECT_EQ(9u, fg_lm_train_batch_targets(&bt.b));
  // fg_lm_nll per sequence, the targets' values summed in token order: the same bits.
  double want = 0;
  size_t t0 = 0;
  for (size_t s = 0; s < 2; t0 += bt.len[s++]) {
    std::vector<double> nll(bt.len[s] - 1);
    ASSERT_EQ(FG_OK, fg_lm_nll(g.lm, bt.ids.data() + t0, bt.len[s], 0, nll.data())) << fg_last_error();
    for (size_t j = 1; j < bt.len[s]; j++)
      if (bt.pred[t0 + j]) want += nll[j - 1];
  }
  EXPECT_EQ(0, memcmp(&want, &sum, sizeof sum)) << sum << " vs " << want;
}

TEST_P(LmGrad, AdapterGradientsMatchFiniteDifferences) {
  Dev dev;
  Lm g(path, dev.d);
  ASSERT_TRUE(g.lm);
  fg_lm_adapters_config c = {};
  c.targets = FG_LM_ADAPTERS_ALL;
  c.lora = {2, 4.0f, 0.0f};
  c.seed = 5;
  c.mode = FG_GEMM_EXACT;
  fg_lm_adapters *ad = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_adapters_create(g.lm, &c, &ad)) << fg_last_error();
  EXPECT_EQ(m.s.L * 7, fg_lm_adapters_slots(ad, nullptr));
  randomize_b(ad, 99);
  Batch bt(m.s.V);
  double sum = 0;
  size_t np = 0;
  ASSERT_EQ(FG_OK, fg_lm_adapters_grad(ad, &bt.b, 1.0f, nullptr, &sum, &np)) << fg_last_error();
  const std::vector<float> an = grads(ad);
  // Central differences of the f32 loss, on coordinates of A and B of every slot.
  const fg_lora_slot *s = nullptr;
  const size_t n = fg_lm_adapters_slots(ad, &s);
  size_t off = 0, checked = 0, significant = 0;
  double worst = 0;
  std::string at;
  for (size_t i = 0; i < n; i++) {
    for (fg_tensor *t : {s[i].lora->a, s[i].lora->b}) {
      float *p = (float *)t->data;
      for (size_t k : {(size_t)t->numel / 3, (size_t)t->numel - 1}) {
        const float keep = p[k], eps = 1e-2f;
        double lo = 0, hi = 0;
        p[k] = keep + eps;
        ASSERT_EQ(FG_OK, fg_lm_adapters_grad(ad, &bt.b, 1.0f, nullptr, &hi, &np));
        p[k] = keep - eps;
        ASSERT_EQ(FG_OK, fg_lm_adapters_grad(ad, &bt.b, 1.0f, nullptr, &lo, &np));
        p[k] = keep;
        const double fd = (hi - lo) / (2.0 * (double)eps), got = an[off + k];
        // f32 rounding in the forward puts ~1e-4 of noise on a difference quotient of step 1e-2
        const double err = std::fabs(got - fd) / (1e-3 + 3e-2 * std::fabs(fd));
        significant += std::fabs(fd) > 1e-2;
        if (err > worst) {
          worst = err;
          at = "slot " + std::to_string(i) + " (layer " + std::to_string(s[i].layer) + ", " +
               fg_lora_target_name(s[i].target) + ") element " + std::to_string(k) + ": analytic " +
               std::to_string(got) + ", finite difference " + std::to_string(fd);
        }
        checked++;
      }
      off += t->numel;
    }
  }
  EXPECT_EQ(n * 4, checked);
  EXPECT_GE(significant, checked / 3) << "too few coordinates with a gradient well above the noise";
  EXPECT_LE(worst, 1.0) << at;
  fg_lm_adapters_free(ad);
}

TEST_P(LmGrad, ExactModeIgnoresTheThreadCountAndRecomputation) {
  Dev dev;
  Lm g(path, dev.d);
  ASSERT_TRUE(g.lm);
  fg_lm_adapters_config c = {};
  c.targets = FG_LM_ADAPTERS_ALL;
  c.lora = {2, 4.0f, 0.25f};
  c.seed = 5;
  c.mode = FG_GEMM_EXACT;
  fg_lm_adapters *ad = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_adapters_create(g.lm, &c, &ad)) << fg_last_error();
  randomize_b(ad, 3);
  Batch bt(m.s.V);
  const int threads = omp_get_max_threads();
  std::vector<std::vector<float>> got;
  std::vector<double> sums;
  const uint64_t dseed = 77;
  for (int nt : {1, 2, 3}) {
    omp_set_num_threads(nt);
    zero_grads(ad);
    double sum = 0;
    size_t np = 0;
    ASSERT_EQ(FG_OK, fg_lm_adapters_grad(ad, &bt.b, 0.125f, &dseed, &sum, &np)) << fg_last_error();
    got.push_back(grads(ad));
    sums.push_back(sum);
  }
  // Recomputing the internals instead of keeping them: the same bits.
  fg_lm_grad_set_keep_bytes(g.lm, 0);
  {
    zero_grads(ad);
    double sum = 0;
    size_t np = 0;
    ASSERT_EQ(FG_OK, fg_lm_adapters_grad(ad, &bt.b, 0.125f, &dseed, &sum, &np)) << fg_last_error();
    got.push_back(grads(ad));
    sums.push_back(sum);
  }
  omp_set_num_threads(threads);
  for (size_t i = 1; i < got.size(); i++) {
    EXPECT_EQ(0, memcmp(got[0].data(), got[i].data(), got[0].size() * 4)) << "threads case " << i;
    EXPECT_EQ(0, memcmp(&sums[0], &sums[i], sizeof(double)));
  }
  // Dropout masks follow the seed: another seed, other gradients.
  zero_grads(ad);
  const uint64_t other = 78;
  double sum = 0;
  size_t np = 0;
  ASSERT_EQ(FG_OK, fg_lm_adapters_grad(ad, &bt.b, 0.125f, &other, &sum, &np));
  EXPECT_NE(0, memcmp(got[0].data(), grads(ad).data(), got[0].size() * 4));
  fg_lm_adapters_free(ad);
}

// Every weight of the model trained (forgia/lm_full.h): each kind's gradient against central
// finite differences of the loss, on two coordinates of every parameter; the gradient is added
// to what the buffers hold; every check passes before a quantized model is touched.
TEST_P(LmGrad, WeightGradientsMatchFiniteDifferences) {
  Dev dev;
  Lm g(path, dev.d);
  ASSERT_TRUE(g.lm);
  fg_lm_full *f = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_full_create(g.lm, 0, &f)) << fg_last_error();
  fg_tensor *const *ps = nullptr;
  const fg_lm_weight *kinds = nullptr;
  const size_t n = fg_lm_full_params(f, &ps, &kinds);
  const fg_lm_config *cf = fg_lm_get_config(g.lm);
  // model-wide: embedding, final norm, (untied) output; per layer: norms, 7 projections, options
  size_t want = 2 + !cf->tied_output + cf->n_layer * (2 + 7 + (cf->qk_norm ? 2 : 0) + (cf->post_norms ? 2 : 0) +
                                                       (cf->attn_bias ? 3 : 0));
  EXPECT_EQ(want, n);
  Batch bt(m.s.V);
  double sum = 0;
  size_t np = 0;
  ASSERT_EQ(FG_OK, fg_lm_full_grad(f, &bt.b, 1.0f, &sum, &np)) << fg_last_error();
  std::vector<std::vector<float>> an;
  for (size_t i = 0; i < n; i++) an.emplace_back(ps[i]->grad, ps[i]->grad + ps[i]->numel);
  // A second pass adds the same gradient again.
  ASSERT_EQ(FG_OK, fg_lm_full_grad(f, &bt.b, 1.0f, &sum, &np)) << fg_last_error();
  // (exactly twice where one product makes a weight's gradient; the embedding's rows sum
  // several, a repeated token's and the tied head's, so twice within rounding there)
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < ps[i]->numel; k++) {
      if (kinds[i] == FG_LM_W_TOK_EMBD)
        ASSERT_NEAR(2.0f * an[i][k], ps[i]->grad[k], 1e-5 + 1e-5 * std::fabs(an[i][k])) << ps[i]->name << " " << k;
      else
        ASSERT_EQ(2.0f * an[i][k], ps[i]->grad[k]) << ps[i]->name << " " << k;
    }
  size_t checked = 0, significant = 0;
  double worst = 0;
  std::string at;
  for (size_t i = 0; i < n; i++) {
    ASSERT_EQ(FG_F32, ps[i]->dtype);
    float *p = (float *)ps[i]->data;
    // the embedding's rows of tokens in the batch; elsewhere two spread coordinates
    std::vector<size_t> ks = {(size_t)ps[i]->numel / 3, (size_t)ps[i]->numel - 1};
    if (kinds[i] == FG_LM_W_TOK_EMBD) ks = {(size_t)bt.ids[3] * cf->n_embd + 5, (size_t)bt.ids[8] * cf->n_embd + 1};
    for (size_t k : ks) {
      const float keep = p[k], eps = 1e-2f;
      double lo = 0, hi = 0;
      p[k] = keep + eps;
      ASSERT_EQ(FG_OK, fg_lm_grad(g.lm, &bt.b, 1.0f, nullptr, &hi, &np));
      p[k] = keep - eps;
      ASSERT_EQ(FG_OK, fg_lm_grad(g.lm, &bt.b, 1.0f, nullptr, &lo, &np));
      p[k] = keep;
      const double fd = (hi - lo) / (2.0 * (double)eps), got = an[i][k];
      const double err = std::fabs(got - fd) / (1e-3 + 3e-2 * std::fabs(fd));
      significant += std::fabs(fd) > 1e-2;
      if (err > worst) {
        worst = err;
        at = std::string(ps[i]->name) + " (" + fg_lm_weight_kind_name(kinds[i]) + ") element " + std::to_string(k) +
             ": analytic " + std::to_string(got) + ", finite difference " + std::to_string(fd);
      }
      checked++;
    }
  }
  EXPECT_EQ(2 * n, checked);
  EXPECT_GE(significant, checked / 3) << "too few coordinates with a gradient well above the noise";
  EXPECT_LE(worst, 1.0) << at;
  fg_lm_full_free(f);
}

INSTANTIATE_TEST_SUITE_P(Archs, LmGrad, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<ArchCase> &i) { return std::string(i.param.name); });

TEST(LmAdapters, SaveLoadAndAttach) {
  TempDir td;
  TinySpec sp;
  sp.L = 2, sp.E = 32, sp.H = 4, sp.KV = 2, sp.HD = 8, sp.F = 48, sp.V = 37;
  const TinyModel m = fgt::tiny_make(sp);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf")));
  Dev dev;
  Lm g(td.file("m.gguf"), dev.d);
  ASSERT_TRUE(g.lm);
  fg_lm_adapters_config c = {};
  c.targets = (1u << FG_LORA_Q) | (1u << FG_LORA_DOWN);
  c.lora = {3, 6.0f, 0.0f};
  c.seed = 9;
  fg_lm_adapters *a = nullptr, *b = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_adapters_create(g.lm, &c, &a));
  const fg_lora_slot *s = nullptr;
  ASSERT_EQ(4u, fg_lm_adapters_slots(a, &s));
  EXPECT_EQ(0u, s[0].layer);
  EXPECT_EQ(FG_LORA_Q, s[0].target);
  EXPECT_EQ(FG_LORA_DOWN, s[1].target);
  EXPECT_EQ(1u, s[2].layer);
  randomize_b(a, 4);
  const auto ids = some_ids(6, m.s.V, 1);
  std::vector<double> base(5), adapted(5), loaded(5);
  ASSERT_EQ(FG_OK, fg_lm_nll(g.lm, ids.data(), 6, 0, base.data()));
  fg_lm_adapters_attach(a, true);
  ASSERT_EQ(FG_OK, fg_lm_nll(g.lm, ids.data(), 6, 0, adapted.data()));
  EXPECT_NE(0, memcmp(base.data(), adapted.data(), 5 * sizeof(double)));
  ASSERT_EQ(FG_OK, fg_lm_adapters_save(a, td.file("ad.safetensors").c_str())) << fg_last_error();
  fg_lm_adapters_free(a);  // detaches
  std::vector<double> again(5);
  ASSERT_EQ(FG_OK, fg_lm_nll(g.lm, ids.data(), 6, 0, again.data()));
  EXPECT_EQ(0, memcmp(base.data(), again.data(), 5 * sizeof(double)));
  // Another seed, then the file's values: the adapted model again, bit for bit.
  c.seed = 10;
  ASSERT_EQ(FG_OK, fg_lm_adapters_create(g.lm, &c, &b));
  ASSERT_EQ(FG_OK, fg_lm_adapters_load(b, td.file("ad.safetensors").c_str())) << fg_last_error();
  fg_lm_adapters_attach(b, true);
  ASSERT_EQ(FG_OK, fg_lm_nll(g.lm, ids.data(), 6, 0, loaded.data()));
  EXPECT_EQ(0, memcmp(adapted.data(), loaded.data(), 5 * sizeof(double)));
  fg_lm_adapters_free(b);
  // A set of another shape refuses the file and keeps its values.
  c.lora.rank = 2;
  ASSERT_EQ(FG_OK, fg_lm_adapters_create(g.lm, &c, &b));
  EXPECT_NE(FG_OK, fg_lm_adapters_load(b, td.file("ad.safetensors").c_str()));
  fg_lm_adapters_free(b);
  c.targets = 0;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_adapters_create(g.lm, &c, &b));
  c.targets = 0x80;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_adapters_create(g.lm, &c, &b));
  c.targets = 1;
  c.lora.rank = 1000;
  EXPECT_NE(FG_OK, fg_lm_adapters_create(g.lm, &c, &b));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "layer 0")) << fg_last_error();
}

TEST(LmFull, QuantizedWeightsAreRefusedAndNothingChanges) {
  TinySpec s;
  s.wtype = FG_Q8_0;
  s.E = 64, s.F = 64, s.HD = 16;
  TinyModel m = fgt::tiny_make(s);
  TempDir td;
  const std::string path = td.file("q.gguf");
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, path)) << fg_last_error();
  Dev dev;
  Lm g(path, dev.d);
  ASSERT_TRUE(g.lm);
  fg_lm_weight_info before = {}, after = {};
  ASSERT_TRUE(fg_lm_weight_find(g.lm, 0, FG_LM_W_ATTN_NORM, &before));
  fg_lm_full *f = nullptr;
  EXPECT_EQ(FG_ERR_QUANTIZED_BASE, fg_lm_full_create(g.lm, 0, &f));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "token_embd.weight")) << fg_last_error();
  EXPECT_NE(nullptr, strstr(fg_last_error(), "q8_0")) << fg_last_error();
  EXPECT_EQ(nullptr, f);
  ASSERT_TRUE(fg_lm_weight_find(g.lm, 0, FG_LM_W_ATTN_NORM, &after));
  EXPECT_EQ(before.data, after.data);  // not copied: the refusal came first
  EXPECT_STREQ("blk.0.attn_norm.weight", after.name);
  EXPECT_FALSE(fg_lm_weight_find(g.lm, 0, FG_LM_W_OUTPUT, &after));   // tied
  EXPECT_FALSE(fg_lm_weight_find(g.lm, 0, FG_LM_W_Q_NORM, &after));   // llama has none
  EXPECT_FALSE(fg_lm_weight_find(g.lm, 2, FG_LM_W_Q, &after));        // past the last layer
  EXPECT_FALSE(fg_lm_weight_find(g.lm, 0, FG_LM_W_COUNT, &after));
}

// Frozen kinds get no tensor; written weights are what the next pass computes with.
TEST(LmFull, FrozenKindsAndWrittenWeights) {
  TinySpec s;
  TinyModel m = fgt::tiny_make(s);
  TempDir td;
  const std::string path = td.file("m.gguf");
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, path)) << fg_last_error();
  Dev dev;
  Lm g(path, dev.d);
  ASSERT_TRUE(g.lm);
  fg_lm_full *f = nullptr;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_full_create(g.lm, 0xffffffffu, &f));
  ASSERT_EQ(FG_OK, fg_lm_full_create(g.lm, FG_LM_FULL_FREEZE(FG_LM_W_TOK_EMBD) | FG_LM_FULL_FREEZE(FG_LM_W_ATTN_NORM), &f))
      << fg_last_error();
  fg_tensor *const *ps = nullptr;
  const fg_lm_weight *kinds = nullptr;
  const size_t n = fg_lm_full_params(f, &ps, &kinds);
  EXPECT_EQ(1 + 2 * 8u, n);  // output_norm, and per layer ffn_norm + 7 projections
  for (size_t i = 0; i < n; i++) EXPECT_TRUE(kinds[i] != FG_LM_W_TOK_EMBD && kinds[i] != FG_LM_W_ATTN_NORM);
  const int32_t ids[4] = {1, 2, 3, 4};
  std::vector<double> a(4), b(4);
  ASSERT_EQ(FG_OK, fg_lm_nll(g.lm, ids, 4, 0, a.data()));
  EXPECT_STREQ("output_norm.weight", ps[0]->name);
  EXPECT_STREQ("blk.0.attn_q.weight", ps[1]->name);
  EXPECT_STREQ("blk.0.ffn_norm.weight", ps[5]->name);
  float *w = (float *)ps[5]->data;
  for (size_t k = 0; k < ps[5]->numel; k++) w[k] *= 1.5f;
  ASSERT_EQ(FG_OK, fg_lm_nll(g.lm, ids, 4, 0, b.data()));
  EXPECT_NE(a[2], b[2]);
  // the file the model came from is unchanged: a second model reads the old values
  Lm g2(path, dev.d);
  std::vector<double> c(4);
  ASSERT_EQ(FG_OK, fg_lm_nll(g2.lm, ids, 4, 0, c.data()));
  EXPECT_EQ(0, memcmp(a.data(), c.data(), 4 * sizeof(double)));
  fg_lm_full_free(f);
}

TEST(LmGradErrors, BadBatchesAreRefused) {
  TempDir td;
  TinySpec sp;
  sp.L = 1, sp.E = 32, sp.H = 4, sp.KV = 2, sp.HD = 8, sp.F = 48, sp.V = 37;
  const TinyModel m = fgt::tiny_make(sp);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf")));
  Dev dev;
  Lm g(td.file("m.gguf"), dev.d);
  ASSERT_TRUE(g.lm);
  std::vector<int32_t> ids = {1, 2, 3, 4};
  std::vector<size_t> len = {4};
  fg_lm_train_batch b = {1, len.data(), ids.data(), nullptr};
  double s = 0;
  size_t np = 0;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_grad(g.lm, nullptr, 1.0f, nullptr, &s, &np));
  ids[2] = 37;
  EXPECT_EQ(FG_ERR_RANGE, fg_lm_grad(g.lm, &b, 1.0f, nullptr, &s, &np));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "token 2")) << fg_last_error();
  ids[2] = -1;
  EXPECT_EQ(FG_ERR_RANGE, fg_lm_grad(g.lm, &b, 1.0f, nullptr, &s, &np));
  ids[2] = 3;
  len = {0};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_grad(g.lm, &b, 1.0f, nullptr, &s, &np));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "sequence 0 is empty")) << fg_last_error();
  len = {4};
  std::vector<uint8_t> pred = {1, 1, 1, 1};
  b.predict = pred.data();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_grad(g.lm, &b, 1.0f, nullptr, &s, &np));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "first of sequence 0")) << fg_last_error();
  pred = {0, 0, 0, 0};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lm_grad(g.lm, &b, 1.0f, nullptr, &s, &np));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "no target")) << fg_last_error();
  // A one-token sequence beside a longer one is context for nothing, and allowed.
  std::vector<int32_t> ids2 = {5, 1, 2};
  std::vector<size_t> len2 = {1, 2};
  fg_lm_train_batch b2 = {2, len2.data(), ids2.data(), nullptr};
  ASSERT_EQ(FG_OK, fg_lm_grad(g.lm, &b2, 1.0f, nullptr, &s, &np)) << fg_last_error();
  EXPECT_EQ(1u, np);
}

}  // namespace
