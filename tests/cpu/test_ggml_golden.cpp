// A GGUF file written by ggml's own writer (tests/data/golden/ggml_u64.gguf, made by
// tests/data/ggml_gen/gen_ggml_gguf.c against real ggml; see its README): forgia opens it
// and hands back every value exactly, UINT64 values of 2^63 and above included, through the
// getters, fg_ckpt and `forgia inspect --json`.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/ckpt.h"
#include "forgia/gguf.h"
#include "forgia/status.h"
#include "testutil.h"

namespace {

const std::string kFile = std::string(FORGIA_TEST_DATA) + "/golden/ggml_u64.gguf";

const uint64_t kTwo63 = 9223372036854775808ull;
// The tensors' values as the generator set them (t.mat: ne {3, 2}; t.vec: ne {4}).
const uint32_t kMatBits[6] = {0x3fc00000u, 0xc0100000u, 0x00000000u, 0x80000000u, 0x7f7fffffu, 0x00000001u};
const uint32_t kVecBits[4] = {0x3dcccccdu, 0xc0e00000u, 0x44800000u, 0x35800000u};

std::string python() { return access(FORGIA_PYTHON, X_OK) == 0 ? FORGIA_PYTHON : "python3"; }

struct File {
  fg_gguf_file *f = nullptr;
  ~File() { fg_gguf_close(f); }
};

void expect_bits(const uint8_t *data, const uint32_t *bits, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    std::memcpy(&u, data + 4 * i, 4);
    EXPECT_EQ(u, bits[i]) << "element " << i;
  }
}

TEST(GgmlGolden, MetadataExactThroughGetters) {
  File g;
  ASSERT_EQ(fg_gguf_open(kFile.c_str(), FG_MAP_READ, &g.f), FG_OK) << fg_last_error();
  const fg_gguf_file *f = g.f;
  EXPECT_EQ(fg_gguf_version(f), 3u);
  EXPECT_EQ(fg_gguf_alignment(f), 32u);
  EXPECT_EQ(fg_gguf_data_offset(f, 0), 448u);  // as ggml's reader reported when it was made

  const char *keys[] = {"general.name", "test.u64.max", "test.u64.two63", "test.u64.arr",
                        "test.i64.min", "test.f32.negzero", "test.f64.negzero", "test.str"};
  const fg_gguf_type types[] = {FG_GGUF_STRING, FG_GGUF_UINT64, FG_GGUF_UINT64, FG_GGUF_ARRAY,
                                FG_GGUF_INT64, FG_GGUF_FLOAT32, FG_GGUF_FLOAT64, FG_GGUF_STRING};
  ASSERT_EQ(fg_gguf_kv_count(f), 8u);
  for (size_t i = 0; i < 8; i++) {
    fg_gguf_str k = fg_gguf_kv_key(f, i);
    EXPECT_EQ(std::string(k.ptr, k.len), keys[i]);
    EXPECT_EQ(fg_gguf_kv_type(f, i), types[i]) << keys[i];
  }

  uint64_t u = 0;
  int64_t s = 0;
  ASSERT_EQ(fg_gguf_get_uint(f, "test.u64.max", &u), FG_OK) << fg_last_error();
  EXPECT_EQ(u, UINT64_MAX);
  s = 7;
  EXPECT_EQ(fg_gguf_get_int(f, "test.u64.max", &s), FG_ERR_RANGE);
  EXPECT_EQ(s, 7);  // untouched on failure
  EXPECT_NE(std::string(fg_last_error()).find("test.u64.max"), std::string::npos) << fg_last_error();
  ASSERT_EQ(fg_gguf_get_uint(f, "test.u64.two63", &u), FG_OK) << fg_last_error();
  EXPECT_EQ(u, kTwo63);
  EXPECT_EQ(fg_gguf_get_int(f, "test.u64.two63", &s), FG_ERR_RANGE);

  fg_gguf_array a;
  ASSERT_EQ(fg_gguf_get_array(f, "test.u64.arr", &a), FG_OK) << fg_last_error();
  EXPECT_EQ(a.elem_type, FG_GGUF_UINT64);
  ASSERT_EQ(a.len, 3u);
  EXPECT_EQ(a.nbytes, 24u);
  const uint64_t want_arr[3] = {0, kTwo63, UINT64_MAX};
  for (uint64_t j = 0; j < 3; j++) {
    ASSERT_EQ(fg_gguf_array_uint(&a, j, &u), FG_OK) << fg_last_error();
    EXPECT_EQ(u, want_arr[j]) << "element " << j;
  }
  EXPECT_EQ(fg_gguf_array_int(&a, 0, &s), FG_OK);
  EXPECT_EQ(s, 0);
  EXPECT_EQ(fg_gguf_array_int(&a, 1, &s), FG_ERR_RANGE);
  EXPECT_EQ(fg_gguf_array_int(&a, 2, &s), FG_ERR_RANGE);
  EXPECT_EQ(fg_gguf_array_uint(&a, 3, &u), FG_ERR_RANGE);

  ASSERT_EQ(fg_gguf_get_int(f, "test.i64.min", &s), FG_OK) << fg_last_error();
  EXPECT_EQ(s, INT64_MIN);
  EXPECT_EQ(fg_gguf_get_uint(f, "test.i64.min", &u), FG_ERR_RANGE);

  // -0.0 keeps its sign: through the getter and on the wire.
  double d = 1.0;
  ASSERT_EQ(fg_gguf_get_float(f, "test.f32.negzero", &d), FG_OK) << fg_last_error();
  EXPECT_EQ(d, 0.0);
  EXPECT_TRUE(std::signbit(d));
  d = 1.0;
  ASSERT_EQ(fg_gguf_get_float(f, "test.f64.negzero", &d), FG_OK) << fg_last_error();
  uint64_t d_bits;
  std::memcpy(&d_bits, &d, 8);
  EXPECT_EQ(d_bits, 0x8000000000000000ull);
  const uint8_t *raw = nullptr;
  uint64_t raw_len = 0;
  ASSERT_EQ(fg_gguf_kv_value_raw(f, (size_t)fg_gguf_key_index(f, "test.f32.negzero"), &raw, &raw_len), FG_OK);
  ASSERT_EQ(raw_len, 4u);
  EXPECT_EQ(std::memcmp(raw, "\x00\x00\x00\x80", 4), 0);
  ASSERT_EQ(fg_gguf_kv_value_raw(f, (size_t)fg_gguf_key_index(f, "test.f64.negzero"), &raw, &raw_len), FG_OK);
  ASSERT_EQ(raw_len, 8u);
  EXPECT_EQ(std::memcmp(raw, "\x00\x00\x00\x00\x00\x00\x00\x80", 8), 0);

  fg_gguf_str str;
  ASSERT_EQ(fg_gguf_get_str(f, "test.str", &str), FG_OK) << fg_last_error();
  EXPECT_EQ(std::string(str.ptr, str.len), "forgia <- ggml");
  ASSERT_EQ(fg_gguf_get_str(f, "general.name", &str), FG_OK) << fg_last_error();
  EXPECT_EQ(std::string(str.ptr, str.len), "ggml u64 golden");

  ASSERT_EQ(fg_gguf_tensor_count(f), 2u);
  const fg_gguf_tensor *m = fg_gguf_find_tensor(f, "t.mat");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->dtype, FG_F32);
  EXPECT_EQ(m->ndim, 2);
  EXPECT_EQ(m->ne[0], 3u);
  EXPECT_EQ(m->ne[1], 2u);
  EXPECT_EQ(m->offset, 0u);
  ASSERT_EQ(m->nbytes, 24u);
  expect_bits(m->data, kMatBits, 6);
  const fg_gguf_tensor *v = fg_gguf_find_tensor(f, "t.vec");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->ndim, 1);
  EXPECT_EQ(v->ne[0], 4u);
  EXPECT_EQ(v->offset, 32u);
  ASSERT_EQ(v->nbytes, 16u);
  expect_bits(v->data, kVecBits, 4);
}

TEST(GgmlGolden, OpensAsCheckpoint) {
  fg_ckpt *c = nullptr;
  ASSERT_EQ(fg_ckpt_open(kFile.c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_ckpt_format_of(c), FG_CKPT_GGUF);
  ASSERT_EQ(fg_ckpt_count(c), 2u);
  const fg_ckpt_tensor *m = fg_ckpt_tensor_at(c, 0);
  EXPECT_STREQ(m->name, "t.mat");
  ASSERT_EQ(m->ndim, 2);
  EXPECT_EQ(m->shape[0], 2u);  // row-major: 2 rows of 3
  EXPECT_EQ(m->shape[1], 3u);
  EXPECT_EQ(m->numel, 6u);
  ASSERT_EQ(m->nbytes, 24u);
  EXPECT_EQ(m->offset, 448u);
  expect_bits(m->data, kMatBits, 6);
  const fg_ckpt_tensor *v = fg_ckpt_find(c, "t.vec");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->numel, 4u);
  ASSERT_EQ(v->nbytes, 16u);
  EXPECT_EQ(v->offset, 480u);
  expect_bits(v->data, kVecBits, 4);
  uint64_t u = 0;
  ASSERT_NE(fg_ckpt_gguf(c), nullptr);
  ASSERT_EQ(fg_gguf_get_uint(fg_ckpt_gguf(c), "test.u64.max", &u), FG_OK) << fg_last_error();
  EXPECT_EQ(u, UINT64_MAX);
  fg_ckpt_close(c);
}

TEST(GgmlGolden, InspectJsonExact) {
  fgt::TempDir dir;
  std::string out, err;
  const std::string json = dir.file("o.json");
  ASSERT_EQ(fgt::run(std::string(FORGIA_CLI) + " inspect --json " + kFile + " > " + json, &out, &err), 0) << err;
  std::vector<uint8_t> raw = fgt::read_file(json);
  const std::string text(raw.begin(), raw.end());
  EXPECT_NE(text.find("18446744073709551615"), std::string::npos) << text;
  EXPECT_NE(text.find("9223372036854775808"), std::string::npos) << text;
  EXPECT_NE(text.find("[0, 9223372036854775808, 18446744073709551615]"), std::string::npos) << text;
  EXPECT_NE(text.find("-9223372036854775808"), std::string::npos) << text;
  EXPECT_NE(text.find("-0.0"), std::string::npos) << text;
  EXPECT_EQ(text.find("e+19"), std::string::npos) << text;  // no value went through a double

  // A strict JSON parser accepts it, and what it reads back is exact (Python ints are exact).
  ASSERT_EQ(fgt::run(python() + " -c 'import json,sys; json.load(sys.stdin)' < " + json, &out, &err), 0) << err;
  const std::string check =
      "import json, math, sys\n"
      "m = json.load(sys.stdin)[\"metadata\"]\n"
      "ok = (m[\"test.u64.max\"][\"value\"] == 2**64 - 1 and type(m[\"test.u64.max\"][\"value\"]) is int\n"
      "      and m[\"test.u64.two63\"][\"value\"] == 2**63\n"
      "      and m[\"test.u64.arr\"][\"value\"] == [0, 2**63, 2**64 - 1]\n"
      "      and m[\"test.i64.min\"][\"value\"] == -2**63\n"
      "      and math.copysign(1.0, m[\"test.f32.negzero\"][\"value\"]) == -1.0\n"
      "      and math.copysign(1.0, m[\"test.f64.negzero\"][\"value\"]) == -1.0\n"
      "      and m[\"test.str\"][\"value\"] == \"forgia <- ggml\")\n"
      "sys.exit(0 if ok else 1)\n";
  const std::string script = dir.file("check.py");
  fgt::write_file(script, check.data(), check.size());
  EXPECT_EQ(fgt::run(python() + " " + script + " < " + json, &out, &err), 0) << err << "\n" << text;
}

}  // namespace
