// Interoperability with the Python safetensors package (FORGIA_PYTHON):
//  - files it writes (every dtype it supports, with metadata) read with the same names,
//    shapes, dtypes, bytes and metadata, and re-serialized by forgia byte for byte;
//  - files forgia writes are byte-identical to safetensors.numpy.save_file's for the same
//    tensors, and safe_open / deserialize read them back with the same content.
#include <gtest/gtest.h>

#include <cjson/cJSON.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/safetensors.h"
#include "testutil.h"

namespace {

// byte k of tensor i, shared by both sides
uint8_t pattern(int i, uint64_t k) { return (uint8_t)((i * 7 + k * 13 + 5) % 251); }

int py(const fgt::TempDir &dir, const std::string &name, const std::string &src, std::string *out) {
  std::string p = dir.file(name);
  fgt::write_file(p, src.data(), src.size());
  std::string err;
  int rc = fgt::run(std::string(FORGIA_PYTHON) + " " + p + " " + dir.path, out, &err);
  if (rc != 0) ADD_FAILURE() << name << " failed (" << rc << "): " << err << *out;
  return rc;
}

const char *kPyWriter = R"PY(
import json, sys, numpy as np
from safetensors import TensorSpec, serialize_file
d = sys.argv[1]
# (torch-style name, storage shape); F4 doubles the last dim into the logical shape
specs = [("bool", [3]), ("int8", [2, 3]), ("uint8", [5]), ("int16", [2, 2]), ("uint16", [3]),
         ("int32", [2, 1, 2]), ("uint32", [1]), ("int64", [2]), ("uint64", [2]), ("float16", [4, 2]),
         ("float32", [3, 3]), ("float64", []), ("bfloat16", [2, 3]), ("float8_e4m3fn", [4]),
         ("float8_e4m3fnuz", [2, 2]), ("float8_e5m2", [3]), ("float8_e5m2fnuz", [1, 1]),
         ("float8_e8m0fnu", [2]), ("float4_e2m1fn_x2", [3, 2]), ("complex64", [2]), ("float32", [2, 0])]
sizes = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8,
         "uint64": 8, "float16": 2, "float32": 4, "float64": 8, "bfloat16": 2, "float4_e2m1fn_x2": 1,
         "complex64": 8}
keep, tensors, manifest = [], {}, []
for i, (dt, shape) in enumerate(specs):
    n = int(np.prod(shape)) * sizes.get(dt, 1)
    buf = np.array([(i * 7 + k * 13 + 5) % 251 for k in range(n)], dtype=np.uint8)
    if dt == "bool":
        buf = buf % 2
    keep.append(buf)
    name = "t%02d.%s" % (i, dt)
    spec = TensorSpec(dtype=dt, shape=shape, data_ptr=buf.ctypes.data, data_len=buf.nbytes)
    tensors[name] = spec
    manifest.append({"name": name, "dtype": spec.dtype, "shape": list(spec.shape), "hex": buf.tobytes().hex()})
meta = {"framework": "pt", "note": "h\u00e9llo \"q\"\n"}
serialize_file(tensors, d + "/py.safetensors", metadata=meta)
json.dump({"tensors": manifest, "metadata": meta}, open(d + "/manifest.json", "w"))
)PY";

TEST(SafetensorsInterop, ReadsWhatPythonWrites) {
  fgt::TempDir dir;
  std::string out;
  ASSERT_EQ(py(dir, "writer.py", kPyWriter, &out), 0);
  auto mj = fgt::read_file(dir.file("manifest.json"));
  cJSON *m = cJSON_ParseWithLength((const char *)mj.data(), mj.size());
  ASSERT_NE(m, nullptr);
  fg_st_file *f;
  ASSERT_EQ(fg_st_open(dir.file("py.safetensors").c_str(), FG_MAP_MMAP, &f), FG_OK) << fg_last_error();
  const cJSON *ts = cJSON_GetObjectItem(m, "tensors");
  EXPECT_EQ(fg_st_count(f), (size_t)cJSON_GetArraySize(ts));
  const cJSON *t;
  cJSON_ArrayForEach(t, ts) {
    const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
    const fg_st_tensor *r = fg_st_find(f, name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_STREQ(fg_dtype_info(r->dtype)->st_tag, cJSON_GetObjectItem(t, "dtype")->valuestring) << name;
    const cJSON *shape = cJSON_GetObjectItem(t, "shape");
    ASSERT_EQ(r->ndim, cJSON_GetArraySize(shape)) << name;
    for (int d = 0; d < r->ndim; d++) EXPECT_EQ((double)r->shape[d], cJSON_GetArrayItem(shape, d)->valuedouble);
    std::string hex = cJSON_GetObjectItem(t, "hex")->valuestring;
    ASSERT_EQ(r->nbytes * 2, hex.size()) << name;
    for (uint64_t k = 0; k < r->nbytes; k++)
      EXPECT_EQ(r->data[k], (uint8_t)std::stoi(hex.substr(2 * k, 2), nullptr, 16)) << name << " byte " << k;
  }
  const cJSON *meta = cJSON_GetObjectItem(m, "metadata");
  EXPECT_EQ(fg_st_metadata_count(f), (size_t)cJSON_GetArraySize(meta));
  const cJSON *kv;
  cJSON_ArrayForEach(kv, meta) {
    ASSERT_NE(fg_st_metadata_find(f, kv->string), nullptr) << kv->string;
    EXPECT_STREQ(fg_st_metadata_find(f, kv->string), kv->valuestring);
  }
  // re-serializing what was read (metadata in file order) reproduces the file exactly
  std::vector<fg_st_write_tensor> w;
  for (size_t i = 0; i < fg_st_count(f); i++) {
    const fg_st_tensor *r = fg_st_tensor_at(f, i);
    w.push_back({r->name, r->dtype, r->ndim, r->shape, r->data, r->nbytes});
  }
  std::vector<fg_st_kv> mk(fg_st_metadata_count(f));
  for (size_t i = 0; i < mk.size(); i++) fg_st_metadata_at(f, i, &mk[i].key, &mk[i].value);
  uint8_t *bytes;
  size_t len;
  ASSERT_EQ(fg_st_serialize(w.data(), w.size(), mk.data(), mk.size(), &bytes, &len), FG_OK) << fg_last_error();
  auto orig = fgt::read_file(dir.file("py.safetensors"));
  ASSERT_EQ(len, orig.size());
  EXPECT_EQ(memcmp(bytes, orig.data(), len), 0);
  free(bytes);
  fg_st_close(f);
  cJSON_Delete(m);
}

const char *kPyCompare = R"PY(
import sys, numpy as np
from safetensors import safe_open, deserialize
from safetensors.numpy import save_file
d = sys.argv[1]
specs = [("a.weight", np.float32, (3, 4)), ("a.bias", np.float32, (4,)), ("emb", np.float16, (5, 2)),
         ("ids", np.int64, (3,)), ("u", np.uint16, (2, 2)), ("flags", np.bool_, (3,)), ("i8", np.int8, (7,)),
         ("c", np.complex64, (2,)), ("d", np.float64, ()), ("empty", np.float32, (2, 0)),
         ("u64", np.uint64, (1,)), ("i16", np.int16, (3,)), ("u32", np.uint32, (2,)), ("i32", np.int32, (1, 1))]
arrays = {}
for i, (name, dt, shape) in enumerate(specs):
    n = int(np.prod(shape)) * np.dtype(dt).itemsize
    b = bytes((i * 7 + k * 13 + 5) % 251 for k in range(n))
    if dt is np.bool_:
        b = bytes(x % 2 for x in b)
    arrays[name] = np.frombuffer(b, dtype=dt).reshape(shape)
save_file(arrays, d + "/np.safetensors", metadata={"framework": "np"})
mine = open(d + "/forgia.safetensors", "rb").read()
ref = open(d + "/np.safetensors", "rb").read()
assert mine == ref, "bytes differ: %r vs %r" % (mine[:200], ref[:200])
with safe_open(d + "/forgia.safetensors", framework="np") as f:
    assert f.metadata() == {"framework": "np"}, f.metadata()
    assert sorted(f.keys()) == sorted(arrays), f.keys()
    for k, v in arrays.items():
        t = f.get_tensor(k)
        assert t.dtype == v.dtype and t.shape == v.shape and t.tobytes() == v.tobytes(), k
# every dtype, including those numpy lacks, through deserialize
got = dict(deserialize(open(d + "/all.safetensors", "rb").read()))
for line in open(d + "/all.txt"):
    name, dtype, shape, hexs = line.split()
    t = got[name]
    shape = [int(x) for x in shape.split(",") if x]
    assert t["dtype"] == dtype, (name, t["dtype"])
    assert list(t["shape"]) == shape, (name, t["shape"])
    assert bytes(t["data"]).hex() == hexs, name
with safe_open(d + "/all.safetensors", framework="np") as f:
    assert f.metadata() == {"k": "v\u00e9"}
print("ok", len(got))
)PY";

struct NpSpec {
  const char *name;
  fg_dtype dtype;
  std::vector<uint64_t> shape;
};

TEST(SafetensorsInterop, WritesWhatPythonWrites) {
  fgt::TempDir dir;
  std::vector<NpSpec> specs = {
      {"a.weight", FG_F32, {3, 4}}, {"a.bias", FG_F32, {4}},  {"emb", FG_F16, {5, 2}},  {"ids", FG_I64, {3}},
      {"u", FG_U16, {2, 2}},        {"flags", FG_BOOL, {3}},  {"i8", FG_I8, {7}},       {"c", FG_C64, {2}},
      {"d", FG_F64, {}},            {"empty", FG_F32, {2, 0}}, {"u64", FG_U64, {1}},    {"i16", FG_I16, {3}},
      {"u32", FG_U32, {2}},         {"i32", FG_I32, {1, 1}}};
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<fg_st_write_tensor> w;
  for (size_t i = 0; i < specs.size(); i++) {
    uint64_t n = 1;
    for (uint64_t d : specs[i].shape) n *= d;
    fg_dtype_nbytes(specs[i].dtype, n, &n);
    bufs.emplace_back(n);
    for (uint64_t k = 0; k < n; k++) bufs[i][k] = specs[i].dtype == FG_BOOL ? pattern((int)i, k) % 2 : pattern((int)i, k);
  }
  for (size_t i = 0; i < specs.size(); i++)
    w.push_back({specs[i].name, specs[i].dtype, (int)specs[i].shape.size(), specs[i].shape.data(), bufs[i].data(),
                 bufs[i].size()});
  fg_st_kv meta = {"framework", "np"};
  ASSERT_EQ(fg_st_save(dir.file("forgia.safetensors").c_str(), w.data(), w.size(), &meta, 1), FG_OK)
      << fg_last_error();

  // every safetensors dtype, F6 included, with a listing for the Python side
  fg_dtype all[] = {FG_BOOL, FG_F4, FG_F6_E2M3, FG_F6_E3M2, FG_U8, FG_I8, FG_F8_E5M2, FG_F8_E4M3,
                    FG_F8_E8M0, FG_F8_E4M3FNUZ, FG_F8_E5M2FNUZ, FG_I16, FG_U16, FG_F16, FG_BF16, FG_I32,
                    FG_U32, FG_F32, FG_C64, FG_F64, FG_I64, FG_U64};
  std::vector<std::string> names;
  std::vector<std::vector<uint64_t>> shapes;
  std::vector<std::vector<uint8_t>> data;
  std::string listing;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    names.push_back(std::string("x.") + fg_dtype_name(all[i]));
    shapes.push_back({2, 4});
    uint64_t nb;
    fg_dtype_nbytes(all[i], 8, &nb);
    data.emplace_back(nb);
    for (uint64_t k = 0; k < nb; k++) data.back()[k] = all[i] == FG_BOOL ? pattern((int)i, k) % 2 : pattern((int)i, k);
    listing += names.back() + " " + fg_dtype_info(all[i])->st_tag + " 2,4 ";
    static const char *hx = "0123456789abcdef";
    for (uint8_t b : data.back()) listing += std::string(1, hx[b >> 4]) + hx[b & 15];
    listing += "\n";
  }
  std::vector<fg_st_write_tensor> wa;
  for (size_t i = 0; i < names.size(); i++)
    wa.push_back({names[i].c_str(), all[i], 2, shapes[i].data(), data[i].data(), data[i].size()});
  fg_st_kv m2 = {"k", "v\xc3\xa9"};
  ASSERT_EQ(fg_st_save(dir.file("all.safetensors").c_str(), wa.data(), wa.size(), &m2, 1), FG_OK) << fg_last_error();
  fgt::write_file(dir.file("all.txt"), listing.data(), listing.size());

  std::string out;
  ASSERT_EQ(py(dir, "compare.py", kPyCompare, &out), 0);
  EXPECT_NE(out.find("ok 22"), std::string::npos) << out;
}

}  // namespace
