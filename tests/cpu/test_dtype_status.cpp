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

TEST(Status, NamesAndMessages) {
  for (int s = 0; s < FG_STATUS_COUNT; s++) EXPECT_EQ(0, std::string(fg_status_name((fg_status)s)).rfind("FG_", 0)) << s;
  EXPECT_STREQ("FG_ERR_UNKNOWN", fg_status_name((fg_status)9999));
  EXPECT_EQ(FG_ERR_IO, fg_fail(FG_ERR_IO, "file %s offset %d", "a.gguf", 12));
  EXPECT_STREQ("file a.gguf offset 12", fg_last_error());
  fg_fail_prefix(FG_ERR_IO, "ctx: ");
  EXPECT_STREQ("ctx: file a.gguf offset 12", fg_last_error());
  fg_clear_error();
  EXPECT_STREQ("", fg_last_error());
}
