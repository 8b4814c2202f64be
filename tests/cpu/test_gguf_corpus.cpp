// The malformed-input corpus (tests/data/gen_gguf_corpus.py): every case must fail with its
// own status (and no crash, no partial file), every valid control must parse, re-emit byte
// for byte, and fail cleanly at every shorter prefix.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "gguf_test_util.h"
#include "testutil.h"

namespace {

std::string python() {
  return access(FORGIA_PYTHON, X_OK) == 0 ? FORGIA_PYTHON : "python3";
}

struct Corpus {
  fgt::TempDir dir;
  std::vector<std::pair<std::string, std::string>> cases;  // file, expected status name
  Corpus() {
    std::string cmd = python() + " " FORGIA_TEST_DATA "/gen_gguf_corpus.py " + dir.path;
    std::string out, err;
    int rc = fgt::run(cmd, &out, &err);
    EXPECT_EQ(rc, 0) << cmd << "\n" << err;
    std::ifstream m(dir.file("MANIFEST"));
    std::string line;
    while (std::getline(m, line)) {
      size_t tab = line.find('\t');
      if (tab != std::string::npos) cases.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
  }
};

Corpus &corpus() {
  static Corpus c;
  return c;
}

TEST(GgufCorpus, EveryCaseHasItsStatus) {
  Corpus &c = corpus();
  ASSERT_GT(c.cases.size(), 60u);
  int ok = 0;
  for (auto &[name, want] : c.cases) {
    SCOPED_TRACE(name);
    std::string path = c.dir.file(name);
    gg::Bytes bytes = fgt::read_file(path);
    fg_gguf_file *f = nullptr;
    fg_status s = fg_gguf_open_bytes(bytes.empty() ? nullptr : bytes.data(), bytes.size(), &f);
    EXPECT_STREQ(fg_status_name(s), want.c_str()) << fg_last_error();
    if (s != FG_OK) {
      EXPECT_EQ(f, nullptr);
      EXPECT_NE(std::string(fg_last_error()), "");
    } else {
      ok++;
      gg::walk(f);
    }
    fg_gguf_close(f);
    // the path-based opens agree
    for (fg_map_mode mode : {FG_MAP_READ, FG_MAP_MMAP}) {
      fg_gguf_file *g = nullptr;
      fg_status s2 = fg_gguf_open(path.c_str(), mode, &g);
      EXPECT_EQ(s2, s);
      if (s2 != FG_OK) {
        EXPECT_NE(std::string(fg_last_error()).find(name), std::string::npos) << fg_last_error();
      }
      fg_gguf_close(g);
    }
  }
  EXPECT_GE(ok, 10);
}

// Valid files the writer does not produce (as ggml's writer does not): it writes n_dims >= 1
// and names of 1..63 bytes, and refuses the rest cleanly.
bool writer_refuses(const std::string &name) {
  return name == "ok_tensor_ndim_0.gguf" || name == "ok_tensor_name_empty.gguf";
}

TEST(GgufCorpus, ValidControlsReemitByteForByte) {
  Corpus &c = corpus();
  for (auto &[name, want] : c.cases) {
    if (want != "FG_OK") continue;
    SCOPED_TRACE(name);
    gg::Bytes bytes = fgt::read_file(c.dir.file(name));
    fg_gguf_file *f = nullptr;
    ASSERT_EQ(fg_gguf_open_bytes(bytes.data(), bytes.size(), &f), FG_OK) << fg_last_error();
    if (writer_refuses(name)) {
      const fg_gguf_tensor *t = fg_gguf_tensor_at(f, 0);
      fg_gguf_writer *w = nullptr;
      ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
      fg_status s = fg_gguf_writer_add_tensor(w, t->name, t->dtype, t->ndim, t->ne, t->data, t->nbytes);
      EXPECT_TRUE(s == FG_ERR_BAD_SHAPE || s == FG_ERR_BAD_STRING) << fg_status_name(s);
      EXPECT_EQ(fg_gguf_writer_tensor_count(w), 0u);
      fg_gguf_writer_free(w);
      fg_gguf_close(f);
      continue;
    }
    gg::Bytes again = gg::reemit(f);
    // the writer always pads the header and the last tensor and drops trailing bytes
    gg::Bytes expect = bytes;
    if (name == "ok_trailing_bytes.gguf") expect.resize(expect.size() - 4);
    if (name == "ok_no_final_padding.gguf" || name == "ok_empty_unpadded.gguf") expect.resize(gg::pad(expect.size(), 32), 0);
    EXPECT_EQ(again, expect);
    fg_gguf_close(f);
  }
}

// The controls that ggml accepts and forgia used to refuse, checked value by value.
TEST(GgufCorpus, GgmlAcceptedEdgeCasesKeepTheirValues) {
  Corpus &c = corpus();
  auto open = [&](const char *name, fg_gguf_file **f) {
    return fg_gguf_open(c.dir.file(name).c_str(), FG_MAP_READ, f);
  };
  fg_gguf_file *f = nullptr;
  uint64_t u = 0;
  int64_t i = 0;
  ASSERT_EQ(open("ok_u64_2pow63.gguf", &f), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_gguf_get_uint(f, "k", &u), FG_OK);
  EXPECT_EQ(u, 1ull << 63);
  EXPECT_EQ(fg_gguf_get_int(f, "k", &i), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("9223372036854775808"), std::string::npos) << fg_last_error();
  fg_gguf_close(f);

  ASSERT_EQ(open("ok_u64_max.gguf", &f), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_gguf_get_uint(f, "k", &u), FG_OK);
  EXPECT_EQ(u, UINT64_MAX);
  fg_gguf_close(f);

  ASSERT_EQ(open("ok_u64_array_2pow63.gguf", &f), FG_OK) << fg_last_error();
  fg_gguf_array a;
  ASSERT_EQ(fg_gguf_get_array(f, "k", &a), FG_OK);
  ASSERT_EQ(a.len, 3u);
  const uint64_t want[3] = {1, 1ull << 63, UINT64_MAX};
  for (uint64_t j = 0; j < 3; j++) {
    ASSERT_EQ(fg_gguf_array_uint(&a, j, &u), FG_OK);
    EXPECT_EQ(u, want[j]);
  }
  EXPECT_EQ(fg_gguf_array_int(&a, 0, &i), FG_OK);
  EXPECT_EQ(i, 1);
  EXPECT_EQ(fg_gguf_array_int(&a, 2, &i), FG_ERR_RANGE);
  fg_gguf_close(f);

  ASSERT_EQ(open("ok_tensor_ndim_0.gguf", &f), FG_OK) << fg_last_error();
  const fg_gguf_tensor *t = fg_gguf_find_tensor(f, "scalar");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->ndim, 0);
  for (int d = 0; d < 4; d++) {
    EXPECT_EQ(t->ne[d], 1u);
    EXPECT_EQ(t->shape[d], 0u);
  }
  EXPECT_EQ(t->dtype, FG_F32);
  EXPECT_EQ(t->nbytes, 4u);
  EXPECT_EQ(fg_gguf_tensor_numel(t), 1u);
  EXPECT_EQ(gg::Bytes(t->data, t->data + 4), gg::Bytes({0, 1, 2, 3}));  // (offset + j) % 256
  EXPECT_EQ(fg_gguf_find_tensor(f, "x")->offset, 32u);
  fg_gguf_close(f);

  ASSERT_EQ(open("ok_tensor_name_empty.gguf", &f), FG_OK) << fg_last_error();
  t = fg_gguf_find_tensor(f, "");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t, fg_gguf_tensor_at(f, 0));
  EXPECT_EQ(t->name_len, 0u);
  EXPECT_STREQ(t->name, "");
  EXPECT_EQ(t->nbytes, 16u);
  EXPECT_EQ(fg_gguf_find_tensor(f, "x"), fg_gguf_tensor_at(f, 1));
  fg_gguf_close(f);

  ASSERT_EQ(open("tensor_name_empty_dup.gguf", &f), FG_ERR_DUPLICATE);
  EXPECT_NE(std::string(fg_last_error()).find("tensor '' at offset"), std::string::npos) << fg_last_error();
}

TEST(GgufCorpus, EveryPrefixOfValidFilesFailsCleanly) {
  Corpus &c = corpus();
  for (auto &[name, want] : c.cases) {
    if (want != "FG_OK") continue;
    SCOPED_TRACE(name);
    gg::Bytes bytes = fgt::read_file(c.dir.file(name));
    fg_gguf_file *f = nullptr;
    ASSERT_EQ(fg_gguf_open_bytes(bytes.data(), bytes.size(), &f), FG_OK);
    // the shortest accepted length: the end of the last tensor's data, or of the header
    uint64_t need = 24;
    for (uint64_t i = 0; i < fg_gguf_kv_count(f); i++) {
      const uint8_t *raw;
      uint64_t len;
      ASSERT_EQ(fg_gguf_kv_raw(f, i, &raw, &len), FG_OK);
      need = (uint64_t)(raw - bytes.data()) + len;
    }
    if (fg_gguf_tensor_count(f)) {
      const fg_gguf_tensor *t = fg_gguf_tensor_at(f, fg_gguf_tensor_count(f) - 1);
      need = fg_gguf_data_offset(f, 0) + t->offset + t->nbytes;
    }
    fg_gguf_close(f);
    for (size_t n = 0; n < bytes.size(); n++) {
      gg::Bytes prefix(bytes.begin(), bytes.begin() + (long)n);
      f = nullptr;
      fg_status s = fg_gguf_open_bytes(n ? prefix.data() : nullptr, n, &f);
      if (n >= need) {
        EXPECT_EQ(s, FG_OK) << n << ": " << fg_last_error();
      } else {
        EXPECT_TRUE(s == FG_ERR_TRUNCATED || s == FG_ERR_BAD_STRING)
            << n << ": " << fg_status_name(s) << " " << fg_last_error();
      }
      fg_gguf_close(f);
    }
  }
}

}  // namespace
