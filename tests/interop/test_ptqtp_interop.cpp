// `forgia export --ptqtp` output read by gguf-py: every plane is a TQ2_0 tensor gguf-py
// dequantizes (quants.dequantize), the dequantized planes of a tensor sum close to the
// source gguf-py dequantizes from the input, the sum is bit for bit the one forgia's TQ2_0
// decoder gives, shapes (3-D expert stacks included) are the base's, and the stamps are
// UINT32 fields gguf-py reads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../cpu/export_fixtures.h"
#include "forgia/export_ptqtp.h"

namespace {

using fgx::Tensor;

// argv: output, input, dir. For each base with planes: "P base k rel ne0,ne1,.." and the
// f32 sum of its dequantized planes in dir/<base>.f32; per stamp "K key type value".
const char *kReader = R"PY(
import sys, numpy as np, gguf
from gguf import quants
out, inp, d = sys.argv[1], sys.argv[2], sys.argv[3]
r, src = gguf.GGUFReader(out), gguf.GGUFReader(inp)
srcs = {t.name: t for t in src.tensors}
planes = {}
for t in r.tensors:
    if ".ptqtp" in t.name:
        assert t.tensor_type == gguf.GGMLQuantizationType.TQ2_0, t.name
        base, k = t.name.rsplit(".ptqtp", 1)
        planes.setdefault(base, []).append((int(k), t))
for base, ps in planes.items():
    ps.sort(key=lambda p: p[0])
    assert [p[0] for p in ps] == list(range(len(ps))), base
    s = None
    for _, t in ps:
        v = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1)
        s = v if s is None else (s + v).astype(np.float32)
    st = srcs[base]
    w = quants.dequantize(st.data, st.tensor_type).astype(np.float32).reshape(-1)
    assert [int(x) for x in ps[0][1].shape] == [int(x) for x in st.shape], base
    rel = float(np.sqrt(np.sum((w.astype(np.float64) - s) ** 2) / np.sum(w.astype(np.float64) ** 2)))
    s.tofile(f"{d}/{base}.f32")
    print("P", base, len(ps), rel, ",".join(str(int(x)) for x in ps[0][1].shape))
for k in ("fucina.ptqtp.version", "fucina.ptqtp.tie_scales"):
    f = r.fields.get(k)
    if f is not None:
        print("K", k, int(f.types[0]), f.contents())
)PY";

struct Result {
  struct P {
    int k;
    double rel;
    std::string ne;
  };
  std::map<std::string, P> planes;
  std::map<std::string, std::string> kv;
};

Result read_py(const fgt::TempDir &dir, const std::string &out, const std::string &in) {
  Result res;
  const std::string script = dir.file("reader.py");
  fgt::write_file(script, kReader, std::strlen(kReader));
  std::string so, se;
  const int rc = fgt::run(std::string(FORGIA_PYTHON) + " " + script + " " + out + " " + in + " " + dir.path, &so, &se);
  EXPECT_EQ(0, rc) << se;
  std::istringstream ss(so);
  std::string tag;
  while (ss >> tag) {
    if (tag == "P") {
      std::string base;
      Result::P p;
      ss >> base >> p.k >> p.rel >> p.ne;
      res.planes[base] = p;
    } else if (tag == "K") {
      std::string key, type, value;
      ss >> key >> type >> value;
      res.kv[key] = type + " " + value;
    }
  }
  return res;
}

std::vector<Tensor> model() {
  return {
    fgx::make("token_embd.weight", FG_F16, {8, 256}, 1),
    fgx::make("blk.0.attn_q.weight", FG_F16, {24, 512}, 2),
    fgx::make("blk.0.attn_k.weight", FG_Q8_0, {16, 256}, 3),
    fgx::make("blk.0.attn_output.weight", FG_BF16, {16, 768}, 4),
    fgx::make("blk.0.ffn_up_exps.weight", FG_F32, {4, 8, 256}, 5),
    fgx::make("blk.0.attn_norm.weight", FG_F32, {256}, 6),
    fgx::make("output.weight", FG_F32, {8, 256}, 7),
  };
}

// forgia's own sum of the planes of base in out, decoded with its TQ2_0 decoder.
std::vector<float> forgia_sum(const std::string &out, const std::string &base, int k, uint64_t rows, uint64_t cols) {
  fg_ckpt *o = nullptr;
  EXPECT_EQ(FG_OK, fg_ckpt_open(out.c_str(), &o)) << fg_last_error();
  std::vector<float> sum(rows * cols, 0.0f);
  for (int p = 0; p < k && o; p++) {
    const fg_ckpt_tensor *t = fg_ckpt_find(o, (base + ".ptqtp" + std::to_string(p)).c_str());
    EXPECT_NE(nullptr, t);
    if (!t) break;
    const std::vector<float> d = fgx::decode(FG_TQ2_0, std::vector<uint8_t>(t->data, t->data + t->nbytes), rows, cols);
    for (size_t i = 0; i < sum.size(); i++) sum[i] += d[i];
  }
  fg_ckpt_close(o);
  return sum;
}

void check(int k, bool tie) {
  SCOPED_TRACE(std::to_string(k) + (tie ? " tied" : " free"));
  fgt::TempDir dir;
  const std::string in = dir.file("m.gguf"), out = dir.file("o.gguf");
  const std::vector<Tensor> ts = model();
  fgx::write_gguf(in, [](fg_gguf_writer *w) { fg_gguf_writer_set_str(w, "general.architecture", "llama", 5); }, ts);
  std::string so, se;
  ASSERT_EQ(0, fgt::run(std::string(FORGIA_CLI) + " export --from-gguf " + in + " --out " + out + " --ptqtp=" +
                            std::to_string(k) + (tie ? " --ptqtp-tie" : ""),
                        &so, &se))
      << se;
  Result r = read_py(dir, out, in);
  const std::map<std::string, std::pair<uint64_t, uint64_t>> want = {
    {"blk.0.attn_q.weight", {24, 512}},
    {"blk.0.attn_k.weight", {16, 256}},
    {"blk.0.attn_output.weight", {16, 768}},
    {"blk.0.ffn_up_exps.weight", {32, 256}},
  };
  ASSERT_EQ(want.size(), r.planes.size());
  const double bound = k == 1 ? 0.6 : k == 2 ? 0.3 : 0.12;
  for (const auto &[base, rc] : want) {
    SCOPED_TRACE(base);
    ASSERT_TRUE(r.planes.count(base));
    const Result::P &p = r.planes.at(base);
    EXPECT_EQ(k, p.k);
    EXPECT_LT(p.rel, bound);
    EXPECT_GT(p.rel, 0.0);
    const std::vector<float> mine = forgia_sum(out, base, k, rc.first, rc.second);
    const std::vector<uint8_t> py = fgt::read_file(dir.file(base + ".f32"));
    ASSERT_EQ(mine.size() * 4, py.size());
    EXPECT_EQ(0, std::memcmp(mine.data(), py.data(), py.size())) << "gguf-py and forgia decode the planes differently";
  }
  EXPECT_EQ("256,8,4", r.planes.at("blk.0.ffn_up_exps.weight").ne);  // ne order, the base's
  EXPECT_EQ("512,24", r.planes.at("blk.0.attn_q.weight").ne);
  ASSERT_TRUE(r.kv.count(FG_PTQTP_VERSION_KEY));
  EXPECT_EQ("4 1", r.kv.at(FG_PTQTP_VERSION_KEY));  // GGUFValueType.UINT32, value 1
  if (tie) {
    EXPECT_EQ("4 1", r.kv[FG_PTQTP_TIE_KEY]);
  } else {
    EXPECT_EQ(0u, r.kv.count(FG_PTQTP_TIE_KEY));
  }
}

TEST(PtqtpInterop, GgufPyDequantizesEveryPlane) {
  for (int k = 1; k <= 3; k++) check(k, false);
  check(2, true);
  check(3, true);
}

}  // namespace
