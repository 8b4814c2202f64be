// The embedding gradient (forgia/embed.h: fg_embed_backward) on the CPU: against a plain
// loop written here (memcmp) and an f64 sum (a stated bound); repeated ids summing in token
// order (a sum whose value depends on the order); ids out of range adding nothing; the
// scale as one f32 multiply; a NaN stored canonical; the bits at several thread counts;
// n_ids == 0; and every refusal before anything is written.
#include <gtest/gtest.h>
#include <omp.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~Cpu() { fg_device_close(dev); }
};

float canonical_nan() {
  const uint32_t b = 0x7fc00000u;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// The contract as a loop: tokens in order, d = d + f32(scale * g), a NaN stored canonical.
std::vector<float> plain(std::vector<float> table, const std::vector<float> &dy, const std::vector<int32_t> &ids,
                         size_t n_rows, size_t n_cols, float scale) {
  for (size_t t = 0; t < ids.size(); t++) {
    if (ids[t] < 0 || (size_t)ids[t] >= n_rows) continue;
    for (size_t c = 0; c < n_cols; c++) {
      volatile float prod = scale * dy[t * n_cols + c];  // rounded before the add
      float &d = table[(size_t)ids[t] * n_cols + c];
      d = d + prod;
      if (std::isnan(d)) d = canonical_nan();
    }
  }
  return table;
}

struct Problem {
  size_t n_rows, n_cols;
  std::vector<int32_t> ids;
  std::vector<float> dy, table;
  float scale;
  Problem(size_t rows, size_t cols, size_t n_ids, float s, uint64_t seed) : n_rows(rows), n_cols(cols), scale(s) {
    for (size_t t = 0; t < n_ids; t++) ids.push_back((int32_t)((t * t * 7 + t * 3 + seed) % (rows + 2)) - 1);
    dy = fgt::gaussian(n_ids * cols, seed, 2.0f);
    table = fgt::gaussian(rows * cols, seed + 1);
  }
  std::vector<float> run(fg_device *dev) const {
    std::vector<float> d = table;
    EXPECT_EQ(FG_OK, fg_embed_backward(dev, dy.data(), ids.data(), ids.size(), n_rows, n_cols, scale, d.data(), nullptr))
        << fg_last_error();
    return d;
  }
  std::vector<float> want() const { return plain(table, dy, ids, n_rows, n_cols, scale); }
};

TEST(EmbedBwd, EqualsThePlainLoopAndF64) {
  Cpu c;
  struct Shape {
    size_t rows, cols, ids;
    float scale;
  };
  const Shape shapes[] = {{1, 1, 1, 1.0f},    {11, 33, 9, 1.0f},    {50, 64, 170, 45.254834f},
                          {7, 96, 300, -0.5f}, {300, 576, 64, 0.125f}, {3, 1000, 700, 3.0f}};
  int k = 0;
  for (const Shape &s : shapes) {
    Problem p(s.rows, s.cols, s.ids, s.scale, 40 + (uint64_t)k++);
    const std::vector<float> got = p.run(c.dev);
    EXPECT_TRUE(same_bits(got, p.want())) << s.rows << "x" << s.cols << " ids " << s.ids;
    // f64: the table's value plus each token's exact product; the f32 chain of m adds and m
    // multiplies is within (2m + 1) 2^-24 of the sum of magnitudes.
    std::vector<double> sum(p.table.begin(), p.table.end()), mag(sum.size()), cnt(sum.size());
    for (size_t i = 0; i < sum.size(); i++) mag[i] = std::fabs(sum[i]);
    for (size_t t = 0; t < p.ids.size(); t++) {
      if (p.ids[t] < 0 || (size_t)p.ids[t] >= s.rows) continue;
      for (size_t col = 0; col < s.cols; col++) {
        const size_t i = (size_t)p.ids[t] * s.cols + col;
        const double term = (double)s.scale * (double)p.dy[t * s.cols + col];
        sum[i] += term, mag[i] += std::fabs(term), cnt[i] += 1;
      }
    }
    for (size_t i = 0; i < sum.size(); i++)
      ASSERT_LE(std::fabs((double)got[i] - sum[i]), (2 * cnt[i] + 1) * 0x1p-24 * mag[i]) << "at " << i;
  }
}

// Repeated ids sum in token order: 0 + 2^25 + 1 - 2^25 is 0 in order (2^25 + 1 rounds to
// 2^25), 1 in any order that takes the 1 last.
TEST(EmbedBwd, RepeatedIdsSumInTokenOrder) {
  Cpu c;
  const int saved = omp_get_max_threads();
  const size_t n_cols = 4000;  // enough for several column chunks
  const std::vector<int32_t> ids = {1, 1, 0, 1};
  std::vector<float> dy(ids.size() * n_cols);
  for (size_t col = 0; col < n_cols; col++) {
    dy[0 * n_cols + col] = 33554432.0f;
    dy[1 * n_cols + col] = 1.0f;
    dy[2 * n_cols + col] = 5.0f;
    dy[3 * n_cols + col] = -33554432.0f;
  }
  for (int th : {1, 2, 3}) {
    omp_set_num_threads(th);
    std::vector<float> table(2 * n_cols, 0.0f);
    ASSERT_EQ(FG_OK, fg_embed_backward(c.dev, dy.data(), ids.data(), ids.size(), 2, n_cols, 1.0f, table.data(), nullptr))
        << fg_last_error();
    for (size_t col = 0; col < n_cols; col++) {
      ASSERT_EQ(5.0f, table[col]) << th << " threads, column " << col;
      ASSERT_EQ(0.0f, table[n_cols + col]) << th << " threads, column " << col;
    }
  }
  omp_set_num_threads(saved);
}

TEST(EmbedBwd, BitsIndependentOfThreadCount) {
  Cpu c;
  const int saved = omp_get_max_threads();
  Problem p(40, 576, 900, 0.75f, 3);
  const std::vector<float> want = p.want();
  for (int th : {1, 2, 3, 7}) {
    omp_set_num_threads(th);
    EXPECT_TRUE(same_bits(p.run(c.dev), want)) << th << " threads";
  }
  omp_set_num_threads(saved);
}

// Ids outside [0, n_rows) add nothing; the rows they would name and every other row keep
// their bits, a NaN's payload included where no token touches it.
TEST(EmbedBwd, IdsOutOfRangeAddNothing) {
  Cpu c;
  const size_t n_rows = 3, n_cols = 40;
  const std::vector<int32_t> ids = {-1, 3, INT32_MAX, INT32_MIN, 2};
  std::vector<float> table = fgt::gaussian(n_rows * n_cols, 9), dy = fgt::gaussian(ids.size() * n_cols, 10);
  const uint32_t payload = 0x7fa00001u;
  std::memcpy(&table[5], &payload, 4);
  const std::vector<float> before = table;
  ASSERT_EQ(FG_OK, fg_embed_backward(c.dev, dy.data(), ids.data(), ids.size(), n_rows, n_cols, 1.0f, table.data(), nullptr));
  EXPECT_EQ(0, std::memcmp(before.data(), table.data(), 2 * n_cols * 4));  // rows 0 and 1
  for (size_t col = 0; col < n_cols; col++) EXPECT_EQ(before[2 * n_cols + col] + dy[4 * n_cols + col], table[2 * n_cols + col]);
  // Only out-of-range ids: nothing changes at all.
  const std::vector<float> after = table;
  ASSERT_EQ(FG_OK, fg_embed_backward(c.dev, dy.data(), ids.data(), 4, n_rows, n_cols, 1.0f, table.data(), nullptr));
  EXPECT_TRUE(same_bits(table, after));
}

// The scale is one f32 multiply rounded before the add; a NaN result is the canonical NaN.
TEST(EmbedBwd, ScaleAndNaN) {
  Cpu c;
  const size_t n_cols = 8;
  const std::vector<int32_t> ids = {0};
  std::vector<float> dy = {1.0f + 0x1p-23f, 3.0f, -2.5f, 1e30f, 0.0f, 1.0f, 2.0f, -INFINITY};
  const uint32_t payload = 0xffc12345u;
  std::memcpy(&dy[5], &payload, 4);
  std::vector<float> table = {1.0f, 1.0f, 1.0f, 1.0f, -0.0f, 0.0f, INFINITY, INFINITY};
  const float scale = 3.0f;
  std::vector<float> want(n_cols);
  for (size_t i = 0; i < n_cols; i++) {
    volatile float prod = scale * dy[i];
    want[i] = table[i] + prod;
  }
  want[5] = canonical_nan();
  want[7] = canonical_nan();  // inf + -inf
  ASSERT_EQ(FG_OK, fg_embed_backward(c.dev, dy.data(), ids.data(), 1, 1, n_cols, scale, table.data(), nullptr));
  EXPECT_TRUE(same_bits(table, want));
  EXPECT_FALSE(std::signbit(table[4]));  // -0 + +0 * 3 is +0
}

TEST(EmbedBwd, EmptyAndRefusals) {
  Cpu c;
  std::vector<float> table(4 * 32, 1.0f), dy(2 * 32, 5.0f);
  const std::vector<int32_t> ids = {0, 1};
  // n_ids == 0 does nothing, NULL buffers are fine; no rows: every id is out of range.
  EXPECT_EQ(FG_OK, fg_embed_backward(c.dev, nullptr, nullptr, 0, 4, 32, 1.0f, nullptr, nullptr));
  EXPECT_EQ(FG_OK, fg_embed_backward(c.dev, dy.data(), ids.data(), 2, 0, 32, 1.0f, nullptr, nullptr));
  struct Bad {
    fg_status want;
    const char *msg;
    std::function<fg_status()> call;
  };
  float *T = table.data();
  const float *G = dy.data();
  const int32_t *I = ids.data();
  const Bad bad[] = {
      {FG_ERR_INVALID_ARG, "NULL device", [&] { return fg_embed_backward(nullptr, G, I, 2, 4, 32, 1.0f, T, nullptr); }},
      {FG_ERR_INVALID_ARG, "NULL dy", [&] { return fg_embed_backward(c.dev, nullptr, I, 2, 4, 32, 1.0f, T, nullptr); }},
      {FG_ERR_INVALID_ARG, "NULL ids", [&] { return fg_embed_backward(c.dev, G, nullptr, 2, 4, 32, 1.0f, T, nullptr); }},
      {FG_ERR_INVALID_ARG, "NULL dtable",
       [&] { return fg_embed_backward(c.dev, G, I, 2, 4, 32, 1.0f, nullptr, nullptr); }},
      {FG_ERR_INVALID_ARG, "2 ids of rows of 0 columns",
       [&] { return fg_embed_backward(c.dev, G, I, 2, 4, 0, 1.0f, T, nullptr); }},
      {FG_ERR_INVALID_ARG, "scale nan", [&] { return fg_embed_backward(c.dev, G, I, 2, 4, 32, NAN, T, nullptr); }},
      {FG_ERR_INVALID_ARG, "scale inf", [&] { return fg_embed_backward(c.dev, G, I, 2, 4, 32, INFINITY, T, nullptr); }},
      {FG_ERR_OVERFLOW, "overflow", [&] { return fg_embed_backward(c.dev, G, I, 2, SIZE_MAX / 8, 32, 1.0f, T, nullptr); }},
      {FG_ERR_INVALID_ARG, "dtable overlaps dy",
       [&] { return fg_embed_backward(c.dev, T + 8, I, 2, 4, 32, 1.0f, T, nullptr); }},
      {FG_ERR_INVALID_ARG, "dtable overlaps ids",
       [&] { return fg_embed_backward(c.dev, G, I, 2, 4, 32, 1.0f, (float *)(void *)ids.data(), nullptr); }},
  };
  // Each refusal names the call and the argument, and writes nothing.
  for (const Bad &b : bad) {
    EXPECT_EQ(b.want, b.call()) << b.msg;
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), "fg_embed_backward: ")) << fg_last_error();
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), b.msg)) << fg_last_error();
  }
  for (float v : table) ASSERT_EQ(1.0f, v);
  fg_device *other = nullptr;
  fg_stream *s = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &other)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_stream_create(other, &s)) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_embed_backward(c.dev, G, I, 2, 4, 32, 1.0f, T, s));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "the stream belongs to")) << fg_last_error();
  fg_stream_free(s);
  fg_device_close(other);
  for (float v : table) ASSERT_EQ(1.0f, v);
}

}  // namespace
