// Export merge mode (forgia/export_merge.h, `forgia export --adapters --alpha`): merged f32,
// f16 and bf16 weights equal base + scale * B A computed here (the exact GEMM's order,
// rounded once to the base's type), every other tensor and the metadata byte for byte, the
// same bytes for any chunk size (streaming), and every refusal of Fucina's rules through
// the library and the CLI.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "export_fixtures.h"
#include "forgia/elem/half.h"
#include "forgia/export_merge.h"
#include "forgia/state_dict.h"
#include "lora_rig.h"

namespace {

struct Adapter {
  std::string prefix;
  uint64_t r, in, out;
  std::vector<float> a, b;
};

Adapter adapter(const std::string &prefix, uint64_t r, uint64_t in, uint64_t out, uint64_t seed) {
  return {prefix, r, in, out, fgt::gaussian(r * in, seed, 0.2f), fgt::gaussian(out * r, seed + 1, 0.2f)};
}

// The model: merge targets in f16, bf16 and f32, a quantized matrix, a norm and one matrix
// without an adapter.
std::vector<fgx::Tensor> model() {
  return {fgx::make("token_embd.weight", FG_F32, {10, 32}, 1),
          fgx::make("blk.0.attn_norm.weight", FG_F32, {32}, 2),
          fgx::make("blk.0.attn_q.weight", FG_F16, {32, 32}, 3),
          fgx::make("blk.0.attn_output.weight", FG_BF16, {32, 16}, 4),
          fgx::make("blk.0.ffn_down.weight", FG_F32, {32, 48}, 5),
          fgx::make("blk.1.attn_k.weight", FG_Q8_0, {16, 32}, 6),
          fgx::make("blk.1.ffn_up.weight", FG_F32, {48, 32}, 7)};
}

std::vector<Adapter> good_adapters() {
  return {adapter("layers.0.q", 4, 32, 32, 11), adapter("layers.0.o", 2, 16, 32, 13),
          adapter("layers.0.down", 3, 48, 32, 15)};
}

// Writes adapters (optionally leaving a half out, or renaming) as a state dict.
void write_adapters(const std::string &path, const std::vector<Adapter> &as, bool drop_b = false,
                    bool drop_a = false, fg_dtype dt = FG_F32) {
  std::vector<std::string> names;
  std::vector<std::vector<uint64_t>> shapes;
  std::vector<std::vector<uint8_t>> data;
  for (const Adapter &a : as) {
    if (!drop_a) {
      names.push_back(a.prefix + ".lora_a");
      shapes.push_back({a.r, a.in});
      data.push_back(fgt::lora_narrow(a.a, dt));
    }
    if (!drop_b) {
      names.push_back(a.prefix + ".lora_b");
      shapes.push_back({a.out, a.r});
      data.push_back(fgt::lora_narrow(a.b, dt));
    }
  }
  std::vector<fg_state_dict_entry> e;
  for (size_t i = 0; i < names.size(); i++)
    e.push_back({names[i].c_str(), dt, 2, shapes[i].data(), data[i].data(), (uint64_t)data[i].size()});
  ASSERT_EQ(FG_OK, fg_state_dict_save(path.c_str(), e.data(), e.size())) << fg_last_error();
}

void write_model(const std::string &path) {
  fgx::write_gguf(
      path, [](fg_gguf_writer *w) { fg_gguf_writer_set_str(w, "general.architecture", "llama", 5); }, model());
}

fg_status merge_file(const std::string &in, const std::string &adapters, float alpha, const std::string &out,
                     uint64_t chunk = 0) {
  fg_ckpt *src = nullptr;
  fg_export_merge *m = nullptr;
  fg_export_merge_options o = {adapters.c_str(), alpha, chunk, false};
  fg_status st = fg_ckpt_open(in.c_str(), &src);
  if (!st) st = fg_export_merge_create(src, &o, &m);
  if (!st) st = fg_export_merge_run(m, out.c_str(), nullptr, nullptr);
  fg_export_merge_free(m);
  fg_ckpt_close(src);
  return st;
}

// What the merge must write for tensor t with adapter a at alpha.
std::vector<uint8_t> expected(const fgx::Tensor &t, const Adapter &a, float alpha) {
  std::vector<float> w = fgx::decode(t.dtype, t.data, t.rows(), t.row());
  std::vector<float> m =
      fgt::lora_ref_merge(w, fgt::lora_ref_ba(a.a, a.b, a.out, a.in, (uint32_t)a.r), alpha / (float)a.r);
  return fgt::lora_narrow(m, t.dtype);
}

std::vector<uint8_t> tensor_bytes(const fg_ckpt *c, const std::string &name) {
  const fg_ckpt_tensor *t = fg_ckpt_find(c, name.c_str());
  EXPECT_NE(nullptr, t) << name;
  return t ? std::vector<uint8_t>(t->data, t->data + t->nbytes) : std::vector<uint8_t>();
}

void check_output(const std::string &out, float alpha) {
  fg_ckpt *c = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(out.c_str(), &c)) << fg_last_error();
  std::vector<fgx::Tensor> ts = model();
  ASSERT_EQ(ts.size(), fg_ckpt_count(c));
  std::vector<Adapter> as = good_adapters();
  const char *merged[] = {"blk.0.attn_q.weight", "blk.0.attn_output.weight", "blk.0.ffn_down.weight"};
  for (size_t i = 0; i < ts.size(); i++) {
    const fg_ckpt_tensor *t = fg_ckpt_tensor_at(c, i);
    EXPECT_EQ(ts[i].name, t->name);
    EXPECT_EQ(ts[i].dtype, t->dtype) << t->name;
    std::vector<uint8_t> want = ts[i].data;
    for (int k = 0; k < 3; k++) {
      if (ts[i].name == merged[k]) want = expected(ts[i], as[k], alpha);
    }
    EXPECT_EQ(want, tensor_bytes(c, ts[i].name)) << ts[i].name;
    if (ts[i].name == merged[0]) {
      EXPECT_NE(ts[i].data, want) << "the merge changed nothing";
    }
  }
  const fg_gguf_file *g = fg_ckpt_gguf(c);
  ASSERT_NE(nullptr, g);
  EXPECT_GE(fg_gguf_key_index(g, "general.architecture"), 0);
  fg_ckpt_close(c);
}

std::string cli() { return FORGIA_CLI; }

}  // namespace

TEST(ExportMerge, MergedWeightsEqualBasePlusScaledBAAndTheRestIsCopied) {
  fgt::TempDir d;
  const std::string in = d.file("base.gguf"), ad = d.file("adapters.safetensors"), out = d.file("merged.gguf");
  write_model(in);
  write_adapters(ad, good_adapters());
  ASSERT_EQ(FG_OK, merge_file(in, ad, 16.0f, out)) << fg_last_error();
  check_output(out, 16.0f);
  // A checkpoint directory resolves to its adapters.safetensors; a one-row chunk streams the
  // same bytes.
  const std::string out2 = d.file("merged2.gguf");
  ASSERT_EQ(FG_OK, merge_file(in, d.path, 16.0f, out2, 64)) << fg_last_error();
  EXPECT_EQ(fgt::read_file(out), fgt::read_file(out2));
}

TEST(ExportMerge, OpenReportsTheAdaptersAndTheirBases) {
  fgt::TempDir d;
  const std::string in = d.file("base.gguf"), ad = d.file("adapters.safetensors");
  write_model(in);
  write_adapters(ad, good_adapters());
  fg_ckpt *src = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(in.c_str(), &src));
  fg_export_merge_options o = {d.path.c_str(), 8.0f, 0, false};
  fg_export_merge *m = nullptr;
  ASSERT_EQ(FG_OK, fg_export_merge_create(src, &o, &m)) << fg_last_error();
  ASSERT_EQ(3u, fg_export_merge_count(m));
  uint32_t r = 0;
  EXPECT_STREQ("blk.0.ffn_down.weight", fg_export_merge_base(m, 0, &r)); /* the file's order, by name */
  EXPECT_EQ(3u, r);
  EXPECT_STREQ("blk.0.attn_q.weight", fg_export_merge_base(m, 2, &r));
  EXPECT_EQ(4u, r);
  EXPECT_EQ(ad, fg_export_merge_path(m));
  EXPECT_EQ(nullptr, fg_export_merge_base(m, 3, &r));
  // The output may not be the adapters file or an input.
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_export_merge_run(m, in.c_str(), nullptr, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_export_merge_run(m, ad.c_str(), nullptr, nullptr));
  fg_export_merge_free(m);
  fg_ckpt_close(src);
}

TEST(ExportMerge, HostMergeRoundsOnceAndRefusesQuantizedBases) {
  const float a[2] = {1.0f, 0.5f}, b[2] = {0x1p-11f + 0x1p-23f, 0.0f};
  uint16_t base = fg_f32_to_f16(1.0f), out = 0;
  ASSERT_EQ(FG_OK, fg_lora_merge_host(FG_F16, &base, &out, 1, 1, 1, a, b, 1.0f));
  EXPECT_EQ(fg_f32_to_f16(1.0f + 0x1p-10f), out);
  uint8_t q[34] = {0};
  EXPECT_EQ(FG_ERR_QUANTIZED_BASE, fg_lora_merge_host(FG_Q8_0, q, q, 1, 32, 1, a, b, 1.0f));
  EXPECT_EQ(FG_ERR_TYPE, fg_lora_merge_host(FG_I32, q, q, 1, 1, 1, a, b, 1.0f));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_lora_merge_host(FG_F32, q, q, 1, 1, 0, a, b, 1.0f));
}

TEST(ExportMerge, EveryBrokenAdapterSetIsRefusedNamingTheTensor) {
  fgt::TempDir d;
  const std::string in = d.file("base.gguf"), out = d.file("o.gguf");
  write_model(in);
  struct Case {
    const char *what;
    std::vector<Adapter> as;
    bool drop_b, drop_a;
    fg_dtype dt;
    fg_status st;
    const char *names;
  } cases[] = {
      {"a without b", {adapter("layers.0.q", 4, 32, 32, 1)}, true, false, FG_F32, FG_ERR_NOT_FOUND, "layers.0.q.lora_a"},
      {"b without a", {adapter("layers.0.q", 4, 32, 32, 1)}, false, true, FG_F32, FG_ERR_NOT_FOUND, "layers.0.q.lora_b"},
      {"unknown target", {adapter("layers.0.qq", 4, 32, 32, 1)}, false, false, FG_F32, FG_ERR_INVALID_ARG, "layers.0.qq.lora_a"},
      {"unknown prefix", {adapter("model.layers.0.q", 4, 32, 32, 1)}, false, false, FG_F32, FG_ERR_INVALID_ARG,
       "model.layers.0.q.lora_a"},
      {"leading zero", {adapter("layers.00.q", 4, 32, 32, 1)}, false, false, FG_F32, FG_ERR_INVALID_ARG, "layers.00.q"},
      {"empty set", {}, false, false, FG_F32, FG_ERR_NOT_FOUND, "empty adapter set"},
      {"quantized base", {adapter("layers.1.k", 2, 32, 16, 1)}, false, false, FG_F32, FG_ERR_QUANTIZED_BASE,
       "blk.1.attn_k.weight"},
      {"absent base", {adapter("layers.7.q", 2, 32, 32, 1)}, false, false, FG_F32, FG_ERR_NOT_FOUND, "blk.7.attn_q.weight"},
      {"shapes", {adapter("layers.0.q", 4, 16, 32, 1)}, false, false, FG_F32, FG_ERR_BAD_SHAPE, "blk.0.attn_q.weight"},
      {"f16 adapter", {adapter("layers.0.q", 4, 32, 32, 1)}, false, false, FG_F16, FG_ERR_TYPE, "layers.0.q.lora_a"},
  };
  for (const Case &c : cases) {
    const std::string ad = d.file(std::string(c.what) + ".safetensors");
    write_adapters(ad, c.as, c.drop_b, c.drop_a, c.dt);
    EXPECT_EQ(c.st, merge_file(in, ad, 16.0f, out)) << c.what << ": " << fg_last_error();
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), c.names)) << c.what << ": " << fg_last_error();
    EXPECT_FALSE(fgt::run("test -e " + out) == 0) << c.what << ": an output was written";
  }
  EXPECT_EQ(FG_ERR_NONFINITE, merge_file(in, d.file("shapes.safetensors"), NAN, out));
  EXPECT_EQ(FG_ERR_IO, merge_file(in, d.file("absent.safetensors"), 1.0f, out));
  // A safetensors model is not a GGUF.
  const std::string st = d.file("model.safetensors");
  fgx::write_safetensors(st, {fgx::make("blk.0.attn_q.weight", FG_F32, {32, 32}, 3)});
  write_adapters(d.file("ok.safetensors"), {adapter("layers.0.q", 4, 32, 32, 1)});
  EXPECT_EQ(FG_ERR_UNSUPPORTED, merge_file(st, d.file("ok.safetensors"), 1.0f, out));
}

TEST(ExportMerge, CliMergesAndRefusesBadCombinations) {
  fgt::TempDir d;
  const std::string in = d.file("base.gguf"), ad = d.file("adapters.safetensors"), out = d.file("m.gguf");
  write_model(in);
  write_adapters(ad, good_adapters());
  std::string so, se;
  const std::string base = cli() + " export --from-gguf " + in + " --out " + out;
  ASSERT_EQ(0, fgt::run(base + " --adapters " + d.path + " --alpha 16", &so, &se)) << se;
  EXPECT_NE(std::string::npos, so.find("merge blk.0.attn_q.weight (rank 4, scale 4)")) << so;
  EXPECT_NE(std::string::npos, so.find("merged 3 LoRA adapters")) << so;
  {  // the last progress line counts the output's bytes against their total, not against 0 B
    const size_t line = se.find("[7/7] ");
    ASSERT_NE(std::string::npos, line) << se;
    const size_t open = se.find(" (", line), of = se.find(" of ", open), comma = se.find(", ", of);
    ASSERT_NE(std::string::npos, comma) << se;
    const std::string done = se.substr(open + 2, of - open - 2), total = se.substr(of + 4, comma - of - 4);
    EXPECT_EQ(done, total) << se;
    EXPECT_NE(total, "0 B") << se;
  }
  check_output(out, 16.0f);
  // The library and the CLI write the same file.
  const std::string lib = d.file("lib.gguf");
  ASSERT_EQ(FG_OK, merge_file(in, ad, 16.0f, lib));
  EXPECT_EQ(fgt::read_file(lib), fgt::read_file(out));

  EXPECT_EQ(0, fgt::run(cli() + " export --from-gguf " + in + " --dry-run --adapters " + ad + " --alpha 2", &so, &se));
  EXPECT_NE(std::string::npos, so.find("merge blk.0.ffn_down.weight (rank 3")) << so;

  EXPECT_EQ(2, fgt::run(base + " --adapters " + ad, &so, &se));
  EXPECT_NE(std::string::npos, se.find("--alpha")) << se;
  EXPECT_EQ(2, fgt::run(base + " --alpha 16", &so, &se));
  EXPECT_EQ(2, fgt::run(base + " --adapters " + ad + " --alpha 16 --dtype q8_0", &so, &se));
  EXPECT_NE(std::string::npos, se.find("--dtype")) << se;
  EXPECT_EQ(2, fgt::run(base + " --adapters " + ad + " --alpha 16 --experts-dtype q8_0", &so, &se));
  EXPECT_EQ(2, fgt::run(base + " --adapters " + ad + " --alpha sixteen", &so, &se));
  EXPECT_EQ(2, fgt::run(base + " --adapters " + ad + " --alpha nan", &so, &se));
  EXPECT_EQ(2, fgt::run(cli() + " export --from-safetensors " + ad + " --out " + out + " --adapters " + ad + " --alpha 1",
                        &so, &se));
  const std::string qad = d.file("q.safetensors");
  write_adapters(qad, {adapter("layers.1.k", 2, 32, 16, 1)});
  EXPECT_EQ(1, fgt::run(base + " --adapters " + qad + " --alpha 16", &so, &se));
  EXPECT_NE(std::string::npos, se.find("blk.1.attn_k.weight")) << se;
  EXPECT_NE(std::string::npos, se.find("quantized base")) << se;
}
