// forgia export output read by gguf-py's GGUFReader: every tensor's bytes equal what
// forgia's codecs produce, shapes and types are gguf-py's, metadata is carried (and, for the
// types gguf-py can quantize, gguf-py's own quantizer produces the same bytes).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "../cpu/export_fixtures.h"

namespace {

using fgx::Tensor;

// Reads a GGUF with gguf-py: writes each tensor's raw bytes to DIR/<index>.bin and prints
// one line per tensor "T index name type ne0,ne1,.. nbytes" and per field
// "K key type[,subtype] value". With a reference file, "Q index ok|diff|skip" says whether
// gguf-py's quantizer, fed the reference tensor's values, gives the same bytes.
const char *kReader = R"PY(
import sys, numpy as np, gguf
from gguf import quants
path, outdir = sys.argv[1], sys.argv[2]
ref = gguf.GGUFReader(sys.argv[3]) if len(sys.argv) > 3 else None
r = gguf.GGUFReader(path)
for i, t in enumerate(r.tensors):
    b = np.ascontiguousarray(t.data).tobytes()
    open(f"{outdir}/{i}.bin", "wb").write(b)
    print("T", i, t.name, int(t.tensor_type), ",".join(str(int(x)) for x in t.shape), len(b))
    if ref is not None:
        rt = ref.tensors[i]
        qt = gguf.GGMLQuantizationType(int(t.tensor_type))
        if qt == rt.tensor_type:
            print("Q", i, "skip"); continue
        try:
            vals = quants.dequantize(rt.data, rt.tensor_type).astype(np.float32)
            q = quants.quantize(vals, qt)
        except (NotImplementedError, quants.QuantError, KeyError, TypeError):
            print("Q", i, "skip"); continue
        print("Q", i, "ok" if np.ascontiguousarray(q).tobytes() == b else "diff")
for k, f in r.fields.items():
    types = ",".join(str(int(x)) for x in f.types)
    v = f.contents()
    if isinstance(v, list): v = "|".join(str(x) for x in v)
    print("K", k, types, v)
)PY";

struct Dump {
  struct T {
    std::string name;
    int type;
    std::string ne;
    size_t nbytes;
    std::vector<uint8_t> bytes;
    std::string quant = "none";
  };
  std::vector<T> tensors;
  std::map<std::string, std::pair<std::string, std::string>> kv;  // key -> (types, value)
};

Dump read_with_gguf_py(const fgt::TempDir &dir, const std::string &path, const std::string &ref = "") {
  Dump d;
  std::string script = dir.file("reader.py");
  fgt::write_file(script, kReader, std::strlen(kReader));
  std::string bins = dir.file("bins");
  fgt::run("rm -rf '" + bins + "' && mkdir -p '" + bins + "'");
  std::string out, err;
  int rc = fgt::run(std::string(FORGIA_PYTHON) + " " + script + " " + path + " " + bins + (ref.empty() ? "" : " " + ref), &out, &err);
  EXPECT_EQ(rc, 0) << err;
  size_t p = 0;
  while (p < out.size()) {
    size_t e = out.find('\n', p);
    std::string line = out.substr(p, e - p);
    p = e == std::string::npos ? out.size() : e + 1;
    char kind = line.empty() ? 0 : line[0];
    if (kind == 'T') {
      Dump::T t;
      char name[128], ne[128];
      int idx;
      EXPECT_EQ(std::sscanf(line.c_str(), "T %d %127s %d %127s %zu", &idx, name, &t.type, ne, &t.nbytes), 5) << line;
      t.name = name;
      t.ne = ne;
      t.bytes = fgt::read_file(bins + "/" + std::to_string(idx) + ".bin");
      d.tensors.push_back(t);
    } else if (kind == 'Q') {
      int idx;
      char res[16];
      if (std::sscanf(line.c_str(), "Q %d %15s", &idx, res) != 2 || (size_t)idx >= d.tensors.size()) continue;
      d.tensors.at((size_t)idx).quant = res;
    } else if (kind == 'K') {
      size_t a = line.find(' ', 2), b = line.find(' ', a + 1);
      d.kv[line.substr(2, a - 2)] = {line.substr(a + 1, b - a - 1), b == std::string::npos ? "" : line.substr(b + 1)};
    }
  }
  return d;
}

std::string ne_string(const Tensor &t) {
  std::string s;
  for (size_t i = t.shape.size(); i-- > 0;) s += std::to_string(t.shape[i]) + (i ? "," : "");
  return s;
}

class ExportInterop : public ::testing::Test {
 protected:
  fgt::TempDir dir;
  std::string in = dir.file("in.gguf");
  std::vector<Tensor> src = {fgx::make("token_embd.weight", FG_F16, {8, 256}, 1),
                             fgx::make("blk.0.attn_norm.weight", FG_F32, {256}, 2),
                             fgx::make("blk.0.attn_q.weight", FG_F32, {16, 256}, 3),
                             fgx::make("blk.0.attn_v.weight", FG_BF16, {8, 512}, 4),
                             fgx::make("blk.0.odd.weight", FG_F32, {3, 40}, 5),
                             fgx::make("blk.0.ffn_up_exps.weight", FG_F32, {2, 4, 256}, 6)};
  void SetUp() override {
    if (fgt::run(std::string(FORGIA_PYTHON) + " -c 'import gguf, numpy'") != 0) GTEST_SKIP() << "no gguf-py";
    fgx::write_gguf(in, [](fg_gguf_writer *w) {
      fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
      fg_gguf_writer_set_str(w, "general.name", "tiny", 4);
      fg_gguf_writer_set_u32(w, "llama.context_length", 4096);
      fg_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
      const char *toks[] = {"<s>", "</s>", "hi"};
      fg_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", toks, nullptr, 3);
    }, src);
  }
};

TEST_F(ExportInterop, GgufPyReadsEveryTargetWithCodecBytes) {
  const char *targets[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K",
                           "q5_K", "q6_K", "tq1_0", "tq2_0", "iq4_nl", "iq4_xs", "mxfp4", "q1_0", "q2_0"};
  std::string known;  // ggml type codes this gguf-py knows (0.19.0 predates q2_0)
  ASSERT_EQ(fgt::run(std::string(FORGIA_PYTHON) +
                         " -c 'import gguf; print(\" \" + \" \".join(str(int(x)) for x in gguf.GGMLQuantizationType) + \" \")'",
                     &known), 0);
  for (const char *tg : targets) {
    fg_export_target t{};
    if (fg_export_target_parse(tg, &t) != FG_OK) continue;
    if (known.find(" " + std::to_string((int)t.dtype) + " ") == std::string::npos) {
      std::printf("skipping %s: this gguf-py has no type %d\n", tg, (int)t.dtype);
      continue;
    }
    SCOPED_TRACE(tg);
    std::string out = dir.file(std::string("o_") + tg + ".gguf"), so, se;
    ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " export --from-gguf " + in + " --out " + out + " --dtype " + tg, &so, &se), 0) << se;
    Dump d = read_with_gguf_py(dir, out, in);
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_EQ(d.tensors.size(), src.size());
    fg_ckpt *s = nullptr;
    fg_export_plan *p = nullptr;
    fg_export_options o = fgx::opts(tg);
    ASSERT_EQ(fg_ckpt_open(in.c_str(), &s), FG_OK);
    ASSERT_EQ(fg_ckpt_format_of(s), FG_CKPT_GGUF);
    ASSERT_EQ(fg_export_plan_create(s, &o, &p), FG_OK);
    for (size_t i = 0; i < src.size(); i++) {
      const fg_export_tensor *pt = fg_export_plan_tensor(p, i);
      EXPECT_EQ(d.tensors[i].name, src[i].name);
      EXPECT_EQ(d.tensors[i].type, (int)pt->dst_dtype) << src[i].name;
      EXPECT_EQ(d.tensors[i].ne, ne_string(src[i])) << src[i].name;
      std::vector<uint8_t> want = pt->dst_dtype == src[i].dtype ? src[i].data : fgx::transcode(src[i], pt->dst_dtype);
      EXPECT_TRUE(d.tensors[i].bytes == want) << src[i].name;
      // gguf-py's quantizer agrees wherever it can quantize the type.
      EXPECT_NE(d.tensors[i].quant, "diff") << src[i].name << " -> " << tg;
    }
    fg_export_plan_free(p);
    fg_ckpt_close(s);
    uint32_t code = 0;
    fg_export_file_type(t.dtype, &code);
    EXPECT_EQ(d.kv["general.file_type"], std::make_pair(std::string("4"), std::to_string(code)));
    EXPECT_EQ(d.kv["general.architecture"], std::make_pair(std::string("8"), std::string("llama")));
    EXPECT_EQ(d.kv["llama.context_length"], std::make_pair(std::string("4"), std::string("4096")));
    EXPECT_EQ(d.kv["tokenizer.ggml.tokens"], std::make_pair(std::string("9,8"), std::string("<s>|</s>|hi")));
    EXPECT_EQ(d.kv["llama.rope.freq_base"].first, "6");
  }
}

TEST_F(ExportInterop, SafetensorsConfigReadableByGgufPy) {
  fgt::TempDir st;
  std::vector<Tensor> ts = {fgx::make("model.layers.0.mlp.up_proj.weight", FG_BF16, {4, 64}, 1),
                            fgx::make("model.norm.weight", FG_F32, {64}, 2)};
  fgx::write_safetensors(st.file("model.safetensors"), ts);
  const char *cfg = "{\"hidden_size\": 64, \"rope_theta\": 500000.0, \"torch_dtype\": \"bfloat16\", "
                    "\"eos_token_id\": [128001, 128009], \"use_cache\": true}";
  fgt::write_file(st.file("config.json"), cfg, std::strlen(cfg));
  std::string out = dir.file("st.gguf"), so, se;
  ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " export --from-safetensors " + st.path + " --out " + out + " --dtype q8_0", &so, &se), 0) << se;
  Dump d = read_with_gguf_py(dir, out);
  ASSERT_EQ(d.tensors.size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    const Tensor &t = d.tensors[i].name == ts[0].name ? ts[0] : ts[1];
    EXPECT_EQ(d.tensors[i].ne, ne_string(t));
    std::vector<uint8_t> want = t.shape.size() == 2 ? fgx::transcode(t, FG_Q8_0) : t.data;
    EXPECT_TRUE(d.tensors[i].bytes == want) << t.name;
  }
  EXPECT_EQ(d.kv["safetensors.config.hidden_size"], std::make_pair(std::string("5"), std::string("64")));
  EXPECT_EQ(d.kv["safetensors.config.rope_theta"], std::make_pair(std::string("6"), std::string("500000.0")));
  EXPECT_EQ(d.kv["safetensors.config.torch_dtype"], std::make_pair(std::string("8"), std::string("bfloat16")));
  EXPECT_EQ(d.kv["safetensors.config.eos_token_id"], std::make_pair(std::string("9,5"), std::string("128001|128009")));
  EXPECT_EQ(d.kv["safetensors.config.use_cache"], std::make_pair(std::string("7"), std::string("True")));
  EXPECT_EQ(d.kv["general.file_type"].second, "7");
}

}  // namespace
