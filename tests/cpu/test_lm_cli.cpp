// forgia eval, generate and chat on a tiny model folder that carries a real tokenizer (the
// committed byte-level BPE fixture: 700 pieces and 2 added tokens, under a 704-row embedding): their output against the C API, their
// determinism, and their usage errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "lm_tiny.h"
#include "testutil.h"

namespace {

using fgt::TempDir;

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }

std::vector<double> numbers(const std::string &json, const std::string &key) {
  std::vector<double> v;
  const size_t a = json.find("\"" + key + "\": [");
  if (a == std::string::npos) return v;
  const size_t b = json.find(']', a);
  std::stringstream ss(json.substr(a + key.size() + 5, b - a - key.size() - 5));
  std::string tok;
  while (std::getline(ss, tok, ',')) v.push_back(std::strtod(tok.c_str(), nullptr));
  return v;
}

struct TinyFolder {
  TempDir td;
  std::string dir;
  TinyFolder() {
    fgt::TinySpec s;
    s.V = 704;
    const fgt::TinyModel m = fgt::tiny_make(s);
    dir = td.path;
    EXPECT_EQ(FG_OK, fgt::tiny_write_hf(m, dir)) << fg_last_error();
    for (const char *f : {"tokenizer.json", "tokenizer_config.json"}) {
      const auto b = fgt::read_file(std::string(FORGIA_SOURCE_DIR) + "/tests/data/tok/gpt2/" + f);
      fgt::write_file(dir + "/" + f, b.data(), b.size());
    }
    const std::string text = "The quick brown fox jumps over the lazy dog.\nIt was 42 degrees, or so they said!\n";
    fgt::write_file(dir + "/text.txt", text.data(), text.size());
  }
};

TEST(LmCli, EvalJsonEqualsTheApiInExactMode) {
  TinyFolder f;
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli("eval " + f.dir + " --file " + f.dir + "/text.txt --json --mode exact --device cpu"), &out,
                        &err))
      << err;
  EXPECT_NE(std::string::npos, err.find("exact mode")) << err;
  const auto ids = numbers(out, "ids"), nll = numbers(out, "nll");
  ASSERT_GT(ids.size(), 10u);
  ASSERT_EQ(ids.size() - 1, nll.size());
  // The ids are forgia tokenize's.
  std::string tok;
  ASSERT_EQ(0, fgt::run(cli("tokenize " + f.dir + " --text \"$(cat " + f.dir + "/text.txt)\""), &tok, &err)) << err;
  // (the shell's $(...) drops the final newline: compare the shared prefix)
  std::stringstream ts(tok);
  for (size_t i = 0; i + 1 < ids.size(); i++) {
    double v;
    ts >> v;
    EXPECT_EQ(ids[i], v) << "id " << i;
  }
  // The NLLs are fg_lm_nll's, bit for bit (printed with 17 digits).
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  fg_lm_options o = {};
  o.mode = FG_GEMM_EXACT;
  fg_lm *lm = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_open(f.dir.c_str(), dev, &o, &lm)) << fg_last_error();
  std::vector<int32_t> iv(ids.begin(), ids.end());
  std::vector<double> want(iv.size() - 1);
  ASSERT_EQ(FG_OK, fg_lm_nll(lm, iv.data(), iv.size(), 0, want.data())) << fg_last_error();
  double sum = 0;
  for (size_t i = 0; i < want.size(); i++) {
    EXPECT_EQ(want[i], nll[i]) << "token " << i;
    sum += want[i];
  }
  const size_t p = out.find("\"ppl\": ");
  ASSERT_NE(std::string::npos, p);
  EXPECT_NEAR(std::exp(sum / (double)want.size()), std::strtod(out.c_str() + p + 7, nullptr), 1e-9);
  fg_lm_free(lm);
  fg_device_close(dev);
  // Plain output and --ctx.
  ASSERT_EQ(0, fgt::run(cli("eval " + f.dir + " --file " + f.dir + "/text.txt --ctx 5"), &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("tokens 5\n")) << out;
}

TEST(LmCli, GreedyGenerationIsTheArgmaxOfEachStep) {
  TinyFolder f;
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli("generate " + f.dir + " --ids \"5 17 300\" -n 6 --temp 0 --print-ids --mode exact"), &out,
                        &err))
      << err;
  std::vector<int32_t> got;
  std::stringstream ss(out);
  for (int v; ss >> v;) got.push_back(v);
  ASSERT_EQ(6u, got.size()) << out;
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  fg_lm_options o = {};
  o.mode = FG_GEMM_EXACT;
  fg_lm *lm = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_open(f.dir.c_str(), dev, &o, &lm)) << fg_last_error();
  std::vector<int32_t> seq = {5, 17, 300};
  for (size_t k = 0; k < 6; k++) {
    fg_lm_cache *c = nullptr;
    ASSERT_EQ(FG_OK, fg_lm_cache_create(lm, 1, seq.size(), &c));
    const fg_lm_batch b = {seq.size(), seq.data(), nullptr, nullptr};
    const float *lg = nullptr;
    size_t rows = 0;
    ASSERT_EQ(FG_OK, fg_lm_forward(lm, c, &b, &lg, &rows));
    const float *last = lg + (rows - 1) * 704;
    int32_t best = 0;
    for (int32_t j = 1; j < 704; j++)
      if (last[j] > last[best]) best = j;
    EXPECT_EQ(best, got[k]) << "step " << k;
    seq.push_back(got[k]);
    fg_lm_cache_free(c);
  }
  fg_lm_free(lm);
  fg_device_close(dev);
  // The text form prints the same tokens' text.
  std::string text, dtext;
  ASSERT_EQ(0, fgt::run(cli("generate " + f.dir + " --ids \"5 17 300\" -n 6 --temp 0 --mode exact"), &text, &err))
      << err;
  std::string ids_arg;
  for (int32_t v : got) ids_arg += std::to_string(v) + " ";
  ASSERT_EQ(0, fgt::run(cli("detokenize " + f.dir + " \"" + ids_arg + "\""), &dtext, &err)) << err;
  EXPECT_EQ(dtext, text);
}

TEST(LmCli, SeedsReproduceSampling) {
  TinyFolder f;
  std::string a, b, err;
  const std::string args = "generate " + f.dir + " --prompt \"Once upon\" -n 12 --temp 1.2 --top-k 0 --top-p 1 --min-p 0 "
                           "--print-ids --seed 3";
  ASSERT_EQ(0, fgt::run(cli(args), &a, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli(args + " --threads 1"), &b, &err)) << err;
  EXPECT_EQ(a, b);
  EXPECT_NE(std::string::npos, err.find("generated")) << err;
}

// Two turns, then /reset and the first turn again: the second conversation starts from a
// truncated cache and must say what the first said (same seed stream position aside, so
// greedy), and a rerun of the whole session gives the same bytes.
TEST(LmCli, ChatKeepsTheConversation) {
  TinyFolder f;
  std::string out, again, err;
  const std::string session = "printf 'hello there\\n\\nhow are you\\n/reset\\nhello there\\n' | ";
  const std::string cmd = cli("chat " + f.dir + " --template smollm2 -n 6 --temp 0 --mode exact");
  ASSERT_EQ(0, fgt::run(session + cmd, &out, &err)) << err;
  EXPECT_EQ("", err);
  ASSERT_EQ(0, fgt::run(session + cmd, &again, &err)) << err;
  EXPECT_EQ(out, again);
  // The answer to the first turn, alone, is what generate gives for the same rendered prompt.
  std::string first, gerr;
  const std::string msgs = f.dir + "/m.json";
  const std::string js = "[{\"role\": \"user\", \"content\": \"hello there\"}]";
  fgt::write_file(msgs, js.data(), js.size());
  ASSERT_EQ(0, fgt::run(cli("generate " + f.dir + " --chat " + msgs + " --template smollm2 -n 6 --temp 0 --mode exact"),
                        &first, &gerr))
      << gerr;
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(0u, out.find(first)) << "chat:\n" << out << "\ngenerate:\n" << first;
  EXPECT_NE(std::string::npos, out.rfind(first)) << out;
}

// Adapters applied without merging give the NLL of the model with the adapters merged into
// its weights (W + scale B A, computed here in f64).
TEST(LmCli, AdaptersEqualTheMergedModel) {
  fgt::TinySpec s;
  s.V = 704;
  fgt::TinyModel m = fgt::tiny_make(s);
  TempDir base, merged;
  ASSERT_EQ(FG_OK, fgt::tiny_write_hf(m, base.path)) << fg_last_error();
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  struct Ad {
    uint32_t layer;
    fg_lora_target t;
    const char *hf;
    size_t in, out;
  } ads[2] = {{0, FG_LORA_Q, "model.layers.0.self_attn.q_proj.weight", s.E, s.H * s.HD},
              {1, FG_LORA_DOWN, "model.layers.1.mlp.down_proj.weight", s.F, s.E}};
  fg_lora *l[2] = {nullptr, nullptr};
  fg_lora_slot slots[2];
  const float alpha = 6.0f;
  uint64_t st = 99;
  for (int i = 0; i < 2; i++) {
    const fg_lora_config c = {3, alpha, 0.0f};
    ASSERT_EQ(FG_OK, fg_lora_create(dev, ads[i].in, ads[i].out, &c, 5 + i, &l[i])) << fg_last_error();
    float *b = (float *)l[i]->b->data;
    for (uint64_t j = 0; j < l[i]->b->numel; j++) b[j] = fgt::tiny_rand(st) * 0.5f;
    const float *a = (const float *)l[i]->a->data;
    auto &w = m.w.at(ads[i].hf);
    for (size_t o = 0; o < ads[i].out; o++)
      for (size_t k = 0; k < ads[i].in; k++) {
        double d = 0;
        for (size_t r = 0; r < 3; r++) d += (double)b[o * 3 + r] * (double)a[r * ads[i].in + k];
        w[o * ads[i].in + k] = (float)((double)w[o * ads[i].in + k] + (double)(alpha / 3.0f) * d);
      }
    slots[i] = {ads[i].layer, ads[i].t, l[i]};
  }
  ASSERT_EQ(FG_OK, fg_lora_save((base.path + "/adapters.safetensors").c_str(), slots, 2)) << fg_last_error();
  for (auto *x : l) fg_lora_free(x);
  fg_device_close(dev);
  ASSERT_EQ(FG_OK, fgt::tiny_write_hf(m, merged.path)) << fg_last_error();
  for (const std::string &d : {base.path, merged.path})
    for (const char *f : {"tokenizer.json", "tokenizer_config.json"}) {
      const auto b = fgt::read_file(std::string(FORGIA_SOURCE_DIR) + "/tests/data/tok/gpt2/" + f);
      fgt::write_file(d + "/" + f, b.data(), b.size());
    }
  const std::string text = "Adapters change what a model says, a little.";
  fgt::write_file(base.file("t.txt"), text.data(), text.size());
  std::string a_out, m_out, plain, err;
  ASSERT_EQ(0, fgt::run(cli("eval " + base.path + " --file " + base.file("t.txt") + " --json --adapters " +
                            base.file("adapters.safetensors") + " --alpha 6"),
                        &a_out, &err))
      << err;
  EXPECT_NE(std::string::npos, err.find("LoRA adapters")) << err;
  ASSERT_EQ(0, fgt::run(cli("eval " + merged.path + " --file " + base.file("t.txt") + " --json"), &m_out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli("eval " + base.path + " --file " + base.file("t.txt") + " --json"), &plain, &err)) << err;
  const auto na = numbers(a_out, "nll"), nm = numbers(m_out, "nll"), np = numbers(plain, "nll");
  ASSERT_EQ(na.size(), nm.size());
  double moved = 0;
  for (size_t i = 0; i < na.size(); i++) {
    EXPECT_NEAR(nm[i], na[i], 1e-4) << "token " << i;
    moved = std::max(moved, std::fabs(np[i] - na[i]));
  }
  EXPECT_GT(moved, 1e-3) << "the adapters must change the result for this test to mean anything";
  // Without --alpha and without a trainer state beside them, adapters are a usage error.
  EXPECT_EQ(2, fgt::run(cli("eval " + base.path + " --file " + base.file("t.txt") + " --adapters " + base.path), &a_out,
                        &err));
  EXPECT_NE(std::string::npos, err.find("--alpha")) << err;
}

TEST(LmCli, UsageErrors) {
  TinyFolder f;
  std::string out, err;
  EXPECT_EQ(2, fgt::run(cli("eval " + f.dir), &out, &err));
  EXPECT_NE(std::string::npos, err.find("--file")) << err;
  EXPECT_EQ(2, fgt::run(cli("eval " + f.dir + " --file x --mode turbo"), &out, &err));
  EXPECT_NE(std::string::npos, err.find("exact or fast")) << err;
  EXPECT_EQ(2, fgt::run(cli("generate " + f.dir + " --prompt a --ids 1"), &out, &err));
  EXPECT_NE(std::string::npos, err.find("exactly one")) << err;
  EXPECT_EQ(2, fgt::run(cli("generate " + f.dir + " --ids \"1 x\""), &out, &err));
  EXPECT_EQ(2, fgt::run(cli("generate " + f.dir + " --ids \"1 704\""), &out, &err));
  EXPECT_NE(std::string::npos, err.find("0..703")) << err;
  EXPECT_EQ(2, fgt::run(cli("generate " + f.dir + " --ids 1 --temp -1"), &out, &err));
  EXPECT_EQ(2, fgt::run(cli("generate " + f.dir + " --ids 1 --device nosuch"), &out, &err));
  EXPECT_EQ(1, fgt::run(cli("eval " + f.dir + "/nothing --file " + f.dir + "/text.txt"), &out, &err));
  EXPECT_EQ(1, std::count(err.begin(), err.end(), '\n')) << err;
}

}  // namespace
