// forgia optim --state-in/--state-out: a run of N steps equals N/2 steps that write the
// optimizer's (or set's) state, then N/2 more that load it (--first-grad N/2+1, the first
// half's output as P): the parameters and the final save-state bytes are identical. Also the
// config fields of Muon and APOLLO, and states that do not fit refused before any output.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

namespace {

const int N = 6;

// P: w [4,3] f32, b [3] f32, h [2,3] bf16 (a 16-bit parameter: its master travels in the
// state). G: <name>@k for k = 1..N, except b on step 3 (a skipped parameter).
void write_inputs(const fgt::TempDir &d) {
  const uint64_t sw[2] = {4, 3}, sb[1] = {3}, sh[2] = {2, 3};
  std::vector<float> w = fgt::gaussian(12, 1), b = fgt::gaussian(3, 2), hf = fgt::gaussian(6, 3);
  std::vector<uint16_t> h(6);
  for (size_t i = 0; i < 6; i++) h[i] = fg_f32_to_bf16(hf[i]);
  const fg_st_write_tensor p[3] = {{"w", FG_F32, 2, sw, w.data(), 48}, {"b", FG_F32, 1, sb, b.data(), 12},
                                   {"h", FG_BF16, 2, sh, h.data(), 12}};
  ASSERT_EQ(FG_OK, fg_st_save(d.file("p.safetensors").c_str(), p, 3, nullptr, 0)) << fg_last_error();
  std::vector<std::string> names;
  std::vector<std::vector<float>> vals;
  std::vector<const uint64_t *> shapes;
  std::vector<int> ndims;
  for (int k = 1; k <= N; k++) {
    const char *ns[3] = {"w", "b", "h"};
    const uint64_t *ss[3] = {sw, sb, sh};
    const size_t cnt[3] = {12, 3, 6};
    for (int i = 0; i < 3; i++) {
      if (i == 1 && k == 3) continue;
      names.push_back(std::string(ns[i]) + "@" + std::to_string(k));
      vals.push_back(fgt::gaussian(cnt[i], 100 * (uint64_t)k + (uint64_t)i, 2.0f));
      shapes.push_back(ss[i]);
      ndims.push_back(i == 1 ? 1 : 2);
    }
  }
  std::vector<fg_st_write_tensor> g;
  for (size_t i = 0; i < names.size(); i++)
    g.push_back({names[i].c_str(), FG_F32, ndims[i], shapes[i], vals[i].data(), vals[i].size() * 4});
  ASSERT_EQ(FG_OK, fg_st_save(d.file("g.safetensors").c_str(), g.data(), g.size(), nullptr, 0)) << fg_last_error();
}

int optim(const fgt::TempDir &d, const std::string &params, int steps, int first, const std::string &out,
          const std::string &extra, std::string *err) {
  return fgt::run(std::string(FORGIA_CLI) + " optim --device cpu --config " + d.file("c.json") + " --params " +
                      params + " --grads " + d.file("g.safetensors") + " --steps " + std::to_string(steps) +
                      " --first-grad " + std::to_string(first) + " --out " + out + " " + extra,
                  nullptr, err);
}

// N steps vs N/2 + save + load + N/2: --out and --state-out byte-identical.
void check_split(const std::string &cfg) {
  SCOPED_TRACE(cfg);
  fgt::TempDir d;
  write_inputs(d);
  fgt::write_file(d.file("c.json"), cfg.data(), cfg.size());
  std::string err;
  ASSERT_EQ(0, optim(d, d.file("p.safetensors"), N, 1, d.file("full.st"), "--state-out " + d.file("full.state"), &err))
      << err;
  ASSERT_EQ(0, optim(d, d.file("p.safetensors"), N / 2, 1, d.file("half.st"), "--state-out " + d.file("half.state"), &err))
      << err;
  ASSERT_EQ(0, optim(d, d.file("half.st"), N / 2, N / 2 + 1, d.file("res.st"),
                     "--state-in " + d.file("half.state") + " --state-out " + d.file("res.state"), &err))
      << err;
  const auto full = fgt::read_file(d.file("full.st")), res = fgt::read_file(d.file("res.st"));
  ASSERT_FALSE(full.empty());
  EXPECT_EQ(full, res);
  const auto fs = fgt::read_file(d.file("full.state")), rs = fgt::read_file(d.file("res.state"));
  ASSERT_FALSE(fs.empty());
  EXPECT_EQ(fs, rs);
  // Without the state the second half differs (the state is what carries the run).
  ASSERT_EQ(0, optim(d, d.file("half.st"), N / 2, N / 2 + 1, d.file("cold.st"), "", &err)) << err;
  EXPECT_NE(full, fgt::read_file(d.file("cold.st")));
}

}  // namespace

TEST(OptimCliState, SgdMomentumSplitRunIsExact) {
  check_split("{\"optimizer\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.9, \"dampening\": 0.1, \"weight_decay\": 0.01,"
              " \"params\": [\"w\", \"b\", {\"tensor\": \"h\", \"name\": null}]}");
}

TEST(OptimCliState, AdamwSplitRunIsExact) {
  check_split("{\"optimizer\": \"adamw\", \"lr\": 0.01, \"state_dtype\": \"bf16\", \"params\": [\"w\", \"b\", \"h\"]}");
}

TEST(OptimCliState, SetWithClipAndScheduleSplitRunIsExact) {
  check_split("{\"set\": [{\"optimizer\": \"adamw\", \"lr\": 0.02, \"params\": [\"w\"]},"
              " {\"optimizer\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9, \"nesterov\": true, \"params\": [\"b\", \"h\"]}],"
              " \"clip_grad_norm\": 0.5,"
              " \"schedule\": {\"kind\": \"warmup_cosine\", \"total_steps\": 6, \"warmup_steps\": 2, \"min_factor\": 0.1}}");
}

TEST(OptimCliState, StateThatDoesNotFitIsRefusedBeforeAnyOutput) {
  fgt::TempDir d;
  write_inputs(d);
  std::string cfg = "{\"optimizer\": \"sgd\", \"momentum\": 0.9, \"params\": [\"w\", \"b\", \"h\"]}";
  fgt::write_file(d.file("c.json"), cfg.data(), cfg.size());
  std::string err;
  ASSERT_EQ(0, optim(d, d.file("p.safetensors"), 2, 1, d.file("o.st"), "--state-out " + d.file("sgd.state"), &err)) << err;
  // SGD's frame into AdamW, into a set, and a truncated frame: exit 1, nothing written.
  const std::string adamw = "{\"optimizer\": \"adamw\", \"params\": [\"w\", \"b\", \"h\"]}";
  const std::string set = "{\"set\": [{\"optimizer\": \"sgd\", \"momentum\": 0.9, \"params\": [\"w\", \"b\", \"h\"]}]}";
  auto st = fgt::read_file(d.file("sgd.state"));
  fgt::write_file(d.file("cut.state"), st.data(), st.size() - 1);
  const std::pair<std::string, std::string> cases[] = {
      {adamw, "sgd.state"}, {set, "sgd.state"}, {cfg, "cut.state"}, {cfg, "missing.state"}};
  for (const auto &c : cases) {
    fgt::write_file(d.file("c.json"), c.first.data(), c.first.size());
    EXPECT_EQ(1, optim(d, d.file("p.safetensors"), 2, 1, d.file("x.st"),
                       "--state-in " + d.file(c.second) + " --state-out " + d.file("x.state"), &err))
        << c.first << " " << c.second;
    EXPECT_NE(std::string::npos, err.find(c.second)) << err;
    EXPECT_TRUE(fgt::read_file(d.file("x.st")).empty());
    EXPECT_TRUE(fgt::read_file(d.file("x.state")).empty());
  }
}

TEST(OptimCliState, MuonAndApolloFieldsAreCheckedByName) {
  fgt::TempDir d;
  write_inputs(d);
  std::string err;
  auto run_cfg = [&](const std::string &cfg) {
    fgt::write_file(d.file("c.json"), cfg.data(), cfg.size());
    return optim(d, d.file("p.safetensors"), 1, 1, d.file("o.st"), "", &err);
  };
  const std::pair<const char *, const char *> bad[] = {
      {"{\"optimizer\": \"muon\", \"rank\": 4}", "muon: unknown field \"rank\""},
      {"{\"optimizer\": \"muon\", \"scale\": 2}", "\"spectral\" or \"match_rms_adamw\""},
      {"{\"optimizer\": \"muon\", \"fallback\": {\"momentum\": 0.9}}", "muon fallback: unknown field \"momentum\""},
      {"{\"optimizer\": \"muon\", \"ns_steps\": 2.5}", "\"ns_steps\" must be a whole number"},
      {"{\"optimizer\": \"apollo\", \"fallback\": {}}", "apollo: unknown field \"fallback\""},
      {"{\"optimizer\": \"apollo\", \"scale_type\": \"row\"}", "\"channel\" or \"tensor\""},
      {"{\"optimizer\": \"apollo-mini\", \"nesterov\": true}", "apollo-mini: unknown field \"nesterov\""},
      {"{\"optimizer\": \"apollo\", \"seed\": -1}", "\"seed\" must be a whole number"},
      {"{\"optimizer\": \"apollo\", \"seed\": \"18446744073709551616\"}", "\"seed\" must be a whole number"},
      {"{\"optimizer\": \"adamw\", \"fallback_params\": [\"b\"]}", "adamw: unknown field \"fallback_params\""},
  };
  for (const auto &b : bad) {
    EXPECT_EQ(2, run_cfg(b.first)) << b.first;
    EXPECT_NE(std::string::npos, err.find(b.second)) << b.first << ": " << err;
  }
}

TEST(OptimCliState, MuonSplitRunIsExact) {
  check_split("{\"optimizer\": \"muon\", \"lr\": 0.02, \"momentum\": 0.9, \"nesterov\": true, \"ns_steps\": 4,"
              " \"weight_decay\": 0.01, \"scale\": \"match_rms_adamw\", \"state_dtype\": \"bf16\","
              " \"fallback\": {\"lr\": 0.001, \"beta1\": 0.8, \"beta2\": 0.9, \"eps\": 1e-8, \"weight_decay\": 0.05,"
              " \"state_dtype\": \"bf16\", \"second_moment_dtype\": \"f32\"},"
              " \"params\": [\"w\", \"b\"], \"fallback_params\": [{\"tensor\": \"h\", \"name\": null}]}");
}

TEST(OptimCliState, ApolloSplitRunIsExact) {
  // gap 2: the projection is regenerated across the split, from the slot seed in the state.
  check_split("{\"optimizer\": \"apollo\", \"lr\": 0.01, \"beta1\": 0.9, \"beta2\": 0.99, \"eps\": 1e-6,"
              " \"weight_decay\": 0.1, \"rank\": 2, \"update_proj_gap\": 2, \"scale\": 2, \"scale_type\": \"channel\","
              " \"correct_bias\": true, \"scale_front\": false, \"disable_norm_growth_limiter\": false,"
              " \"seed\": \"12345678901234567890\", \"params\": [\"w\", \"b\"], \"fallback_params\": [\"h\"]}");
}

TEST(OptimCliState, ApolloMiniSplitRunIsExact) {
  check_split("{\"optimizer\": \"apollo-mini\", \"lr\": 0.01, \"update_proj_gap\": 1, \"scale_front\": true,"
              " \"seed\": 3, \"params\": [\"w\", \"b\", \"h\"]}");
}

// The fields reach the optimizer: the saved frames' headers and slots carry them.
TEST(OptimCliState, ConfigFieldsReachTheFrames) {
  fgt::TempDir d;
  write_inputs(d);
  std::string err;
  auto frame_of = [&](const std::string &cfg) {
    fgt::write_file(d.file("c.json"), cfg.data(), cfg.size());
    EXPECT_EQ(0, optim(d, d.file("p.safetensors"), 2, 1, d.file("o.st"), "--state-out " + d.file("s.state"), &err)) << err;
    const auto b = fgt::read_file(d.file("s.state"));
    fg_oframe *f = nullptr;
    EXPECT_EQ(FG_OK, fg_optim_frame_parse(b.data(), b.size(), &f)) << fg_last_error();
    return f;
  };
  fg_oframe *m = frame_of("{\"optimizer\": \"muon\", \"nesterov\": false, \"ns_steps\": 3, \"scale\": \"match_rms_adamw\","
                          " \"state_dtype\": \"bf16\", \"fallback\": {\"state_dtype\": \"bf16\"},"
                          " \"params\": [\"w\"], \"fallback_params\": [{\"tensor\": \"b\", \"name\": \"bias\"}]}");
  ASSERT_NE(nullptr, m);
  EXPECT_EQ(FG_OFRAME_KIND_MUON, m->kind);
  EXPECT_EQ(0, m->muon.nesterov);
  EXPECT_EQ(3u, m->muon.ns_steps);
  EXPECT_EQ(1, m->muon.scale);
  ASSERT_EQ(1u, m->n_slots);
  EXPECT_EQ(FG_OFRAME_DTYPE_BF16, m->slots[0].bufs[0].dtype);
  ASSERT_NE(nullptr, m->embedded);
  ASSERT_EQ(1u, m->embedded->n_slots);
  EXPECT_STREQ("bias", m->embedded->slots[0].name);
  EXPECT_EQ(FG_OFRAME_DTYPE_BF16, m->embedded->slots[0].bufs[0].dtype);
  fg_optim_frame_free(m);
  fg_oframe *a = frame_of("{\"optimizer\": \"apollo\", \"rank\": 2, \"update_proj_gap\": 7, \"scale\": 3.5,"
                          " \"scale_type\": \"tensor\", \"correct_bias\": false, \"scale_front\": true,"
                          " \"disable_norm_growth_limiter\": true, \"seed\": \"12345678901234567890\","
                          " \"params\": [\"w\"], \"fallback_params\": [\"b\"]}");
  ASSERT_NE(nullptr, a);
  EXPECT_EQ(FG_OFRAME_KIND_APOLLO, a->kind);
  EXPECT_EQ(2u, a->apollo.rank);
  EXPECT_EQ(7u, a->apollo.update_proj_gap);
  const float sc = 3.5f;
  uint32_t bits;
  std::memcpy(&bits, &sc, 4);
  EXPECT_EQ(bits, a->apollo.scale_bits);
  EXPECT_EQ(1, a->apollo.scale_type);
  EXPECT_EQ(0, a->apollo.correct_bias);
  EXPECT_EQ(1, a->apollo.scale_front);
  EXPECT_EQ(1, a->apollo.disable_limiter);
  ASSERT_EQ(1u, a->n_slots);
  EXPECT_EQ(12345678901234567891ull, a->slots[0].seed); // config seed + the 1-based slot index
  ASSERT_EQ(1u, a->n_fallback);
  EXPECT_STREQ("b", a->fallback[0].name);
  fg_optim_frame_free(a);
}
