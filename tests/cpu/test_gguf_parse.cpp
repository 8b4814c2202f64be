// GGUF reader: hand-built files (assembled byte by byte, not with the library's writer)
// checked through every getter, the tensor directory, alignment, open modes, lookup and
// the error messages of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gguf_test_util.h"
#include "testutil.h"

using gg::Builder;
using gg::Bytes;

namespace {

struct File {
  fg_gguf_file *f = nullptr;
  ~File() { fg_gguf_close(f); }
};

// Every metadata type once, plus arrays of several element types.
Builder every_type_kvs(Builder b) {
  b.key("general.architecture", FG_GGUF_STRING).str("llama");
  b.key("t.u8", FG_GGUF_UINT8).u8(250);
  b.key("t.i8", FG_GGUF_INT8).u8((uint8_t)-5);
  b.key("t.u16", FG_GGUF_UINT16).u16(65000);
  b.key("t.i16", FG_GGUF_INT16).u16((uint16_t)-30000);
  b.key("t.u32", FG_GGUF_UINT32).u32(4000000000u);
  b.key("t.i32", FG_GGUF_INT32).u32((uint32_t)-2000000000);
  b.key("t.f32", FG_GGUF_FLOAT32).f32(0.1f);
  b.key("t.bool", FG_GGUF_BOOL).u8(1);
  b.key("t.bool2", FG_GGUF_BOOL).u8(2);  // any non-zero byte is true
  b.key("t.str", FG_GGUF_STRING).str(std::string("nul\0inside", 10));
  b.key("t.u64", FG_GGUF_UINT64).u64((1ull << 63) - 1);
  b.key("t.i64", FG_GGUF_INT64).u64((uint64_t)INT64_MIN);
  b.key("t.f64", FG_GGUF_FLOAT64).f64(-1e300);
  b.key("t.arr_u16", FG_GGUF_ARRAY).u32(FG_GGUF_UINT16).u64(3).u16(1).u16(2).u16(65535);
  b.key("t.arr_f64", FG_GGUF_ARRAY).u32(FG_GGUF_FLOAT64).u64(2).f64(0.5).f64(-3);
  b.key("t.arr_str", FG_GGUF_ARRAY).u32(FG_GGUF_STRING).u64(3).str("a").str("").str("xyz");
  b.key("t.arr_empty", FG_GGUF_ARRAY).u32(FG_GGUF_INT32).u64(0);
  b.key("t.arr_bool", FG_GGUF_ARRAY).u32(FG_GGUF_BOOL).u64(2).u8(0).u8(9);
  return b;
}
const int kEveryTypeKvs = 19;

Bytes every_type_file() {
  Builder b;
  b.header(0, kEveryTypeKvs);
  return every_type_kvs(b).pad_to(32).b;
}

// Tensors of several dtypes with the running padded offsets; data follow the pattern.
struct Spec {
  std::string name;
  std::vector<uint64_t> ne;
  fg_dtype dt;
  uint64_t nbytes;
};
const std::vector<Spec> kTensors = {
    {"token_embd.weight", {64, 3}, FG_Q8_0, 6 * 34},
    {"output_norm.weight", {8}, FG_F32, 32},
    {"blk.0.attn_q.weight", {256, 2, 1}, FG_Q4_K, 2 * 144},
    {"blk.0.ffn.bf16", {3, 2, 2, 2}, FG_BF16, 48},
    {"empty", {4, 0}, FG_F16, 0},
    {"last.i8", {5}, FG_I8, 5},
};

Bytes tensor_file(uint32_t align, bool with_align_key) {
  Builder b;
  b.header(kTensors.size(), with_align_key ? 1 : 0);
  if (with_align_key) b.key("general.alignment", FG_GGUF_UINT32).u32(align);
  uint64_t off = 0;
  for (auto &t : kTensors) {
    b.tinfo(t.name, t.ne, (uint32_t)t.dt, off);
    off += gg::pad(t.nbytes, align);
  }
  b.pad_to(align);
  uint64_t data_start = b.size();
  off = 0;
  for (auto &t : kTensors) {
    Bytes d = gg::pattern(off, t.nbytes);
    b.raw(d.data(), d.size());
    while ((b.size() - data_start) % align) b.u8(0);
    off += gg::pad(t.nbytes, align);
  }
  return b.b;
}

TEST(GgufParse, EveryMetadataType) {
  Bytes bytes = every_type_file();
  File F;
  ASSERT_EQ(fg_gguf_open_bytes(bytes.data(), bytes.size(), &F.f), FG_OK) << fg_last_error();
  fg_gguf_file *f = F.f;
  EXPECT_EQ(fg_gguf_version(f), 3u);
  EXPECT_EQ(fg_gguf_alignment(f), 32u);
  EXPECT_EQ(fg_gguf_kv_count(f), (uint64_t)kEveryTypeKvs);
  EXPECT_EQ(fg_gguf_tensor_count(f), 0u);

  int64_t v;
  double d;
  bool bo;
  fg_gguf_str s;
  ASSERT_EQ(fg_gguf_get_int(f, "t.u8", &v), FG_OK); EXPECT_EQ(v, 250);
  ASSERT_EQ(fg_gguf_get_int(f, "t.i8", &v), FG_OK); EXPECT_EQ(v, -5);
  ASSERT_EQ(fg_gguf_get_int(f, "t.u16", &v), FG_OK); EXPECT_EQ(v, 65000);
  ASSERT_EQ(fg_gguf_get_int(f, "t.i16", &v), FG_OK); EXPECT_EQ(v, -30000);
  ASSERT_EQ(fg_gguf_get_int(f, "t.u32", &v), FG_OK); EXPECT_EQ(v, 4000000000ll);
  ASSERT_EQ(fg_gguf_get_int(f, "t.i32", &v), FG_OK); EXPECT_EQ(v, -2000000000ll);
  ASSERT_EQ(fg_gguf_get_int(f, "t.u64", &v), FG_OK); EXPECT_EQ(v, INT64_MAX);
  ASSERT_EQ(fg_gguf_get_int(f, "t.i64", &v), FG_OK); EXPECT_EQ(v, INT64_MIN);
  ASSERT_EQ(fg_gguf_get_float(f, "t.f32", &d), FG_OK); EXPECT_EQ(d, (double)0.1f);
  ASSERT_EQ(fg_gguf_get_float(f, "t.f64", &d), FG_OK); EXPECT_EQ(d, -1e300);
  ASSERT_EQ(fg_gguf_get_bool(f, "t.bool", &bo), FG_OK); EXPECT_TRUE(bo);
  ASSERT_EQ(fg_gguf_get_bool(f, "t.bool2", &bo), FG_OK); EXPECT_TRUE(bo);
  ASSERT_EQ(fg_gguf_get_str(f, "general.architecture", &s), FG_OK); EXPECT_EQ(gg::S(s), "llama");
  ASSERT_EQ(fg_gguf_get_str(f, "t.str", &s), FG_OK); EXPECT_EQ(gg::S(s), std::string("nul\0inside", 10));
  // zero-copy: the string points into the caller's bytes
  EXPECT_GE((const uint8_t *)s.ptr, bytes.data());
  EXPECT_LT((const uint8_t *)s.ptr, bytes.data() + bytes.size());

  // wire types and names
  int64_t i = fg_gguf_key_index(f, "t.i16");
  ASSERT_GE(i, 0);
  EXPECT_EQ(fg_gguf_kv_type(f, (uint64_t)i), FG_GGUF_INT16);
  EXPECT_STREQ(fg_gguf_type_name(fg_gguf_kv_type(f, (uint64_t)i)), "INT16");
  EXPECT_EQ(fg_gguf_key_index(f, "absent"), -1);
  EXPECT_EQ(gg::S(fg_gguf_kv_key(f, 0)), "general.architecture");

  // type mismatches and missing keys
  EXPECT_EQ(fg_gguf_get_int(f, "t.f32", &v), FG_ERR_TYPE);
  EXPECT_NE(std::string(fg_last_error()).find("t.f32"), std::string::npos);
  EXPECT_EQ(fg_gguf_get_float(f, "t.str", &d), FG_ERR_TYPE);
  EXPECT_EQ(fg_gguf_get_float(f, "t.bool", &d), FG_ERR_TYPE);
  EXPECT_EQ(fg_gguf_get_bool(f, "t.f32", &bo), FG_ERR_TYPE);
  uint64_t u;
  EXPECT_EQ(fg_gguf_get_uint(f, "t.f64", &u), FG_ERR_TYPE);
  EXPECT_NE(std::string(fg_last_error()).find("t.f64"), std::string::npos);
  EXPECT_EQ(fg_gguf_get_str(f, "t.arr_str", &s), FG_ERR_TYPE);
  EXPECT_EQ(fg_gguf_get_int(f, "nope", &v), FG_ERR_NOT_FOUND);
  EXPECT_EQ(fg_gguf_kv_int(f, 1000, &v), FG_ERR_RANGE);

  // arrays
  fg_gguf_array a;
  ASSERT_EQ(fg_gguf_get_array(f, "t.arr_u16", &a), FG_OK);
  EXPECT_EQ(a.elem_type, FG_GGUF_UINT16);
  EXPECT_EQ(a.len, 3u);
  EXPECT_EQ(a.nbytes, 6u);
  ASSERT_EQ(fg_gguf_array_int(&a, 2, &v), FG_OK); EXPECT_EQ(v, 65535);
  EXPECT_EQ(fg_gguf_array_int(&a, 3, &v), FG_ERR_RANGE);
  ASSERT_EQ(fg_gguf_array_float(&a, 2, &d), FG_OK); EXPECT_EQ(d, 65535.0);  // integers widen
  ASSERT_EQ(fg_gguf_get_array(f, "t.arr_f64", &a), FG_OK);
  EXPECT_EQ(fg_gguf_array_int(&a, 0, &v), FG_ERR_TYPE);
  EXPECT_EQ(fg_gguf_array_bool(&a, 0, &bo), FG_ERR_TYPE);
  ASSERT_EQ(fg_gguf_array_float(&a, 1, &d), FG_OK); EXPECT_EQ(d, -3.0);
  ASSERT_EQ(fg_gguf_get_array(f, "t.arr_str", &a), FG_OK);
  EXPECT_EQ(a.elem_type, FG_GGUF_STRING);
  ASSERT_EQ(fg_gguf_array_str(&a, 0, &s), FG_OK); EXPECT_EQ(gg::S(s), "a");
  ASSERT_EQ(fg_gguf_array_str(&a, 1, &s), FG_OK); EXPECT_EQ(gg::S(s), "");
  ASSERT_EQ(fg_gguf_array_str(&a, 2, &s), FG_OK); EXPECT_EQ(gg::S(s), "xyz");
  EXPECT_EQ(fg_gguf_array_int(&a, 0, &v), FG_ERR_TYPE);
  ASSERT_EQ(fg_gguf_get_array(f, "t.arr_empty", &a), FG_OK);
  EXPECT_EQ(a.len, 0u);
  EXPECT_EQ(a.elem_type, FG_GGUF_INT32);
  ASSERT_EQ(fg_gguf_get_array(f, "t.arr_bool", &a), FG_OK);
  ASSERT_EQ(fg_gguf_array_bool(&a, 0, &bo), FG_OK); EXPECT_FALSE(bo);
  ASSERT_EQ(fg_gguf_array_bool(&a, 1, &bo), FG_OK); EXPECT_TRUE(bo);

  // raw accessors return the exact wire bytes
  const uint8_t *raw;
  uint64_t rl;
  i = fg_gguf_key_index(f, "t.u16");
  ASSERT_EQ(fg_gguf_kv_raw(f, (uint64_t)i, &raw, &rl), FG_OK);
  Builder want;
  want.key("t.u16", FG_GGUF_UINT16).u16(65000);
  EXPECT_EQ(Bytes(raw, raw + rl), want.b);
  ASSERT_EQ(fg_gguf_kv_value_raw(f, (uint64_t)i, &raw, &rl), FG_OK);
  EXPECT_EQ(rl, 2u);
  i = fg_gguf_key_index(f, "t.arr_str");
  ASSERT_EQ(fg_gguf_kv_raw(f, (uint64_t)i, &raw, &rl), FG_OK);
  Builder want2;
  want2.key("t.arr_str", FG_GGUF_ARRAY).u32(FG_GGUF_STRING).u64(3).str("a").str("").str("xyz");
  EXPECT_EQ(Bytes(raw, raw + rl), want2.b);
  gg::walk(f);
}

TEST(GgufParse, TensorDirectory) {
  for (uint32_t align : {32u, 1u, 64u, 4096u}) {
    SCOPED_TRACE(align);
    Bytes bytes = tensor_file(align, align != 32);
    File F;
    ASSERT_EQ(fg_gguf_open_bytes(bytes.data(), bytes.size(), &F.f), FG_OK) << fg_last_error();
    fg_gguf_file *f = F.f;
    EXPECT_EQ(fg_gguf_alignment(f), align);
    uint64_t ds = fg_gguf_data_offset(f, 0);
    EXPECT_EQ(ds % align, 0u);
    ASSERT_EQ(fg_gguf_tensor_count(f), kTensors.size());
    uint64_t off = 0;
    for (size_t i = 0; i < kTensors.size(); i++) {
      const Spec &sp = kTensors[i];
      const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
      ASSERT_NE(t, nullptr);
      EXPECT_STREQ(t->name, sp.name.c_str());
      EXPECT_EQ(t->name_len, sp.name.size());
      EXPECT_EQ(t->dtype, sp.dt);
      EXPECT_EQ(t->ndim, sp.ne.size());
      for (size_t d = 0; d < 4; d++) {
        EXPECT_EQ(t->ne[d], d < sp.ne.size() ? sp.ne[d] : 1u);
        EXPECT_EQ(t->shape[d], d < sp.ne.size() ? sp.ne[sp.ne.size() - 1 - d] : 0u);
      }
      EXPECT_EQ(t->offset, off);
      EXPECT_EQ(t->nbytes, sp.nbytes);
      EXPECT_EQ(t->part, 0u);
      if (sp.nbytes) {
        EXPECT_EQ(t->data, bytes.data() + ds + off);
        EXPECT_EQ(Bytes(t->data, t->data + t->nbytes), gg::pattern(off, sp.nbytes));
      } else {
        EXPECT_EQ(t->data, nullptr);
      }
      EXPECT_EQ(fg_gguf_find_tensor(f, sp.name.c_str()), t);
      off += gg::pad(sp.nbytes, align);
    }
    EXPECT_EQ(fg_gguf_find_tensor(f, "token_embd"), nullptr);
    EXPECT_EQ(fg_gguf_tensor_numel(fg_gguf_find_tensor(f, "empty")), 0u);
    EXPECT_EQ(fg_gguf_tensor_numel(fg_gguf_find_tensor(f, "blk.0.ffn.bf16")), 24u);
    const fg_gguf_tensor *t;
    EXPECT_EQ(fg_gguf_get_tensor(f, "missing.weight", &t), FG_ERR_NOT_FOUND);
    EXPECT_NE(std::string(fg_last_error()).find("missing.weight"), std::string::npos);
    // the hints are harmless on every kind of mapping
    fg_gguf_tensor_prefetch(f, fg_gguf_tensor_at(f, 0));
    fg_gguf_tensor_evict(f, fg_gguf_tensor_at(f, 0));
  }
}

TEST(GgufParse, OpenModesAgreeAndMappingOutlivesClose) {
  Bytes bytes = tensor_file(32, false);
  fgt::TempDir dir;
  std::string path = dir.file("m.gguf");
  fgt::write_file(path, bytes.data(), bytes.size());
  for (fg_map_mode mode : {FG_MAP_READ, FG_MAP_MMAP}) {
    fg_gguf_file *f = nullptr;
    ASSERT_EQ(fg_gguf_open(path.c_str(), mode, &f), FG_OK) << fg_last_error();
    EXPECT_EQ(std::string(fg_gguf_path(f)), path);
    const fg_gguf_tensor *t = fg_gguf_find_tensor(f, "token_embd.weight");
    ASSERT_NE(t, nullptr);
    const uint8_t *data = t->data;
    uint64_t n = t->nbytes;
    fg_gguf_tensor_prefetch(f, t);
    fg_mapping *m = fg_gguf_retain_mapping(f, 0);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(fg_gguf_retain_mapping(f, 1), nullptr);
    fg_gguf_close(f);
    // the borrowed data stays valid while the retained mapping lives
    EXPECT_EQ(Bytes(data, data + n), gg::pattern(0, n));
    EXPECT_EQ(fg_mapping_size(m), bytes.size());
    fg_mapping_release(m);
  }
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_auto(path.c_str(), &f), FG_OK);
  EXPECT_EQ(fg_gguf_part_count(f), 1u);
  EXPECT_EQ(fg_gguf_tensor_count(f), kTensors.size());
  fg_gguf_close(f);
  fg_gguf_close(nullptr);
  EXPECT_EQ(fg_gguf_open(dir.file("none.gguf").c_str(), FG_MAP_MMAP, &f), FG_ERR_NOT_FOUND);
  EXPECT_EQ(f, nullptr);
}

TEST(GgufParse, Version2IsAccepted) {
  Builder b;
  b.header(0, 1, 2).key("k", FG_GGUF_UINT8).u8(1).pad_to(32);
  File F;
  ASSERT_EQ(fg_gguf_open_bytes(b.b.data(), b.size(), &F.f), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_gguf_version(F.f), 2u);
}

TEST(GgufParse, TruncatedTensorNamesItAndTheShortfall) {
  Bytes bytes = tensor_file(32, false);
  // cut into the data of blk.0.attn_q.weight (offset 224 + 32, 288 bytes)
  File F;
  fg_gguf_file *probe = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(bytes.data(), bytes.size(), &probe), FG_OK);
  uint64_t ds = fg_gguf_data_offset(probe, 0);
  uint64_t end = ds + fg_gguf_find_tensor(probe, "blk.0.attn_q.weight")->offset + 288;
  fg_gguf_close(probe);
  Bytes cut(bytes.begin(), bytes.begin() + (long)(end - 100));
  EXPECT_EQ(fg_gguf_open_bytes(cut.data(), cut.size(), &F.f), FG_ERR_TRUNCATED);
  EXPECT_EQ(F.f, nullptr);
  std::string msg = fg_last_error();
  EXPECT_NE(msg.find("blk.0.attn_q.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("100 bytes missing"), std::string::npos) << msg;
}

TEST(GgufParse, EveryPrefixFailsCleanly) {
  // a file with both metadata and tensors
  Builder kv = every_type_kvs(Builder());
  Builder c;
  c.header(kTensors.size(), kEveryTypeKvs);
  c.raw(kv.b.data(), kv.b.size());
  uint64_t off = 0;
  for (auto &t : kTensors) {
    c.tinfo(t.name, t.ne, (uint32_t)t.dt, off);
    off += gg::pad(t.nbytes, 32);
  }
  c.pad_to(32);
  uint64_t ds = c.size();
  off = 0;
  for (auto &t : kTensors) {
    Bytes d = gg::pattern(off, t.nbytes);
    c.raw(d.data(), d.size());
    while ((c.size() - ds) % 32) c.u8(0);
    off += gg::pad(t.nbytes, 32);
  }
  Bytes bytes = c.b;
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(bytes.data(), bytes.size(), &f), FG_OK) << fg_last_error();
  const fg_gguf_tensor *last = fg_gguf_tensor_at(f, kTensors.size() - 1);
  uint64_t need = ds + last->offset + last->nbytes;
  fg_gguf_close(f);
  for (size_t n = 0; n < bytes.size(); n++) {
    // a copy of exactly n bytes, so that ASan sees any read past the end
    Bytes prefix(bytes.begin(), bytes.begin() + (long)n);
    f = nullptr;
    fg_status s = fg_gguf_open_bytes(n ? prefix.data() : nullptr, n, &f);
    if (n >= need) {
      EXPECT_EQ(s, FG_OK) << n << ": " << fg_last_error();
      gg::walk(f);
    } else {
      EXPECT_TRUE(s == FG_ERR_TRUNCATED || s == FG_ERR_BAD_STRING) << n << ": " << fg_status_name(s) << " " << fg_last_error();
      EXPECT_EQ(f, nullptr);
      EXPECT_NE(std::string(fg_last_error()), "");
    }
    fg_gguf_close(f);
  }
}

TEST(GgufParse, ManyTensorsLookup) {
  const int n = 5000;
  Builder b;
  b.header(n, 0);
  for (int i = 0; i < n; i++) b.tinfo("blk." + std::to_string(i) + ".w", {4}, FG_F32, (uint64_t)i * 32);
  b.pad_to(32);
  b.b.resize(b.size() + (size_t)n * 32, 0);
  File F;
  ASSERT_EQ(fg_gguf_open_bytes(b.b.data(), b.size(), &F.f), FG_OK) << fg_last_error();
  for (int i = 0; i < n; i++) {
    std::string name = "blk." + std::to_string(i) + ".w";
    const fg_gguf_tensor *t = fg_gguf_find_tensor(F.f, name.c_str());
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t, fg_gguf_tensor_at(F.f, (uint64_t)i));
  }
  EXPECT_EQ(fg_gguf_find_tensor(F.f, "blk.5000.w"), nullptr);
}

TEST(GgufParse, Rejections) {
  struct Case {
    const char *what;
    Bytes bytes;
    fg_status want;
    const char *in_msg;
  };
  std::vector<Case> cases;
  {
    Builder b;
    b.header(0, 2).key("a.b", FG_GGUF_UINT8).u8(1).key("a.b", FG_GGUF_UINT16).u16(1).pad_to(32);
    cases.push_back({"duplicate key", b.b, FG_ERR_DUPLICATE, "a.b"});
  }
  {
    Builder b;
    b.header(0, 1).key("general.alignment", FG_GGUF_INT32).u32(32).pad_to(32);
    cases.push_back({"alignment i32", b.b, FG_ERR_BAD_ALIGNMENT, "UINT32"});
  }
  {
    Builder b;
    b.header(0, 1).key("general.alignment", FG_GGUF_UINT32).u32(1u << 21).pad_to(32);
    cases.push_back({"alignment 2^21", b.b, FG_ERR_BAD_ALIGNMENT, "2097152"});
  }
  {
    Builder b;
    b.header(2, 0).tinfo("", {4}, FG_F32, 0).tinfo("", {4}, FG_F32, 32).pad_to(32);
    b.b.resize(b.size() + 64);
    cases.push_back({"two empty tensor names", b.b, FG_ERR_DUPLICATE, "tensor '' at offset"});
  }
  {
    Builder b;
    b.header(1, 0).tinfo(std::string(64, 'n'), {4}, FG_F32, 0).pad_to(32);
    b.b.resize(b.size() + 32);
    cases.push_back({"name of 64 bytes (as ggml)", b.b, FG_ERR_BAD_STRING, "name length 64"});
  }
  {
    Builder b;
    b.header(1, 0).tinfo(std::string("a\0b", 3), {4}, FG_F32, 0).pad_to(32);
    b.b.resize(b.size() + 32);
    cases.push_back({"NUL in a name (stricter than ggml)", b.b, FG_ERR_BAD_STRING, "NUL"});
  }
  {
    Builder b;
    b.header(1, 0).tinfo("t", {1, 1, 1, 1, 1}, FG_F32, 0).pad_to(32);
    b.b.resize(b.size() + 32);
    cases.push_back({"n_dims 5", b.b, FG_ERR_BAD_SHAPE, "n_dims 5, expected 0..4"});
  }
  {
    Builder b;
    b.header(1, 0).tinfo("w", {4}, 43, 0).pad_to(32);
    b.b.resize(b.size() + 32);
    cases.push_back({"type 43", b.b, FG_ERR_BAD_DTYPE, "43"});
  }
  {
    Builder b;
    b.header(1, 0).tinfo("q", {16, 2}, FG_Q8_0, 0).pad_to(32);
    b.b.resize(b.size() + 64);
    cases.push_back({"block mismatch", b.b, FG_ERR_BAD_SHAPE, "block"});
  }
  {
    Builder b;
    b.header(2, 0).tinfo("a", {4}, FG_F32, 0).tinfo("b", {4}, FG_F32, 16).pad_to(32);
    b.b.resize(b.size() + 64);
    cases.push_back({"offset not running total", b.b, FG_ERR_BAD_OFFSET, "expected 32"});
  }
  {
    Builder b;
    b.header(2, 0).tinfo("a", {4}, FG_F32, 0).tinfo("a", {4}, FG_F32, 32).pad_to(32);
    b.b.resize(b.size() + 64);
    cases.push_back({"duplicate tensor", b.b, FG_ERR_DUPLICATE, "'a'"});
  }
  {
    Builder b;
    b.header(0, 0, 0x03000000u);
    cases.push_back({"big-endian", b.b, FG_ERR_BAD_VERSION, "big-endian"});
  }
  for (auto &c : cases) {
    fg_gguf_file *f = nullptr;
    EXPECT_EQ(fg_gguf_open_bytes(c.bytes.data(), c.bytes.size(), &f), c.want) << c.what << ": " << fg_last_error();
    EXPECT_EQ(f, nullptr);
    EXPECT_NE(std::string(fg_last_error()).find(c.in_msg), std::string::npos) << c.what << ": " << fg_last_error();
    EXPECT_NE(std::string(fg_last_error()).find("<memory>"), std::string::npos) << c.what;
  }
}

// UINT64 values of 2^63 and above are valid (ggml and llama.cpp read them): they stay exact
// through the unsigned getters, and the signed getters refuse them with a message instead
// of the whole open failing.
TEST(GgufParse, Uint64AtOrAbove2Pow63IsKeptExact) {
  Builder b;
  b.header(0, 8);
  b.key("u.min_big", FG_GGUF_UINT64).u64(1ull << 63);
  b.key("u.max", FG_GGUF_UINT64).u64(UINT64_MAX);
  b.key("u.small", FG_GGUF_UINT64).u64(42);
  b.key("u.arr", FG_GGUF_ARRAY).u32(FG_GGUF_UINT64).u64(3).u64(7).u64(1ull << 63).u64(UINT64_MAX);
  b.key("s.i8", FG_GGUF_INT8).u8((uint8_t)-5);
  b.key("s.i64", FG_GGUF_INT64).u64((uint64_t)INT64_MAX);
  b.key("s.u8", FG_GGUF_UINT8).u8(250);
  b.key("s.arr_i16", FG_GGUF_ARRAY).u32(FG_GGUF_INT16).u64(2).u16(300).u16((uint16_t)-300);
  b.pad_to(32);
  File F;
  ASSERT_EQ(fg_gguf_open_bytes(b.b.data(), b.size(), &F.f), FG_OK) << fg_last_error();
  fg_gguf_file *f = F.f;
  uint64_t u = 0;
  int64_t v = 0;
  ASSERT_EQ(fg_gguf_get_uint(f, "u.min_big", &u), FG_OK);
  EXPECT_EQ(u, 9223372036854775808ull);
  ASSERT_EQ(fg_gguf_get_uint(f, "u.max", &u), FG_OK);
  EXPECT_EQ(u, 18446744073709551615ull);
  ASSERT_EQ(fg_gguf_kv_uint(f, (size_t)fg_gguf_key_index(f, "u.small"), &u), FG_OK);
  EXPECT_EQ(u, 42u);
  // the signed getter: FG_ERR_RANGE naming the file, key and value; *out untouched
  v = 123;
  EXPECT_EQ(fg_gguf_get_int(f, "u.max", &v), FG_ERR_RANGE);
  EXPECT_EQ(v, 123);
  std::string msg = fg_last_error();
  EXPECT_NE(msg.find("<memory>"), std::string::npos) << msg;
  EXPECT_NE(msg.find("u.max"), std::string::npos) << msg;
  EXPECT_NE(msg.find("18446744073709551615"), std::string::npos) << msg;
  EXPECT_EQ(fg_gguf_kv_int(f, (size_t)fg_gguf_key_index(f, "u.min_big"), &v), FG_ERR_RANGE);
  ASSERT_EQ(fg_gguf_get_int(f, "u.small", &v), FG_OK);
  EXPECT_EQ(v, 42);
  // other integer wire types through the unsigned getter; negatives are FG_ERR_RANGE
  ASSERT_EQ(fg_gguf_get_uint(f, "s.u8", &u), FG_OK);
  EXPECT_EQ(u, 250u);
  ASSERT_EQ(fg_gguf_get_uint(f, "s.i64", &u), FG_OK);
  EXPECT_EQ(u, (uint64_t)INT64_MAX);
  u = 9;
  EXPECT_EQ(fg_gguf_get_uint(f, "s.i8", &u), FG_ERR_RANGE);
  EXPECT_EQ(u, 9u);
  msg = fg_last_error();
  EXPECT_NE(msg.find("s.i8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("-5"), std::string::npos) << msg;
  EXPECT_EQ(fg_gguf_get_uint(f, "absent", &u), FG_ERR_NOT_FOUND);
  // arrays
  fg_gguf_array a;
  ASSERT_EQ(fg_gguf_get_array(f, "u.arr", &a), FG_OK);
  const uint64_t want[3] = {7, 1ull << 63, UINT64_MAX};
  for (uint64_t j = 0; j < 3; j++) {
    ASSERT_EQ(fg_gguf_array_uint(&a, j, &u), FG_OK);
    EXPECT_EQ(u, want[j]);
  }
  EXPECT_EQ(fg_gguf_array_uint(&a, 3, &u), FG_ERR_RANGE);
  ASSERT_EQ(fg_gguf_array_int(&a, 0, &v), FG_OK);
  EXPECT_EQ(v, 7);
  EXPECT_EQ(fg_gguf_array_int(&a, 1, &v), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("9223372036854775808"), std::string::npos) << fg_last_error();
  ASSERT_EQ(fg_gguf_get_array(f, "s.arr_i16", &a), FG_OK);
  ASSERT_EQ(fg_gguf_array_uint(&a, 0, &u), FG_OK);
  EXPECT_EQ(u, 300u);
  EXPECT_EQ(fg_gguf_array_uint(&a, 1, &u), FG_ERR_RANGE);
  ASSERT_EQ(fg_gguf_array_int(&a, 1, &v), FG_OK);
  EXPECT_EQ(v, -300);
  // the float getter rounds to the nearest double; the bool getter tests for non-zero
  double d = 0;
  ASSERT_EQ(fg_gguf_get_float(f, "u.max", &d), FG_OK);
  EXPECT_EQ(d, 18446744073709551616.0);
  bool bo = false;
  ASSERT_EQ(fg_gguf_get_bool(f, "u.min_big", &bo), FG_OK);  // low 63 bits all zero
  EXPECT_TRUE(bo);
  gg::walk(f);
}

// The float getter widens every integer type to double; the bool getter takes integers
// (non-zero is true), as Fucina's getFloat / getBool do.
TEST(GgufParse, FloatAndBoolGettersTakeIntegers) {
  Builder b;
  b.header(0, 9);
  b.key("i8", FG_GGUF_INT8).u8((uint8_t)-128);
  b.key("u32", FG_GGUF_UINT32).u32(4000000000u);
  b.key("i64", FG_GGUF_INT64).u64((uint64_t)INT64_MIN);
  b.key("zero", FG_GGUF_INT32).u32(0);
  b.key("u16", FG_GGUF_UINT16).u16(256);  // low byte 0: the whole value decides
  b.key("bool", FG_GGUF_BOOL).u8(3);
  b.key("f32", FG_GGUF_FLOAT32).f32(-0.0f);
  b.key("arr_i32", FG_GGUF_ARRAY).u32(FG_GGUF_INT32).u64(3).u32(0).u32((uint32_t)-7).u32(16777217);
  b.key("arr_u8", FG_GGUF_ARRAY).u32(FG_GGUF_UINT8).u64(2).u8(0).u8(200);
  b.pad_to(32);
  File F;
  ASSERT_EQ(fg_gguf_open_bytes(b.b.data(), b.size(), &F.f), FG_OK) << fg_last_error();
  fg_gguf_file *f = F.f;
  double d = 0;
  ASSERT_EQ(fg_gguf_get_float(f, "i8", &d), FG_OK); EXPECT_EQ(d, -128.0);
  ASSERT_EQ(fg_gguf_get_float(f, "u32", &d), FG_OK); EXPECT_EQ(d, 4000000000.0);
  ASSERT_EQ(fg_gguf_get_float(f, "i64", &d), FG_OK); EXPECT_EQ(d, -9223372036854775808.0);
  ASSERT_EQ(fg_gguf_get_float(f, "f32", &d), FG_OK);
  EXPECT_EQ(d, 0.0);
  EXPECT_TRUE(std::signbit(d));
  bool bo = true;
  ASSERT_EQ(fg_gguf_get_bool(f, "zero", &bo), FG_OK); EXPECT_FALSE(bo);
  ASSERT_EQ(fg_gguf_get_bool(f, "u16", &bo), FG_OK); EXPECT_TRUE(bo);
  ASSERT_EQ(fg_gguf_get_bool(f, "i8", &bo), FG_OK); EXPECT_TRUE(bo);
  ASSERT_EQ(fg_gguf_get_bool(f, "bool", &bo), FG_OK); EXPECT_TRUE(bo);
  // a BOOL is not an integer, a float is not a bool
  int64_t v;
  EXPECT_EQ(fg_gguf_get_int(f, "bool", &v), FG_ERR_TYPE);
  EXPECT_EQ(fg_gguf_get_bool(f, "f32", &bo), FG_ERR_TYPE);
  EXPECT_NE(std::string(fg_last_error()).find("BOOL or an integer"), std::string::npos) << fg_last_error();
  fg_gguf_array a;
  ASSERT_EQ(fg_gguf_get_array(f, "arr_i32", &a), FG_OK);
  ASSERT_EQ(fg_gguf_array_float(&a, 1, &d), FG_OK); EXPECT_EQ(d, -7.0);
  ASSERT_EQ(fg_gguf_array_float(&a, 2, &d), FG_OK); EXPECT_EQ(d, 16777217.0);  // exact in double
  ASSERT_EQ(fg_gguf_array_bool(&a, 0, &bo), FG_OK); EXPECT_FALSE(bo);
  ASSERT_EQ(fg_gguf_array_bool(&a, 1, &bo), FG_OK); EXPECT_TRUE(bo);
  ASSERT_EQ(fg_gguf_get_array(f, "arr_u8", &a), FG_OK);
  ASSERT_EQ(fg_gguf_array_bool(&a, 0, &bo), FG_OK); EXPECT_FALSE(bo);
  ASSERT_EQ(fg_gguf_array_bool(&a, 1, &bo), FG_OK); EXPECT_TRUE(bo);
  ASSERT_EQ(fg_gguf_array_float(&a, 1, &d), FG_OK); EXPECT_EQ(d, 200.0);
}

// n_dims 0 (ggml: a one-element tensor, ne all 1) and an empty tensor name are valid.
TEST(GgufParse, ZeroDimsAndEmptyNames) {
  Builder b;
  b.header(4, 0);
  b.tinfo("", {}, FG_F32, 0);              // both at once
  b.tinfo("scalar.i16", {}, FG_I16, 32);
  b.tinfo(std::string(63, 'n'), {2}, FG_F32, 64);
  b.tinfo("vec", {3}, FG_F32, 96);
  b.pad_to(32);
  uint64_t ds = b.size();
  Bytes data = gg::pattern(0, 128);
  b.raw(data.data(), data.size());
  File F;
  ASSERT_EQ(fg_gguf_open_bytes(b.b.data(), b.size(), &F.f), FG_OK) << fg_last_error();
  fg_gguf_file *f = F.f;
  ASSERT_EQ(fg_gguf_tensor_count(f), 4u);
  const fg_gguf_tensor *t = fg_gguf_find_tensor(f, "");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t, fg_gguf_tensor_at(f, 0));
  EXPECT_EQ(fg_gguf_find_tensor_n(f, "xyz", 0), t);
  const fg_gguf_tensor *g = nullptr;
  ASSERT_EQ(fg_gguf_get_tensor(f, "", &g), FG_OK);
  EXPECT_EQ(g, t);
  EXPECT_EQ(t->name_len, 0u);
  EXPECT_STREQ(t->name, "");
  EXPECT_EQ(t->ndim, 0);
  for (int d = 0; d < 4; d++) {
    EXPECT_EQ(t->ne[d], 1u);
    EXPECT_EQ(t->shape[d], 0u);
  }
  EXPECT_EQ(t->nbytes, 4u);
  EXPECT_EQ(fg_gguf_tensor_numel(t), 1u);
  EXPECT_EQ(t->data, b.b.data() + ds);
  t = fg_gguf_find_tensor(f, "scalar.i16");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ndim, 0);
  EXPECT_EQ(t->nbytes, 2u);
  EXPECT_EQ(t->offset, 32u);
  EXPECT_EQ(Bytes(t->data, t->data + 2), gg::pattern(32, 2));
  t = fg_gguf_find_tensor(f, std::string(63, 'n').c_str());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name_len, 63u);
  EXPECT_EQ(t->shape[0], 2u);
  EXPECT_EQ(fg_gguf_find_tensor(f, "vec")->nbytes, 12u);
  EXPECT_EQ(fg_gguf_find_tensor(f, "absent"), nullptr);
  gg::walk(f);

  // one element of a block type is not a whole block, for n_dims 0 as for [1]
  Builder q;
  q.header(1, 0).tinfo("q", {}, FG_Q8_0, 0).pad_to(32);
  q.b.resize(q.size() + 64);
  fg_gguf_file *bad = nullptr;
  EXPECT_EQ(fg_gguf_open_bytes(q.b.data(), q.size(), &bad), FG_ERR_BAD_SHAPE);
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(std::string(fg_last_error()).find("block"), std::string::npos) << fg_last_error();

  // the header check on counts allows the smallest tensor info: an empty name, n_dims 0
  const int n = 200;
  File M;
  Builder m1;
  m1.header(n, 1).key("general.alignment", FG_GGUF_UINT32).u32(1);
  for (int i = 0; i < n; i++) m1.tinfo(i ? "t" + std::to_string(i) : "", {}, FG_I8, (uint64_t)i);
  m1.b.resize(m1.size() + n, 7);
  ASSERT_EQ(fg_gguf_open_bytes(m1.b.data(), m1.size(), &M.f), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_gguf_tensor_count(M.f), (size_t)n);
  EXPECT_EQ(fg_gguf_find_tensor(M.f, "t199")->offset, 199u);
}

}  // namespace
