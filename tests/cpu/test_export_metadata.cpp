// Metadata of a safetensors checkpoint exported to GGUF keeps every byte and every value:
// NUL bytes in __metadata__ and config.json values (a NUL in a key is refused: C readers of
// GGUF would see "a\0b" and "a\0c" as one key "a"),
// config.json integers up to 2^64-1 exactly, floats beyond f32 as FLOAT64; what GGUF cannot
// hold, and two members that flatten to one key, are errors naming them. gguf-py reads the
// same file the same way: tests/interop/test_metadata_interop.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <vector>
#include <string>

#include "export_fixtures.h"
#include "metadata_fixtures.h"

namespace {

std::string value_text(const fg_gguf_array *a, uint64_t j) {
  switch (a->elem_type) {
    case FG_GGUF_STRING: {
      fg_gguf_str s;
      EXPECT_EQ(fg_gguf_array_str(a, j, &s), FG_OK);
      return fgm::hex(std::string(s.ptr, (size_t)s.len));
    }
    case FG_GGUF_FLOAT32:
    case FG_GGUF_FLOAT64: {
      double d = 0;
      EXPECT_EQ(fg_gguf_array_float(a, j, &d), FG_OK);
      return fgm::f64hex(d);
    }
    case FG_GGUF_BOOL: {
      bool b = false;
      EXPECT_EQ(fg_gguf_array_bool(a, j, &b), FG_OK);
      return b ? "1" : "0";
    }
    case FG_GGUF_UINT64: {
      uint64_t u = 0;
      EXPECT_EQ(fg_gguf_array_uint(a, j, &u), FG_OK);
      return std::to_string(u);
    }
    default: {
      int64_t i = 0;
      EXPECT_EQ(fg_gguf_array_int(a, j, &i), FG_OK);
      return std::to_string(i);
    }
  }
}

// Every safetensors.* KV of a GGUF, read with forgia, in the form of fgm::expected().
std::map<std::string, std::string> read_back(const std::string &path) {
  std::map<std::string, std::string> m;
  fg_gguf_file *f = nullptr;
  EXPECT_EQ(fg_gguf_open(path.c_str(), FG_MAP_READ, &f), FG_OK) << fg_last_error();
  if (!f) return m;
  for (size_t i = 0; i < fg_gguf_kv_count(f); i++) {
    const fg_gguf_str k = fg_gguf_kv_key(f, i);
    const std::string key(k.ptr, (size_t)k.len);
    if (key.rfind("safetensors.", 0) != 0) continue;
    const fg_gguf_type t = fg_gguf_kv_type(f, i);
    fg_gguf_array a{};
    std::string types = std::to_string((int)t), v;
    if (t == FG_GGUF_ARRAY) {
      EXPECT_EQ(fg_gguf_kv_array(f, i, &a), FG_OK);
      types += "," + std::to_string((int)a.elem_type);
      for (uint64_t j = 0; j < a.len; j++) v += (j ? "," : "") + value_text(&a, j);
    } else {
      // a scalar read through the array getters: one element of the same wire type
      const uint8_t *raw = nullptr;
      uint64_t len = 0;
      EXPECT_EQ(fg_gguf_kv_value_raw(f, i, &raw, &len), FG_OK);
      a.elem_type = t;
      a.len = 1;
      if (t == FG_GGUF_STRING) {
        fg_gguf_str s;
        EXPECT_EQ(fg_gguf_kv_str(f, i, &s), FG_OK);
        v = fgm::hex(std::string(s.ptr, (size_t)s.len));
      } else {
        a.data = raw;
        a.nbytes = len;
        v = value_text(&a, 0);
      }
    }
    EXPECT_EQ(m.count(fgm::hex(key)), 0u) << "key twice: " << key;
    m[fgm::hex(key)] = types + " " + v;
  }
  fg_gguf_close(f);
  return m;
}

TEST(ExportMetadata, NulBytesAndExactNumbersSurvive) {
  fgt::TempDir dir;
  const std::string model = fgm::write_checkpoint(dir.path, fgm::kMetadata, fgm::kConfig);
  // the reader tells keys apart by length
  fg_st_file *sf = nullptr;
  ASSERT_EQ(fg_st_open((model + "/model.safetensors").c_str(), FG_MAP_READ, &sf), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_st_metadata_count(sf), 4u);
  const char *k, *v;
  size_t kl, vl;
  ASSERT_TRUE(fg_st_metadata_at_n(sf, 2, &k, &kl, &v, &vl));
  EXPECT_EQ(std::string(k, kl), "c");
  EXPECT_EQ(std::string(v, vl), std::string("2\0003", 3));
  fg_st_close(sf);

  const std::string out = dir.file("out.gguf");
  ASSERT_EQ(fgx::export_file(model, false, fgx::opts(nullptr), out), FG_OK) << fg_last_error();
  const std::map<std::string, std::string> got = read_back(out), want = fgm::expected();
  for (const auto &kv : want) {
    auto it = got.find(kv.first);
    ASSERT_NE(it, got.end()) << "missing key (hex) " << kv.first;
    EXPECT_EQ(it->second, kv.second) << "key (hex) " << kv.first;
  }
  EXPECT_EQ(got.size(), want.size()) << "null and [] are left out; nothing else is added";
}

fg_status export_config(const fgt::TempDir &dir, const std::string &config) {
  return fgx::export_file(fgm::write_checkpoint(dir.path, "{}", config), false, fgx::opts(nullptr),
                         dir.file("out.gguf"));
}

TEST(ExportMetadata, MembersFlatteningToOneKeyAreAnError) {
  struct Case {
    const char *config, *first, *second;
  } cases[] = {
      {R"({"a":{"b":1},"a.b":2})", R"(["a"]["b"])", R"(["a.b"])"},
      {R"({"a.b":{"c":1},"a":{"b.c":"x"}})", R"(["a.b"]["c"])", R"(["a"]["b.c"])"},
      {R"({"n":1,"n":2})", R"(["n"])", R"(["n"])"},
  };
  for (const Case &c : cases) {
    fgt::TempDir dir;
    ASSERT_EQ(export_config(dir, c.config), FG_ERR_DUPLICATE) << c.config;
    const std::string m = fg_last_error();
    EXPECT_NE(m.find(std::string(c.first) + " and " + c.second), std::string::npos) << m;
    EXPECT_NE(m.find("config.json"), std::string::npos) << m;
    EXPECT_FALSE(std::ifstream(dir.file("out.gguf")).good()) << c.config;
  }
}

TEST(ExportMetadata, NumbersNoGgufTypeHoldsAreAnError) {
  for (const char *config : {R"({"x":18446744073709551616})", R"({"x":-9223372036854775809})",
                             R"({"x":[-1,18446744073709551615]})", R"({"x":1e400})"}) {
    fgt::TempDir dir;
    ASSERT_EQ(export_config(dir, config), FG_ERR_RANGE) << config;
    EXPECT_NE(std::string(fg_last_error()).find("config.json"), std::string::npos) << fg_last_error();
  }
  fgt::TempDir dir;  // the edges themselves are fine
  EXPECT_EQ(export_config(dir, R"({"x":[-9223372036854775808,0],"y":1.7976931348623157e308})"), FG_OK)
      << fg_last_error();
}

// A NUL byte in a __metadata__ or config.json key is refused, naming the file and the key
// (the reader tells such keys apart by length, but a GGUF key is a C string to ggml's
// gguf_find_key); the CLI says so in one line, exit 1, and writes nothing.
TEST(ExportMetadata, NulInAKeyIsRefused) {
  fgt::TempDir dir;
  const std::string model = fgm::write_checkpoint(dir.path, fgm::kNulKeyMetadata, "");
  fg_st_file *sf = nullptr;
  ASSERT_EQ(fg_st_open((model + "/model.safetensors").c_str(), FG_MAP_READ, &sf), FG_OK) << fg_last_error();
  EXPECT_STREQ(fg_st_metadata_find(sf, "a"), "x");  // the reader keeps "a\0b" apart from "a"
  fg_st_close(sf);
  const std::string out = dir.file("out.gguf");
  ASSERT_EQ(fgx::export_file(model, false, fgx::opts(nullptr), out), FG_ERR_BAD_STRING);
  std::string m = fg_last_error();
  EXPECT_NE(m.find(model + "/model.safetensors: __metadata__ entry 1: the key holds a NUL byte at byte 1"),
            std::string::npos) << m;
  EXPECT_FALSE(std::ifstream(out).good());

  const std::vector<uint8_t> before = fgt::read_file(model + "/model.safetensors");
  std::string sout, err;
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " export '" + model + "' '" + out + "' f16", &sout, &err), 1) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("__metadata__ entry 1"), std::string::npos) << err;
  EXPECT_FALSE(std::ifstream(out).good());
  EXPECT_EQ(fgt::read_file(model + "/model.safetensors"), before);

  fgt::TempDir d2;
  ASSERT_EQ(export_config(d2, R"({"ok":1,"x":{"a\u0000b":"v"}})"), FG_ERR_BAD_STRING);
  m = fg_last_error();
  EXPECT_NE(m.find("config.json: member [\"x\"][\"a\\u0000b\"]: its key holds a NUL byte"), std::string::npos) << m;
  EXPECT_FALSE(std::ifstream(d2.file("out.gguf")).good());
}

// inspect --json spells keys that differ after a NUL apart (and never prints a key twice).
TEST(ExportMetadata, InspectJsonKeepsNulKeysApart) {
  fgt::TempDir dir;
  const std::string model = fgm::write_checkpoint(dir.path, fgm::kNulKeyMetadata, "");
  for (const std::string &path : {model + "/model.safetensors"}) {
    std::string text, err;
    ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " inspect --json '" + path + "'", &text, &err), 0) << err;
    const std::string prefix;
    for (const char *k : {"a\\u0000b", "a\\u0000c", "a"}) {
      const std::string q = "\"" + prefix + k + "\":";
      const size_t at = text.find(q);
      EXPECT_NE(at, std::string::npos) << q << "\n" << text;
      EXPECT_EQ(text.find(q, at + 1), std::string::npos) << q << " twice\n" << text;
    }
    EXPECT_NE(text.find("\"value\":\t\"2\\u00003\""), std::string::npos) << text;
  }
}

// GGUF keys are bytes: two that differ only in invalid UTF-8 would both print as U+FFFD, so
// inspect --json refuses such a file rather than print one key twice.
TEST(ExportMetadata, InspectJsonRefusesKeysItCannotSpellApart) {
  fgt::TempDir dir;
  const std::string path = dir.file("keys.gguf");
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u8(w, "k\xff", 1), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u8(w, "k\xfe", 2), FG_OK);
  ASSERT_EQ(fg_gguf_writer_finish(w, path.c_str()), FG_OK) << fg_last_error();
  fg_gguf_writer_free(w);
  std::string out, err;
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " inspect --json '" + path + "'", &out, &err), 1);
  EXPECT_NE(err.find("invalid UTF-8"), std::string::npos) << err;
  EXPECT_EQ(out, "");
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " inspect '" + path + "'", &out, &err), 0) << err;
}

}  // namespace
