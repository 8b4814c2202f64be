// RoPE (forgia/rope.h) against an f64 model of its definition: the table against cos and
// sin of the angle formula, both pairings against a complex rotation in f64, inverse(apply)
// back to x, the untouched tail past n_dims, tokens at out-of-range positions left as they
// are, and every refusal before anything is written.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <complex>
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

double angle(size_t p, size_t i, size_t n_dims, double base, double fs, const float *factors) {
  return (double)p * fs * std::pow(base, -2.0 * (double)i / (double)n_dims) / (factors ? (double)factors[i] : 1.0);
}

TEST(Rope, TableIsCosAndSinOfTheAngleRoundedOnce) {
  const size_t n_pos = 4096, n_dims = 128;
  std::vector<float> factors(n_dims / 2);
  for (size_t i = 0; i < factors.size(); i++) factors[i] = 1.0f + (float)i / 8.0f;
  for (const float *f : {(const float *)nullptr, (const float *)factors.data()}) {
    std::vector<float> tb(n_pos * n_dims);
    ASSERT_EQ(FG_OK, fg_rope_table_fill(tb.data(), n_pos, n_dims, 500000.0, 0.25, f)) << fg_last_error();
    for (size_t p = 0; p < n_pos; p += 37)
      for (size_t i = 0; i < n_dims / 2; i++) {
        const double th = angle(p, i, n_dims, 500000.0, 0.25, f);
        // The table's own f64 evaluation may round the angle differently from this one: both
        // are within a few f64 ulps of theta (<= 4096 rad), far below f32's half ulp.
        EXPECT_NEAR((double)tb[(p * n_dims / 2 + i) * 2], std::cos(th), 6e-8) << p << " " << i;
        EXPECT_NEAR((double)tb[(p * n_dims / 2 + i) * 2 + 1], std::sin(th), 6e-8) << p << " " << i;
      }
    EXPECT_EQ(1.0f, tb[0]);
    EXPECT_EQ(0.0f, tb[1]);
  }
}

// x rotated in f64 as complex numbers: pair (a, b) is a + ib times e^(i theta).
std::vector<double> rotate64(const std::vector<float> &x, size_t n_tok, size_t n_heads, size_t hd, size_t nd,
                             fg_rope_layout layout, const std::vector<int32_t> &pos, size_t n_pos, double base,
                             bool inverse) {
  std::vector<double> y(x.begin(), x.end());
  for (size_t t = 0; t < n_tok; t++) {
    if (pos[t] < 0 || (size_t)pos[t] >= n_pos) continue;
    for (size_t h = 0; h < n_heads; h++)
      for (size_t i = 0; i < nd / 2; i++) {
        const size_t a = (t * n_heads + h) * hd + (layout == FG_ROPE_NEOX ? i : 2 * i);
        const size_t b = (t * n_heads + h) * hd + (layout == FG_ROPE_NEOX ? i + nd / 2 : 2 * i + 1);
        const double th = angle((size_t)pos[t], i, nd, base, 1.0, nullptr) * (inverse ? -1.0 : 1.0);
        const std::complex<double> z = std::complex<double>(x[a], x[b]) * std::polar(1.0, th);
        y[a] = z.real(), y[b] = z.imag();
      }
  }
  return y;
}

struct Shape {
  size_t n_tok, n_heads, hd, nd;
};

TEST(Rope, BothPairingsMatchAComplexRotationInF64) {
  Cpu cpu;
  const double base = 10000.0;
  for (fg_rope_layout layout : {FG_ROPE_NORM, FG_ROPE_NEOX})
    for (bool inverse : {false, true})
      for (const Shape &s : {Shape{9, 4, 64, 64}, Shape{6, 3, 128, 32}, Shape{1, 1, 2, 2}}) {
        const size_t n_pos = 2048, n = s.n_tok * s.n_heads * s.hd;
        std::vector<float> tb(n_pos * s.nd), x = fgt::gaussian(n, 41 + s.hd), y = x;
        ASSERT_EQ(FG_OK, fg_rope_table_fill(tb.data(), n_pos, s.nd, base, 1.0, nullptr));
        std::vector<int32_t> pos(s.n_tok);
        for (size_t t = 0; t < s.n_tok; t++) pos[t] = (int32_t)((t * 331 + 5) % n_pos);
        ASSERT_EQ(FG_OK, fg_rope_apply(cpu.dev, y.data(), s.n_tok, s.n_heads, s.hd, s.nd, layout, pos.data(), tb.data(),
                                       n_pos, inverse, nullptr))
            << fg_last_error();
        const std::vector<double> want = rotate64(x, s.n_tok, s.n_heads, s.hd, s.nd, layout, pos, n_pos, base, inverse);
        // Per pair: the table's two roundings and the f32 products and sum, each within 2^-24
        // of its value, bound both outputs by 4 * 2^-24 * (|a| + |b|).
        for (size_t t = 0; t < s.n_tok; t++)
          for (size_t h = 0; h < s.n_heads; h++)
            for (size_t i = 0; i < s.nd / 2; i++) {
              const size_t a = (t * s.n_heads + h) * s.hd + (layout == FG_ROPE_NEOX ? i : 2 * i);
              const size_t b = (t * s.n_heads + h) * s.hd + (layout == FG_ROPE_NEOX ? i + s.nd / 2 : 2 * i + 1);
              const double tol = 4.0 * 0x1p-24 * (std::fabs((double)x[a]) + std::fabs((double)x[b]));
              const char *name = layout == FG_ROPE_NEOX ? "neox" : "norm";
              EXPECT_NEAR(want[a], (double)y[a], tol) << name << " inverse " << inverse << " " << a;
              EXPECT_NEAR(want[b], (double)y[b], tol) << name << " inverse " << inverse << " " << b;
            }
      }
}

TEST(Rope, InverseUndoesApplyAndTheTailPassesThrough) {
  Cpu cpu;
  const size_t n_tok = 17, n_heads = 5, hd = 96, nd = 64, n_pos = 40000;
  std::vector<float> tb(n_pos * nd);
  ASSERT_EQ(FG_OK, fg_rope_table_fill(tb.data(), n_pos, nd, 1000000.0, 1.0, nullptr));
  std::vector<int32_t> pos(n_tok);
  for (size_t t = 0; t < n_tok; t++) pos[t] = (int32_t)(t * 2351 % n_pos);
  for (fg_rope_layout layout : {FG_ROPE_NORM, FG_ROPE_NEOX}) {
    const std::vector<float> x = fgt::gaussian(n_tok * n_heads * hd, 77);
    std::vector<float> y = x;
    ASSERT_EQ(FG_OK, fg_rope_apply(cpu.dev, y.data(), n_tok, n_heads, hd, nd, layout, pos.data(), tb.data(), n_pos,
                                   false, nullptr));
    size_t moved = 0;
    for (size_t t = 0; t < n_tok; t++)
      for (size_t h = 0; h < n_heads; h++)
        for (size_t d = 0; d < hd; d++) {
          const size_t i = (t * n_heads + h) * hd + d;
          if (d >= nd) {
            EXPECT_EQ(0, std::memcmp(&x[i], &y[i], 4)) << "tail value " << d << " changed";
          } else {
            moved += x[i] != y[i];
          }
        }
    EXPECT_GT(moved, n_tok * n_heads * nd / 2);  // position 0 leaves its token as it is
    ASSERT_EQ(FG_OK, fg_rope_apply(cpu.dev, y.data(), n_tok, n_heads, hd, nd, layout, pos.data(), tb.data(), n_pos,
                                   true, nullptr));
    for (size_t i = 0; i < x.size(); i++) EXPECT_NEAR(x[i], y[i], 5e-7 * (1 + std::fabs(x[i]))) << i;
  }
}

TEST(Rope, PositionsOutsideTheTableLeaveTheirTokens) {
  Cpu cpu;
  const size_t n_tok = 6, n_heads = 2, hd = 8, n_pos = 10;
  std::vector<float> tb(n_pos * hd);
  ASSERT_EQ(FG_OK, fg_rope_table_fill(tb.data(), n_pos, hd, 10000.0, 1.0, nullptr));
  const std::vector<int32_t> pos = {-1, 3, (int32_t)n_pos, INT32_MIN, 9, INT32_MAX};
  const std::vector<float> x = fgt::gaussian(n_tok * n_heads * hd, 5);
  for (fg_rope_layout layout : {FG_ROPE_NORM, FG_ROPE_NEOX}) {
    std::vector<float> y = x;
    ASSERT_EQ(FG_OK, fg_rope_apply(cpu.dev, y.data(), n_tok, n_heads, hd, hd, layout, pos.data(), tb.data(), n_pos,
                                   false, nullptr));
    for (size_t t = 0; t < n_tok; t++) {
      const bool in = pos[t] >= 0 && pos[t] < (int32_t)n_pos;
      const int same = std::memcmp(&x[t * n_heads * hd], &y[t * n_heads * hd], n_heads * hd * 4);
      EXPECT_EQ(!in, same == 0) << "token " << t << " at position " << pos[t];
    }
  }
  // No table at all: every position is out of range.
  std::vector<float> y = x;
  EXPECT_EQ(FG_OK, fg_rope_apply(cpu.dev, y.data(), n_tok, n_heads, hd, hd, FG_ROPE_NEOX, pos.data(), nullptr, 0,
                                 false, nullptr));
  EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * 4));
}

TEST(Rope, RefusesBadArgumentsBeforeWriting) {
  Cpu cpu;
  std::vector<float> x(2 * 2 * 8, 1.0f), tb(4 * 8, 0.5f);
  std::vector<int32_t> pos = {0, 1};
  struct Bad {
    fg_status want;
    const char *msg;
    fg_status got;
  };
  const Bad bad[] = {
      {FG_ERR_INVALID_ARG, "n_dims 3",
       fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 3, FG_ROPE_NORM, pos.data(), tb.data(), 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "n_dims 0",
       fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 0, FG_ROPE_NORM, pos.data(), tb.data(), 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "n_dims 10 exceeds head_dim 8",
       fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 10, FG_ROPE_NORM, pos.data(), tb.data(), 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "layout 7",
       fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 8, (fg_rope_layout)7, pos.data(), tb.data(), 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "0 heads",
       fg_rope_apply(cpu.dev, x.data(), 2, 0, 8, 8, FG_ROPE_NORM, pos.data(), tb.data(), 4, false, nullptr)},
      {FG_ERR_OVERFLOW, "overflow",
       fg_rope_apply(cpu.dev, x.data(), SIZE_MAX / 8, 2, 8, 8, FG_ROPE_NORM, pos.data(), tb.data(), 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "NULL x",
       fg_rope_apply(cpu.dev, nullptr, 2, 2, 8, 8, FG_ROPE_NORM, pos.data(), tb.data(), 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "NULL pos",
       fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 8, FG_ROPE_NORM, nullptr, tb.data(), 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "NULL table",
       fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 8, FG_ROPE_NORM, pos.data(), nullptr, 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "NULL device",
       fg_rope_apply(nullptr, x.data(), 2, 2, 8, 8, FG_ROPE_NORM, pos.data(), tb.data(), 4, false, nullptr)},
      {FG_ERR_INVALID_ARG, "x overlaps table",
       fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 8, FG_ROPE_NORM, pos.data(), x.data() + 8, 1, false, nullptr)},
  };
  for (const Bad &b : bad) EXPECT_EQ(b.want, b.got) << b.msg;
  for (float v : x) ASSERT_EQ(1.0f, v);
  // The message names the call and the argument.
  EXPECT_EQ(FG_ERR_INVALID_ARG,
            fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 10, FG_ROPE_NORM, pos.data(), tb.data(), 4, false, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "fg_rope_apply: n_dims 10 exceeds head_dim 8")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG,
            fg_rope_apply(cpu.dev, x.data(), 2, 2, 8, 8, FG_ROPE_NORM, nullptr, tb.data(), 4, false, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "NULL pos")) << fg_last_error();
  // n_tok == 0 does nothing, NULLs included.
  EXPECT_EQ(FG_OK, fg_rope_apply(cpu.dev, nullptr, 0, 2, 8, 8, FG_ROPE_NORM, nullptr, nullptr, 4, false, nullptr));

  // The table's refusals.
  float t1[16];
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rope_table_fill(t1, 2, 5, 10000.0, 1.0, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "n_dims 5")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rope_table_fill(t1, 2, 8, 0.0, 1.0, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "base")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rope_table_fill(t1, 2, 8, INFINITY, 1.0, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rope_table_fill(t1, 2, 8, 10000.0, -1.0, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "freq_scale")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rope_table_fill(t1, 2, 8, 10000.0, NAN, nullptr));
  const float badf[4] = {1.0f, 0.0f, 1.0f, 1.0f};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rope_table_fill(t1, 2, 8, 10000.0, 1.0, badf));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "factors[1]")) << fg_last_error();
  const float nanf4[4] = {1.0f, 1.0f, NAN, 1.0f};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rope_table_fill(t1, 2, 8, 10000.0, 1.0, nanf4));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rope_table_fill(nullptr, 2, 8, 10000.0, 1.0, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "NULL table")) << fg_last_error();
  EXPECT_EQ(FG_ERR_OVERFLOW, fg_rope_table_fill(t1, SIZE_MAX / 4, 8, 10000.0, 1.0, nullptr));
  EXPECT_EQ(FG_OK, fg_rope_table_fill(nullptr, 0, 8, 10000.0, 1.0, nullptr));
}

}  // namespace
