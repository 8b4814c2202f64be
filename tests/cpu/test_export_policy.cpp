// Export planning: which tensors transcode, which keep their type and why, refused chain
// requantization, expert overrides, targets and llama.cpp file-type codes.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "export_fixtures.h"

namespace {

struct Planned {
  fg_status status;
  std::string error;
  std::map<std::string, fg_export_tensor> t;
  size_t changed = 0, fallbacks = 0;
  bool has_ftype = false;
  uint32_t ftype = 0;
};

Planned plan(const std::string &path, const fg_export_options &o) {
  Planned r;
  fg_ckpt *src = nullptr;
  fg_export_plan *p = nullptr;
  r.status = fg_ckpt_open(path.c_str(), &src);
  if (!r.status) {
    EXPECT_EQ(fg_ckpt_format_of(src), FG_CKPT_GGUF);
  }
  if (!r.status) r.status = fg_export_plan_create(src, &o, &p);
  if (r.status) r.error = fg_last_error();
  for (size_t i = 0; i < fg_export_plan_count(p); i++) r.t[fg_export_plan_tensor(p, i)->name] = *fg_export_plan_tensor(p, i);
  r.changed = fg_export_plan_changed(p);
  r.fallbacks = fg_export_plan_fallbacks(p);
  r.has_ftype = fg_export_plan_file_type(p, &r.ftype);
  fg_export_plan_free(p);
  fg_ckpt_close(src);
  return r;
}

class ExportPolicy : public ::testing::Test {
 protected:
  fgt::TempDir dir;
  std::string path = dir.file("in.gguf");
  void SetUp() override {
    fgx::write_gguf(path, nullptr,
                    {fgx::make("token_embd.weight", FG_F16, {16, 256}, 1),
                     fgx::make("blk.0.attn_norm.weight", FG_F32, {256}, 2),
                     fgx::make("blk.0.ffn_norm.weight", FG_F32, {2, 256}, 3),  // 2-D but a norm
                     fgx::make("blk.0.attn_q.weight", FG_BF16, {64, 256}, 4),
                     fgx::make("blk.0.attn_q.bias", FG_F32, {2, 256}, 5),     // 2-D, not .weight
                     fgx::make("blk.0.odd.weight", FG_F32, {4, 96}, 6),       // 96 % 32 == 0, % 256 != 0
                     fgx::make("blk.0.odder.weight", FG_F32, {4, 40}, 7),     // 40 % 32 != 0
                     fgx::make("blk.0.ids.weight", FG_I32, {4, 32}, 8),
                     fgx::make("blk.0.ffn_up_exps.weight", FG_F32, {2, 8, 256}, 9)});
  }
};

TEST_F(ExportPolicy, VerbatimKeepsEverything) {
  Planned r = plan(path, fg_export_options{});
  ASSERT_EQ(r.status, FG_OK) << r.error;
  EXPECT_EQ(r.changed, 0u);
  EXPECT_FALSE(r.has_ftype);
  for (auto &kv : r.t) {
    EXPECT_EQ(kv.second.action, FG_EXPORT_ACTION_COPY) << kv.first;
    EXPECT_EQ(kv.second.why, FG_EXPORT_WHY_VERBATIM) << kv.first;
    EXPECT_EQ(kv.second.src_bytes, kv.second.dst_bytes);
  }
  Planned v = plan(path, fgx::opts("verbatim"));
  EXPECT_EQ(v.changed, 0u);
  EXPECT_FALSE(v.has_ftype);
}

TEST_F(ExportPolicy, Q8_0OnlyMatrixWeights) {
  Planned r = plan(path, fgx::opts("q8_0"));
  ASSERT_EQ(r.status, FG_OK) << r.error;
  EXPECT_TRUE(r.has_ftype);
  EXPECT_EQ(r.ftype, 7u);  // LLAMA_FTYPE_MOSTLY_Q8_0
  EXPECT_EQ(r.t["token_embd.weight"].dst_dtype, FG_Q8_0);
  EXPECT_EQ(r.t["token_embd.weight"].action, FG_EXPORT_ACTION_CONVERT);
  EXPECT_EQ(r.t["token_embd.weight"].dst_bytes, 16u * 256 / 32 * 34);
  EXPECT_EQ(r.t["token_embd.weight"].src_bytes, 16u * 256 * 2);
  EXPECT_EQ(r.t["blk.0.attn_q.weight"].dst_dtype, FG_Q8_0);
  EXPECT_EQ(r.t["blk.0.odd.weight"].dst_dtype, FG_Q8_0);
  EXPECT_EQ(r.t["blk.0.ffn_up_exps.weight"].dst_dtype, FG_Q8_0);  // no expert override: global
  EXPECT_TRUE(r.t["blk.0.ffn_up_exps.weight"].expert);

  EXPECT_EQ(r.t["blk.0.attn_norm.weight"].why, FG_EXPORT_WHY_NOT_MATRIX);
  EXPECT_EQ(r.t["blk.0.ffn_norm.weight"].why, FG_EXPORT_WHY_NORM);
  EXPECT_EQ(r.t["blk.0.attn_q.bias"].why, FG_EXPORT_WHY_NOT_WEIGHT);
  // rows of 40 are not whole q8_0 blocks, and q8_0 has no smaller block: llama.cpp's f16
  EXPECT_EQ(r.t["blk.0.odder.weight"].why, FG_EXPORT_WHY_FALLBACK);
  EXPECT_EQ(r.t["blk.0.odder.weight"].wanted, FG_Q8_0);
  EXPECT_EQ(r.t["blk.0.odder.weight"].dst_dtype, FG_F16);
  EXPECT_EQ(r.t["blk.0.odder.weight"].action, FG_EXPORT_ACTION_CONVERT);
  EXPECT_EQ(r.t["blk.0.ids.weight"].why, FG_EXPORT_WHY_SOURCE);
  for (const char *kept : {"blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "blk.0.attn_q.bias",
                           "blk.0.ids.weight"}) {
    EXPECT_EQ(r.t[kept].action, FG_EXPORT_ACTION_COPY) << kept;
    EXPECT_EQ(r.t[kept].dst_dtype, r.t[kept].src_dtype) << kept;
    EXPECT_EQ(r.t[kept].dst_bytes, r.t[kept].src_bytes) << kept;
  }
  EXPECT_EQ(r.changed, 5u);
}

TEST_F(ExportPolicy, KQuantNeeds256WideRows) {
  Planned r = plan(path, fgx::opts("q4_K"));
  ASSERT_EQ(r.status, FG_OK) << r.error;
  EXPECT_EQ(r.ftype, 14u);  // uniform K-quants report the _S variant
  EXPECT_EQ(r.t["blk.0.attn_q.weight"].dst_dtype, FG_Q4_K);
  // llama.cpp's fallback: rows of 96 take q5_0 (rows of 40, not whole 32-blocks either, f16)
  EXPECT_EQ(r.t["blk.0.odd.weight"].why, FG_EXPORT_WHY_FALLBACK);
  EXPECT_EQ(r.t["blk.0.odd.weight"].wanted, FG_Q4_K);
  EXPECT_EQ(r.t["blk.0.odd.weight"].dst_dtype, FG_Q5_0);
  EXPECT_EQ(r.t["blk.0.odder.weight"].dst_dtype, FG_F16);
  EXPECT_EQ(r.fallbacks, 2u);
  // q1_0 has no fallback: a single q1_0 target leaves such rows alone
  Planned q1 = plan(path, fgx::opts("q1_0"));
  ASSERT_EQ(q1.status, FG_OK) << q1.error;
  EXPECT_EQ(q1.t["blk.0.odd.weight"].why, FG_EXPORT_WHY_ROW);
  EXPECT_EQ(q1.t["blk.0.odd.weight"].dst_dtype, FG_F32);
}

TEST_F(ExportPolicy, SameTypeIsACopy) {
  Planned r = plan(path, fgx::opts("f16"));
  ASSERT_EQ(r.status, FG_OK) << r.error;
  EXPECT_EQ(r.t["token_embd.weight"].why, FG_EXPORT_WHY_SAME);
  EXPECT_EQ(r.t["token_embd.weight"].action, FG_EXPORT_ACTION_COPY);
  EXPECT_EQ(r.t["blk.0.attn_q.weight"].dst_dtype, FG_F16);
  EXPECT_EQ(r.t["blk.0.odder.weight"].dst_dtype, FG_F16);  // scalar targets fit any row
  EXPECT_EQ(r.ftype, 1u);
}

TEST_F(ExportPolicy, ExpertsOverride) {
  Planned r = plan(path, fgx::opts("q8_0", "q4_K"));
  ASSERT_EQ(r.status, FG_OK) << r.error;
  EXPECT_EQ(r.t["blk.0.ffn_up_exps.weight"].dst_dtype, FG_Q4_K);
  EXPECT_EQ(r.t["blk.0.attn_q.weight"].dst_dtype, FG_Q8_0);
  EXPECT_EQ(r.ftype, 7u);  // the global target names the file type

  Planned k = plan(path, fgx::opts("q8_0", "verbatim"));
  ASSERT_EQ(k.status, FG_OK) << k.error;
  EXPECT_EQ(k.t["blk.0.ffn_up_exps.weight"].dst_dtype, FG_F32);
  EXPECT_EQ(k.t["blk.0.ffn_up_exps.weight"].why, FG_EXPORT_WHY_VERBATIM);

  Planned e = plan(path, fgx::opts(nullptr, "q6_K"));
  ASSERT_EQ(e.status, FG_OK) << e.error;
  EXPECT_EQ(e.changed, 1u);
  EXPECT_EQ(e.t["blk.0.ffn_up_exps.weight"].dst_dtype, FG_Q6_K);
  EXPECT_FALSE(e.has_ftype);  // only a global --dtype sets general.file_type
}

class ExportQuantSource : public ::testing::Test {
 protected:
  fgt::TempDir dir;
  std::string path = dir.file("q.gguf");
  void SetUp() override {
    fgx::write_gguf(path, nullptr,
                    {fgx::make("token_embd.weight", FG_F16, {8, 256}, 1),
                     fgx::make("blk.0.attn_k.weight", FG_Q4_0, {8, 256}, 2),
                     fgx::make("blk.0.ffn_gate_exps.weight", FG_Q4_0, {2, 4, 256}, 3),
                     fgx::make("output_norm.weight", FG_F32, {256}, 4)});
  }
};

TEST_F(ExportQuantSource, GlobalDtypeRefusesChainRequantization) {
  Planned r = plan(path, fgx::opts("q8_0"));
  EXPECT_EQ(r.status, FG_ERR_UNSUPPORTED);
  EXPECT_NE(r.error.find("blk.0.attn_k.weight"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("q4_0"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("requantiz"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find(path), std::string::npos) << r.error;
}

TEST_F(ExportQuantSource, ExpertsMayRequantize) {
  // Experts are requantized by their override; the global target would otherwise refuse the
  // quantized expert, so it is kept verbatim here and the dense quantized tensor stays.
  Planned r = plan(path, fgx::opts("verbatim", "q8_0"));
  ASSERT_EQ(r.status, FG_OK) << r.error;
  EXPECT_EQ(r.t["blk.0.ffn_gate_exps.weight"].action, FG_EXPORT_ACTION_REQUANT);
  EXPECT_EQ(r.t["blk.0.ffn_gate_exps.weight"].dst_dtype, FG_Q8_0);
  EXPECT_EQ(r.t["blk.0.attn_k.weight"].action, FG_EXPORT_ACTION_COPY);

  // A global quantized target still refuses the dense quantized tensor.
  Planned g = plan(path, fgx::opts("q8_0", "q8_0"));
  EXPECT_EQ(g.status, FG_ERR_UNSUPPORTED);
  EXPECT_NE(g.error.find("blk.0.attn_k.weight"), std::string::npos) << g.error;
}

TEST_F(ExportQuantSource, FloatTargetDequantizesAndSameTypeCopies) {
  Planned r = plan(path, fgx::opts("f32"));
  ASSERT_EQ(r.status, FG_OK) << r.error;
  EXPECT_EQ(r.t["blk.0.attn_k.weight"].action, FG_EXPORT_ACTION_DEQUANT);
  EXPECT_EQ(r.t["blk.0.attn_k.weight"].dst_bytes, 8u * 256 * 4);
  Planned s = plan(path, fgx::opts("q4_0", "verbatim"));
  ASSERT_EQ(s.status, FG_OK) << s.error;
  EXPECT_EQ(s.t["blk.0.attn_k.weight"].why, FG_EXPORT_WHY_SAME);
  EXPECT_EQ(s.t["token_embd.weight"].dst_dtype, FG_Q4_0);
}

TEST(ExportTargets, ParseAndFileTypes) {
  const struct {
    const char *name;
    fg_dtype t;
    uint32_t ftype;
  } cases[] = {{"f32", FG_F32, 0},       {"f16", FG_F16, 1},       {"bf16", FG_BF16, 32},
               {"q8_0", FG_Q8_0, 7},     {"q4_0", FG_Q4_0, 2},     {"q4_1", FG_Q4_1, 3},
               {"q5_0", FG_Q5_0, 8},     {"q5_1", FG_Q5_1, 9},     {"q2_K", FG_Q2_K, 10},
               {"q3_K", FG_Q3_K, 11},    {"q4_K", FG_Q4_K, 14},    {"q5_K", FG_Q5_K, 16},
               {"q6_K", FG_Q6_K, 18},    {"tq1_0", FG_TQ1_0, 36},  {"tq2_0", FG_TQ2_0, 37},
               {"iq4_nl", FG_IQ4_NL, 25}, {"iq4_xs", FG_IQ4_XS, 30}, {"mxfp4", FG_MXFP4, 38},
               {"q1_0", FG_Q1_0, 40},    {"q2_0", FG_Q2_0, 41}};
  for (const auto &c : cases) {
    uint32_t code = 999;
    ASSERT_EQ(fg_export_file_type(c.t, &code), FG_OK) << c.name;
    EXPECT_EQ(code, c.ftype) << c.name;
    fg_export_target t{};
    if (!fg_quant_can_encode(c.t)) {
      EXPECT_EQ(fg_export_target_parse(c.name, &t), FG_ERR_UNSUPPORTED) << c.name;
      continue;
    }
    ASSERT_EQ(fg_export_target_parse(c.name, &t), FG_OK) << c.name << ": " << fg_last_error();
    EXPECT_EQ(t.mode, FG_EXPORT_MODE_DTYPE);
    EXPECT_EQ(t.dtype, c.t) << c.name;
  }
  fg_export_target t{};
  // ggml's own spelling is a single type; any other spelling is llama-quantize's name, in any
  // case, as llama-quantize takes it: "Q4_k" is its alias of the Q4_K_M mixture
  ASSERT_EQ(fg_export_target_parse("Q4_k", &t), FG_OK);
  EXPECT_EQ(t.mode, FG_EXPORT_MODE_MIXTURE);
  EXPECT_EQ(t.dtype, FG_Q4_K);
  EXPECT_EQ(t.ftype, 15u);
  ASSERT_EQ(fg_export_target_parse("q5_k_m", &t), FG_OK);
  EXPECT_EQ(t.ftype, 17u);
  ASSERT_EQ(fg_export_target_parse("Q8_0", &t), FG_OK);
  EXPECT_EQ(t.mode, FG_EXPORT_MODE_MIXTURE);
  ASSERT_EQ(fg_export_target_parse("MXFP4", &t), FG_OK);
  EXPECT_EQ(t.ftype, 38u);
  EXPECT_STREQ(fg_export_mixture_name(38), "MXFP4_MOE");
  ASSERT_EQ(fg_export_target_parse("IQ2_XXS", &t), FG_OK);  // planned even without its encoder
  EXPECT_EQ(t.dtype, FG_IQ2_XXS);
  ASSERT_EQ(fg_export_target_parse("q4_K", &t), FG_OK);
  EXPECT_EQ(t.mode, FG_EXPORT_MODE_DTYPE);
  EXPECT_EQ(fg_export_target_parse("Q4_K_X", &t), FG_ERR_UNSUPPORTED);
  ASSERT_EQ(fg_export_target_parse("verbatim", &t), FG_OK);
  EXPECT_EQ(t.mode, FG_EXPORT_MODE_VERBATIM);
  EXPECT_EQ(fg_export_target_parse("q8_1", &t), FG_ERR_UNSUPPORTED);  // no llama.cpp file type
  EXPECT_EQ(fg_export_target_parse("iq2_xxs", &t), FG_ERR_UNSUPPORTED);
  EXPECT_EQ(fg_export_target_parse("nonsense", &t), FG_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(fg_last_error()).find("nonsense"), std::string::npos);
  EXPECT_EQ(fg_export_file_type(FG_Q8_K, nullptr), FG_ERR_UNSUPPORTED);
}

TEST(ExportSource, SafetensorsShapesReversedAndRefusals) {
  fgt::TempDir dir;
  std::string st = dir.file("model.safetensors");
  fgx::write_safetensors(st, {fgx::make("model.embed_tokens.weight", FG_BF16, {8, 64}, 1),
                              fgx::make("model.norm.weight", FG_F32, {64}, 2),
                              fgx::make("layers.0.mlp.weight", FG_F16, {2, 3, 32}, 3)});
  fg_ckpt *src = nullptr;
  ASSERT_EQ(fg_ckpt_open(st.c_str(), &src), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_ckpt_format_of(src), FG_CKPT_SAFETENSORS);
  EXPECT_EQ(fg_ckpt_gguf(src), nullptr);
  fg_export_options o = fgx::opts("q8_0");
  fg_export_plan *p = nullptr;
  ASSERT_EQ(fg_export_plan_create(src, &o, &p), FG_OK) << fg_last_error();
  std::map<std::string, const fg_export_tensor *> m;
  for (size_t i = 0; i < fg_export_plan_count(p); i++) m[fg_export_plan_tensor(p, i)->name] = fg_export_plan_tensor(p, i);
  ASSERT_EQ(m.size(), 3u);
  const fg_export_tensor *mlp = m["layers.0.mlp.weight"];
  EXPECT_EQ(mlp->ndim, 3u);
  EXPECT_EQ(mlp->ne[0], 32u);
  EXPECT_EQ(mlp->ne[1], 3u);
  EXPECT_EQ(mlp->ne[2], 2u);
  EXPECT_EQ(mlp->shape[0], 2u);
  EXPECT_EQ(mlp->dst_dtype, FG_Q8_0);
  EXPECT_EQ(m["model.embed_tokens.weight"]->dst_dtype, FG_Q8_0);
  EXPECT_EQ(m["model.norm.weight"]->dst_dtype, FG_F32);
  fg_export_plan_free(p);
  fg_ckpt_close(src);

  // A name GGUF cannot carry (64+ bytes) opens as a checkpoint but is refused by the export
  // plan, naming the tensor, and no plan is made.
  std::string longname(70, 'x');
  std::string bad = dir.file("long.safetensors");
  fgx::write_safetensors(bad, {fgx::make(longname, FG_F32, {4}, 1)});
  ASSERT_EQ(fg_ckpt_open(bad.c_str(), &src), FG_OK) << fg_last_error();
  p = nullptr;
  EXPECT_EQ(fg_export_plan_create(src, &o, &p), FG_ERR_BAD_STRING);
  EXPECT_NE(std::string(fg_last_error()).find(longname), std::string::npos);
  EXPECT_EQ(p, nullptr);
  fg_ckpt_close(src);
}

}  // namespace
