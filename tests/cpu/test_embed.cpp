// The embedding gather (forgia/embed.h): for every dtype forgia can quantize to, gathered
// rows against fg's own host decoding of the same rows (memcmp), scaled rows against the
// decoded value times the scale, ids out of range giving canonical NaN rows, and every
// refusal before anything is written.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~Cpu() { fg_device_close(dev); }
};

size_t row_bytes(fg_dtype t, size_t n_cols) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  return n_cols / tr->block_elems * tr->block_bytes;
}

TEST(Embed, EveryQuantizableDtypeGathersTheHostDecodedRows) {
  Cpu cpu;
  const size_t n_rows = 13, n_cols = 512;  // a multiple of every block size
  const std::vector<int32_t> ids = {4, 0, 12, 4, -1, 7, 13, INT32_MAX, 1, INT32_MIN, 12};
  size_t tested = 0;
  for (int d = 0; d < (int)FG_DTYPE_END; d++) {
    const fg_dtype t = (fg_dtype)d;
    if (!fg_dtype_info(t) || !fg_quant_can_encode(t)) continue;
    SCOPED_TRACE(fg_dtype_name(t));
    const size_t rb = row_bytes(t, n_cols);
    std::vector<uint8_t> table(n_rows * rb);
    const std::vector<float> src = fgt::gaussian(n_rows * n_cols, 100 + (uint64_t)d, 0.7f);
    ASSERT_EQ(FG_OK, fg_quant_encode_rows(t, src.data(), (int64_t)n_rows, (int64_t)n_cols, table.data(), table.size()))
        << fg_last_error();
    std::vector<float> host(n_rows * n_cols);
    ASSERT_EQ(FG_OK, fg_quant_decode_rows(t, table.data(), table.size(), host.data(), (int64_t)n_rows, (int64_t)n_cols))
        << fg_last_error();
    for (float scale : {1.0f, 45.254834f, -0.125f}) {
      std::vector<float> out(ids.size() * n_cols, 7.0f);
      ASSERT_EQ(FG_OK, fg_embed_rows(cpu.dev, table.data(), t, n_rows, n_cols, ids.data(), ids.size(), scale,
                                     out.data(), nullptr))
          << fg_last_error();
      for (size_t k = 0; k < ids.size(); k++) {
        const float *y = &out[k * n_cols];
        if (ids[k] < 0 || ids[k] >= (int32_t)n_rows) {
          for (size_t c = 0; c < n_cols; c++) ASSERT_EQ(0x7fc00000u, fg_f32_bits(y[c])) << "id " << ids[k];
          continue;
        }
        const float *want = &host[(size_t)ids[k] * n_cols];
        if (scale == 1.0f) {
          EXPECT_EQ(0, std::memcmp(want, y, n_cols * 4)) << "row " << ids[k];
        } else {
          for (size_t c = 0; c < n_cols; c++) ASSERT_EQ(want[c] * scale, y[c]) << "row " << ids[k] << " col " << c;
        }
      }
    }
    tested++;
  }
  EXPECT_GE(tested, 23u);  // f32, f16, bf16 and the 20 block types the quantizer writes
}

// Block types forgia decodes but does not write (the IQ1..IQ3 families): tables of arbitrary
// bytes, every field value reachable, against the host decoder of the same rows.
TEST(Embed, DecodeOnlyBlockTypesGatherTheHostDecodedRows) {
  Cpu cpu;
  const size_t n_rows = 6, n_cols = 512;
  const std::vector<int32_t> ids = {5, 0, 3, 3, 9, 1};
  size_t tested = 0;
  for (int d = 0; d < (int)FG_DTYPE_END; d++) {
    const fg_dtype t = (fg_dtype)d;
    if (!fg_dtype_info(t) || !fg_dtype_info(t)->is_quant || fg_quant_can_encode(t) || !fg_quant_can_decode(t)) continue;
    SCOPED_TRACE(fg_dtype_name(t));
    std::vector<uint8_t> table(n_rows * row_bytes(t, n_cols));
    uint64_t x = 0x243f6a8885a308d3ull + (uint64_t)d;
    for (uint8_t &b : table) x = x * 6364136223846793005ull + 1442695040888963407ull, b = (uint8_t)(x >> 56);
    std::vector<float> host(n_rows * n_cols), out(ids.size() * n_cols);
    ASSERT_EQ(FG_OK, fg_quant_decode_rows(t, table.data(), table.size(), host.data(), (int64_t)n_rows, (int64_t)n_cols))
        << fg_last_error();
    ASSERT_EQ(FG_OK, fg_embed_rows(cpu.dev, table.data(), t, n_rows, n_cols, ids.data(), ids.size(), 1.0f, out.data(),
                                   nullptr))
        << fg_last_error();
    for (size_t k = 0; k < ids.size(); k++) {
      if (ids[k] >= (int32_t)n_rows) {
        for (size_t c = 0; c < n_cols; c++) ASSERT_EQ(0x7fc00000u, fg_f32_bits(out[k * n_cols + c]));
        continue;
      }
      EXPECT_EQ(0, std::memcmp(&host[(size_t)ids[k] * n_cols], &out[k * n_cols], n_cols * 4)) << "row " << ids[k];
    }
    tested++;
  }
  EXPECT_GE(tested, 7u);  // iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m
}

// The gathered values are the table's, not only the decoder's: an f32 table's rows come back
// bit for bit, and a Q8_0 row holds its values to the type's precision.
TEST(Embed, RowsAreTheTablesValues) {
  Cpu cpu;
  const size_t n_rows = 5, n_cols = 64;
  std::vector<float> table = fgt::gaussian(n_rows * n_cols, 3);
  const uint32_t odd[] = {0x7f800000u, 0xff800000u, 0x00000001u, 0x80000000u, 0x7fa00001u};
  std::memcpy(&table[2 * n_cols + 5], odd, sizeof odd);  // scale 1 keeps even a NaN's payload
  const std::vector<int32_t> ids = {2, 2, 0, 4};
  std::vector<float> out(ids.size() * n_cols);
  ASSERT_EQ(FG_OK, fg_embed_rows(cpu.dev, table.data(), FG_F32, n_rows, n_cols, ids.data(), ids.size(), 1.0f,
                                 out.data(), nullptr));
  for (size_t k = 0; k < ids.size(); k++)
    EXPECT_EQ(0, std::memcmp(&table[(size_t)ids[k] * n_cols], &out[k * n_cols], n_cols * 4)) << k;
  // A scale stores a NaN product as the canonical NaN, whatever the payload.
  ASSERT_EQ(FG_OK, fg_embed_rows(cpu.dev, table.data(), FG_F32, n_rows, n_cols, ids.data(), 1, 2.0f, out.data(),
                                 nullptr));
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(out[9]));
  EXPECT_EQ(INFINITY, out[5]);
  EXPECT_EQ(table[2 * n_cols] * 2.0f, out[0]);

  const size_t qb = row_bytes(FG_Q8_0, n_cols);
  std::vector<uint8_t> q(2 * qb);
  ASSERT_EQ(FG_OK, fg_quant_encode_rows(FG_Q8_0, table.data(), 2, (int64_t)n_cols, q.data(), q.size()));
  const int32_t one = 1;
  ASSERT_EQ(FG_OK, fg_embed_rows(cpu.dev, q.data(), FG_Q8_0, 2, n_cols, &one, 1, 1.0f, out.data(), nullptr));
  float amax = 0;
  for (size_t c = 0; c < n_cols; c++) amax = std::max(amax, std::fabs(table[n_cols + c]));
  for (size_t c = 0; c < n_cols; c++) EXPECT_NEAR(table[n_cols + c], out[c], amax / 127.0f) << c;
}

TEST(Embed, RefusesBadArgumentsBeforeWriting) {
  Cpu cpu;
  std::vector<float> table(4 * 32, 1.0f), out(2 * 32, 5.0f);
  std::vector<int32_t> ids = {0, 1};
  struct Bad {
    fg_status want;
    const char *msg;
    fg_status got;
  };
  const Bad bad[] = {
      {FG_ERR_TYPE, "table has dtype i32",
       fg_embed_rows(cpu.dev, table.data(), FG_I32, 4, 32, ids.data(), 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_TYPE, "table has dtype (invalid)",
       fg_embed_rows(cpu.dev, table.data(), (fg_dtype)4, 4, 32, ids.data(), 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_TYPE, "table has dtype f8_e4m3",
       fg_embed_rows(cpu.dev, table.data(), FG_F8_E4M3, 4, 32, ids.data(), 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_BAD_ROW, "not a whole number",
       fg_embed_rows(cpu.dev, table.data(), FG_Q8_0, 4, 48, ids.data(), 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_INVALID_ARG, "rows of 0 columns",
       fg_embed_rows(cpu.dev, table.data(), FG_F32, 4, 0, ids.data(), 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_INVALID_ARG, "scale nan",
       fg_embed_rows(cpu.dev, table.data(), FG_F32, 4, 32, ids.data(), 2, NAN, out.data(), nullptr)},
      {FG_ERR_INVALID_ARG, "scale inf",
       fg_embed_rows(cpu.dev, table.data(), FG_F32, 4, 32, ids.data(), 2, INFINITY, out.data(), nullptr)},
      {FG_ERR_OVERFLOW, "overflow",
       fg_embed_rows(cpu.dev, table.data(), FG_F32, SIZE_MAX / 8, 32, ids.data(), 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_INVALID_ARG, "NULL ids",
       fg_embed_rows(cpu.dev, table.data(), FG_F32, 4, 32, nullptr, 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_INVALID_ARG, "NULL out",
       fg_embed_rows(cpu.dev, table.data(), FG_F32, 4, 32, ids.data(), 2, 1.0f, nullptr, nullptr)},
      {FG_ERR_INVALID_ARG, "NULL table",
       fg_embed_rows(cpu.dev, nullptr, FG_F32, 4, 32, ids.data(), 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_INVALID_ARG, "NULL device",
       fg_embed_rows(nullptr, table.data(), FG_F32, 4, 32, ids.data(), 2, 1.0f, out.data(), nullptr)},
      {FG_ERR_INVALID_ARG, "out overlaps table",
       fg_embed_rows(cpu.dev, table.data(), FG_F32, 4, 32, ids.data(), 2, 1.0f, table.data() + 64, nullptr)},
  };
  for (const Bad &b : bad) EXPECT_EQ(b.want, b.got) << b.msg;
  for (float v : out) ASSERT_EQ(5.0f, v);
  for (float v : table) ASSERT_EQ(1.0f, v);
  // The messages name the call and the argument.
  EXPECT_EQ(FG_ERR_TYPE, fg_embed_rows(cpu.dev, table.data(), FG_I32, 4, 32, ids.data(), 2, 1.0f, out.data(), nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "fg_embed_rows: table has dtype i32")) << fg_last_error();
  EXPECT_EQ(FG_ERR_BAD_ROW,
            fg_embed_rows(cpu.dev, table.data(), FG_Q8_0, 4, 48, ids.data(), 2, 1.0f, out.data(), nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "48 columns")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG,
            fg_embed_rows(cpu.dev, table.data(), FG_F32, 4, 32, ids.data(), 2, 1.0f, (float *)ids.data(), nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "out overlaps ids")) << fg_last_error();
  // n_ids == 0 does nothing; no table at all makes every id out of range.
  EXPECT_EQ(FG_OK, fg_embed_rows(cpu.dev, nullptr, FG_Q4_K, 0, 256, nullptr, 0, 1.0f, nullptr, nullptr));
  EXPECT_EQ(FG_OK, fg_embed_rows(cpu.dev, nullptr, FG_F16, 0, 32, ids.data(), 2, 1.0f, out.data(), nullptr));
  for (float v : out) ASSERT_EQ(0x7fc00000u, fg_f32_bits(v));
}

}  // namespace
