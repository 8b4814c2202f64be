#include <gtest/gtest.h>

#include <set>
#include <string>

#include "forgia/dtype.h"
#include "forgia/status.h"

TEST(Dtype, GgmlCodesAndSizes) {
  fg_dtype t;
  ASSERT_EQ(FG_OK, fg_dtype_from_ggml(12, &t));
  EXPECT_EQ(FG_Q4_K, t);
  EXPECT_STREQ("q4_K", fg_dtype_name(t));
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u}) {
    EXPECT_EQ(FG_ERR_BAD_DTYPE, fg_dtype_from_ggml(removed, &t)) << removed;
  }
  uint64_t nb;
  ASSERT_EQ(FG_OK, fg_dtype_nbytes(FG_Q4_K, 4096, &nb));
  EXPECT_EQ(16u * 144u, nb);
  EXPECT_EQ(FG_ERR_BAD_ROW, fg_dtype_nbytes(FG_Q4_0, 33, &nb));
  EXPECT_EQ(FG_ERR_OVERFLOW, fg_dtype_nbytes(FG_F64, UINT64_MAX / 4, &nb));
  ASSERT_EQ(FG_OK, fg_dtype_nbytes(FG_F6_E2M3, 4, &nb));
  EXPECT_EQ(3u, nb);
  EXPECT_EQ(FG_ERR_BAD_ROW, fg_dtype_nbytes(FG_F4, 3, &nb));
}

TEST(Dtype, NamesAndTagsRoundTrip) {
  std::set<std::string> names;
  for (int v = 0; v < FG_DTYPE_END; v++) {
    if (!fg_dtype_valid(v)) continue;
    const fg_dtype_traits *tr = fg_dtype_info((fg_dtype)v);
    ASSERT_NE(nullptr, tr);
    EXPECT_TRUE(names.insert(tr->name).second) << tr->name;
    fg_dtype back;
    ASSERT_EQ(FG_OK, fg_dtype_from_name(tr->name, &back));
    EXPECT_EQ(v, back);
    if (tr->st_tag) {
      ASSERT_EQ(FG_OK, fg_dtype_from_st_tag(tr->st_tag, strlen(tr->st_tag), &back));
      EXPECT_EQ(v, back);
    }
  }
  EXPECT_EQ(22u, [] {
    unsigned n = 0;
    for (int v = 0; v < FG_DTYPE_END; v++)
      if (fg_dtype_valid(v) && fg_dtype_info((fg_dtype)v)->st_tag) n++;
    return n;
  }()) << "every upstream safetensors dtype has a tag";
  fg_dtype t;
  EXPECT_EQ(FG_ERR_BAD_DTYPE, fg_dtype_from_st_tag("F128", 4, &t));
  EXPECT_NE(std::string(fg_last_error()).find("F128"), std::string::npos);
}

// The numbers are ABI (status.h: never changed or reused once released); this table pins
// every one of them and its name.
TEST(Status, NumbersAreStable) {
#define S(x, n) {x, n, #x}
  const struct {
    fg_status s;
    int n;
    const char *name;
  } all[] = {
      S(FG_OK, 0),
      S(FG_ERR_INVALID_ARG, 1), S(FG_ERR_NOMEM, 2), S(FG_ERR_IO, 3), S(FG_ERR_NOT_FOUND, 4),
      S(FG_ERR_UNSUPPORTED, 5), S(FG_ERR_OVERFLOW, 6), S(FG_ERR_RANGE, 7), S(FG_ERR_TYPE, 8),
      S(FG_ERR_NONFINITE, 9), S(FG_ERR_STATE, 10),
      S(FG_ERR_NO_DEVICE, 20), S(FG_ERR_DEVICE, 21), S(FG_ERR_DEVICE_NOMEM, 22),
      S(FG_ERR_TRUNCATED, 40), S(FG_ERR_BAD_MAGIC, 41), S(FG_ERR_BAD_VERSION, 42), S(FG_ERR_BAD_DTYPE, 43),
      S(FG_ERR_BAD_SHAPE, 44), S(FG_ERR_BAD_ALIGNMENT, 45), S(FG_ERR_BAD_OFFSET, 46), S(FG_ERR_DUPLICATE, 47),
      S(FG_ERR_BAD_VALUE_TYPE, 48), S(FG_ERR_BAD_STRING, 49),
      S(FG_ERR_HEADER_TOO_SMALL, 60), S(FG_ERR_HEADER_TOO_LARGE, 61), S(FG_ERR_INVALID_HEADER_START, 62),
      S(FG_ERR_HEADER_NOT_UTF8, 63), S(FG_ERR_INVALID_JSON, 64), S(FG_ERR_INVALID_OFFSET, 65),
      S(FG_ERR_TENSOR_INVALID_INFO, 66), S(FG_ERR_METADATA_NOT_STRING, 67), S(FG_ERR_MISALIGNED_SLICE, 68),
      S(FG_ERR_INVALID_HEADER_LENGTH, 69), S(FG_ERR_INCOMPLETE_BUFFER, 70),
      S(FG_ERR_BAD_ROW, 80),
      S(FG_ERR_FRAME_UNKNOWN_NAME, 100), S(FG_ERR_FRAME_MISSING_ENTRY, 101), S(FG_ERR_FRAME_SHAPE_MISMATCH, 102),
      S(FG_ERR_FRAME_CONFIG_MISMATCH, 103), S(FG_ERR_FRAME_DTYPE_MISMATCH, 104),
      S(FG_ERR_FRAME_TRAILING_BYTES, 105),
      S(FG_ERR_QUANTIZED_BASE, 120),
  };
#undef S
  std::set<std::string> named;
  for (const auto &e : all) {
    EXPECT_EQ(e.n, (int)e.s) << e.name;
    EXPECT_STREQ(e.name, fg_status_name(e.s));
    named.insert(e.name);
  }
  // Every number that the table does not list is unknown, so a code added to status.h
  // without a row here (and without a name in core/status.c) shows up.
  int known = 0;
  for (int v = 0; v < 128; v++) {  // 0..127: the range the enum's values span
    std::string n = fg_status_name((fg_status)v);
    if (n == "FG_ERR_UNKNOWN") continue;
    known++;
    EXPECT_TRUE(named.count(n)) << v << " " << n << " is missing from this table";
  }
  EXPECT_EQ((int)(sizeof all / sizeof all[0]), known);
}

TEST(Status, NamesAndMessages) {
  EXPECT_STREQ("FG_ERR_UNKNOWN", fg_status_name((fg_status)9999));
  EXPECT_STREQ("FG_ERR_UNKNOWN", fg_status_name((fg_status)11)); // a gap inside a group
  EXPECT_EQ(FG_ERR_IO, fg_fail(FG_ERR_IO, "file %s offset %d", "a.gguf", 12));
  EXPECT_STREQ("file a.gguf offset 12", fg_last_error());
  fg_fail_prefix(FG_ERR_IO, "ctx: ");
  EXPECT_STREQ("ctx: file a.gguf offset 12", fg_last_error());
  fg_clear_error();
  EXPECT_STREQ("", fg_last_error());
}
