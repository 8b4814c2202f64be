// Importance-matrix reader: the two fixtures of tests/data/golden/weighted (written in
// llama-imatrix's layouts) give exactly the weights llama.cpp's own loader plus
// llama-quantize's normalisation give (imatrix_expected.bin, from gen_weighted.cpp), and
// malformed files are refused with the status and a message naming file, entry and offset.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/gguf.h"
#include "forgia/imatrix.h"
#include "testutil.h"

namespace {

const std::string kDir = std::string(FORGIA_TEST_DATA) + "/golden/weighted/";

struct ExpEntry {
  std::string name;
  uint32_t ncounts;
  std::vector<float> w;
};
struct ExpFile {
  uint32_t legacy;
  int32_t chunk_count, chunk_size;
  std::vector<std::string> datasets;
  std::vector<ExpEntry> entries;
};

struct Reader {
  const std::vector<uint8_t> &b;
  size_t off = 0;
  bool ok = true;
  uint32_t u32() {
    uint32_t v = 0;
    if (off + 4 > b.size()) {
      ok = false;
      return 0;
    }
    std::memcpy(&v, b.data() + off, 4);
    off += 4;
    return v;
  }
  std::string str(size_t n) {
    if (off + n > b.size()) {
      ok = false;
      return "";
    }
    std::string s(reinterpret_cast<const char *>(b.data()) + off, n);
    off += n;
    return s;
  }
};

std::vector<ExpFile> load_expected() {
  const std::vector<uint8_t> b = fgt::read_file(kDir + "imatrix_expected.bin");
  Reader r{b};
  std::vector<ExpFile> out;
  if (r.str(8) != "FGIMATRX" || r.u32() != 1) return out;
  const uint32_t nf = r.u32();
  for (uint32_t k = 0; k < nf && r.ok; k++) {
    ExpFile f;
    f.legacy = r.u32();
    const uint32_t ne = r.u32();
    f.chunk_count = (int32_t)r.u32();
    f.chunk_size = (int32_t)r.u32();
    const uint32_t nd = r.u32();
    for (uint32_t d = 0; d < nd; d++) f.datasets.push_back(r.str(r.u32()));
    for (uint32_t e = 0; e < ne && r.ok; e++) {
      ExpEntry en;
      en.name = r.str(r.u32());
      en.ncounts = r.u32();
      en.w.resize(r.u32());
      const std::string raw = r.str(en.w.size() * 4);
      if (!en.w.empty()) std::memcpy(en.w.data(), raw.data(), raw.size());
      f.entries.push_back(en);
    }
    out.push_back(f);
  }
  if (!r.ok) out.clear();
  return out;
}

void expect_same(const char *file, const ExpFile &e) {
  fg_imatrix *m = nullptr;
  ASSERT_EQ(fg_imatrix_open((kDir + file).c_str(), &m), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_imatrix_format_of(m), e.legacy ? FG_IMATRIX_LEGACY : FG_IMATRIX_GGUF);
  EXPECT_EQ(fg_imatrix_chunk_count(m), e.chunk_count);
  EXPECT_EQ(fg_imatrix_chunk_size(m), e.chunk_size);
  ASSERT_EQ(fg_imatrix_dataset_count(m), e.datasets.size());
  for (size_t d = 0; d < e.datasets.size(); d++) EXPECT_EQ(fg_imatrix_dataset(m, d), e.datasets[d]);
  ASSERT_EQ(fg_imatrix_count(m), e.entries.size());
  for (size_t i = 0; i < e.entries.size(); i++) {
    fg_imatrix_entry en;
    ASSERT_EQ(fg_imatrix_entry_at(m, i, &en), FG_OK);
    EXPECT_EQ(std::string(en.name), e.entries[i].name) << "entry order differs from llama.cpp's std::map";
    EXPECT_EQ((uint64_t)en.n_counts, e.entries[i].ncounts) << en.name;
    ASSERT_EQ((size_t)en.n_values, e.entries[i].w.size()) << en.name;
    EXPECT_EQ(std::memcmp(en.weights, e.entries[i].w.data(), e.entries[i].w.size() * 4), 0)
        << en.name << ": weights differ from llama-quantize's";
    fg_imatrix_entry f;
    ASSERT_EQ(fg_imatrix_get(m, e.entries[i].name.c_str(), &f), FG_OK);
    EXPECT_EQ(f.weights, en.weights);
  }
  fg_imatrix_close(m);
}

TEST(Imatrix, FixturesGiveLlamaQuantizeWeights) {
  const std::vector<ExpFile> e = load_expected();
  ASSERT_EQ(e.size(), 2u) << "imatrix_expected.bin unreadable";
  ASSERT_EQ(e[0].legacy, 0u);
  ASSERT_EQ(e[1].legacy, 1u);
  expect_same("imatrix.gguf", e[0]);
  expect_same("imatrix.dat", e[1]);
}

TEST(Imatrix, WeightsForTensorChecksSize) {
  fg_imatrix *m = nullptr;
  ASSERT_EQ(fg_imatrix_open((kDir + "imatrix.gguf").c_str(), &m), FG_OK) << fg_last_error();
  const float *w = nullptr;
  EXPECT_EQ(fg_imatrix_weights_for(m, "blk.0.ffn_down_exps.weight", 256, 4, &w), FG_OK) << fg_last_error();
  fg_imatrix_entry e;
  ASSERT_EQ(fg_imatrix_get(m, "blk.0.ffn_down_exps.weight", &e), FG_OK);
  EXPECT_EQ(w, e.weights);
  EXPECT_EQ(e.n_counts, 4);
  // expert 1 saw no token: llama-quantize gives it weight 1 everywhere
  for (int i = 0; i < 256; i++) ASSERT_EQ(e.weights[256 + i], 1.0f) << i;
  EXPECT_EQ(fg_imatrix_weights_for(m, "blk.0.ffn_down_exps.weight", 256, 1, &w), FG_ERR_BAD_SHAPE);
  EXPECT_NE(std::string(fg_last_error()).find("1024"), std::string::npos) << fg_last_error();
  EXPECT_EQ(w, nullptr);
  EXPECT_EQ(fg_imatrix_weights_for(m, "blk.9.attn_q.weight", 256, 1, &w), FG_ERR_NOT_FOUND);
  EXPECT_NE(std::string(fg_last_error()).find("blk.9.attn_q.weight"), std::string::npos);
  EXPECT_EQ(fg_imatrix_weights_for(m, "output.weight", 0, 1, &w), FG_ERR_INVALID_ARG);
  fg_imatrix_close(m);
  fg_imatrix_close(nullptr);
}

// ---- malformed legacy files ----

struct Dat {
  std::vector<uint8_t> b;
  void i32(int32_t v) {
    uint8_t t[4];
    std::memcpy(t, &v, 4);
    b.insert(b.end(), t, t + 4);
  }
  void f32(float v) {
    uint8_t t[4];
    std::memcpy(t, &v, 4);
    b.insert(b.end(), t, t + 4);
  }
  void str(const std::string &s) { b.insert(b.end(), s.begin(), s.end()); }
  void entry(const std::string &name, int32_t ncall, const std::vector<float> &v) {
    i32((int32_t)name.size());
    str(name);
    i32(ncall);
    i32((int32_t)v.size());
    for (float f : v) f32(f);
  }
};

fg_status open_bytes(const std::vector<uint8_t> &b, std::string *msg) {
  fg_imatrix *m = nullptr;
  const fg_status st = fg_imatrix_open_bytes(b.data(), b.size(), "t.dat", &m);
  *msg = fg_last_error();
  if (st == FG_OK) EXPECT_NE(m, nullptr);
  else EXPECT_EQ(m, nullptr);
  fg_imatrix_close(m);
  return st;
}

TEST(Imatrix, LegacyGoodAndTrailer) {
  Dat d;
  d.i32(2);
  d.entry("b.weight", 4, {8.0f, 2.0f});
  d.entry("a.weight", 0, {3.0f});
  fg_imatrix *m = nullptr;
  ASSERT_EQ(fg_imatrix_open_bytes(d.b.data(), d.b.size(), "t.dat", &m), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_imatrix_count(m), 2u);
  fg_imatrix_entry e;
  ASSERT_EQ(fg_imatrix_entry_at(m, 0, &e), FG_OK);
  EXPECT_STREQ(e.name, "a.weight");
  EXPECT_EQ(e.weights[0], 3.0f);  // ncall 0: the values as stored
  ASSERT_EQ(fg_imatrix_get(m, "b.weight", &e), FG_OK);
  EXPECT_EQ(e.weights[0], 2.0f);
  EXPECT_EQ(e.weights[1], 0.5f);
  EXPECT_EQ(fg_imatrix_dataset_count(m), 0u);
  EXPECT_EQ(fg_imatrix_chunk_count(m), 0);
  fg_imatrix_close(m);
  d.i32(7);  // chunk count only
  ASSERT_EQ(fg_imatrix_open_bytes(d.b.data(), d.b.size(), "t.dat", &m), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_imatrix_chunk_count(m), 7);
  fg_imatrix_close(m);
  d.i32(3);
  d.str("abc");
  ASSERT_EQ(fg_imatrix_open_bytes(d.b.data(), d.b.size(), "t.dat", &m), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_imatrix_dataset_count(m), 1u);
  EXPECT_STREQ(fg_imatrix_dataset(m, 0), "abc");
  EXPECT_EQ(fg_imatrix_dataset(m, 1), nullptr);
  fg_imatrix_close(m);
}

TEST(Imatrix, LegacyMalformed) {
  std::string msg;
  struct Case {
    const char *what;
    std::vector<uint8_t> bytes;
    fg_status st;
    const char *needle;
  };
  std::vector<Case> cases;
  {
    Dat d;
    cases.push_back({"empty file", d.b, FG_ERR_TRUNCATED, "entry count"});
    d.i32(0);
    cases.push_back({"zero entries", d.b, FG_ERR_RANGE, "no data"});
  }
  {
    Dat d;
    d.i32(-3);
    cases.push_back({"negative entries", d.b, FG_ERR_RANGE, "-3"});
  }
  {
    Dat d;
    d.i32(1000000);
    d.entry("a", 1, {1.0f});
    cases.push_back({"entry count beyond the file", d.b, FG_ERR_TRUNCATED, "1000000"});
  }
  {
    Dat d;
    d.i32(1);
    d.i32(-1);
    d.b.resize(d.b.size() + 16);
    cases.push_back({"negative name length", d.b, FG_ERR_RANGE, "name length -1"});
  }
  {
    Dat d;
    d.i32(1);
    d.i32(50);
    d.str("short");
    d.b.resize(d.b.size() + 12);
    cases.push_back({"name past the end", d.b, FG_ERR_TRUNCATED, "entry 0"});
  }
  {
    Dat d;
    d.i32(1);
    d.entry(std::string("a\0b", 3), 1, {1.0f});
    cases.push_back({"NUL in a name", d.b, FG_ERR_BAD_STRING, "NUL"});
  }
  {
    Dat d;
    d.i32(1);
    d.entry("a", 1, {});
    d.b.resize(d.b.size() + 4);
    cases.push_back({"zero values", d.b, FG_ERR_RANGE, "value count 0"});
  }
  {
    Dat d;
    d.i32(1);
    d.entry("a.weight", 1, {1.0f, 2.0f, 3.0f});
    d.b.resize(d.b.size() - 2);
    cases.push_back({"values cut short", d.b, FG_ERR_TRUNCATED, "'a.weight'"});
  }
  {
    Dat d;
    d.i32(1);
    d.entry("a.weight", 1, {1.0f, NAN});
    cases.push_back({"NaN weight", d.b, FG_ERR_NONFINITE, "value 1 at byte 28"});
  }
  {
    Dat d;
    d.i32(1);
    d.entry("a.weight", 1, {3e38f});
    cases.push_back({"a large finite weight", d.b, FG_OK, ""});
  }
  {
    Dat d;
    d.i32(2);
    d.entry("a", 1, {1.0f});
    d.entry("a", 1, {2.0f});
    cases.push_back({"duplicate entry", d.b, FG_ERR_DUPLICATE, "'a'"});
  }
  {
    Dat d;
    d.i32(1);
    d.entry("a", 1, {1.0f});
    d.i32(5);
    d.b.push_back(1);
    cases.push_back({"half a dataset length", d.b, FG_ERR_TRUNCATED, "dataset name length"});
  }
  {
    Dat d;
    d.i32(1);
    d.entry("a", 1, {1.0f});
    d.i32(5);
    d.i32(10);
    d.str("abc");
    cases.push_back({"dataset past the end", d.b, FG_ERR_TRUNCATED, "dataset name of 10 bytes"});
  }
  {
    Dat d;
    d.i32(1);
    d.entry("a", 1, {1.0f});
    d.i32(5);
    d.i32(1);
    d.str("xyz");
    cases.push_back({"trailing bytes", d.b, FG_ERR_RANGE, "2 unexpected bytes"});
  }
  for (const Case &c : cases) {
    EXPECT_EQ(open_bytes(c.bytes, &msg), c.st) << c.what << ": " << msg;
    if (c.st != FG_OK) {
      EXPECT_NE(msg.find("t.dat"), std::string::npos) << c.what << ": " << msg;
      EXPECT_NE(msg.find(c.needle), std::string::npos) << c.what << ": " << msg;
    }
  }
}

// ---- malformed GGUF files (written with forgia's GGUF writer) ----

struct GgufCase {
  bool datasets = true, chunk_count = true, chunk_size = true, count_u32 = true, datasets_str = true;
  bool sums = true, counts = true;
  fg_dtype sums_type = FG_F32;
  uint64_t ne0 = 4, nexp = 2, ncount = 2;
  std::vector<float> counts_v = {3.0f, 0.4f};
  std::vector<float> sums_v;
};

std::vector<uint8_t> make_gguf(const GgufCase &c) {
  fg_gguf_writer *w = nullptr;
  EXPECT_EQ(fg_gguf_writer_create(&w), FG_OK);
  fg_gguf_writer_set_str(w, "general.type", "imatrix", 7);
  const char *ds[] = {"data.txt"};
  if (c.datasets) {
    if (c.datasets_str) fg_gguf_writer_set_str_array(w, "imatrix.datasets", ds, nullptr, 1);
    else fg_gguf_writer_set_u32(w, "imatrix.datasets", 1);
  }
  if (c.chunk_count) {
    if (c.count_u32) fg_gguf_writer_set_u32(w, "imatrix.chunk_count", 9);
    else fg_gguf_writer_set_i32(w, "imatrix.chunk_count", 9);
  }
  if (c.chunk_size) fg_gguf_writer_set_u32(w, "imatrix.chunk_size", 512);
  std::vector<float> sums = c.sums_v;
  if (sums.empty())
    for (uint64_t i = 0; i < c.ne0 * c.nexp; i++) sums.push_back((float)(i + 1));
  std::vector<uint16_t> half(sums.size(), 0x3c00);
  const uint64_t ne_s[2] = {c.ne0, c.nexp}, ne_c[2] = {1, c.ncount};
  if (c.sums) {
    if (c.sums_type == FG_F32)
      EXPECT_EQ(fg_gguf_writer_add_tensor(w, "x.weight.in_sum2", FG_F32, 2, ne_s, sums.data(), sums.size() * 4), FG_OK);
    else
      EXPECT_EQ(fg_gguf_writer_add_tensor(w, "x.weight.in_sum2", FG_F16, 2, ne_s, half.data(), half.size() * 2), FG_OK);
  }
  if (c.counts) {
    EXPECT_EQ(fg_gguf_writer_add_tensor(w, "x.weight.counts", FG_F32, 2, ne_c, c.counts_v.data(), c.counts_v.size() * 4),
              FG_OK)
        << fg_last_error();
  }
  const float other = 1.0f;
  const uint64_t ne1[1] = {1};
  fg_gguf_writer_add_tensor(w, "unrelated", FG_F32, 1, ne1, &other, 4);
  void *buf = nullptr;
  size_t len = 0;
  EXPECT_EQ(fg_gguf_writer_finish_mem(w, &buf, &len), FG_OK) << fg_last_error();
  std::vector<uint8_t> out((uint8_t *)buf, (uint8_t *)buf + len);
  free(buf);
  fg_gguf_writer_free(w);
  return out;
}

TEST(Imatrix, GgufGoodRoundsCounts) {
  GgufCase c;
  const std::vector<uint8_t> b = make_gguf(c);
  fg_imatrix *m = nullptr;
  ASSERT_EQ(fg_imatrix_open_bytes(b.data(), b.size(), "t.gguf", &m), FG_OK) << fg_last_error();
  fg_imatrix_entry e;
  ASSERT_EQ(fg_imatrix_get(m, "x.weight", &e), FG_OK);
  ASSERT_EQ(e.n_values, 8);
  EXPECT_EQ(e.n_counts, 2);
  EXPECT_EQ(e.weights[0], 1.0f / 3.0f);
  EXPECT_EQ(e.weights[3], 4.0f / 3.0f);
  for (int i = 4; i < 8; i++) EXPECT_EQ(e.weights[i], 1.0f) << "count 0.4 rounds to 0: weight 1";
  EXPECT_EQ(fg_imatrix_chunk_count(m), 9);
  EXPECT_EQ(fg_imatrix_chunk_size(m), 512);
  EXPECT_STREQ(fg_imatrix_dataset(m, 0), "data.txt");
  fg_imatrix_close(m);
}

TEST(Imatrix, GgufMalformed) {
  struct Case {
    const char *what;
    GgufCase c;
    fg_status st;
    const char *needle;
  };
  std::vector<Case> cases;
  GgufCase c;
  c.datasets = false;
  cases.push_back({"no datasets key", c, FG_ERR_NOT_FOUND, "imatrix.datasets"});
  c = GgufCase();
  c.chunk_size = false;
  cases.push_back({"no chunk_size key", c, FG_ERR_NOT_FOUND, "imatrix.chunk_size"});
  c = GgufCase();
  c.count_u32 = false;
  cases.push_back({"chunk_count as INT32", c, FG_ERR_TYPE, "imatrix.chunk_count"});
  c = GgufCase();
  c.datasets_str = false;
  cases.push_back({"datasets not strings", c, FG_ERR_TYPE, "imatrix.datasets"});
  c = GgufCase();
  c.counts = false;
  cases.push_back({"sums without counts", c, FG_ERR_BAD_SHAPE, "'x.weight'"});
  c = GgufCase();
  c.sums = false;
  cases.push_back({"counts without sums", c, FG_ERR_BAD_SHAPE, "'x.weight'"});
  c = GgufCase();
  c.sums_type = FG_F16;
  cases.push_back({"f16 sums", c, FG_ERR_BAD_DTYPE, "x.weight.in_sum2"});
  c = GgufCase();
  c.ne0 = 3;
  c.nexp = 1;
  c.ncount = 2;
  cases.push_back({"counts do not divide sums", c, FG_ERR_BAD_SHAPE, "3 sums and 2 counts"});
  c = GgufCase();
  c.counts_v = {INFINITY, 1.0f};
  cases.push_back({"Inf count", c, FG_ERR_NONFINITE, "count 0 at data offset"});
  c = GgufCase();
  c.counts_v = {1e30f, 1.0f};
  cases.push_back({"count beyond int64", c, FG_ERR_RANGE, "int64"});
  c = GgufCase();
  c.sums_v = {1, NAN, 3, 4, 5, 6, 7, 8};
  cases.push_back({"NaN sum", c, FG_ERR_NONFINITE, "value 1 at data offset"});
  c = GgufCase();
  c.counts = false;
  c.sums = false;
  cases.push_back({"no pairs at all", c, FG_ERR_RANGE, "no .in_sum2"});
  for (const Case &k : cases) {
    const std::vector<uint8_t> b = make_gguf(k.c);
    fg_imatrix *m = nullptr;
    EXPECT_EQ(fg_imatrix_open_bytes(b.data(), b.size(), "t.gguf", &m), k.st) << k.what << ": " << fg_last_error();
    const std::string msg = fg_last_error();
    EXPECT_NE(msg.find("t.gguf"), std::string::npos) << k.what << ": " << msg;
    EXPECT_NE(msg.find(k.needle), std::string::npos) << k.what << ": " << msg;
    EXPECT_EQ(m, nullptr);
  }
  // a GGUF container error is reported as such, with the label
  std::vector<uint8_t> b = make_gguf(GgufCase());
  b.resize(b.size() / 2);
  fg_imatrix *m = nullptr;
  EXPECT_EQ(fg_imatrix_open_bytes(b.data(), b.size(), "t.gguf", &m), FG_ERR_TRUNCATED) << fg_last_error();
  EXPECT_NE(std::string(fg_last_error()).find("t.gguf"), std::string::npos) << fg_last_error();
  // a missing file
  EXPECT_EQ(fg_imatrix_open("/nonexistent/imatrix.dat", &m), FG_ERR_NOT_FOUND);
  EXPECT_NE(std::string(fg_last_error()).find("/nonexistent/imatrix.dat"), std::string::npos) << fg_last_error();
}

}  // namespace
