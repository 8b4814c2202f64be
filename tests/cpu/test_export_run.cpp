// Export execution: metadata passes byte-verbatim (general.file_type set in place), output
// tensors equal what the codecs produce, chunking does not change a byte, failures and
// cancellation leave no file, split and safetensors sources, and the CLI contract.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "export_fixtures.h"

namespace {

using fgx::Tensor;

struct Gguf {
  fg_gguf_file *f = nullptr;
  explicit Gguf(const std::string &p) { EXPECT_EQ(fg_gguf_open(p.c_str(), FG_MAP_READ, &f), FG_OK) << fg_last_error(); }
  ~Gguf() { fg_gguf_close(f); }
  std::vector<uint8_t> raw(uint64_t i) const {
    const uint8_t *b;
    uint64_t n;
    EXPECT_EQ(fg_gguf_kv_raw(f, i, &b, &n), FG_OK);
    return std::vector<uint8_t>(b, b + n);
  }
  std::string key(uint64_t i) const {
    fg_gguf_str s = fg_gguf_kv_key(f, i);
    return std::string(s.ptr, s.len);
  }
  std::vector<uint8_t> data(const std::string &name) const {
    const fg_gguf_tensor *t = fg_gguf_find_tensor(f, name.c_str());
    EXPECT_NE(t, nullptr) << name;
    if (!t) return {};
    return std::vector<uint8_t>(t->data, t->data + t->nbytes);
  }
};

void model_kvs(fg_gguf_writer *w) {
  fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
  fg_gguf_writer_set_i32(w, "general.file_type", 1);  // wrong wire type on purpose: becomes UINT32
  fg_gguf_writer_set_u32(w, "general.alignment", 64);
  fg_gguf_writer_set_u32(w, "llama.context_length", 4096);
  fg_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.5f);
  fg_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true);
  const char *toks[] = {"<s>", "</s>", "hello"};
  fg_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", toks, nullptr, 3);
  int32_t ids[] = {1, 2, 3, -4};
  fg_gguf_writer_set_array(w, "tokenizer.ggml.token_type", FG_GGUF_INT32, ids, 4);
}

std::vector<Tensor> model_tensors() {
  return {fgx::make("token_embd.weight", FG_F16, {8, 256}, 11),
          fgx::make("blk.0.attn_norm.weight", FG_F32, {256}, 12),
          fgx::make("blk.0.attn_q.weight", FG_F32, {16, 256}, 13),
          fgx::make("blk.0.attn_v.weight", FG_BF16, {4, 512}, 14),
          fgx::make("blk.0.odd.weight", FG_F32, {3, 40}, 15),
          fgx::make("blk.0.ffn_up_exps.weight", FG_F32, {2, 4, 256}, 16),
          fgx::make("output.weight", FG_F32, {8, 256}, 17)};
}

// Checks every output tensor against the plan: a copy has the source bytes, a transcoded
// tensor the codecs' bytes.
void expect_tensors(const std::string &in, const std::vector<Tensor> &src, const fg_export_options &o,
                    const std::string &out) {
  fg_ckpt *s = nullptr;
  fg_export_plan *p = nullptr;
  ASSERT_EQ(fg_ckpt_open(in.c_str(), &s), FG_OK);
  ASSERT_EQ(fg_ckpt_format_of(s), FG_CKPT_GGUF);
  ASSERT_EQ(fg_export_plan_create(s, &o, &p), FG_OK) << fg_last_error();
  Gguf g(out);
  ASSERT_EQ(fg_gguf_tensor_count(g.f), src.size());
  for (size_t i = 0; i < src.size(); i++) {
    const fg_export_tensor *t = fg_export_plan_tensor(p, i);
    const fg_gguf_tensor *gt = fg_gguf_tensor_at(g.f, i);
    ASSERT_STREQ(gt->name, src[i].name.c_str());
    EXPECT_EQ(gt->dtype, t->dst_dtype) << t->name;
    EXPECT_EQ(gt->ndim, src[i].shape.size());
    for (size_t d = 0; d < src[i].shape.size(); d++) EXPECT_EQ(gt->shape[d], src[i].shape[d]) << t->name;
    std::vector<uint8_t> want = t->dst_dtype == src[i].dtype ? src[i].data : fgx::transcode(src[i], t->dst_dtype);
    std::vector<uint8_t> got(gt->data, gt->data + gt->nbytes);
    EXPECT_TRUE(got == want) << t->name << " " << fg_dtype_name(t->src_dtype) << " -> " << fg_dtype_name(t->dst_dtype);
  }
  fg_export_plan_free(p);
  fg_ckpt_close(s);
}

class ExportRun : public ::testing::Test {
 protected:
  fgt::TempDir dir;
  std::string in = dir.file("in.gguf");
  std::vector<Tensor> src = model_tensors();
  void SetUp() override { fgx::write_gguf(in, model_kvs, src); }
};

TEST_F(ExportRun, VerbatimIsByteIdenticalToTheSource) {
  std::string out = dir.file("out.gguf");
  ASSERT_EQ(fgx::export_file(in, true, fg_export_options{}, out), FG_OK) << fg_last_error();
  // Same KVs, same tensors, same layout: the writer reproduces the source file exactly.
  EXPECT_TRUE(fgt::read_file(in) == fgt::read_file(out));
}

TEST_F(ExportRun, MetadataVerbatimAndFileTypeInPlace) {
  std::string out = dir.file("out.gguf");
  ASSERT_EQ(fgx::export_file(in, true, fgx::opts("q8_0"), out), FG_OK) << fg_last_error();
  Gguf a(in), b(out);
  ASSERT_EQ(fg_gguf_kv_count(b.f), fg_gguf_kv_count(a.f) + 1);  // + general.quantization_version
  for (uint64_t i = 0; i < fg_gguf_kv_count(a.f); i++) {
    ASSERT_EQ(a.key(i), b.key(i));
    if (a.key(i) == "general.file_type") continue;
    EXPECT_TRUE(a.raw(i) == b.raw(i)) << a.key(i);
  }
  int64_t ft = fg_gguf_key_index(b.f, "general.file_type");
  ASSERT_EQ(ft, 1);  // same position as in the source
  EXPECT_EQ(fg_gguf_kv_type(b.f, (uint64_t)ft), FG_GGUF_UINT32);
  int64_t v = 0;
  EXPECT_EQ(fg_gguf_get_int(b.f, "general.file_type", &v), FG_OK);
  EXPECT_EQ(v, 7);
  EXPECT_EQ(fg_gguf_get_int(b.f, "general.quantization_version", &v), FG_OK);
  EXPECT_EQ(v, 2);
  EXPECT_EQ(fg_gguf_alignment(b.f), 64u);
  expect_tensors(in, src, fgx::opts("q8_0"), out);
}

TEST_F(ExportRun, EveryTargetMatchesTheCodecs) {
  const char *targets[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K",
                           "q4_K", "q5_K", "q6_K", "tq1_0", "tq2_0", "iq4_nl", "iq4_xs", "mxfp4", "q1_0", "q2_0"};
  for (const char *tg : targets) {
    fg_export_target t{};
    if (fg_export_target_parse(tg, &t) != FG_OK) {
      std::printf("skipping %s: %s\n", tg, fg_last_error());
      continue;
    }
    SCOPED_TRACE(tg);
    std::string out = dir.file(std::string("out_") + tg + ".gguf");
    fg_export_options o = fgx::opts(tg);
    ASSERT_EQ(fgx::export_file(in, true, o, out), FG_OK) << fg_last_error();
    expect_tensors(in, src, o, out);
    Gguf g(out);
    int64_t code = -1;
    uint32_t want = 0;
    fg_export_file_type(t.dtype, &want);
    EXPECT_EQ(fg_gguf_get_int(g.f, "general.file_type", &code), FG_OK);
    EXPECT_EQ(code, (int64_t)want);
  }
}

TEST_F(ExportRun, ChunkSizeDoesNotChangeBytes) {
  fg_export_options big = fgx::opts("q4_K"), small = big;
  small.chunk_bytes = 1;  // one row per step
  std::string a = dir.file("a.gguf"), b = dir.file("b.gguf");
  ASSERT_EQ(fgx::export_file(in, true, big, a), FG_OK) << fg_last_error();
  ASSERT_EQ(fgx::export_file(in, true, small, b), FG_OK) << fg_last_error();
  EXPECT_TRUE(fgt::read_file(a) == fgt::read_file(b));
}

TEST_F(ExportRun, NonFiniteValueFailsAndLeavesNoFile) {
  std::vector<Tensor> ts = src;
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&ts[2].data[4 * (256 * 5 + 17)], &nan, 4);  // blk.0.attn_q.weight row 5, element 17
  std::string bad = dir.file("nan.gguf");
  fgx::write_gguf(bad, model_kvs, ts);
  std::string out = dir.file("out.gguf");
  auto before = fgx::list_dir(dir.path);
  EXPECT_EQ(fgx::export_file(bad, true, fgx::opts("q4_0"), out), FG_ERR_NONFINITE);
  std::string msg = fg_last_error();
  EXPECT_NE(msg.find("blk.0.attn_q.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  EXPECT_EQ(fgx::list_dir(dir.path), before);  // no output, no temporary file

  // An existing output is left untouched.
  fgt::write_file(out, "old", 3);
  EXPECT_EQ(fgx::export_file(bad, true, fgx::opts("q4_0"), out), FG_ERR_NONFINITE);
  EXPECT_EQ(fgt::read_file(out), std::vector<uint8_t>({'o', 'l', 'd'}));
}

TEST_F(ExportRun, CancelFromProgressLeavesNoFile) {
  fg_ckpt *s = nullptr;
  fg_export_plan *p = nullptr;
  ASSERT_EQ(fg_ckpt_open(in.c_str(), &s), FG_OK);
  ASSERT_EQ(fg_ckpt_format_of(s), FG_CKPT_GGUF);
  fg_export_options o = fgx::opts("q8_0");
  ASSERT_EQ(fg_export_plan_create(s, &o, &p), FG_OK);
  auto before = fgx::list_dir(dir.path);
  size_t calls = 0;
  auto cb = [](const fg_export_progress *pr, void *u) {
    size_t *c = static_cast<size_t *>(u);
    ++*c;
    return pr->tensors_done < 3;
  };
  EXPECT_EQ(fg_export_run(p, dir.file("out.gguf").c_str(), cb, &calls), FG_ERR_STATE);
  EXPECT_GE(calls, 3u);
  EXPECT_EQ(fgx::list_dir(dir.path), before);
  // Progress totals are consistent on a full run.
  struct Last {
    fg_export_progress p;
  } last{};
  auto cb2 = [](const fg_export_progress *pr, void *u) {
    static_cast<Last *>(u)->p = *pr;
    return true;
  };
  ASSERT_EQ(fg_export_run(p, dir.file("out.gguf").c_str(), cb2, &last), FG_OK) << fg_last_error();
  EXPECT_EQ(last.p.tensors_done, src.size());
  EXPECT_EQ(last.p.bytes_done, last.p.bytes_total);
  fg_export_plan_free(p);
  fg_ckpt_close(s);
}

TEST_F(ExportRun, ExpertsRequantizedFromQuantizedSource) {
  std::vector<Tensor> ts = {fgx::make("blk.0.attn_k.weight", FG_Q4_0, {4, 256}, 1),
                            fgx::make("blk.0.ffn_down_exps.weight", FG_Q4_0, {2, 4, 256}, 2)};
  std::string q = dir.file("q.gguf"), out = dir.file("out.gguf");
  fgx::write_gguf(q, model_kvs, ts);
  fg_export_options o = fgx::opts(nullptr, "q8_0");
  ASSERT_EQ(fgx::export_file(q, true, o, out), FG_OK) << fg_last_error();
  Gguf g(out);
  EXPECT_TRUE(g.data("blk.0.attn_k.weight") == ts[0].data);
  EXPECT_TRUE(g.data("blk.0.ffn_down_exps.weight") == fgx::transcode(ts[1], FG_Q8_0));
  int64_t ft = 0;
  EXPECT_EQ(fg_gguf_get_int(g.f, "general.file_type", &ft), FG_OK);
  EXPECT_EQ(ft, 1);  // kept: no global --dtype
}

TEST(ExportSplit, PartsMergedAndSplitKeysDropped) {
  fgt::TempDir dir;
  std::vector<Tensor> a = {fgx::make("token_embd.weight", FG_F32, {4, 64}, 1)};
  std::vector<Tensor> b = {fgx::make("output.weight", FG_F32, {4, 64}, 2)};
  std::string p1 = dir.file("m-00001-of-00002.gguf"), p2 = dir.file("m-00002-of-00002.gguf");
  fgx::write_gguf(p1, [](fg_gguf_writer *w) {
    fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
    fg_gguf_writer_set_u16(w, "split.no", 0);
    fg_gguf_writer_set_u16(w, "split.count", 2);
    fg_gguf_writer_set_i32(w, "split.tensors.count", 2);
    fg_gguf_writer_set_u32(w, "llama.block_count", 1);
  }, a);
  fgx::write_gguf(p2, [](fg_gguf_writer *w) {
    fg_gguf_writer_set_u16(w, "split.no", 1);
    fg_gguf_writer_set_u16(w, "split.count", 2);
    fg_gguf_writer_set_i32(w, "split.tensors.count", 2);
  }, b);
  std::string out = dir.file("merged.gguf");
  ASSERT_EQ(fgx::export_file(p1, true, fgx::opts("q8_0"), out), FG_OK) << fg_last_error();
  Gguf g(out);
  EXPECT_EQ(fg_gguf_tensor_count(g.f), 2u);
  EXPECT_LT(fg_gguf_key_index(g.f, "split.no"), 0);
  EXPECT_LT(fg_gguf_key_index(g.f, "split.count"), 0);
  EXPECT_LT(fg_gguf_key_index(g.f, "split.tensors.count"), 0);
  EXPECT_EQ(g.key(0), "general.architecture");
  EXPECT_EQ(g.key(1), "llama.block_count");
  EXPECT_TRUE(g.data("output.weight") == fgx::transcode(b[0], FG_Q8_0));
}

TEST(ExportSafetensors, ConfigCarriedAndTensorsTranscoded) {
  fgt::TempDir dir;
  std::vector<Tensor> ts = {fgx::make("model.embed_tokens.weight", FG_BF16, {8, 64}, 1),
                            fgx::make("model.layers.0.input_layernorm.weight", FG_BF16, {64}, 2),
                            fgx::make("model.layers.0.mlp.up_proj.weight", FG_F32, {16, 64}, 3)};
  fgx::write_safetensors(dir.file("model.safetensors"), ts);
  const char *cfg =
      "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, \"rope_theta\": 10000.0,\n"
      " \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": false, \"model_type\": \"llama\",\n"
      " \"eos_token_id\": [1, 2], \"big\": 5000000000, \"mix\": [1, 2.5], \"none\": null, \"empty\": [],\n"
      " \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}, \"nested\": [[1], [2]], \"neg\": -3,\n"
      " \"flags\": [true, false]}\n";
  fgt::write_file(dir.file("config.json"), cfg, std::strlen(cfg));
  fgt::TempDir outdir;  // never inside the input folder (refused)
  std::string out = outdir.file("out.gguf");
  ASSERT_EQ(fgx::export_file(dir.path, false, fgx::opts("q8_0"), out), FG_OK) << fg_last_error();
  Gguf g(out);
  auto type_of = [&](const char *k) {
    int64_t i = fg_gguf_key_index(g.f, k);
    return i < 0 ? (fg_gguf_type)-1 : fg_gguf_kv_type(g.f, (uint64_t)i);
  };
  int64_t iv;
  double fv;
  bool bv;
  fg_gguf_str sv;
  fg_gguf_array arr;
  EXPECT_EQ(type_of("safetensors.config.hidden_size"), FG_GGUF_INT32);
  EXPECT_EQ(fg_gguf_get_int(g.f, "safetensors.config.hidden_size", &iv), FG_OK);
  EXPECT_EQ(iv, 64);
  EXPECT_EQ(type_of("safetensors.config.rope_theta"), FG_GGUF_FLOAT32);  // 10000.0 is a float in JSON
  EXPECT_EQ(fg_gguf_get_float(g.f, "safetensors.config.rope_theta", &fv), FG_OK);
  EXPECT_EQ(fv, 10000.0);
  EXPECT_EQ(type_of("safetensors.config.rms_norm_eps"), FG_GGUF_FLOAT32);
  EXPECT_EQ(fg_gguf_get_float(g.f, "safetensors.config.rms_norm_eps", &fv), FG_OK);
  EXPECT_EQ((float)fv, 1e-06f);
  EXPECT_EQ(type_of("safetensors.config.tie_word_embeddings"), FG_GGUF_BOOL);
  EXPECT_EQ(fg_gguf_get_bool(g.f, "safetensors.config.tie_word_embeddings", &bv), FG_OK);
  EXPECT_FALSE(bv);
  EXPECT_EQ(fg_gguf_get_str(g.f, "safetensors.config.model_type", &sv), FG_OK);
  EXPECT_EQ(std::string(sv.ptr, sv.len), "llama");
  EXPECT_EQ(type_of("safetensors.config.big"), FG_GGUF_INT64);
  EXPECT_EQ(type_of("safetensors.config.neg"), FG_GGUF_INT32);
  ASSERT_EQ(fg_gguf_get_array(g.f, "safetensors.config.eos_token_id", &arr), FG_OK);
  EXPECT_EQ(arr.elem_type, FG_GGUF_INT32);
  EXPECT_EQ(arr.len, 2u);
  ASSERT_EQ(fg_gguf_get_array(g.f, "safetensors.config.mix", &arr), FG_OK);
  EXPECT_EQ(arr.elem_type, FG_GGUF_FLOAT32);
  ASSERT_EQ(fg_gguf_get_array(g.f, "safetensors.config.architectures", &arr), FG_OK);
  EXPECT_EQ(arr.elem_type, FG_GGUF_STRING);
  ASSERT_EQ(fg_gguf_get_array(g.f, "safetensors.config.flags", &arr), FG_OK);
  EXPECT_EQ(arr.elem_type, FG_GGUF_BOOL);
  EXPECT_EQ(fg_gguf_get_str(g.f, "safetensors.config.rope_scaling.type", &sv), FG_OK);
  EXPECT_EQ(type_of("safetensors.config.rope_scaling.factor"), FG_GGUF_INT32);
  EXPECT_LT(fg_gguf_key_index(g.f, "safetensors.config.none"), 0);
  EXPECT_LT(fg_gguf_key_index(g.f, "safetensors.config.empty"), 0);
  EXPECT_LT(fg_gguf_key_index(g.f, "safetensors.config.nested"), 0);
  EXPECT_EQ(fg_gguf_get_str(g.f, "safetensors.metadata.format", &sv), FG_OK);
  EXPECT_EQ(std::string(sv.ptr, sv.len), "pt");
  EXPECT_EQ(fg_gguf_get_int(g.f, "general.file_type", &iv), FG_OK);
  EXPECT_EQ(iv, 7);

  // Tensors in source order, names kept, ne reversed, bytes from the codecs.
  ASSERT_EQ(fg_gguf_tensor_count(g.f), 3u);
  fg_st_dir *d = nullptr;
  ASSERT_EQ(fg_st_dir_open(dir.path.c_str(), FG_MAP_READ, &d), FG_OK);
  for (size_t i = 0; i < 3; i++) {
    const fg_st_tensor *st = fg_st_dir_tensor_at(d, i, nullptr);
    const fg_gguf_tensor *gt = fg_gguf_tensor_at(g.f, i);
    EXPECT_STREQ(gt->name, st->name);
    const Tensor *t = nullptr;
    for (const Tensor &x : ts)
      if (x.name == st->name) t = &x;
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(gt->ne[0], t->shape.back());
    bool matrix = t->shape.size() >= 2;
    std::vector<uint8_t> want = matrix ? fgx::transcode(*t, FG_Q8_0) : t->data;
    EXPECT_TRUE(std::vector<uint8_t>(gt->data, gt->data + gt->nbytes) == want) << t->name;
  }
  fg_st_dir_close(d);
}

// ---- the CLI ------------------------------------------------------------------------------

std::string cli() { return FORGIA_CLI; }

TEST_F(ExportRun, CliDryRunWritesNothing) {
  std::string out, err;
  auto before = fgx::list_dir(dir.path);
  int rc = fgt::run(cli() + " export --from-gguf " + in + " --out " + dir.file("o.gguf") + " --dtype q4_K --dry-run", &out, &err);
  EXPECT_EQ(rc, 0) << err;
  EXPECT_EQ(fgx::list_dir(dir.path), before);
  EXPECT_NE(out.find("blk.0.attn_q.weight"), std::string::npos) << out;
  EXPECT_NE(out.find("[16, 256]"), std::string::npos) << out;
  EXPECT_NE(out.find("f32 -> q4_K"), std::string::npos) << out;
  EXPECT_NE(out.find("16384 -> 2304"), std::string::npos) << out;  // 16x256 f32 -> 16 q4_K blocks of 144
  EXPECT_NE(out.find("general.file_type = 14"), std::string::npos) << out;
}

TEST_F(ExportRun, CliWritesAndReportsPeakRss) {
  std::string out, err, o = dir.file("o.gguf");
  int rc = fgt::run(cli() + " export --from-gguf " + in + " --out " + o + " --dtype q8_0", &out, &err);
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(out.find("peak RSS"), std::string::npos) << out;
  EXPECT_NE(err.find("[7/7]"), std::string::npos) << err;  // plain progress lines on stderr off a terminal
  std::string lib = dir.file("lib.gguf");
  ASSERT_EQ(fgx::export_file(in, true, fgx::opts("q8_0"), lib), FG_OK);
  EXPECT_TRUE(fgt::read_file(o) == fgt::read_file(lib));
}

TEST_F(ExportRun, CliUsageErrorsExit2) {
  std::string out, err;
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + in + " --out x.gguf --bogus", &out, &err), 2);
  EXPECT_NE(err.find("usage"), std::string::npos);
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + in, &out, &err), 2);  // no --out
  EXPECT_EQ(fgt::run(cli() + " export --out x.gguf", &out, &err), 2);       // no source
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + in + " --out x.gguf --dtype q9_9", &out, &err), 2);
  EXPECT_NE(err.find("q9_9"), std::string::npos);
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf", &out, &err), 2);
}

TEST_F(ExportRun, CliFailuresExit1WithOneLineAndNoFile) {
  std::vector<Tensor> ts = {fgx::make("blk.0.attn_k.weight", FG_Q4_0, {4, 256}, 1)};
  std::string q = dir.file("q.gguf");
  fgx::write_gguf(q, model_kvs, ts);
  auto before = fgx::list_dir(dir.path);
  std::string out, err;
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + q + " --out " + dir.file("o.gguf") + " --dtype q8_0", &out, &err), 1);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("blk.0.attn_k.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("requantiz"), std::string::npos) << err;
  EXPECT_EQ(fgx::list_dir(dir.path), before);

  std::vector<Tensor> nt = {fgx::make("blk.0.attn_k.weight", FG_F32, {4, 256}, 1)};
  float inf = std::numeric_limits<float>::infinity();
  std::memcpy(&nt[0].data[4 * 300], &inf, 4);
  std::string n = dir.file("inf.gguf");
  fgx::write_gguf(n, model_kvs, nt);
  before = fgx::list_dir(dir.path);
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + n + " --out " + dir.file("o.gguf") + " --dtype q4_K", &out, &err), 1);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("blk.0.attn_k.weight"), std::string::npos) << err;
  EXPECT_EQ(fgx::list_dir(dir.path), before);

  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + dir.file("missing.gguf") + " --out " + dir.file("o.gguf"), &out, &err), 1);
  EXPECT_EQ(fgt::run(cli() + " export --from-gguf " + in + " --out " + dir.file("no/such/dir/o.gguf"), &out, &err), 1);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace

namespace {

TEST(ExportSafetensors, ShardedDirectoryIsOneModel) {
  fgt::TempDir dir;
  std::vector<Tensor> ts = {fgx::make("a.weight", FG_F16, {4, 64}, 1), fgx::make("b.weight", FG_F32, {4, 64}, 2),
                            fgx::make("c.bias", FG_F32, {64}, 3)};
  std::vector<fg_st_write_tensor> wt;
  for (const Tensor &t : ts)
    wt.push_back({t.name.c_str(), t.dtype, (int)t.shape.size(), t.shape.data(), t.data.data(), (uint64_t)t.data.size()});
  size_t nshards = 0;
  ASSERT_EQ(fg_st_save_sharded(dir.path.c_str(), wt.data(), wt.size(), nullptr, 0, 600, &nshards), FG_OK) << fg_last_error();
  ASSERT_GT(nshards, 1u);
  fgt::TempDir outdir;  // never inside the input folder (refused)
  std::string out = outdir.file("out.gguf");
  ASSERT_EQ(fgx::export_file(dir.path, false, fgx::opts("bf16"), out), FG_OK) << fg_last_error();
  fg_gguf_file *g = nullptr;
  ASSERT_EQ(fg_gguf_open(out.c_str(), FG_MAP_READ, &g), FG_OK);
  ASSERT_EQ(fg_gguf_tensor_count(g), 3u);
  for (const Tensor &t : ts) {
    const fg_gguf_tensor *gt = fg_gguf_find_tensor(g, t.name.c_str());
    ASSERT_NE(gt, nullptr) << t.name;
    std::vector<uint8_t> want = t.shape.size() == 2 ? fgx::transcode(t, FG_BF16) : t.data;
    EXPECT_TRUE(std::vector<uint8_t>(gt->data, gt->data + gt->nbytes) == want) << t.name;
  }
  int64_t ft = 0;
  EXPECT_EQ(fg_gguf_get_int(g, "general.file_type", &ft), FG_OK);
  EXPECT_EQ(ft, 32);
  fg_gguf_close(g);
}

}  // namespace
