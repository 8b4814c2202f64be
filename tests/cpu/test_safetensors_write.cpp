// safetensors writer (upstream byte vectors), atomic save, slicing, sharded directories.
#include <gtest/gtest.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sys/stat.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/safetensors.h"
#include "testutil.h"

namespace {

std::string ser(const std::vector<fg_st_write_tensor> &ts, const fg_st_kv *meta = nullptr, size_t nmeta = 0,
                fg_status want = FG_OK) {
  uint8_t *p = nullptr;
  size_t n = 0;
  fg_status s = fg_st_serialize(ts.data(), ts.size(), meta, nmeta, &p, &n);
  EXPECT_EQ(s, want) << fg_last_error();
  std::string out(p ? (const char *)p : "", n);
  free(p);
  if (s == FG_OK) {
    uint64_t sz;
    EXPECT_EQ(fg_st_serialized_size(ts.data(), ts.size(), meta, nmeta, &sz), FG_OK);
    EXPECT_EQ(sz, n);
  }
  return out;
}

uint64_t header_n(const std::string &b) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | (uint8_t)b[i];
  return n;
}

std::string header_text(const std::string &b) { return b.substr(8, header_n(b)); }

TEST(SafetensorsWrite, EmptyVectors) {
  std::string a = ser({});
  EXPECT_EQ(a, std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  fg_st_kv kv = {"framework", "pt"};
  std::string b = ser({}, &kv, 1);
  EXPECT_EQ(b.size(), 48u);
  EXPECT_EQ(header_n(b), 40u);
  EXPECT_EQ(header_text(b), std::string("{\"__metadata__\":{\"framework\":\"pt\"}}") + "     ");
  // an empty map is written as an empty map (upstream writes an invalid header here)
  fg_st_kv none[1] = {};
  std::string c = ser({}, none, 0);
  EXPECT_EQ(header_text(c), "{\"__metadata__\":{}}     ");
  for (const std::string *s : {&a, &b, &c}) {
    fg_st_file *f;
    ASSERT_EQ(fg_st_parse(s->data(), s->size(), "x", &f), FG_OK) << fg_last_error();
    EXPECT_EQ(fg_st_count(f), 0u);
    fg_st_close(f);
  }
}

TEST(SafetensorsWrite, UpstreamVectors) {
  int32_t z[4] = {0, 0, 0, 1};
  uint64_t s22[2] = {2, 2};
  std::string b = ser({{"test", FG_I32, 2, s22, z, 16}});
  EXPECT_EQ(b.size(), 88u);
  EXPECT_EQ(header_n(b), 64u);
  EXPECT_EQ(header_text(b), std::string(R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})") + "    ");
  EXPECT_EQ(b.substr(84), std::string("\x01\0\0\0", 4));

  float v[6] = {0, 1, 2, 3, 4, 5};
  uint64_t s123[3] = {1, 2, 3}, s1123[4] = {1, 1, 2, 3};
  std::string c = ser({{"attn.0", FG_F32, 3, s123, v, 24}});
  EXPECT_EQ(header_n(c), 64u);
  EXPECT_EQ(c.size(), 96u);
  EXPECT_EQ(header_n(ser({{"attn0", FG_F32, 4, s1123, v, 24}})), 72u);

  uint8_t f4 = 0x21;
  uint64_t s12[2] = {1, 2};
  std::string d = ser({{"attn.0", FG_F4, 2, s12, &f4, 1}});
  EXPECT_EQ(header_n(d), 64u);
  EXPECT_EQ(d.size(), 73u);

  uint16_t h[4] = {1, 2, 3, 4};
  std::string e = ser({{"test2", FG_F16, 2, s22, h, 8}, {"test1", FG_I32, 2, s22, z, 16}});
  EXPECT_EQ(header_n(e), 128u);
  EXPECT_EQ(header_text(e).substr(0, 122),
            R"({"test1":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]},"test2":{"dtype":"F16","shape":[2,2],"data_offsets":[16,24]}})");
  fg_st_kv kv = {"framework", "pt"};
  EXPECT_EQ(header_n(ser({{"test1", FG_I32, 2, s22, z, 16}}, &kv, 1)), 96u);
}

TEST(SafetensorsWrite, OrderIsDtypeDescendingThenName) {
  std::vector<fg_st_write_tensor> ts;
  fg_dtype all[] = {FG_BOOL, FG_F4, FG_F6_E2M3, FG_F6_E3M2, FG_U8, FG_I8, FG_F8_E5M2, FG_F8_E4M3,
                    FG_F8_E8M0, FG_F8_E4M3FNUZ, FG_F8_E5M2FNUZ, FG_I16, FG_U16, FG_F16, FG_BF16, FG_I32,
                    FG_U32, FG_F32, FG_C64, FG_F64, FG_I64, FG_U64};
  static uint8_t data[64];
  for (int i = 0; i < 64; i++) data[i] = (uint8_t)(i * 37);
  static uint64_t shape4[1] = {4};
  std::vector<std::string> names;
  for (fg_dtype d : all) names.push_back(std::string("t_") + fg_dtype_name(d));
  for (size_t i = 0; i < names.size(); i++) {
    uint64_t nb = 0;
    const fg_dtype_traits *tr = fg_dtype_info(all[i]);
    nb = 4 / tr->block_elems * tr->block_bytes;
    ts.push_back({names[i].c_str(), all[i], 1, shape4, data, nb});
  }
  uint64_t s0[1] = {0};
  ts.push_back({"b_empty", FG_U64, 1, s0, nullptr, 0});
  ts.push_back({"a_u64", FG_U64, 1, shape4, data, 32});
  std::string b = ser(ts);
  std::string h = header_text(b);
  std::vector<std::string> want = {"a_u64", "b_empty", "t_u64", "t_i64", "t_f64", "t_c64", "t_f32", "t_u32",
                                   "t_i32", "t_bf16", "t_f16", "t_u16", "t_i16", "t_f8_e5m2fnuz", "t_f8_e4m3fnuz",
                                   "t_f8_e8m0", "t_f8_e4m3", "t_f8_e5m2", "t_i8", "t_u8", "t_f6_e3m2",
                                   "t_f6_e2m3", "t_f4", "t_bool"};
  size_t at = 0;
  for (const std::string &n : want) {
    size_t p = h.find("\"" + n + "\"");
    ASSERT_NE(p, std::string::npos) << n;
    EXPECT_GT(p, at) << n;
    at = p;
  }
  // every tensor starts aligned to its element size, and the file parses back byte-equal
  fg_st_file *f;
  ASSERT_EQ(fg_st_parse(b.data(), b.size(), "all", &f), FG_OK) << fg_last_error();
  for (const fg_st_write_tensor &t : ts) {
    const fg_st_tensor *r = fg_st_find(f, t.name);
    ASSERT_NE(r, nullptr) << t.name;
    EXPECT_EQ(r->dtype, t.dtype);
    EXPECT_EQ(r->nbytes, t.nbytes);
    if (t.nbytes) { EXPECT_EQ(memcmp(r->data, t.data, t.nbytes), 0) << t.name; }
    const fg_dtype_traits *tr = fg_dtype_info(t.dtype);
    uint64_t esz = tr->block_elems == 1 ? tr->block_bytes : 1;
    EXPECT_EQ((fg_st_data_start(f) + r->begin) % esz, 0u) << t.name;
  }
  fg_st_close(f);
}

TEST(SafetensorsWrite, SerdeEscapes) {
  uint8_t x = 1;
  uint64_t s1[1] = {1};
  std::string name = "a\"b\\c/d\x01\x1f\x7f\b\f\n\r\t\xc3\xa9";
  std::string b = ser({{name.c_str(), FG_U8, 1, s1, &x, 1}});
  EXPECT_NE(header_text(b).find("\"a\\\"b\\\\c/d\\u0001\\u001f\x7f\\b\\f\\n\\r\\t\xc3\xa9\""), std::string::npos)
      << header_text(b);
  fg_st_file *f;
  ASSERT_EQ(fg_st_parse(b.data(), b.size(), "esc", &f), FG_OK) << fg_last_error();
  EXPECT_NE(fg_st_find(f, name.c_str()), nullptr);
  fg_st_close(f);
}

TEST(SafetensorsWrite, RefusesBadInput) {
  uint8_t d[8] = {};
  uint64_t s13[2] = {1, 3}, s12[2] = {1, 2}, s2[1] = {2};
  ser({{"__metadata__", FG_U8, 1, s2, d, 2}}, nullptr, 0, FG_ERR_INVALID_ARG);
  ser({{"", FG_U8, 1, s2, d, 2}}, nullptr, 0, FG_ERR_INVALID_ARG);
  ser({{"\xff", FG_U8, 1, s2, d, 2}}, nullptr, 0, FG_ERR_INVALID_ARG);
  ser({{"a", FG_U8, 1, s2, d, 2}, {"a", FG_F16, 1, s2, d, 4}}, nullptr, 0, FG_ERR_DUPLICATE);
  ser({{"a", FG_U8, 1, s2, d, 3}}, nullptr, 0, FG_ERR_TENSOR_INVALID_INFO);
  ser({{"a", FG_F4, 2, s13, d, 2}}, nullptr, 0, FG_ERR_MISALIGNED_SLICE);
  ser({{"a", FG_F4, 2, s12, d, 2}}, nullptr, 0, FG_ERR_TENSOR_INVALID_INFO);
  ser({{"a", FG_Q4_0, 1, s2, d, 2}}, nullptr, 0, FG_ERR_BAD_DTYPE);
  fg_st_kv dup[2] = {{"k", "a"}, {"k", "b"}};
  ser({}, dup, 2, FG_ERR_DUPLICATE);
  std::string big(100000000, 'a');
  fg_st_kv kv = {"k", big.c_str()};
  ser({}, &kv, 1, FG_ERR_HEADER_TOO_LARGE);
}

TEST(SafetensorsSave, AtomicOverLiveMapping) {
  fgt::TempDir dir;
  std::string p = dir.file("m.safetensors");
  uint8_t a[4] = {1, 2, 3, 4}, b[4] = {9, 9, 9, 9};
  uint64_t s4[1] = {4};
  fg_st_write_tensor t = {"w", FG_U8, 1, s4, a, 4};
  ASSERT_EQ(fg_st_save(p.c_str(), &t, 1, nullptr, 0), FG_OK) << fg_last_error();
  fg_st_file *f;
  ASSERT_EQ(fg_st_open(p.c_str(), FG_MAP_MMAP, &f), FG_OK);
  t.data = b;
  ASSERT_EQ(fg_st_save(p.c_str(), &t, 1, nullptr, 0), FG_OK) << fg_last_error();
  EXPECT_EQ(memcmp(fg_st_find(f, "w")->data, a, 4), 0);  // the old mapping is intact
  fg_st_close(f);
  ASSERT_EQ(fg_st_open(p.c_str(), FG_MAP_READ, &f), FG_OK);
  EXPECT_EQ(memcmp(fg_st_find(f, "w")->data, b, 4), 0);
  fg_st_close(f);
  // a refused save leaves the file and no temporary behind
  t.nbytes = 3;
  EXPECT_EQ(fg_st_save(p.c_str(), &t, 1, nullptr, 0), FG_ERR_TENSOR_INVALID_INFO);
  EXPECT_EQ(fg_st_save(dir.file("missing/x.safetensors").c_str(), &t, 1, nullptr, 0), FG_ERR_TENSOR_INVALID_INFO);
  t.nbytes = 4;
  EXPECT_EQ(fg_st_save(dir.file("missing/x.safetensors").c_str(), &t, 1, nullptr, 0), FG_ERR_IO);
  DIR *dp = opendir(dir.path.c_str());
  int n = 0;
  while (struct dirent *de = readdir(dp)) n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
  closedir(dp);
  EXPECT_EQ(n, 1);
}

TEST(SafetensorsSlice, UpstreamSlicing) {
  float v[6] = {0, 1, 2, 3, 4, 5};
  uint64_t s123[3] = {1, 2, 3};
  std::string b = ser({{"attn.0", FG_F32, 3, s123, v, 24}});
  fg_st_file *f;
  ASSERT_EQ(fg_st_parse(b.data(), b.size(), "s", &f), FG_OK);
  const fg_st_tensor *t = fg_st_find(f, "attn.0");
  float out[6];
  uint64_t shape[3], nb;
  fg_st_range r1[2] = {{0, 1}, {0, 1}};
  ASSERT_EQ(fg_st_slice_shape(t, r1, 2, shape, &nb), FG_OK);
  EXPECT_EQ(shape[0], 1u);
  EXPECT_EQ(shape[1], 1u);
  EXPECT_EQ(shape[2], 3u);
  EXPECT_EQ(nb, 12u);
  ASSERT_EQ(fg_st_slice_copy(t, r1, 2, out, sizeof out), FG_OK);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[2], 2);
  fg_st_range r2[3] = {{0, 1}, {0, 2}, {0, 1}};
  ASSERT_EQ(fg_st_slice_copy(t, r2, 3, out, sizeof out), FG_OK);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 3);
  fg_st_range r3[3] = {{0, 1}, {1, 2}, {1, 3}};
  ASSERT_EQ(fg_st_slice_copy(t, r3, 3, out, sizeof out), FG_OK);
  EXPECT_EQ(out[0], 4);
  EXPECT_EQ(out[1], 5);
  ASSERT_EQ(fg_st_slice_copy(t, nullptr, 0, out, sizeof out), FG_OK);
  EXPECT_EQ(out[5], 5);
  fg_st_range bad[1] = {{0, 2}};
  EXPECT_EQ(fg_st_slice_copy(t, bad, 1, out, sizeof out), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("dimension #0 of size 1"), std::string::npos);
  fg_st_range four[4] = {};
  EXPECT_EQ(fg_st_slice_copy(t, four, 4, out, sizeof out), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_st_slice_copy(t, r1, 2, out, 8), FG_ERR_RANGE);
  fg_st_close(f);
}

TEST(SafetensorsSlice, SubByteNeedsByteBoundaries) {
  uint8_t d[4] = {0x10, 0x32, 0x54, 0x76};  // F4 [2,4]: rows of 2 bytes
  uint64_t s[2] = {2, 4};
  std::string b = ser({{"q", FG_F4, 2, s, d, 4}});
  fg_st_file *f;
  ASSERT_EQ(fg_st_parse(b.data(), b.size(), "f4", &f), FG_OK);
  const fg_st_tensor *t = fg_st_find(f, "q");
  uint8_t out[4] = {};
  fg_st_range row[1] = {{1, 2}};
  ASSERT_EQ(fg_st_slice_copy(t, row, 1, out, 4), FG_OK);
  EXPECT_EQ(out[0], 0x54);
  EXPECT_EQ(out[1], 0x76);
  fg_st_range cols[2] = {{0, 2}, {2, 4}};
  ASSERT_EQ(fg_st_slice_copy(t, cols, 2, out, 4), FG_OK);
  EXPECT_EQ(out[0], 0x32);
  EXPECT_EQ(out[1], 0x76);
  fg_st_range odd[2] = {{0, 2}, {1, 2}};
  EXPECT_EQ(fg_st_slice_copy(t, odd, 2, out, 4), FG_ERR_MISALIGNED_SLICE);
  fg_st_close(f);
}

std::vector<fg_st_write_tensor> shard_set(std::vector<std::vector<uint8_t>> &bufs, std::vector<uint64_t> &shapes) {
  const char *names[] = {"embed", "layers.0.w", "layers.0.b", "layers.1.w", "big", "head"};
  uint64_t sizes[] = {40, 30, 10, 30, 120, 20};
  bufs.clear();
  shapes.assign(6, 0);
  std::vector<fg_st_write_tensor> ts;
  for (int i = 0; i < 6; i++) {
    bufs.emplace_back(sizes[i]);
    for (size_t k = 0; k < sizes[i]; k++) bufs[i][k] = (uint8_t)(i * 31 + k);
    shapes[i] = sizes[i];
  }
  for (int i = 0; i < 6; i++) ts.push_back({names[i], FG_U8, 1, &shapes[i], bufs[i].data(), sizes[i]});
  return ts;
}

TEST(SafetensorsDir, ShardedRoundTrip) {
  fgt::TempDir dir;
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<uint64_t> shapes;
  auto ts = shard_set(bufs, shapes);
  fg_st_kv kv = {"format", "pt"};
  size_t ns = 0;
  std::string out = dir.file("ckpt");
  // greedy with max 80: [embed 40, layers.0.w 30, layers.0.b 10] [layers.1.w 30] [big 120] [head 20]
  ASSERT_EQ(fg_st_save_sharded(out.c_str(), ts.data(), ts.size(), &kv, 1, 80, &ns), FG_OK) << fg_last_error();
  ASSERT_EQ(ns, 4u);
  auto idx = fgt::read_file(out + "/model.safetensors.index.json");
  std::string want =
      "{\n  \"metadata\": {\n    \"total_size\": 250\n  },\n  \"weight_map\": {\n"
      "    \"big\": \"model-00003-of-00004.safetensors\",\n"
      "    \"embed\": \"model-00001-of-00004.safetensors\",\n"
      "    \"head\": \"model-00004-of-00004.safetensors\",\n"
      "    \"layers.0.b\": \"model-00001-of-00004.safetensors\",\n"
      "    \"layers.0.w\": \"model-00001-of-00004.safetensors\",\n"
      "    \"layers.1.w\": \"model-00002-of-00004.safetensors\"\n  }\n}\n";
  EXPECT_EQ(std::string(idx.begin(), idx.end()), want);
  const char *cfg = "{\"hidden_size\": 64, \"model_type\": \"llama\", \"rms_norm_eps\": 1e-5}";
  fgt::write_file(out + "/config.json", cfg, strlen(cfg));

  for (std::string p : {out, out + "/model.safetensors.index.json"}) {
    fg_st_dir *d;
    ASSERT_EQ(fg_st_dir_open(p.c_str(), FG_MAP_MMAP, &d), FG_OK) << fg_last_error();
    EXPECT_TRUE(fg_st_dir_is_sharded(d));
    EXPECT_EQ(fg_st_dir_shard_count(d), 4u);
    EXPECT_STREQ(fg_st_dir_shard_name(d, 2), "model-00003-of-00004.safetensors");
    EXPECT_EQ(fg_st_dir_count(d), 6u);
    EXPECT_EQ(fg_st_dir_total_size(d), 250u);
    for (size_t i = 0; i < ts.size(); i++) {
      size_t shard = 99;
      const fg_st_tensor *t = fg_st_dir_find(d, ts[i].name, &shard);
      ASSERT_NE(t, nullptr) << ts[i].name;
      EXPECT_EQ(memcmp(t->data, ts[i].data, ts[i].nbytes), 0);
    }
    size_t shard;
    fg_st_dir_find(d, "head", &shard);
    EXPECT_EQ(shard, 3u);
    EXPECT_STREQ(fg_st_metadata_find(fg_st_dir_shard(d, 1), "format"), "pt");
    int64_t hs = 0;
    EXPECT_EQ(fg_st_dir_config_int(d, "hidden_size", &hs), FG_OK);
    EXPECT_EQ(hs, 64);
    const char *mt;
    EXPECT_EQ(fg_st_dir_config_string(d, "model_type", &mt), FG_OK);
    EXPECT_STREQ(mt, "llama");
    double eps;
    EXPECT_EQ(fg_st_dir_config_float(d, "rms_norm_eps", &eps), FG_OK);
    EXPECT_EQ(eps, 1e-5);
    EXPECT_EQ(fg_st_dir_config_int(d, "rms_norm_eps", &hs), FG_ERR_TYPE);
    EXPECT_EQ(fg_st_dir_config_int(d, "nope", &hs), FG_ERR_NOT_FOUND);
    size_t len = 0;
    const char *text = fg_st_dir_config_text(d, &len);
    ASSERT_NE(text, nullptr);
    EXPECT_EQ(std::string(text, len), cfg);
    EXPECT_EQ(strlen(text), len);
    text = fg_st_dir_index_text(d, &len);
    ASSERT_NE(text, nullptr);
    EXPECT_EQ(std::string(text, len), want);
    fg_st_dir_close(d);
  }
  fg_st_dir_close(nullptr);
}

TEST(SafetensorsDir, OneShardIsModelSafetensors) {
  fgt::TempDir dir;
  std::vector<std::vector<uint8_t>> bufs;
  std::vector<uint64_t> shapes;
  auto ts = shard_set(bufs, shapes);
  size_t ns = 0;
  ASSERT_EQ(fg_st_save_sharded(dir.path.c_str(), ts.data(), ts.size(), nullptr, 0, 0, &ns), FG_OK);
  EXPECT_EQ(ns, 1u);
  struct stat st;
  EXPECT_NE(stat(dir.file("model.safetensors.index.json").c_str(), &st), 0);
  fg_st_dir *d;
  ASSERT_EQ(fg_st_dir_open(dir.path.c_str(), FG_MAP_READ, &d), FG_OK) << fg_last_error();
  EXPECT_FALSE(fg_st_dir_is_sharded(d));
  EXPECT_EQ(fg_st_dir_count(d), 6u);
  EXPECT_EQ(fg_st_dir_total_size(d), 250u);
  size_t len = 1;
  EXPECT_EQ(fg_st_dir_config_text(d, &len), nullptr);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(fg_st_dir_index_text(d, nullptr), nullptr);
  fg_st_dir_close(d);
}

TEST(SafetensorsDir, BadIndexes) {
  fgt::TempDir dir;
  uint8_t x[2] = {1, 2};
  uint64_t s1[1] = {1};
  fg_st_write_tensor t[2] = {{"a", FG_U8, 1, s1, x, 1}, {"b", FG_U8, 1, s1, x + 1, 1}};
  ASSERT_EQ(fg_st_save(dir.file("s1.safetensors").c_str(), t, 1, nullptr, 0), FG_OK);
  ASSERT_EQ(fg_st_save(dir.file("s2.safetensors").c_str(), t + 1, 1, nullptr, 0), FG_OK);
  struct C {
    const char *json;
    fg_status want;
  } cases[] = {
      {R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})", FG_OK},
      {"not json", FG_ERR_INVALID_JSON},
      {R"({"metadata":{}})", FG_ERR_INVALID_JSON},
      {R"({"weight_map":{"a":"../evil.safetensors"}})", FG_ERR_INVALID_JSON},
      {R"({"weight_map":{"a":"sub/x.safetensors"}})", FG_ERR_INVALID_JSON},
      {R"({"weight_map":{"a":1}})", FG_ERR_INVALID_JSON},
      {R"({"weight_map":{"a":"s1.safetensors","b":"gone.safetensors"}})", FG_ERR_NOT_FOUND},
      {R"({"weight_map":{"a":"s2.safetensors","b":"s2.safetensors"}})", FG_ERR_NOT_FOUND},
      {R"({"weight_map":{"a":"s1.safetensors"}})", FG_OK},
      {R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors","c":"s2.safetensors"}})", FG_ERR_NOT_FOUND},
      {R"({"weight_map":{"a":"s1.safetensors","a":"s1.safetensors"}})", FG_ERR_DUPLICATE},
      {R"({"weight_map":{},"weight_map":{}})", FG_ERR_DUPLICATE},
      {R"({"metadata":{"total_size":2},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})", FG_OK},
      {R"({"metadata":{"total_size":-2},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})", FG_ERR_INVALID_JSON},
  };
  std::string p = dir.file("x.safetensors.index.json");
  for (const C &c : cases) {
    fgt::write_file(p, c.json, strlen(c.json));
    fg_st_dir *d = nullptr;
    fg_status s = fg_st_dir_open(p.c_str(), FG_MAP_MMAP, &d);
    EXPECT_EQ(fg_status_name(s), std::string(fg_status_name(c.want))) << c.json << ": " << fg_last_error();
    fg_st_dir_close(d);
  }
  // the case with a shard tensor missing from the map: only s1 named, s1 holds only a -> OK above;
  // a folder with two loose files and no index is ambiguous
  unlink(p.c_str());
  fg_st_dir *d = nullptr;
  EXPECT_EQ(fg_st_dir_open(dir.path.c_str(), FG_MAP_MMAP, &d), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_st_dir_open(dir.file("nothing").c_str(), FG_MAP_MMAP, &d), FG_ERR_NOT_FOUND);
}

}  // namespace
