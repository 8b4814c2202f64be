// GGUF writer: golden layout against hand-assembled bytes, exact wire types, replacement in
// place, verbatim copies, re-emit identity, streaming, validation, atomic files.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gguf_test_util.h"
#include "testutil.h"

using gg::Builder;
using gg::Bytes;

namespace {

struct W {
  fg_gguf_writer *w = nullptr;
  W() { EXPECT_EQ(fg_gguf_writer_create(&w), FG_OK); }
  ~W() { fg_gguf_writer_free(w); }
  Bytes mem() {
    void *p = nullptr;
    size_t n = 0;
    EXPECT_EQ(fg_gguf_writer_finish_mem(w, &p, &n), FG_OK) << fg_last_error();
    Bytes b((uint8_t *)p, (uint8_t *)p + n);
    free(p);
    return b;
  }
};

std::vector<std::string> list_dir(const std::string &d) {
  std::vector<std::string> names;
  DIR *dir = opendir(d.c_str());
  while (dirent *e = readdir(dir))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);  // temporary files are hidden
  closedir(dir);
  return names;
}

TEST(GgufWrite, EmptyFileIs32Bytes) {
  W w;
  Builder want;
  want.header(0, 0).pad_to(32);
  EXPECT_EQ(w.mem(), want.b);
  EXPECT_EQ(w.mem().size(), 32u);
}

TEST(GgufWrite, GoldenLayout) {
  W w;
  Bytes a = gg::pattern(0, 12), q = gg::pattern(7, 34);
  uint64_t ne_a[1] = {3}, ne_q[2] = {32, 1};
  ASSERT_EQ(fg_gguf_writer_set_str(w.w, "general.architecture", "llama", 5), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u32(w.w, "x.count", 7), FG_OK);
  ASSERT_EQ(fg_gguf_writer_add_tensor(w.w, "a", FG_F32, 1, ne_a, a.data(), a.size()), FG_OK);
  ASSERT_EQ(fg_gguf_writer_add_tensor(w.w, "q", FG_Q8_0, 2, ne_q, q.data(), q.size()), FG_OK) << fg_last_error();
  Builder want;
  want.header(2, 2);
  want.key("general.architecture", FG_GGUF_STRING).str("llama");
  want.key("x.count", FG_GGUF_UINT32).u32(7);
  want.tinfo("a", {3}, FG_F32, 0).tinfo("q", {32, 1}, FG_Q8_0, 32);  // trailing 1 kept as given
  want.pad_to(32);
  want.raw(a.data(), a.size()).pad_to(32);
  want.raw(q.data(), q.size()).pad_to(32);  // the last tensor is padded too
  EXPECT_EQ(w.mem(), want.b);
  EXPECT_EQ(fg_gguf_writer_kv_count(w.w), 2u);
  EXPECT_EQ(fg_gguf_writer_tensor_count(w.w), 2u);
}

TEST(GgufWrite, EveryTypeRoundTripsWithItsWireType) {
  W w;
  ASSERT_EQ(fg_gguf_writer_set_u8(w.w, "u8", 255), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_i8(w.w, "i8", -128), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u16(w.w, "u16", 65535), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_i16(w.w, "i16", -32768), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u32(w.w, "u32", 4294967295u), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_i32(w.w, "i32", INT32_MIN), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u64(w.w, "u64", (1ull << 63) - 1), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_i64(w.w, "i64", INT64_MIN), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_f32(w.w, "f32", 3.25f), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_f64(w.w, "f64", 1e-300), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_bool(w.w, "bool", true), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_str(w.w, "str", "a\0b", 3), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_str(w.w, "empty", "", 0), FG_OK);
  int32_t ints[3] = {-1, 0, 1};
  ASSERT_EQ(fg_gguf_writer_set_array(w.w, "arr_i32", FG_GGUF_INT32, ints, 3), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_array(w.w, "arr_empty", FG_GGUF_FLOAT32, nullptr, 0), FG_OK);
  const char *strs[3] = {"x", "", "zz"};
  ASSERT_EQ(fg_gguf_writer_set_str_array(w.w, "arr_str", strs, nullptr, 3), FG_OK);
  Bytes bytes = w.mem();

  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(bytes.data(), bytes.size(), &f), FG_OK) << fg_last_error();
  const std::pair<const char *, fg_gguf_type> types[] = {
      {"u8", FG_GGUF_UINT8},   {"i8", FG_GGUF_INT8},       {"u16", FG_GGUF_UINT16},  {"i16", FG_GGUF_INT16},
      {"u32", FG_GGUF_UINT32}, {"i32", FG_GGUF_INT32},     {"u64", FG_GGUF_UINT64},  {"i64", FG_GGUF_INT64},
      {"f32", FG_GGUF_FLOAT32}, {"f64", FG_GGUF_FLOAT64},  {"bool", FG_GGUF_BOOL},   {"str", FG_GGUF_STRING},
      {"arr_i32", FG_GGUF_ARRAY}, {"arr_str", FG_GGUF_ARRAY}};
  for (auto &[k, t] : types) EXPECT_EQ(fg_gguf_kv_type(f, (uint64_t)fg_gguf_key_index(f, k)), t) << k;
  int64_t v;
  double d;
  bool b;
  fg_gguf_str s;
  fg_gguf_array a;
  fg_gguf_get_int(f, "u8", &v); EXPECT_EQ(v, 255);
  fg_gguf_get_int(f, "i8", &v); EXPECT_EQ(v, -128);
  fg_gguf_get_int(f, "u16", &v); EXPECT_EQ(v, 65535);
  fg_gguf_get_int(f, "i16", &v); EXPECT_EQ(v, -32768);
  fg_gguf_get_int(f, "u32", &v); EXPECT_EQ(v, 4294967295ll);
  fg_gguf_get_int(f, "i32", &v); EXPECT_EQ(v, INT32_MIN);
  fg_gguf_get_int(f, "u64", &v); EXPECT_EQ(v, INT64_MAX);
  fg_gguf_get_int(f, "i64", &v); EXPECT_EQ(v, INT64_MIN);
  fg_gguf_get_float(f, "f32", &d); EXPECT_EQ(d, 3.25);
  fg_gguf_get_float(f, "f64", &d); EXPECT_EQ(d, 1e-300);
  fg_gguf_get_bool(f, "bool", &b); EXPECT_TRUE(b);
  fg_gguf_get_str(f, "str", &s); EXPECT_EQ(gg::S(s), std::string("a\0b", 3));
  fg_gguf_get_str(f, "empty", &s); EXPECT_EQ(s.len, 0u);
  ASSERT_EQ(fg_gguf_get_array(f, "arr_i32", &a), FG_OK);
  fg_gguf_array_int(&a, 0, &v); EXPECT_EQ(v, -1);
  ASSERT_EQ(fg_gguf_get_array(f, "arr_empty", &a), FG_OK);
  EXPECT_EQ(a.len, 0u);
  EXPECT_EQ(a.elem_type, FG_GGUF_FLOAT32);
  ASSERT_EQ(fg_gguf_get_array(f, "arr_str", &a), FG_OK);
  fg_gguf_array_str(&a, 2, &s); EXPECT_EQ(gg::S(s), "zz");
  fg_gguf_close(f);
}

TEST(GgufWrite, ReaddingAKeyReplacesItInPlace) {
  W w;
  ASSERT_EQ(fg_gguf_writer_set_u32(w.w, "a", 1), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u32(w.w, "b", 2), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u32(w.w, "c", 3), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_str(w.w, "b", "two", 3), FG_OK);  // type may change
  EXPECT_EQ(fg_gguf_writer_kv_count(w.w), 3u);
  Builder want;
  want.header(0, 3).key("a", FG_GGUF_UINT32).u32(1).key("b", FG_GGUF_STRING).str("two");
  want.key("c", FG_GGUF_UINT32).u32(3).pad_to(32);
  EXPECT_EQ(w.mem(), want.b);
  ASSERT_EQ(fg_gguf_writer_remove_kv(w.w, "a"), FG_OK);
  EXPECT_EQ(fg_gguf_writer_remove_kv(w.w, "a"), FG_ERR_NOT_FOUND);
  ASSERT_EQ(fg_gguf_writer_set_u32(w.w, "c", 4), FG_OK);
  Builder want2;
  want2.header(0, 2).key("b", FG_GGUF_STRING).str("two").key("c", FG_GGUF_UINT32).u32(4).pad_to(32);
  EXPECT_EQ(w.mem(), want2.b);
}

TEST(GgufWrite, AlignmentKey) {
  W w;
  EXPECT_EQ(fg_gguf_writer_set_u32(w.w, "general.alignment", 48), FG_ERR_BAD_ALIGNMENT);
  EXPECT_EQ(fg_gguf_writer_set_u32(w.w, "general.alignment", 0), FG_ERR_BAD_ALIGNMENT);
  EXPECT_EQ(fg_gguf_writer_set_u32(w.w, "general.alignment", 1u << 21), FG_ERR_BAD_ALIGNMENT);
  EXPECT_EQ(fg_gguf_writer_set_i32(w.w, "general.alignment", 64), FG_ERR_BAD_ALIGNMENT);
  EXPECT_EQ(fg_gguf_writer_set_u64(w.w, "general.alignment", 64), FG_ERR_BAD_ALIGNMENT);
  EXPECT_EQ(fg_gguf_writer_set_u8(w.w, "general.alignment", 64), FG_ERR_BAD_ALIGNMENT);
  EXPECT_EQ(fg_gguf_writer_kv_count(w.w), 0u);  // rejected calls leave nothing behind
  ASSERT_EQ(fg_gguf_writer_set_u32(w.w, "general.alignment", 64), FG_OK);
  Bytes x = gg::pattern(0, 8);
  uint64_t ne[1] = {8};
  ASSERT_EQ(fg_gguf_writer_add_tensor(w.w, "x", FG_I8, 1, ne, x.data(), 8), FG_OK);
  ASSERT_EQ(fg_gguf_writer_add_tensor(w.w, "y", FG_I8, 1, ne, x.data(), 8), FG_OK);
  Bytes out = w.mem();
  EXPECT_EQ(out.size() % 64, 0u);
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(out.data(), out.size(), &f), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_gguf_alignment(f), 64u);
  EXPECT_EQ(fg_gguf_data_offset(f, 0) % 64, 0u);
  EXPECT_EQ(fg_gguf_find_tensor(f, "y")->offset, 64u);
  fg_gguf_close(f);
  // removing the key goes back to 32
  ASSERT_EQ(fg_gguf_writer_remove_kv(w.w, "general.alignment"), FG_OK);
  out = w.mem();
  ASSERT_EQ(fg_gguf_open_bytes(out.data(), out.size(), &f), FG_OK);
  EXPECT_EQ(fg_gguf_find_tensor(f, "y")->offset, 32u);
  fg_gguf_close(f);
}

TEST(GgufWrite, Uint64AtOrAbove2Pow63RoundTrips) {
  // ggml writes and reads the whole u64 range; so does forgia (see gguf.h).
  W w;
  ASSERT_EQ(fg_gguf_writer_set_u64(w.w, "max", UINT64_MAX), FG_OK);
  uint64_t big[2] = {1, 1ull << 63};
  ASSERT_EQ(fg_gguf_writer_set_array(w.w, "arr", FG_GGUF_UINT64, big, 2), FG_OK);
  auto out = w.mem();
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(out.data(), out.size(), &f), FG_OK) << fg_last_error();
  uint64_t v = 0;
  ASSERT_EQ(fg_gguf_get_uint(f, "max", &v), FG_OK);
  EXPECT_EQ(v, UINT64_MAX);
  fg_gguf_array a;
  ASSERT_EQ(fg_gguf_get_array(f, "arr", &a), FG_OK);
  ASSERT_EQ(fg_gguf_array_uint(&a, 1, &v), FG_OK);
  EXPECT_EQ(v, 1ull << 63);
  fg_gguf_close(f);
}

TEST(GgufWrite, ValueValidation) {
  W w;
  uint64_t big[2] = {1, 1ull << 63};
  EXPECT_EQ(fg_gguf_writer_set_array(w.w, "k", FG_GGUF_ARRAY, big, 1), FG_ERR_BAD_VALUE_TYPE);
  EXPECT_EQ(fg_gguf_writer_set_array(w.w, "k", FG_GGUF_STRING, big, 1), FG_ERR_BAD_VALUE_TYPE);
  EXPECT_EQ(fg_gguf_writer_set_u8(w.w, "", 1), FG_ERR_BAD_STRING);
  EXPECT_EQ(fg_gguf_writer_set_u8(w.w, nullptr, 1), FG_ERR_BAD_STRING);
  EXPECT_EQ(fg_gguf_writer_set_version(w.w, 1), FG_ERR_BAD_VERSION);
  EXPECT_EQ(fg_gguf_writer_kv_count(w.w), 0u);
}

TEST(GgufWrite, TensorValidation) {
  W w;
  Bytes d(1024);
  uint64_t ne4[1] = {4}, ne5[5] = {1, 1, 1, 1, 1}, neq[2] = {16, 2}, neneg[1] = {1ull << 63};
  uint64_t ne_over[2] = {1ull << 32, 1ull << 32};
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "", FG_F32, 1, ne4, d.data(), 16), FG_ERR_BAD_STRING);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, std::string(64, 'n').c_str(), FG_F32, 1, ne4, d.data(), 16), FG_ERR_BAD_STRING);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, std::string(63, 'n').c_str(), FG_F32, 1, ne4, d.data(), 16), FG_OK);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_F32, 0, ne4, d.data(), 0), FG_ERR_BAD_SHAPE);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_F32, 5, ne5, d.data(), 4), FG_ERR_BAD_SHAPE);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_Q8_0, 2, neq, d.data(), 68), FG_ERR_BAD_SHAPE);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_F32, 1, neneg, d.data(), 0), FG_ERR_BAD_SHAPE);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_I8, 2, ne_over, d.data(), 0), FG_ERR_BAD_SHAPE);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_F32, 1, ne4, d.data(), 8), FG_ERR_INVALID_ARG);
  EXPECT_NE(std::string(fg_last_error()).find("expected 16"), std::string::npos) << fg_last_error();
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_U8, 1, ne4, d.data(), 4), FG_ERR_BAD_DTYPE);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_F32, 1, ne4, d.data(), 16), FG_OK);
  EXPECT_EQ(fg_gguf_writer_add_tensor(w.w, "z", FG_F32, 1, ne4, d.data(), 16), FG_ERR_DUPLICATE);
  EXPECT_EQ(fg_gguf_writer_tensor_count(w.w), 2u);
}

Bytes sample_file() {
  Builder b;
  const int n_kv = 5;
  b.header(3, n_kv);
  b.key("general.architecture", FG_GGUF_STRING).str("test");
  b.key("general.alignment", FG_GGUF_UINT32).u32(16);
  b.key("a.u16", FG_GGUF_UINT16).u16(9);
  b.key("a.tokens", FG_GGUF_ARRAY).u32(FG_GGUF_STRING).u64(2).str("<s>").str("</s>");
  b.key("a.f64", FG_GGUF_FLOAT64).f64(2.5);
  b.tinfo("t0", {32, 1}, FG_Q4_0, 0).tinfo("t1", {3}, FG_F16, 32).tinfo("t2", {2, 2}, FG_F32, 48);
  b.pad_to(16);
  Bytes d0 = gg::pattern(1, 18), d1 = gg::pattern(2, 6), d2 = gg::pattern(3, 16);
  b.raw(d0.data(), 18).pad_to(16).raw(d1.data(), 6).pad_to(16).raw(d2.data(), 16).pad_to(16);
  return b.b;
}

TEST(GgufWrite, ReemitIsByteIdentical) {
  Bytes src = sample_file();
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(src.data(), src.size(), &f), FG_OK) << fg_last_error();
  EXPECT_EQ(gg::reemit(f), src);
  // version 2 is kept when asked for
  Bytes v2 = src;
  v2[4] = 2;
  fg_gguf_file *g = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(v2.data(), v2.size(), &g), FG_OK);
  EXPECT_EQ(gg::reemit(g), v2);
  fg_gguf_close(g);
  fg_gguf_close(f);
}

TEST(GgufWrite, CopyKvsVerbatimWithSkipList) {
  Bytes src = sample_file();
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(src.data(), src.size(), &f), FG_OK);
  W w;
  ASSERT_EQ(fg_gguf_writer_set_u8(w.w, "first", 1), FG_OK);
  const char *skip[] = {"a.u16", "general.alignment", "not.there"};
  ASSERT_EQ(fg_gguf_writer_copy_all_kv(w.w, f, skip, 3), FG_OK);
  EXPECT_EQ(fg_gguf_writer_copy_kv(w.w, f, "missing"), FG_ERR_NOT_FOUND);
  ASSERT_EQ(fg_gguf_writer_copy_kv(w.w, f, "a.u16"), FG_OK);
  Bytes out = w.mem();
  fg_gguf_file *g = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(out.data(), out.size(), &g), FG_OK);
  ASSERT_EQ(fg_gguf_kv_count(g), 5u);
  const char *order[] = {"first", "general.architecture", "a.tokens", "a.f64", "a.u16"};
  for (uint64_t i = 0; i < 5; i++) {
    EXPECT_EQ(gg::S(fg_gguf_kv_key(g, i)), order[i]);
    if (i == 0) continue;
    const uint8_t *r1, *r2;
    uint64_t l1, l2;
    ASSERT_EQ(fg_gguf_kv_raw(g, i, &r1, &l1), FG_OK);
    ASSERT_EQ(fg_gguf_kv_raw(f, (uint64_t)fg_gguf_key_index(f, order[i]), &r2, &l2), FG_OK);
    EXPECT_EQ(Bytes(r1, r1 + l1), Bytes(r2, r2 + l2)) << order[i];
  }
  EXPECT_EQ(fg_gguf_alignment(g), 32u);  // the alignment key was skipped
  fg_gguf_close(g);
  fg_gguf_close(f);
}

TEST(GgufWrite, FileIsWrittenAtomically) {
  fgt::TempDir dir;
  Bytes src = sample_file();
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(src.data(), src.size(), &f), FG_OK);
  W w;
  ASSERT_EQ(fg_gguf_writer_copy_all_kv(w.w, f, nullptr, 0), FG_OK);
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    ASSERT_EQ(fg_gguf_writer_add_tensor(w.w, t->name, t->dtype, t->ndim, t->ne, t->data, t->nbytes), FG_OK);
  }
  std::string path = dir.file("out.gguf");
  fgt::write_file(path, "old", 3);
  ASSERT_EQ(fg_gguf_writer_finish(w.w, path.c_str()), FG_OK) << fg_last_error();
  EXPECT_EQ(fgt::read_file(path), src);
  EXPECT_EQ(list_dir(dir.path), std::vector<std::string>{"out.gguf"});
  // repeatable
  ASSERT_EQ(fg_gguf_writer_finish(w.w, path.c_str()), FG_OK);
  EXPECT_EQ(fgt::read_file(path), src);
  // an unwritable destination leaves nothing behind
  EXPECT_EQ(fg_gguf_writer_finish(w.w, dir.file("no/such/dir.gguf").c_str()), FG_ERR_IO);
  EXPECT_EQ(list_dir(dir.path), std::vector<std::string>{"out.gguf"});
  fg_gguf_close(f);
}

TEST(GgufWrite, StreamingEqualsOnePass) {
  fgt::TempDir dir;
  Bytes src = sample_file();
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(src.data(), src.size(), &f), FG_OK);
  W w;
  ASSERT_EQ(fg_gguf_writer_copy_all_kv(w.w, f, nullptr, 0), FG_OK);
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    if (i == 1)  // mixing tensors with and without data
      ASSERT_EQ(fg_gguf_writer_add_tensor(w.w, t->name, t->dtype, t->ndim, t->ne, t->data, t->nbytes), FG_OK);
    else
      ASSERT_EQ(fg_gguf_writer_declare_tensor(w.w, t->name, t->dtype, t->ndim, t->ne), FG_OK);
  }
  uint64_t ne0[1] = {0};
  ASSERT_EQ(fg_gguf_writer_declare_tensor(w.w, "empty", FG_F32, 1, ne0), FG_OK);  // 0 bytes: nothing to feed
  void *p;
  size_t n;
  EXPECT_EQ(fg_gguf_writer_finish_mem(w.w, &p, &n), FG_ERR_STATE);
  EXPECT_EQ(fg_gguf_writer_finish(w.w, dir.file("x.gguf").c_str()), FG_ERR_STATE);
  std::string path = dir.file("s.gguf");
  ASSERT_EQ(fg_gguf_writer_begin(w.w, path.c_str()), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_gguf_writer_set_u8(w.w, "late", 1), FG_ERR_STATE);
  EXPECT_EQ(fg_gguf_writer_begin(w.w, path.c_str()), FG_ERR_STATE);
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    ASSERT_STREQ(fg_gguf_writer_next_tensor(w.w), t->name);
    // byte by byte for the first, whole for the rest
    if (i == 0) {
      for (uint64_t j = 0; j < t->nbytes; j++) ASSERT_EQ(fg_gguf_writer_write_data(w.w, t->data + j, 1), FG_OK);
    } else {
      ASSERT_EQ(fg_gguf_writer_write_data(w.w, t->data, t->nbytes), FG_OK);
    }
  }
  EXPECT_EQ(fg_gguf_writer_next_tensor(w.w), nullptr);
  EXPECT_FALSE(access(path.c_str(), F_OK) == 0);  // not visible before commit
  ASSERT_EQ(fg_gguf_writer_commit(w.w), FG_OK) << fg_last_error();
  Bytes out = fgt::read_file(path);
  // the same file plus the empty tensor's info
  fg_gguf_file *g = nullptr;
  ASSERT_EQ(fg_gguf_open_bytes(out.data(), out.size(), &g), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_gguf_writer_remove_kv(w.w, "a.f64"), FG_OK);  // usable again after commit
  for (uint64_t i = 0; i < 3; i++)
    EXPECT_EQ(Bytes(fg_gguf_tensor_at(g, i)->data, fg_gguf_tensor_at(g, i)->data + fg_gguf_tensor_at(g, i)->nbytes),
              Bytes(fg_gguf_tensor_at(f, i)->data, fg_gguf_tensor_at(f, i)->data + fg_gguf_tensor_at(f, i)->nbytes));
  fg_gguf_close(g);
  fg_gguf_close(f);
  EXPECT_EQ(list_dir(dir.path), std::vector<std::string>{"s.gguf"});
}

TEST(GgufWrite, StreamingOutputMatchesFinish) {
  fgt::TempDir dir;
  Bytes a = gg::pattern(0, 40), b = gg::pattern(5, 4);
  uint64_t ne_a[2] = {10, 4}, ne_b[1] = {4};
  W one, two;
  for (W *w : {&one, &two}) {
    ASSERT_EQ(fg_gguf_writer_set_str(w->w, "general.name", "s", 1), FG_OK);
  }
  ASSERT_EQ(fg_gguf_writer_add_tensor(one.w, "a", FG_F32, 2, ne_a, nullptr, 0), FG_ERR_INVALID_ARG);
  ASSERT_EQ(fg_gguf_writer_add_tensor(one.w, "a", FG_I8, 2, ne_a, a.data(), 40), FG_OK);
  ASSERT_EQ(fg_gguf_writer_add_tensor(one.w, "b", FG_I8, 1, ne_b, b.data(), 4), FG_OK);
  ASSERT_EQ(fg_gguf_writer_declare_tensor(two.w, "a", FG_I8, 2, ne_a), FG_OK);
  ASSERT_EQ(fg_gguf_writer_declare_tensor(two.w, "b", FG_I8, 1, ne_b), FG_OK);
  ASSERT_EQ(fg_gguf_writer_begin(two.w, dir.file("two.gguf").c_str()), FG_OK);
  ASSERT_EQ(fg_gguf_writer_write_data(two.w, a.data(), 17), FG_OK);
  ASSERT_EQ(fg_gguf_writer_write_data(two.w, a.data() + 17, 23), FG_OK);
  ASSERT_EQ(fg_gguf_writer_write_data(two.w, b.data(), 4), FG_OK);
  ASSERT_EQ(fg_gguf_writer_commit(two.w), FG_OK);
  ASSERT_EQ(fg_gguf_writer_finish(one.w, dir.file("one.gguf").c_str()), FG_OK);
  EXPECT_EQ(fgt::read_file(dir.file("one.gguf")), fgt::read_file(dir.file("two.gguf")));
  EXPECT_EQ(fgt::read_file(dir.file("one.gguf")), one.mem());
}

TEST(GgufWrite, StreamingErrorsLeaveNoFile) {
  fgt::TempDir dir;
  Bytes a = gg::pattern(0, 64);
  uint64_t ne[1] = {16};
  std::string path = dir.file("s.gguf");
  {  // too many bytes for the current tensor
    W w;
    ASSERT_EQ(fg_gguf_writer_declare_tensor(w.w, "a", FG_F32, 1, ne), FG_OK);
    ASSERT_EQ(fg_gguf_writer_begin(w.w, path.c_str()), FG_OK);
    EXPECT_EQ(fg_gguf_writer_write_data(w.w, a.data(), 65), FG_ERR_RANGE);
    EXPECT_EQ(fg_gguf_writer_commit(w.w), FG_ERR_STATE);  // the stream ended with the error
    EXPECT_TRUE(list_dir(dir.path).empty());
  }
  {  // past the last tensor
    W w;
    ASSERT_EQ(fg_gguf_writer_declare_tensor(w.w, "a", FG_F32, 1, ne), FG_OK);
    ASSERT_EQ(fg_gguf_writer_begin(w.w, path.c_str()), FG_OK);
    ASSERT_EQ(fg_gguf_writer_write_data(w.w, a.data(), 64), FG_OK);
    EXPECT_EQ(fg_gguf_writer_write_data(w.w, a.data(), 1), FG_ERR_RANGE);
    EXPECT_TRUE(list_dir(dir.path).empty());
  }
  {  // commit before every byte arrived
    W w;
    ASSERT_EQ(fg_gguf_writer_declare_tensor(w.w, "a", FG_F32, 1, ne), FG_OK);
    ASSERT_EQ(fg_gguf_writer_begin(w.w, path.c_str()), FG_OK);
    ASSERT_EQ(fg_gguf_writer_write_data(w.w, a.data(), 10), FG_OK);
    EXPECT_EQ(fg_gguf_writer_commit(w.w), FG_ERR_STATE);
    EXPECT_NE(std::string(fg_last_error()).find("'a' has 10 of its 64 bytes"), std::string::npos) << fg_last_error();
    EXPECT_TRUE(list_dir(dir.path).empty());
  }
  {  // freeing an unfinished stream removes its temporary file
    W w;
    ASSERT_EQ(fg_gguf_writer_declare_tensor(w.w, "a", FG_F32, 1, ne), FG_OK);
    ASSERT_EQ(fg_gguf_writer_begin(w.w, path.c_str()), FG_OK);
    EXPECT_EQ(list_dir(dir.path).size(), 1u);
  }
  EXPECT_TRUE(list_dir(dir.path).empty());
  fg_gguf_writer_free(nullptr);
}

}  // namespace
