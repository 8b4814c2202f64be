// Parsing an existing mapping (both containers), the source name a parsed file reports,
// and the va_list form of fg_fail: public entry points the other suites reach only
// indirectly.
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/device.h"
#include "forgia/gguf.h"
#include "forgia/load.h"
#include "forgia/mapping.h"
#include "forgia/safetensors.h"
#include "forgia/status.h"
#include "testutil.h"

namespace {

TEST(OpenMapping, GgufFileTakesItsOwnReference) {
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
  ASSERT_EQ(fg_gguf_writer_set_u32(w, "k", 7), FG_OK);
  const float x[4] = {1, 2, 3, 4};
  const uint64_t ne[1] = {4};
  ASSERT_EQ(fg_gguf_writer_add_tensor(w, "t", FG_F32, 1, ne, x, sizeof x), FG_OK);
  void *bytes = nullptr;
  size_t len = 0;
  ASSERT_EQ(fg_gguf_writer_finish_mem(w, &bytes, &len), FG_OK);
  fg_gguf_writer_free(w);

  fg_mapping *m = nullptr;
  ASSERT_EQ(fg_mapping_adopt(bytes, len, "mem.gguf", &m), FG_OK);
  fg_gguf_file *f = nullptr;
  ASSERT_EQ(fg_gguf_open_mapping(m, &f), FG_OK) << fg_last_error();
  fg_mapping_release(m);  // the file keeps the bytes alive
  EXPECT_STREQ(fg_gguf_path(f), "mem.gguf");
  int64_t k = 0;
  ASSERT_EQ(fg_gguf_get_int(f, "k", &k), FG_OK);
  EXPECT_EQ(k, 7);
  const fg_gguf_tensor *t = fg_gguf_find_tensor(f, "t");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->nbytes, sizeof x);
  EXPECT_EQ(std::memcmp(t->data, x, sizeof x), 0);
  fg_gguf_close(f);
}

TEST(OpenMapping, GgufRefusesGarbageAndKeepsTheCallersReference) {
  static const char junk[] = "this is not a gguf file at all";
  fg_mapping *m = nullptr;
  ASSERT_EQ(fg_mapping_wrap(junk, sizeof junk, &m), FG_OK);
  fg_gguf_file *f = nullptr;
  EXPECT_EQ(fg_gguf_open_mapping(m, &f), FG_ERR_BAD_MAGIC);
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(fg_mapping_size(m), sizeof junk);  // still ours
  fg_mapping_release(m);
}

std::string st_bytes(const std::string &json, const std::vector<uint8_t> &data) {
  std::string h = json;
  while ((8 + h.size()) % 8) h += ' ';
  uint64_t n = h.size();
  std::string out(reinterpret_cast<const char *>(&n), 8);
  return out + h + std::string(data.begin(), data.end());
}

TEST(OpenMapping, SafetensorsFileReportsItsSource) {
  std::string b = st_bytes(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})", {5, 6, 7});
  void *copy = std::malloc(b.size());
  std::memcpy(copy, b.data(), b.size());
  fg_mapping *m = nullptr;
  ASSERT_EQ(fg_mapping_adopt(copy, b.size(), "weights.safetensors", &m), FG_OK);
  fg_st_file *f = nullptr;
  ASSERT_EQ(fg_st_open_mapping(m, &f), FG_OK) << fg_last_error();
  fg_mapping_release(m);
  EXPECT_STREQ(fg_st_source(f), "weights.safetensors");
  const fg_st_tensor *t = fg_st_find(f, "a");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->nbytes, 3u);
  EXPECT_EQ(t->data[0], 5);
  EXPECT_EQ(t->data[2], 7);
  fg_st_close(f);

  // The in-memory parser names its input as the caller says, "<memory>" by default.
  ASSERT_EQ(fg_st_parse(b.data(), b.size(), nullptr, &f), FG_OK);
  EXPECT_STREQ(fg_st_source(f), "<memory>");
  fg_st_close(f);
  ASSERT_EQ(fg_st_parse(b.data(), b.size(), "shard-3", &f), FG_OK);
  EXPECT_STREQ(fg_st_source(f), "shard-3");
  fg_st_close(f);
}

TEST(OpenMapping, LoadedModelKeepsThePathItWasGiven) {
  fgt::TempDir d;
  std::string p = d.file("m.safetensors");
  std::string b = st_bytes(R"({"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})", {5, 6, 7});
  fgt::write_file(p, b.data(), b.size());
  fg_device *cpu = nullptr;
  ASSERT_EQ(fg_device_open("cpu", &cpu), FG_OK);
  fg_model *m = nullptr;
  ASSERT_EQ(fg_model_create(p.c_str(), cpu, nullptr, &m), FG_OK) << fg_last_error();
  EXPECT_EQ(std::string(fg_model_path(m)), p);
  EXPECT_STREQ(fg_model_format(m), "safetensors");
  fg_model_free(m);
  fg_device_close(cpu);
}

fg_status fail_through(fg_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fg_status r = fg_failv(s, fmt, ap);
  va_end(ap);
  return r;
}

TEST(Status, FailvFormatsLikeFail) {
  EXPECT_EQ(fail_through(FG_ERR_TRUNCATED, "%s: %d bytes short", "f.gguf", 12), FG_ERR_TRUNCATED);
  EXPECT_STREQ(fg_last_error(), "f.gguf: 12 bytes short");
  fg_clear_error();
  EXPECT_STREQ(fg_last_error(), "");
}

}  // namespace
