// forgia inspect / forgia cat on safetensors files, Hugging Face folders and GGUF files:
// JSON parsed back and checked, raw and decoded bytes, exit codes and one-line errors.
#include <gtest/gtest.h>

#include <cjson/cJSON.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/gguf.h"
#include "forgia/safetensors.h"
#include "testutil.h"

namespace {

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }

struct Json {
  cJSON *root = nullptr;
  explicit Json(const std::string &s) : root(cJSON_Parse(s.c_str())) {}
  ~Json() { cJSON_Delete(root); }
};

const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

struct StFixture {
  fgt::TempDir dir;
  std::string path;
  std::vector<uint16_t> h16, b16;
  std::vector<float> f32;
  std::vector<double> f64;
  std::vector<int32_t> i32;
  StFixture() {
    path = dir.file("m.safetensors");
    float vals[6] = {1.5f, -2.0f, 0.25f, 8.0f, -0.0f, 1024.0f};
    for (float v : vals) {
      h16.push_back(fg_f32_to_f16(v));
      b16.push_back(fg_f32_to_bf16(v));
      f32.push_back(v);
      f64.push_back(v);
    }
    i32 = {1, 2, 3, 4};
    static uint64_t s23[2] = {2, 3}, s6[1] = {6}, s4[1] = {4};
    fg_st_write_tensor ts[] = {
        {"h", FG_F16, 2, s23, h16.data(), 12},  {"b", FG_BF16, 2, s23, b16.data(), 12},
        {"f", FG_F32, 1, s6, f32.data(), 24},   {"d", FG_F64, 1, s6, f64.data(), 48},
        {"i", FG_I32, 1, s4, i32.data(), 16},
    };
    fg_st_kv kv = {"format", "pt"};
    EXPECT_EQ(fg_st_save(path.c_str(), ts, 5, &kv, 1), FG_OK) << fg_last_error();
  }
};

TEST(SafetensorsCli, InspectJson) {
  StFixture fx;
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("inspect " + fx.path + " --json"), &out, &err), 0) << err;
  Json j(out);
  ASSERT_NE(j.root, nullptr) << out;
  EXPECT_STREQ(get(j.root, "format")->valuestring, "safetensors");
  const cJSON *fmt = get(get(j.root, "metadata"), "format");
  ASSERT_NE(fmt, nullptr);
  EXPECT_STREQ(get(fmt, "type")->valuestring, "string");
  EXPECT_STREQ(get(fmt, "value")->valuestring, "pt");
  const cJSON *ts = get(j.root, "tensors");
  ASSERT_EQ(cJSON_GetArraySize(ts), 5);
  // file order is the writer's: F64, F32, I32, BF16, F16
  const char *names[] = {"d", "f", "i", "b", "h"};
  const char *dtypes[] = {"F64", "F32", "I32", "BF16", "F16"};
  double offsets[] = {0, 48, 72, 88, 100};
  double sizes[] = {48, 24, 16, 12, 12};
  for (int k = 0; k < 5; k++) {
    const cJSON *t = cJSON_GetArrayItem(ts, k);
    EXPECT_STREQ(get(t, "name")->valuestring, names[k]);
    EXPECT_STREQ(get(t, "dtype")->valuestring, dtypes[k]);
    EXPECT_EQ(get(t, "offset")->valuedouble, offsets[k]);
    EXPECT_EQ(get(t, "nbytes")->valuedouble, sizes[k]);
  }
  const cJSON *shape = get(cJSON_GetArrayItem(ts, 4), "shape");
  ASSERT_EQ(cJSON_GetArraySize(shape), 2);
  EXPECT_EQ(cJSON_GetArrayItem(shape, 0)->valuedouble, 2);
  EXPECT_EQ(cJSON_GetArrayItem(shape, 1)->valuedouble, 3);
}

TEST(SafetensorsCli, InspectSummaryAndFolder) {
  StFixture fx;
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("inspect " + fx.path), &out, &err), 0) << err;
  EXPECT_NE(out.find("BF16"), std::string::npos) << out;
  EXPECT_NE(out.find("total: 5 tensors, 112 bytes"), std::string::npos) << out;
  // a folder opens as the same view
  ASSERT_EQ(fgt::run(cli("inspect " + fx.dir.path + " --json"), &out, &err), 0) << err;
  Json j(out);
  ASSERT_NE(j.root, nullptr);
  EXPECT_EQ(cJSON_GetArraySize(get(j.root, "tensors")), 5);
}

TEST(SafetensorsCli, InspectShardedFolder) {
  fgt::TempDir dir;
  std::vector<uint8_t> a(100, 1), b(100, 2), c(100, 3);
  uint64_t s[1] = {100};
  fg_st_write_tensor ts[] = {{"a", FG_U8, 1, s, a.data(), 100}, {"b", FG_U8, 1, s, b.data(), 100},
                             {"c", FG_U8, 1, s, c.data(), 100}};
  size_t ns;
  ASSERT_EQ(fg_st_save_sharded(dir.path.c_str(), ts, 3, nullptr, 0, 150, &ns), FG_OK);
  ASSERT_EQ(ns, 3u);
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("inspect " + dir.path + " --json"), &out, &err), 0) << err;
  Json j(out);
  ASSERT_NE(j.root, nullptr);
  const cJSON *t = get(j.root, "tensors");
  ASSERT_EQ(cJSON_GetArraySize(t), 3);
  EXPECT_STREQ(get(cJSON_GetArrayItem(t, 2), "name")->valuestring, "c");
  EXPECT_STREQ(get(cJSON_GetArrayItem(t, 2), "file")->valuestring, "model-00003-of-00003.safetensors");
  EXPECT_EQ(get(cJSON_GetArrayItem(t, 2), "offset")->valuedouble, 0);
  ASSERT_EQ(fgt::run(cli("cat " + dir.path + " b"), &out, &err), 0) << err;
  EXPECT_EQ(out, std::string(100, '\x02'));
}

TEST(SafetensorsCli, CatRawAndF32) {
  StFixture fx;
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("cat " + fx.path + " h"), &out, &err), 0) << err;
  ASSERT_EQ(out.size(), 12u);
  EXPECT_EQ(memcmp(out.data(), fx.h16.data(), 12), 0);
  for (const char *name : {"h", "b", "f", "d"}) {
    ASSERT_EQ(fgt::run(cli("cat " + fx.path + " " + name + " --as f32"), &out, &err), 0) << err;
    ASSERT_EQ(out.size(), 24u) << name;
    std::vector<float> got(6);
    memcpy(got.data(), out.data(), 24);
    for (int k = 0; k < 6; k++) EXPECT_EQ(got[k], fx.f32[k]) << name << " " << k;
  }
  // an integer tensor cannot be decoded: one line, exit 1
  EXPECT_EQ(fgt::run(cli("cat " + fx.path + " i --as f32"), &out, &err), 1);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(fgt::run(cli("cat " + fx.path + " nope"), &out, &err), 1);
  EXPECT_NE(err.find("nope"), std::string::npos);
  EXPECT_NE(err.find(fx.path), std::string::npos) << err;
}

TEST(SafetensorsCli, MalformedFilesAndUsage) {
  fgt::TempDir dir;
  struct C {
    const char *name;
    std::string bytes;
    const char *says;
  } cases[] = {
      {"short.safetensors", "abc", "at least 8"},
      {"polyglot.safetensors",
       std::string("\x3c\0\0\0\0\0\0\0", 8) + R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})" +
           std::string(17, '\0'),
       "trailing"},
      {"json.safetensors", std::string("\x01\0\0\0\0\0\0\0{", 9), "invalid JSON"},
      {"bad.gguf", "GGUF\x09\0\0\0", ""},
  };
  for (const C &c : cases) {
    std::string p = dir.file(c.name);
    fgt::write_file(p, c.bytes.data(), c.bytes.size());
    for (const std::string &cmd : {"inspect " + p, "inspect " + p + " --json", "cat " + p + " x"}) {
      std::string out, err;
      EXPECT_EQ(fgt::run(cli(cmd), &out, &err), 1) << cmd;
      EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << cmd << ": " << err;
      EXPECT_NE(err.find(c.name), std::string::npos) << cmd << ": " << err;
      EXPECT_NE(err.find(c.says), std::string::npos) << cmd << ": " << err;
      EXPECT_TRUE(out.empty()) << cmd;
    }
  }
  std::string out, err;
  EXPECT_EQ(fgt::run(cli("inspect --help"), &out, &err), 0);
  EXPECT_NE(out.find("usage: forgia inspect"), std::string::npos);
  EXPECT_EQ(fgt::run(cli("cat --help"), &out, &err), 0);
  EXPECT_NE(out.find("usage: forgia cat"), std::string::npos);
  EXPECT_EQ(fgt::run(cli("inspect x --bogus"), &out, &err), 2);
  EXPECT_NE(err.find("usage"), std::string::npos);
  EXPECT_EQ(fgt::run(cli("cat x y --as f16"), &out, &err), 2);
  EXPECT_NE(err.find("usage"), std::string::npos);
  EXPECT_EQ(fgt::run(cli("cat x"), &out, &err), 2);
  EXPECT_EQ(fgt::run(cli("inspect"), &out, &err), 2);
  EXPECT_EQ(fgt::run(cli("inspect " + dir.file("missing.safetensors")), &out, &err), 1);
}

TEST(GgufCli, InspectAndCat) {
  fgt::TempDir dir;
  std::string p = dir.file("m.gguf");
  fg_gguf_writer *w;
  ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
  fg_gguf_writer_set_str(w, "general.architecture", "llama", 5);
  fg_gguf_writer_set_u32(w, "general.alignment", 64);
  fg_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f);
  fg_gguf_writer_set_bool(w, "x.flag", true);
  fg_gguf_writer_set_i64(w, "x.big", -((int64_t)1 << 60));
  std::vector<int32_t> many(100);
  for (int i = 0; i < 100; i++) many[i] = i;
  fg_gguf_writer_set_array(w, "x.many", FG_GGUF_INT32, many.data(), 100);
  const char *toks[] = {"a", "b\n"};
  fg_gguf_writer_set_str_array(w, "x.toks", toks, nullptr, 2);
  std::vector<uint16_t> h(6);
  for (int i = 0; i < 6; i++) h[i] = fg_f32_to_f16((float)i - 2.5f);
  uint64_t ne[2] = {3, 2};
  ASSERT_EQ(fg_gguf_writer_add_tensor(w, "tok.weight", FG_F16, 2, ne, h.data(), 12), FG_OK) << fg_last_error();
  std::vector<float> f(4, 7.0f);
  uint64_t ne1[1] = {4};
  ASSERT_EQ(fg_gguf_writer_add_tensor(w, "norm", FG_F32, 1, ne1, f.data(), 16), FG_OK);
  ASSERT_EQ(fg_gguf_writer_finish(w, p.c_str()), FG_OK) << fg_last_error();
  fg_gguf_writer_free(w);

  std::string out, err;
  ASSERT_EQ(fgt::run(cli("inspect " + p + " --json"), &out, &err), 0) << err;
  {
    Json j(out);
    ASSERT_NE(j.root, nullptr) << out;
    EXPECT_STREQ(get(j.root, "format")->valuestring, "gguf");
    EXPECT_EQ(get(j.root, "version")->valuedouble, 3);
    EXPECT_EQ(get(j.root, "alignment")->valuedouble, 64);
    const cJSON *m = get(j.root, "metadata");
    EXPECT_STREQ(get(get(m, "general.architecture"), "type")->valuestring, "STRING");
    EXPECT_STREQ(get(get(m, "general.architecture"), "value")->valuestring, "llama");
    EXPECT_STREQ(get(get(m, "general.alignment"), "type")->valuestring, "UINT32");
    EXPECT_EQ(get(get(m, "llama.rope.freq_base"), "value")->valuedouble, 10000.0);
    EXPECT_TRUE(cJSON_IsTrue(get(get(m, "x.flag"), "value")));
    // exact 64-bit integers
    EXPECT_NE(out.find("-1152921504606846976"), std::string::npos);
    const cJSON *many_j = get(m, "x.many");
    EXPECT_STREQ(get(many_j, "type")->valuestring, "ARRAY");
    EXPECT_STREQ(get(many_j, "element_type")->valuestring, "INT32");
    EXPECT_EQ(get(many_j, "length")->valuedouble, 100);
    EXPECT_EQ(get(many_j, "value"), nullptr);  // summarised
    const cJSON *toks_j = get(get(m, "x.toks"), "value");
    ASSERT_EQ(cJSON_GetArraySize(toks_j), 2);
    EXPECT_STREQ(cJSON_GetArrayItem(toks_j, 1)->valuestring, "b\n");
    const cJSON *ts = get(j.root, "tensors");
    ASSERT_EQ(cJSON_GetArraySize(ts), 2);
    const cJSON *t0 = cJSON_GetArrayItem(ts, 0);
    EXPECT_STREQ(get(t0, "name")->valuestring, "tok.weight");
    EXPECT_STREQ(get(t0, "dtype")->valuestring, "f16");
    EXPECT_EQ(cJSON_GetArrayItem(get(t0, "shape"), 0)->valuedouble, 2);  // row-major
    EXPECT_EQ(cJSON_GetArrayItem(get(t0, "shape"), 1)->valuedouble, 3);
    EXPECT_EQ(get(t0, "offset")->valuedouble, 0);
    EXPECT_EQ(get(t0, "nbytes")->valuedouble, 12);
    EXPECT_EQ(get(cJSON_GetArrayItem(ts, 1), "offset")->valuedouble, 64);
  }
  ASSERT_EQ(fgt::run(cli("inspect " + p + " --json --full"), &out, &err), 0) << err;
  {
    Json j(out);
    const cJSON *v = get(get(get(j.root, "metadata"), "x.many"), "value");
    ASSERT_EQ(cJSON_GetArraySize(v), 100);
    EXPECT_EQ(cJSON_GetArrayItem(v, 99)->valuedouble, 99);
  }
  ASSERT_EQ(fgt::run(cli("inspect " + p), &out, &err), 0) << err;
  EXPECT_NE(out.find("f16"), std::string::npos);
  EXPECT_NE(out.find("total: 2 tensors, 28 bytes"), std::string::npos) << out;
  ASSERT_EQ(fgt::run(cli("cat " + p + " tok.weight"), &out, &err), 0) << err;
  EXPECT_EQ(out, std::string((const char *)h.data(), 12));
  ASSERT_EQ(fgt::run(cli("cat " + p + " tok.weight --as f32"), &out, &err), 0) << err;
  ASSERT_EQ(out.size(), 24u);
  for (int i = 0; i < 6; i++) {
    float x;
    memcpy(&x, out.data() + 4 * i, 4);
    EXPECT_EQ(x, (float)i - 2.5f);
  }
}

}  // namespace
