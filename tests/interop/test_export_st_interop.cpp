// `forgia export GGUF OUT.safetensors --dtype f32|f16|bf16` read by the Python safetensors
// package: safe_open (numpy) and deserialize see the GGUF's tensor names, row-major shapes
// (GGUF's ne reversed) and, byte for byte, the values forgia's codecs decode from the source
// (narrowed by forgia for f16/bf16); __metadata__ carries format=pt and the GGUF's scalars.
// A sharded folder: the index's total_size and weight_map agree with the shards.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../cpu/export_fixtures.h"
#include "testutil.h"

namespace {

std::vector<fgx::Tensor> tensors() {
  return {fgx::make("token_embd.weight", FG_Q6_K, {4, 256}, 1), fgx::make("blk.0.attn_norm.weight", FG_F32, {256}, 2),
          fgx::make("blk.0.attn_q.weight", FG_Q4_K, {8, 256}, 3), fgx::make("blk.0.ffn_up.weight", FG_Q8_0, {3, 64}, 4),
          fgx::make("blk.0.ffn_down.weight", FG_F16, {64, 3}, 5)};
}

// forgia's dequantization of t as dst (the 1-D f32 norm is kept as it is)
std::vector<uint8_t> expected(const fgx::Tensor &t, fg_dtype dst) {
  if (t.dtype == dst || t.shape.size() < 2) return t.data;
  const std::vector<float> f = fgx::decode(t.dtype, t.data, t.rows(), t.row());
  if (dst != FG_F32) return fgx::encode(dst, f, t.rows(), t.row());
  std::vector<uint8_t> b(f.size() * 4);
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

const char kCheck[] = R"PY(
import json, os, sys, numpy as np
from safetensors import safe_open, deserialize
d = sys.argv[1]
for line in open(d + "/manifest.txt"):
    path, name, tag, shape = line.split()
    shape = [int(x) for x in shape.split(",")]
    want = open(d + "/exp/" + os.path.basename(path) + "." + name, "rb").read()
    raw = dict(deserialize(open(path, "rb").read()))[name]
    assert raw["dtype"] == tag, (path, name, raw["dtype"], tag)
    assert list(raw["shape"]) == shape, (path, name, raw["shape"], shape)
    assert bytes(raw["data"]) == want, (path, name)
    if tag != "BF16":  # numpy has no bfloat16
        with safe_open(path, framework="np") as f:
            t = f.get_tensor(name)
            assert list(t.shape) == shape and t.tobytes() == want, (path, name)
            m = f.metadata()
            assert m["format"] == "pt" and m["general.architecture"] == "llama", m
            assert m["llama.block_count"] == "1", m
            assert "tokenizer.ggml.tokens" not in m, m
idx = json.load(open(d + "/shards/model.safetensors.index.json"))
total = 0
seen = set()
for f in sorted(set(idx["weight_map"].values())):
    with safe_open(d + "/shards/" + f, framework="np") as s:
        for k in s.keys():
            assert idx["weight_map"][k] == f, (k, f)
            t = s.get_tensor(k)
            total += t.nbytes
            seen.add(k)
assert seen == set(idx["weight_map"]), (seen, idx["weight_map"])
assert idx["metadata"]["total_size"] == total, (idx["metadata"], total)
print("ALL OK", len(seen))
)PY";

TEST(ExportSafetensorsInterop, PythonReadsTheDequantizedValues) {
  fgt::TempDir dir;
  const std::string in = dir.file("m.gguf");
  fgx::write_gguf(
      in,
      [](fg_gguf_writer *w) {
        fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
        fg_gguf_writer_set_u32(w, "llama.block_count", 1);
        const char *toks[] = {"a", "b"};
        fg_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", toks, nullptr, 2);
      },
      tensors());
  ASSERT_EQ(0, fgt::run("mkdir '" + dir.file("exp") + "'"));
  std::string manifest, out, err;
  const struct {
    const char *name;
    fg_dtype t;
  } dts[] = {{"f32", FG_F32}, {"f16", FG_F16}, {"bf16", FG_BF16}};
  for (const auto &dt : dts) {
    const std::string o = dir.file(std::string("m_") + dt.name + ".safetensors");
    ASSERT_EQ(0, fgt::run(std::string(FORGIA_CLI) + " export " + in + " " + o + " --dtype " + dt.name, &out, &err))
        << err;
    for (const fgx::Tensor &t : tensors()) {
      const std::vector<uint8_t> want = expected(t, dt.t);
      const fg_dtype stored = t.shape.size() < 2 ? t.dtype : dt.t;
      fgt::write_file(dir.file("exp/m_" + std::string(dt.name) + ".safetensors." + t.name), want.data(), want.size());
      std::string shape;
      for (uint64_t s : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(s);
      manifest += o + " " + t.name + " " + fg_dtype_info(stored)->st_tag + " " + shape + "\n";
    }
  }
  fgt::write_file(dir.file("manifest.txt"), manifest.data(), manifest.size());
  ASSERT_EQ(0, fgt::run(std::string(FORGIA_CLI) + " export " + in + " " + dir.file("shards") +
                            " --dtype f32 --shard-size 9000", &out, &err))
      << err;
  fgt::write_file(dir.file("check.py"), kCheck, std::strlen(kCheck));
  ASSERT_EQ(0, fgt::run(std::string("'") + FORGIA_PYTHON + "' '" + dir.file("check.py") + "' '" + dir.path + "'", &out,
                        &err))
      << err << out;
  EXPECT_NE(out.find("ALL OK 5"), std::string::npos) << out;
}

}  // namespace
