// GGUF interoperability with gguf-py (tests/data/gguf_interop.py): a file written by
// GGUFWriter reads here with the same names, shapes, dtypes, bytes and metadata and
// re-emits byte for byte; a file written here reads the same in GGUFReader.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "../cpu/gguf_test_util.h"
#include "testutil.h"

using gg::Bytes;

namespace {

const std::string kScript = FORGIA_TEST_DATA "/gguf_interop.py";

#define REQUIRE_PYTHON()                                                                 \
  do {                                                                                   \
    if (access(FORGIA_PYTHON, X_OK) != 0) GTEST_SKIP() << "no Python venv at " FORGIA_PYTHON; \
  } while (0)

std::string hex(const void *p, uint64_t n) {
  static const char *d = "0123456789abcdef";
  std::string s;
  const uint8_t *b = (const uint8_t *)p;
  for (uint64_t i = 0; i < n; i++) {
    s += d[b[i] >> 4];
    s += d[b[i] & 15];
  }
  return s;
}

std::string num(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string elem(const fg_gguf_array &a, uint64_t j) {
  int64_t i;
  uint64_t u;
  double d;
  bool b;
  fg_gguf_str s;
  if (a.elem_type == FG_GGUF_UINT64) {
    EXPECT_EQ(fg_gguf_array_uint(&a, j, &u), FG_OK) << fg_last_error();
    return std::to_string(u);
  }
  if (fg_gguf_array_int(&a, j, &i) == FG_OK) return std::to_string(i);
  if (fg_gguf_array_float(&a, j, &d) == FG_OK) return num(d);
  if (fg_gguf_array_bool(&a, j, &b) == FG_OK) return b ? "1" : "0";
  EXPECT_EQ(fg_gguf_array_str(&a, j, &s), FG_OK);
  return hex(s.ptr, s.len);
}

// The canonical dump of gguf_interop.py, from forgia's reader.
std::string dump(const fg_gguf_file *f) {
  std::string out;
  for (uint64_t i = 0; i < fg_gguf_kv_count(f); i++) {
    fg_gguf_type t = fg_gguf_kv_type(f, i);
    out += "kv " + gg::S(fg_gguf_kv_key(f, i)) + " " + fg_gguf_type_name(t) + " ";
    int64_t v;
    uint64_t u;
    double d;
    bool b;
    fg_gguf_str s;
    fg_gguf_array a;
    if (t == FG_GGUF_UINT64 && fg_gguf_kv_uint(f, i, &u) == FG_OK) out += std::to_string(u);
    else if (fg_gguf_kv_int(f, i, &v) == FG_OK) out += std::to_string(v);
    else if (fg_gguf_kv_float(f, i, &d) == FG_OK) out += num(d);
    else if (fg_gguf_kv_bool(f, i, &b) == FG_OK) out += b ? "1" : "0";
    else if (fg_gguf_kv_str(f, i, &s) == FG_OK) out += hex(s.ptr, s.len);
    else if (fg_gguf_kv_array(f, i, &a) == FG_OK) {
      out += std::string(fg_gguf_type_name(a.elem_type)) + " " + std::to_string(a.len) + " ";
      for (uint64_t j = 0; j < a.len; j++) out += (j ? "," : "") + elem(a, j);
    }
    out += "\n";
  }
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    out += "tensor " + std::string(t->name) + " " + std::to_string((int)t->dtype) + " ";
    for (int d = 0; d < t->ndim; d++) out += (d ? "," : "") + std::to_string(t->ne[d]);
    out += " " + std::to_string(t->nbytes) + " " + hex(t->data, t->nbytes) + "\n";
  }
  return out;
}

std::string py(const std::string &cmd, const std::string &path) {
  std::string out, err;
  std::string line = std::string(FORGIA_PYTHON) + " " + kScript + " " + cmd + " " + path;
  EXPECT_EQ(fgt::run(line, &out, &err), 0) << line << "\n" << err;
  return out;
}

TEST(GgufInterop, GgufPyFileReadsTheSame) {
  REQUIRE_PYTHON();
  fgt::TempDir dir;
  std::string path = dir.file("py.gguf");
  py("write", path);
  std::string want = py("dump", path);
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open(path.c_str(), FG_MAP_MMAP, &f), FG_OK) << fg_last_error();
  EXPECT_EQ(dump(f), want);
  // spot checks in forgia's own terms
  EXPECT_EQ(fg_gguf_alignment(f), 64u);
  EXPECT_EQ(fg_gguf_data_offset(f, 0) % 64, 0u);
  const fg_gguf_tensor *q = fg_gguf_find_tensor(f, "q4_k.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, FG_Q4_K);
  EXPECT_EQ(q->shape[0], 3u);
  EXPECT_EQ(q->shape[1], 256u);
  EXPECT_EQ(q->nbytes, 3u * 144);
  const fg_gguf_tensor *m = fg_gguf_find_tensor(f, "f32.matrix");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->shape[0], 3u);
  EXPECT_EQ(m->shape[1], 5u);
  EXPECT_EQ(fg_gguf_find_tensor(f, "row.1xN")->ndim, 2u);
  fg_gguf_close(f);
}

// gguf-py writes UINT64 2^64-1 (and an array of such values); forgia keeps it exact through
// the unsigned getters and `forgia inspect --json` prints it exactly, as json.loads reads it.
TEST(GgufInterop, Uint64MaxFromGgufPyIsExactInGettersAndInspectJson) {
  REQUIRE_PYTHON();
  fgt::TempDir dir;
  std::string path = dir.file("py.gguf");
  py("write", path);
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open(path.c_str(), FG_MAP_MMAP, &f), FG_OK) << fg_last_error();
  uint64_t u = 0;
  ASSERT_EQ(fg_gguf_get_uint(f, "t.u64_max", &u), FG_OK) << fg_last_error();
  EXPECT_EQ(u, 18446744073709551615ull);
  ASSERT_EQ(fg_gguf_get_uint(f, "t.u64_2pow63", &u), FG_OK);
  EXPECT_EQ(u, 9223372036854775808ull);
  int64_t i = 0;
  EXPECT_EQ(fg_gguf_get_int(f, "t.u64_max", &i), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("t.u64_max"), std::string::npos) << fg_last_error();
  fg_gguf_array a;
  ASSERT_EQ(fg_gguf_get_array(f, "t.arr_u64_big", &a), FG_OK);
  ASSERT_EQ(a.elem_type, FG_GGUF_UINT64);
  ASSERT_EQ(a.len, 3u);
  const uint64_t want[3] = {0, 1ull << 63, UINT64_MAX};
  for (uint64_t j = 0; j < 3; j++) {
    ASSERT_EQ(fg_gguf_array_uint(&a, j, &u), FG_OK);
    EXPECT_EQ(u, want[j]) << j;
  }
  fg_gguf_close(f);

  std::string out, err;
  ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " inspect " + path + " --json --full > " + dir.file("i.json"), &out, &err),
            0) << err;
  std::string text;
  {
    Bytes b = fgt::read_file(dir.file("i.json"));
    text.assign(b.begin(), b.end());
  }
  EXPECT_NE(text.find("\"value\":\t18446744073709551615"), std::string::npos) << text;
  std::string lines = py("json", dir.file("i.json"));
  EXPECT_NE(lines.find("meta \"t.u64_max\" UINT64 18446744073709551615\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("meta \"t.u64_2pow63\" UINT64 9223372036854775808\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("meta \"t.arr_u64_big\" ARRAY [0, 9223372036854775808, 18446744073709551615]\n"),
            std::string::npos) << lines;
  EXPECT_NE(lines.find("meta \"t.arr_f64\" ARRAY [1.5, -0.0]\n"), std::string::npos) << lines;
  EXPECT_NE(lines.find("meta \"t.u64\" UINT64 9223372036854775807\n"), std::string::npos) << lines;
}

TEST(GgufInterop, GgufPyFileReemitsByteForByte) {
  REQUIRE_PYTHON();
  fgt::TempDir dir;
  std::string path = dir.file("py.gguf");
  py("write", path);
  Bytes src = fgt::read_file(path);
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open(path.c_str(), FG_MAP_READ, &f), FG_OK) << fg_last_error();
  EXPECT_EQ(gg::reemit(f), src);
  // and through a file, with the writer's atomic path
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
  ASSERT_EQ(fg_gguf_writer_copy_all_kv(w, f, nullptr, 0), FG_OK);
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    ASSERT_EQ(fg_gguf_writer_add_tensor(w, t->name, t->dtype, t->ndim, t->ne, t->data, t->nbytes), FG_OK);
  }
  ASSERT_EQ(fg_gguf_writer_finish(w, dir.file("again.gguf").c_str()), FG_OK) << fg_last_error();
  EXPECT_EQ(fgt::read_file(dir.file("again.gguf")), src);
  fg_gguf_writer_free(w);
  fg_gguf_close(f);
}

TEST(GgufInterop, ForgiaFileReadsTheSameInGgufPy) {
  REQUIRE_PYTHON();
  fgt::TempDir dir;
  for (uint32_t align : {32u, 128u}) {
    SCOPED_TRACE(align);
    fg_gguf_writer *w = nullptr;
    ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_str(w, "general.architecture", "forgia", 6), FG_OK);
    if (align != 32) {
      ASSERT_EQ(fg_gguf_writer_set_u32(w, "general.alignment", align), FG_OK);
    }
    ASSERT_EQ(fg_gguf_writer_set_u8(w, "k.u8", 7), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_i8(w, "k.i8", -7), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_u16(w, "k.u16", 65535), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_i16(w, "k.i16", -2), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_u32(w, "k.u32", 123456789), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_i32(w, "k.i32", -123456789), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_u64(w, "k.u64", 1ull << 40), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_i64(w, "k.i64", -(1ll << 40)), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_f32(w, "k.f32", 1.0f / 3), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_f64(w, "k.f64", 1.0 / 3), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_bool(w, "k.bool", false), FG_OK);
    ASSERT_EQ(fg_gguf_writer_set_str(w, "k.str", "ünïcode", strlen("ünïcode")), FG_OK);
    const char *toks[] = {"a", "bb", "ccc", "<unk>"};
    ASSERT_EQ(fg_gguf_writer_set_str_array(w, "k.tokens", toks, nullptr, 4), FG_OK);
    float scores[3] = {0.25f, -1.5f, 3.0f};
    ASSERT_EQ(fg_gguf_writer_set_array(w, "k.scores", FG_GGUF_FLOAT32, scores, 3), FG_OK);
    int16_t shorts[2] = {-5, 5};
    ASSERT_EQ(fg_gguf_writer_set_array(w, "k.i16s", FG_GGUF_INT16, shorts, 2), FG_OK);
    Bytes a = gg::pattern(1, 4 * 6), q = gg::pattern(2, 2 * 18), k6 = gg::pattern(3, 210), h = gg::pattern(4, 10);
    uint64_t ne_a[2] = {3, 2}, ne_q[2] = {32, 2}, ne_k6[1] = {256}, ne_h[3] = {5, 1, 1};
    ASSERT_EQ(fg_gguf_writer_add_tensor(w, "a.f32", FG_F32, 2, ne_a, a.data(), a.size()), FG_OK);
    ASSERT_EQ(fg_gguf_writer_add_tensor(w, "b.q4_0", FG_Q4_0, 2, ne_q, q.data(), q.size()), FG_OK);
    ASSERT_EQ(fg_gguf_writer_add_tensor(w, "c.q6_k", FG_Q6_K, 1, ne_k6, k6.data(), k6.size()), FG_OK);
    ASSERT_EQ(fg_gguf_writer_add_tensor(w, "d.f16", FG_F16, 3, ne_h, h.data(), h.size()), FG_OK);
    std::string path = dir.file("forgia" + std::to_string(align) + ".gguf");
    ASSERT_EQ(fg_gguf_writer_finish(w, path.c_str()), FG_OK) << fg_last_error();
    fg_gguf_writer_free(w);

    std::string theirs = py("dump", path);
    fg_gguf_file *f = nullptr;
    ASSERT_EQ(fg_gguf_open(path.c_str(), FG_MAP_MMAP, &f), FG_OK) << fg_last_error();
    std::string ours = dump(f);
    fg_gguf_close(f);
    EXPECT_EQ(theirs, ours);
    EXPECT_NE(theirs.find("kv k.tokens ARRAY STRING 4 61,6262,636363,3c756e6b3e\n"), std::string::npos) << theirs;
    EXPECT_NE(theirs.find("kv k.f32 FLOAT32 0.3333333432674408\n"), std::string::npos) << theirs;
    EXPECT_NE(theirs.find("tensor b.q4_0 2 32,2 36 " + hex(q.data(), q.size()) + "\n"), std::string::npos);
    EXPECT_NE(theirs.find("tensor d.f16 1 5,1,1 10 "), std::string::npos);
  }
}

}  // namespace
