// safetensors reader: the malformed-input corpus (one case per upstream validation class
// and the observed edge cases, each expecting its own status), positive parses, lookups,
// metadata, stream frames. FORGIA_DUMP_CORPUS=DIR writes the corpus out as fuzz seeds.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "forgia/safetensors.h"
#include "testutil.h"

namespace {

std::string u64le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; i++) s[i] = (char)(uint8_t)(n >> (8 * i));
  return s;
}
std::string frame(const std::string &hdr, const std::string &data = "") { return u64le(hdr.size()) + hdr + data; }
std::string zeros(size_t n) { return std::string(n, '\0'); }

struct Case {
  const char *name;
  std::string bytes;
  fg_status want;
};

std::vector<Case> corpus() {
  const std::string i32 = R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";
  std::string attack = "{";
  for (int i = 0; i < 10; i++)
    attack += std::string(i ? "," : "") + "\"t" + std::to_string(i) + R"(":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]})";
  attack += "}";
  auto T = [](const char *name, const char *dtype, const char *shape, const char *off) {
    return std::string("\"") + name + "\":{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + off + "}";
  };
  auto one = [&](const char *dtype, const char *shape, const char *off) { return "{" + T("w", dtype, shape, off) + "}"; };
  return {
      // A4 steps 1-3: sizes
      {"empty", "", FG_ERR_HEADER_TOO_SMALL},
      {"seven_bytes", std::string(7, '\x01'), FG_ERR_HEADER_TOO_SMALL},
      {"n60_no_body", u64le(60), FG_ERR_INVALID_HEADER_LENGTH},
      {"n_limit_short", u64le(100000000) + "{}", FG_ERR_INVALID_HEADER_LENGTH},
      {"n_over_limit", u64le(100000001) + "{}", FG_ERR_HEADER_TOO_LARGE},
      {"n_u64_max", u64le(UINT64_MAX), FG_ERR_HEADER_TOO_LARGE},
      {"n_upstream_large", std::string("\x3c\x00\x00\x00\x00\xff\xff\xff", 8) + i32 + zeros(16), FG_ERR_HEADER_TOO_LARGE},
      // step 4: UTF-8
      {"not_utf8", frame("\xff"), FG_ERR_HEADER_NOT_UTF8},
      {"overlong_utf8", frame("{\"\xc0\x80\":1}"), FG_ERR_HEADER_NOT_UTF8},
      {"surrogate_utf8", frame("{\"\xed\xa0\x80\":1}"), FG_ERR_HEADER_NOT_UTF8},
      {"truncated_utf8", frame("{}\xe2\x82"), FG_ERR_HEADER_NOT_UTF8},
      // step 5: JSON syntax and shape of the top level
      {"open_brace", frame("{"), FG_ERR_INVALID_JSON},
      {"n_zero", frame(""), FG_ERR_INVALID_JSON},
      {"array_top", frame("[]"), FG_ERR_INVALID_JSON},
      {"string_top", frame("\"x\""), FG_ERR_INVALID_JSON},
      {"null_top", frame("null"), FG_ERR_INVALID_JSON},
      {"two_objects", frame("{} {}"), FG_ERR_INVALID_JSON},
      {"trailing_x", frame("{}x"), FG_ERR_INVALID_JSON},
      {"nul_padding", frame(std::string("{}\0\0\0\0\0\0", 8)), FG_ERR_INVALID_JSON},
      {"bom", frame("\xef\xbb\xbf{}"), FG_ERR_INVALID_JSON},
      {"form_feed", frame("{}\x0c"), FG_ERR_INVALID_JSON},
      {"comment", frame("{/*c*/}"), FG_ERR_INVALID_JSON},
      {"trailing_comma", frame(R"({"__metadata__":{"a":"b"},})"), FG_ERR_INVALID_JSON},
      {"single_quotes", frame("{'a':'b'}"), FG_ERR_INVALID_JSON},
      {"lone_low_surrogate", frame(R"({"\udc00":{}})"), FG_ERR_INVALID_JSON},
      {"lone_high_surrogate", frame(R"({"\ud800x":{}})"), FG_ERR_INVALID_JSON},
      {"raw_control_in_name", frame("{\"a\x01\":{}}"), FG_ERR_INVALID_JSON},
      {"bad_escape", frame(R"({"a\q":{}})"), FG_ERR_INVALID_JSON},
      {"plus_number", frame(one("\"F32\"", "[+1]", "[0,4]")), FG_ERR_INVALID_JSON},
      {"leading_zero", frame(one("\"F32\"", "[01]", "[0,4]")), FG_ERR_INVALID_JSON},
      {"tensor_not_object", frame(R"({"w":[1]})"), FG_ERR_INVALID_JSON},
      {"missing_shape", frame(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})"), FG_ERR_INVALID_JSON},
      {"missing_offsets", frame(R"({"w":{"dtype":"F32","shape":[1]}})"), FG_ERR_INVALID_JSON},
      {"missing_dtype", frame(R"({"w":{"shape":[1],"data_offsets":[0,4]}})"), FG_ERR_INVALID_JSON},
      {"dtype_null", frame(one("null", "[1]", "[0,4]")), FG_ERR_INVALID_JSON},
      {"offsets_arity1", frame(one("\"F32\"", "[1]", "[4]")), FG_ERR_INVALID_JSON},
      {"offsets_arity3", frame(one("\"F32\"", "[1]", "[0,4,4]")), FG_ERR_INVALID_JSON},
      {"offsets_negative", frame(one("\"F32\"", "[1]", "[-1,4]")), FG_ERR_INVALID_JSON},
      {"offsets_float", frame(one("\"F32\"", "[1]", "[0,4.0]")), FG_ERR_INVALID_JSON},
      {"offsets_string", frame(one("\"F32\"", "[1]", "[\"0\",4]")), FG_ERR_INVALID_JSON},
      {"offsets_object", frame(one("\"F32\"", "[1]", "{\"a\":0}")), FG_ERR_INVALID_JSON},
      // duplicates (upstream keeps the last; forgia refuses)
      {"dup_dtype_field", frame(R"({"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})") + zeros(4),
       FG_ERR_DUPLICATE},
      {"dup_metadata", frame(R"({"__metadata__":{},"__metadata__":{}})"), FG_ERR_DUPLICATE},
      {"dup_tensor", frame("{" + T("a", "\"F32\"", "[1]", "[0,4]") + "," + T("a", "\"F32\"", "[1]", "[4,8]") + "}") + zeros(8),
       FG_ERR_DUPLICATE},
      {"dup_tensor_identical", frame("{" + T("a", "\"F32\"", "[1]", "[0,4]") + "," + T("a", "\"F32\"", "[1]", "[0,4]") + "}") + zeros(4),
       FG_ERR_DUPLICATE},
      {"dup_metadata_key", frame(R"({"__metadata__":{"k":"a","k":"b"}})"), FG_ERR_DUPLICATE},
      // dtype
      {"dtype_f128", frame(one("\"F128\"", "[1]", "[0,16]")), FG_ERR_BAD_DTYPE},
      {"dtype_lower", frame(one("\"i32\"", "[1]", "[0,4]")), FG_ERR_BAD_DTYPE},
      {"dtype_fn_suffix", frame(one("\"F8_E4M3FN\"", "[1]", "[0,1]")), FG_ERR_BAD_DTYPE},
      // shape
      {"shape_float", frame(one("\"F32\"", "[2.0]", "[0,8]")), FG_ERR_BAD_SHAPE},
      {"shape_exp", frame(one("\"F32\"", "[2e0]", "[0,8]")), FG_ERR_BAD_SHAPE},
      {"shape_exp2", frame(one("\"F32\"", "[1.6e1]", "[0,64]")), FG_ERR_BAD_SHAPE},
      {"shape_neg_zero", frame(one("\"F32\"", "[-0]", "[0,0]")), FG_ERR_BAD_SHAPE},
      {"shape_negative", frame(one("\"F32\"", "[-1]", "[0,0]")), FG_ERR_BAD_SHAPE},
      {"shape_above_u64", frame(one("\"F32\"", "[18446744073709551616]", "[0,0]")), FG_ERR_BAD_SHAPE},
      {"shape_null", frame(one("\"F32\"", "[null]", "[0,0]")), FG_ERR_BAD_SHAPE},
      {"shape_string", frame(one("\"F32\"", "\"2\"", "[0,8]")), FG_ERR_BAD_SHAPE},
      // metadata
      {"metadata_int", frame(R"({"__metadata__":1})"), FG_ERR_METADATA_NOT_STRING},
      {"metadata_string", frame(R"({"__metadata__":"x"})"), FG_ERR_METADATA_NOT_STRING},
      {"metadata_value_int", frame(R"({"__metadata__":{"framework":1}})"), FG_ERR_METADATA_NOT_STRING},
      {"metadata_value_null", frame(R"({"__metadata__":{"a":null}})"), FG_ERR_METADATA_NOT_STRING},
      {"metadata_value_map", frame(R"({"__metadata__":{"a":{}}})"), FG_ERR_METADATA_NOT_STRING},
      // step 6: offsets
      {"json_attack", frame(attack) + zeros(16), FG_ERR_INVALID_OFFSET},
      {"gap", frame("{" + T("a", "\"F32\"", "[4]", "[0,16]") + "," + T("b", "\"F32\"", "[4]", "[20,36]") + "}") + zeros(36),
       FG_ERR_INVALID_OFFSET},
      {"overlap", frame("{" + T("a", "\"F32\"", "[4]", "[0,16]") + "," + T("b", "\"F32\"", "[4]", "[8,24]") + "}") + zeros(24),
       FG_ERR_INVALID_OFFSET},
      {"first_not_zero", frame(one("\"F32\"", "[4]", "[4,20]")) + zeros(20), FG_ERR_INVALID_OFFSET},
      {"end_before_begin", frame("{" + T("a", "\"F32\"", "[4]", "[0,16]") + "," + T("b", "\"F32\"", "[4]", "[16,8]") + "}") + zeros(16),
       FG_ERR_INVALID_OFFSET},
      // element count and bit count overflow (left-to-right product)
      {"overflow_elems", frame(R"({"test":{"dtype":"I32","shape":[2,18446744073709551614],"data_offsets":[0,16]}})") + zeros(16),
       FG_ERR_OVERFLOW},
      {"overflow_bits", frame(R"({"test":{"dtype":"I32","shape":[2,9223372036854775807],"data_offsets":[0,16]}})") + zeros(16),
       FG_ERR_OVERFLOW},
      {"overflow_order", frame(one("\"F32\"", "[2,18446744073709551615,0]", "[0,0]")), FG_ERR_OVERFLOW},
      // sub-byte
      {"f4_odd", frame(one("\"F4\"", "[3]", "[0,2]")) + zeros(2), FG_ERR_MISALIGNED_SLICE},
      {"f4_scalar", frame(one("\"F4\"", "[]", "[0,1]")) + zeros(1), FG_ERR_MISALIGNED_SLICE},
      {"f6_two", frame(one("\"F6_E3M2\"", "[2]", "[0,2]")) + zeros(2), FG_ERR_MISALIGNED_SLICE},
      {"f4_1x3", frame(one("\"F4\"", "[1,3]", "[0,2]")) + zeros(2), FG_ERR_MISALIGNED_SLICE},
      // byte length
      {"invalid_info_no_data", frame(R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0, 4]}})"),
       FG_ERR_TENSOR_INVALID_INFO},
      {"invalid_info_short", frame(one("\"I32\"", "[2,2]", "[0,12]")) + zeros(12), FG_ERR_TENSOR_INVALID_INFO},
      {"invalid_info_long", frame(one("\"I32\"", "[2,2]", "[0,20]")) + zeros(20), FG_ERR_TENSOR_INVALID_INFO},
      {"invalid_info_zero_size", frame(one("\"I32\"", "[2,0]", "[0,4]")) + zeros(4), FG_ERR_TENSOR_INVALID_INFO},
      {"invalid_info_huge_end", frame(one("\"I32\"", "[2,2]", "[0,18446744073709551615]")), FG_ERR_TENSOR_INVALID_INFO},
      {"f4_two_bytes", frame(one("\"F4\"", "[1,2]", "[0,2]")) + zeros(2), FG_ERR_TENSOR_INVALID_INFO},
      // step 7: coverage
      {"polyglot", frame(i32) + zeros(16) + "extra_bogus_data_for_polyglot_file", FG_ERR_INCOMPLETE_BUFFER},
      {"short_data", frame(i32) + zeros(14), FG_ERR_INCOMPLETE_BUFFER},
      {"one_trailing", frame(i32) + zeros(17), FG_ERR_INCOMPLETE_BUFFER},
      {"pread_truncated", frame(one("\"F32\"", "[1024,1024]", "[0,4194304]")) + zeros(1), FG_ERR_INCOMPLETE_BUFFER},
      // accepted
      {"deserialization", frame(i32) + zeros(16), FG_OK},
      {"spaces", frame("{}      "), FG_OK},
      {"ws_trailing", frame("{}\r \t\n"), FG_OK},
      {"ws_leading", frame("\t\n{}\r "), FG_OK},
      {"zero_sized", frame(R"({"test":{"dtype":"I32","shape":[2,0],"data_offsets":[0, 0]}})"), FG_OK},
      {"empty_shape", frame(R"({"test":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})") + zeros(4), FG_OK},
      {"extra_field", frame(R"({"w":{"dtype":"F32","foo":1,"shape":[1],"data_offsets":[0,4],"bar":[{"x":1.5e300}]}})") + zeros(4),
       FG_OK},
      {"metadata_null", frame(R"({"__metadata__":null})"), FG_OK},
      {"metadata_last", frame(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"__metadata__":{"a":"b"}})") + zeros(1),
       FG_OK},
      {"overflow_order_ok", frame(one("\"F32\"", "[0,18446744073709551615,2]", "[0,0]")), FG_OK},
      {"overflow_order_ok2", frame(one("\"F32\"", "[18446744073709551615,0]", "[0,0]")), FG_OK},
      {"f4_pair", frame(one("\"F4\"", "[1,2]", "[0,1]")) + zeros(1), FG_OK},
      {"f6_four", frame(one("\"F6_E2M3\"", "[4]", "[0,3]")) + zeros(3), FG_OK},
      {"reverse_order", frame("{" + T("b", "\"F32\"", "[1]", "[4,8]") + "," + T("a", "\"F32\"", "[1]", "[0,4]") + "}") + zeros(8),
       FG_OK},
      {"zero_sized_between", frame("{" + T("a", "\"F32\"", "[1]", "[0,4]") + "," + T("z", "\"F32\"", "[0]", "[4,4]") + "," +
                                   T("y", "\"BOOL\"", "[3,0]", "[4,4]") + "," + T("b", "\"F32\"", "[1]", "[4,8]") + "}") + zeros(8),
       FG_OK},
      {"escaped_names", frame(R"({"\u0000":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"\ud83d\ude00":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})") + zeros(2),
       FG_OK},
  };
}

TEST(SafetensorsCorpus, EveryCaseGivesItsStatus) {
  const char *dump = getenv("FORGIA_DUMP_CORPUS");
  for (const Case &c : corpus()) {
    if (dump) fgt::write_file(std::string(dump) + "/" + c.name + ".safetensors", c.bytes.data(), c.bytes.size());
    fg_st_file *f = nullptr;
    fg_status s = fg_st_parse(c.bytes.data(), c.bytes.size(), c.name, &f);
    EXPECT_EQ(fg_status_name(s), std::string(fg_status_name(c.want))) << c.name << ": " << fg_last_error();
    if (s == FG_OK) {
      ASSERT_NE(f, nullptr);
    } else {
      EXPECT_EQ(f, nullptr) << c.name;
      // the message names the source
      EXPECT_NE(std::string(fg_last_error()).find(c.name), std::string::npos) << c.name << ": " << fg_last_error();
    }
    fg_st_close(f);
  }
}

TEST(SafetensorsCorpus, FilesAndStreamsAgreeWithBytes) {
  fgt::TempDir dir;
  for (const Case &c : corpus()) {
    std::string p = dir.file(std::string(c.name) + ".safetensors");
    fgt::write_file(p, c.bytes.data(), c.bytes.size());
    for (fg_map_mode mode : {FG_MAP_MMAP, FG_MAP_READ}) {
      fg_st_file *f = nullptr;
      EXPECT_EQ(fg_st_open(p.c_str(), mode, &f), c.want) << c.name << ": " << fg_last_error();
      fg_st_close(f);
    }
    // a stream cannot see trailing bytes: they belong to whatever follows
    if (c.want == FG_OK || c.want == FG_ERR_INCOMPLETE_BUFFER) continue;
    FILE *fp = fopen(p.c_str(), "rb");
    fg_st_file *f = nullptr;
    EXPECT_EQ(fg_st_read_frame(fp, c.name, &f), c.want) << c.name << ": " << fg_last_error();
    fclose(fp);
    fg_st_close(f);
  }
}

TEST(SafetensorsParse, UpstreamDeserializationVector) {
  std::string b = frame(R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})") + zeros(16);
  b[b.size() - 4] = 1;
  fg_st_file *f;
  ASSERT_EQ(fg_st_parse(b.data(), b.size(), nullptr, &f), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_st_header_size(f), 60u);
  EXPECT_EQ(fg_st_data_start(f), 68u);
  EXPECT_EQ(fg_st_data_size(f), 16u);
  ASSERT_EQ(fg_st_count(f), 1u);
  const fg_st_tensor *t = fg_st_find(f, "test");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, FG_I32);
  ASSERT_EQ(t->ndim, 2);
  EXPECT_EQ(t->shape[0], 2u);
  EXPECT_EQ(t->shape[1], 2u);
  EXPECT_EQ(t->begin, 0u);
  EXPECT_EQ(t->end, 16u);
  EXPECT_EQ(t->nbytes, 16u);
  EXPECT_EQ(t->data, (const uint8_t *)b.data() + 68);
  EXPECT_EQ(t->data[12], 1);
  EXPECT_FALSE(fg_st_has_metadata(f));
  const fg_st_tensor *g = nullptr;
  EXPECT_EQ(fg_st_get(f, "nope", &g), FG_ERR_NOT_FOUND);
  EXPECT_NE(std::string(fg_last_error()).find("nope"), std::string::npos);
  fg_st_close(f);
}

TEST(SafetensorsParse, MetadataInFileOrderAndNamesWithNul) {
  std::string b = frame(R"({"z":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"__metadata__":{"b":"2","a":"1","\u00e9":"\n"},"a\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})") +
                  std::string("\x07\x09", 2);
  fg_st_file *f;
  ASSERT_EQ(fg_st_parse(b.data(), b.size(), "m", &f), FG_OK) << fg_last_error();
  ASSERT_TRUE(fg_st_has_metadata(f));
  ASSERT_EQ(fg_st_metadata_count(f), 3u);
  const char *k, *v;
  ASSERT_TRUE(fg_st_metadata_at(f, 0, &k, &v));
  EXPECT_STREQ(k, "b");
  ASSERT_TRUE(fg_st_metadata_at(f, 2, &k, &v));
  EXPECT_STREQ(k, "\xc3\xa9");
  EXPECT_STREQ(v, "\n");
  EXPECT_STREQ(fg_st_metadata_find(f, "a"), "1");
  EXPECT_EQ(fg_st_metadata_find(f, "c"), nullptr);
  // header order vs offset order
  EXPECT_STREQ(fg_st_tensor_at(f, 0)->name, "z");
  const fg_st_tensor *t = fg_st_tensor_by_offset(f, 0);
  ASSERT_EQ(t->name_len, 3u);
  EXPECT_EQ(std::string(t->name, 3), std::string("a\0b", 3));
  EXPECT_EQ(fg_st_find_n(f, "a\0b", 3), t);
  EXPECT_EQ(fg_st_find(f, "a"), nullptr);
  EXPECT_EQ(t->data[0], 7);
  EXPECT_EQ(fg_st_find(f, "z")->data[0], 9);
  fg_st_close(f);
}

TEST(SafetensorsParse, EveryDtypeTag) {
  struct D {
    const char *tag;
    fg_dtype d;
    const char *shape;
    uint64_t bytes;
  } ds[] = {{"BOOL", FG_BOOL, "[3]", 3},       {"F4", FG_F4, "[2,2]", 2},
            {"F6_E2M3", FG_F6_E2M3, "[8]", 6},  {"F6_E3M2", FG_F6_E3M2, "[4]", 3},
            {"U8", FG_U8, "[2]", 2},            {"I8", FG_I8, "[2]", 2},
            {"F8_E5M2", FG_F8_E5M2, "[2]", 2},  {"F8_E4M3", FG_F8_E4M3, "[2]", 2},
            {"F8_E8M0", FG_F8_E8M0, "[2]", 2},  {"F8_E4M3FNUZ", FG_F8_E4M3FNUZ, "[2]", 2},
            {"F8_E5M2FNUZ", FG_F8_E5M2FNUZ, "[2]", 2}, {"I16", FG_I16, "[2]", 4},
            {"U16", FG_U16, "[2]", 4},          {"F16", FG_F16, "[2]", 4},
            {"BF16", FG_BF16, "[2]", 4},        {"I32", FG_I32, "[2]", 8},
            {"U32", FG_U32, "[2]", 8},          {"F32", FG_F32, "[2]", 8},
            {"C64", FG_C64, "[2]", 16},         {"F64", FG_F64, "[2]", 16},
            {"I64", FG_I64, "[2]", 16},         {"U64", FG_U64, "[2]", 16}};
  for (const D &d : ds) {
    std::string h = std::string(R"({"x":{"dtype":")") + d.tag + "\",\"shape\":" + d.shape + ",\"data_offsets\":[0," +
                    std::to_string(d.bytes) + "]}}";
    std::string b = frame(h) + std::string(d.bytes, '\x5a');
    fg_st_file *f;
    ASSERT_EQ(fg_st_parse(b.data(), b.size(), d.tag, &f), FG_OK) << d.tag << ": " << fg_last_error();
    EXPECT_EQ(fg_st_tensor_at(f, 0)->dtype, d.d) << d.tag;
    EXPECT_EQ(fg_st_tensor_at(f, 0)->nbytes, d.bytes) << d.tag;
    fg_st_close(f);
  }
}

TEST(SafetensorsParse, MappingOutlivesFile) {
  fgt::TempDir dir;
  std::string b = frame(R"({"w":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})") + "abc";
  std::string p = dir.file("m.safetensors");
  fgt::write_file(p, b.data(), b.size());
  fg_st_file *f;
  ASSERT_EQ(fg_st_open(p.c_str(), FG_MAP_MMAP, &f), FG_OK) << fg_last_error();
  fg_mapping *m = fg_mapping_retain(fg_st_mapping(f));
  const uint8_t *data = fg_st_find(f, "w")->data;
  fg_st_close(f);
  EXPECT_EQ(std::string((const char *)data, 3), "abc");
  fg_mapping_release(m);
  fg_st_close(nullptr);
}

TEST(SafetensorsFrames, SeveralFramesShareAStream) {
  fgt::TempDir dir;
  std::string p = dir.file("frames.bin");
  FILE *fp = fopen(p.c_str(), "wb");
  ASSERT_NE(fp, nullptr);
  for (int k = 0; k < 3; k++) {
    std::vector<float> v(k + 1, (float)k);
    uint64_t shape[1] = {(uint64_t)k + 1};
    fg_st_write_tensor t = {"v", FG_F32, 1, shape, v.data(), v.size() * 4};
    fg_st_kv kv = {"frame", k == 0 ? "zero" : k == 1 ? "one" : "two"};
    ASSERT_EQ(fg_st_write_frame(fp, &t, 1, &kv, 1), FG_OK) << fg_last_error();
  }
  fputs("tail", fp);
  fclose(fp);
  for (int pass = 0; pass < 2; pass++) {
    FILE *in = fopen(p.c_str(), "rb");
    int fd = open(p.c_str(), O_RDONLY);
    for (int k = 0; k < 3; k++) {
      fg_st_file *f = nullptr;
      fg_status s = pass ? fg_st_read_frame_fd(fd, "fd", &f) : fg_st_read_frame(in, "stream", &f);
      ASSERT_EQ(s, FG_OK) << fg_last_error();
      const fg_st_tensor *t = fg_st_find(f, "v");
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->shape[0], (uint64_t)k + 1);
      float x;
      memcpy(&x, t->data + 4 * k, 4);
      EXPECT_EQ(x, (float)k);
      EXPECT_STREQ(fg_st_metadata_find(f, "frame"), k == 0 ? "zero" : k == 1 ? "one" : "two");
      fg_st_close(f);
    }
    char tail[5] = {0};
    if (pass) {
      ASSERT_EQ(read(fd, tail, 4), 4);
    } else {
      ASSERT_EQ(fread(tail, 1, 4, in), 4u);
    }
    EXPECT_STREQ(tail, "tail");
    fclose(in);
    close(fd);
  }
}

TEST(SafetensorsFrames, ShortStreamIsIncomplete) {
  fgt::TempDir dir;
  std::string b = frame(R"({"w":{"dtype":"F32","shape":[1024,1024],"data_offsets":[0,4194304]}})") + zeros(10);
  std::string p = dir.file("short.bin");
  fgt::write_file(p, b.data(), b.size());
  FILE *in = fopen(p.c_str(), "rb");
  fg_st_file *f = nullptr;
  EXPECT_EQ(fg_st_read_frame(in, "short", &f), FG_ERR_INCOMPLETE_BUFFER) << fg_last_error();
  EXPECT_EQ(f, nullptr);
  fclose(in);
}

}  // namespace
