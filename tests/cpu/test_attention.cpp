// Attention (forgia/attention.h) against an f64 model of softmax attention: values and lse,
// grouped-query heads, sliding windows, several sequences, out-of-range tokens as NaN rows,
// and every refusal before anything is written. CPU == scalar loop at every thread count and
// CPU == CUDA are tests/cpu/test_families.cpp and tests/cuda/test_cuda_families.cpp.
#include <gtest/gtest.h>

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

// One problem with its host buffers; args() points into them.
struct Problem {
  size_t n_tok, n_head, n_kv_head, D, n_seq, n_ctx, window = 0;
  std::vector<float> q, k, v, out, lse;
  std::vector<int32_t> seq, pos;
  float scale;
  Problem(size_t t, size_t h, size_t kvh, size_t d, size_t ns, size_t nc, uint64_t seed)
      : n_tok(t), n_head(h), n_kv_head(kvh), D(d), n_seq(ns), n_ctx(nc) {
    q = fgt::gaussian(t * h * d, seed, 1.5f);
    k = fgt::gaussian(ns * kvh * nc * d, seed + 1, 1.5f);
    v = fgt::gaussian(ns * kvh * nc * d, seed + 2);
    out.assign(t * h * d, 7.0f), lse.assign(t * h, 7.0f);
    seq.assign(t, 0), pos.assign(t, 0);
    for (size_t i = 0; i < t; i++) pos[i] = (int32_t)(i % nc);
    scale = 1.0f / std::sqrt((float)d);
  }
  fg_attention_args args(bool with_seq = true) {
    fg_attention_args a = {};
    a.n_tok = n_tok, a.n_head = n_head, a.n_kv_head = n_kv_head, a.head_dim = D, a.n_seq = n_seq, a.n_ctx = n_ctx;
    a.q = q.data(), a.k = k.data(), a.v = v.data(), a.seq = with_seq ? seq.data() : nullptr, a.pos = pos.data();
    a.window = window, a.scale = scale, a.out = out.data(), a.lse = lse.data();
    return a;
  }
  // The f64 model: softmax over the visible keys of scale * q.k, weights times v, and the
  // log-sum-exp of the scores. Returns false for a token out of range.
  bool ref(size_t t, size_t h, std::vector<double> *o, double *l) const {
    const int32_t s = seq[t], p = pos[t];
    if (s < 0 || (size_t)s >= n_seq || p < 0 || (size_t)p >= n_ctx) return false;
    const size_t kvh = h * n_kv_head / n_head;  // n_head / n_kv_head query heads per kv head
    const size_t base = ((size_t)s * n_kv_head + kvh) * n_ctx;
    const size_t lo = window && (size_t)p + 1 > window ? (size_t)p + 1 - window : 0;
    std::vector<double> sc;
    double m = -INFINITY;
    for (size_t j = lo; j <= (size_t)p; j++) {
      double dot = 0;
      for (size_t d = 0; d < D; d++) dot += (double)q[(t * n_head + h) * D + d] * (double)k[(base + j) * D + d];
      sc.push_back((double)scale * dot);
      m = std::max(m, sc.back());
    }
    double sum = 0;
    o->assign(D, 0.0);
    for (size_t j = lo; j <= (size_t)p; j++) {
      const double w = std::exp(sc[j - lo] - m);
      sum += w;
      for (size_t d = 0; d < D; d++) (*o)[d] += w * (double)v[(base + j) * D + d];
    }
    for (double &x : *o) x /= sum;
    *l = m + std::log(sum);
    return true;
  }
  // Every row against the model: |got - want| <= tol (1 + |want|); NaN rows for tokens out
  // of range.
  void check(double tol) const {
    for (size_t t = 0; t < n_tok; t++)
      for (size_t h = 0; h < n_head; h++) {
        std::vector<double> o;
        double l = 0;
        const size_t row = t * n_head + h;
        if (!ref(t, h, &o, &l)) {
          for (size_t d = 0; d < D; d++) EXPECT_EQ(0x7fc00000u, fgt_bits(out[row * D + d])) << t << "," << h;
          EXPECT_EQ(0x7fc00000u, fgt_bits(lse[row])) << t << "," << h;
          continue;
        }
        for (size_t d = 0; d < D; d++)
          EXPECT_NEAR(out[row * D + d], o[d], tol * (1 + std::fabs(o[d]))) << t << "," << h;
        EXPECT_NEAR(lse[row], l, tol * (1 + std::fabs(l))) << t << "," << h;
      }
  }
  static uint32_t fgt_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
};

TEST(Attention, MatchesTheF64ModelOfSoftmaxAttention) {
  Cpu cpu;
  Problem p(9, 4, 4, 64, 1, 20, 1);
  for (size_t t = 0; t < p.n_tok; t++) p.pos[t] = (int32_t)(11 + t);
  fg_attention_args a = p.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a, nullptr)) << fg_last_error();
  p.check(1e-5);
}

TEST(Attention, LongContextAndManyHeadsMatchTheModel) {
  Cpu cpu;
  Problem p(6, 8, 2, 128, 1, 1500, 2);
  for (size_t t = 0; t < p.n_tok; t++) p.pos[t] = (int32_t)(1494 + t);
  fg_attention_args a = p.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a, nullptr)) << fg_last_error();
  p.check(1e-5);
}

// Query head h reads kv head h / (n_head / n_kv_head): the same bits as every head having
// its own copy of that kv head.
TEST(Attention, GroupedQueryHeadsReadTheirGroupsKvHead) {
  Cpu cpu;
  Problem g(5, 6, 2, 16, 1, 8, 3);
  for (size_t t = 0; t < g.n_tok; t++) g.pos[t] = (int32_t)(3 + t);
  fg_attention_args a = g.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a, nullptr)) << fg_last_error();
  g.check(1e-5);
  Problem m = g;
  m.n_kv_head = 6;
  m.k.assign(6 * 8 * 16, 0.0f), m.v.assign(6 * 8 * 16, 0.0f);
  for (size_t h = 0; h < 6; h++) {
    std::memcpy(&m.k[h * 8 * 16], &g.k[(h / 3) * 8 * 16], 8 * 16 * 4);
    std::memcpy(&m.v[h * 8 * 16], &g.v[(h / 3) * 8 * 16], 8 * 16 * 4);
  }
  fg_attention_args b = m.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &b, nullptr)) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(g.out.data(), m.out.data(), g.out.size() * 4));
  EXPECT_EQ(0, std::memcmp(g.lse.data(), m.lse.data(), g.lse.size() * 4));
}

TEST(Attention, SlidingWindowSeesOnlyTheLastWindowKeys) {
  Cpu cpu;
  Problem p(7, 2, 1, 32, 1, 30, 4);
  for (size_t t = 0; t < p.n_tok; t++) p.pos[t] = (int32_t)(t * 4);
  p.window = 5;
  fg_attention_args a = p.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a, nullptr)) << fg_last_error();
  p.check(1e-5);
  // A window past the position is no window.
  Problem w = p, n = p;
  w.window = 1000, n.window = 0;
  fg_attention_args aw = w.args(), an = n.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &aw, nullptr)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &an, nullptr)) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(w.out.data(), n.out.data(), w.out.size() * 4));
  // Window 1: the token's own value row, exactly (p = 1, l = 1).
  Problem one = p;
  one.window = 1;
  fg_attention_args a1 = one.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a1, nullptr)) << fg_last_error();
  for (size_t t = 0; t < one.n_tok; t++)
    for (size_t h = 0; h < 2; h++)
      EXPECT_EQ(0, std::memcmp(&one.out[(t * 2 + h) * 32], &one.v[(size_t)one.pos[t] * 32], 32 * 4)) << t;
}

// Tokens of several sequences in one call: each sees only its own sequence's cache, with the
// bits of a call over that sequence alone.
TEST(Attention, SequencesReadOnlyTheirOwnCache) {
  Cpu cpu;
  Problem p(8, 4, 2, 24, 3, 12, 5);
  for (size_t t = 0; t < p.n_tok; t++) p.seq[t] = (int32_t)((t * 5) % 3), p.pos[t] = (int32_t)((t * 7) % 12);
  fg_attention_args a = p.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a, nullptr)) << fg_last_error();
  p.check(1e-5);
  const size_t block = 2 * 12 * 24;
  for (size_t t = 0; t < p.n_tok; t++) {
    Problem s(1, 4, 2, 24, 1, 12, 5);
    s.q.assign(&p.q[t * 4 * 24], &p.q[(t + 1) * 4 * 24]);
    s.k.assign(&p.k[(size_t)p.seq[t] * block], &p.k[(size_t)(p.seq[t] + 1) * block]);
    s.v.assign(&p.v[(size_t)p.seq[t] * block], &p.v[(size_t)(p.seq[t] + 1) * block]);
    s.pos[0] = p.pos[t];
    fg_attention_args b = s.args(false);
    ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &b, nullptr)) << fg_last_error();
    EXPECT_EQ(0, std::memcmp(s.out.data(), &p.out[t * 4 * 24], 4 * 24 * 4)) << t;
    EXPECT_EQ(0, std::memcmp(s.lse.data(), &p.lse[t * 4], 4 * 4)) << t;
  }
  // seq NULL is every token in sequence 0.
  Problem z = p, n = p;
  z.seq.assign(z.n_tok, 0);
  fg_attention_args az = z.args(), an = n.args(false);
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &az, nullptr)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &an, nullptr)) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(z.out.data(), n.out.data(), z.out.size() * 4));
}

TEST(Attention, TokensOutOfRangeGetNanRowsAndTheOthersAreUntouched) {
  Cpu cpu;
  Problem p(6, 2, 1, 8, 2, 10, 6);
  p.seq = {0, 2, 1, -1, 0, 1};
  p.pos = {3, 1, 10, 2, -5, 9};
  fg_attention_args a = p.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a, nullptr)) << fg_last_error();
  p.check(1e-5);  // rows 1, 2, 3, 4 are NaN; 0 and 5 match the model
  for (size_t t : {0, 5}) EXPECT_FALSE(std::isnan(p.out[t * 16])) << t;
  // lse NULL is allowed and changes nothing else.
  std::vector<float> out1 = p.out;
  a.lse = nullptr;
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a, nullptr)) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(out1.data(), p.out.data(), out1.size() * 4));
}

// Large scores stay finite: the max is subtracted before exp.
TEST(Attention, LargeScoresDoNotOverflow) {
  Cpu cpu;
  Problem p(3, 1, 1, 4, 1, 5, 7);
  for (float &x : p.q) x *= 100.0f;
  for (size_t t = 0; t < 3; t++) p.pos[t] = (int32_t)(2 + t);
  fg_attention_args a = p.args();
  ASSERT_EQ(FG_OK, fg_attention_forward(cpu.dev, &a, nullptr)) << fg_last_error();
  p.check(1e-5);
}

TEST(Attention, RefusesBadCallsBeforeWriting) {
  Cpu cpu;
  Problem p(2, 4, 2, 8, 1, 4, 8);
  struct Bad {
    fg_status st;
    const char *words;
    std::function<void(fg_attention_args &)> edit;
    fg_device *dev;
  };
  fg_device *d = cpu.dev;
  const std::vector<Bad> bad = {
      {FG_ERR_INVALID_ARG, "NULL device", [](fg_attention_args &) {}, nullptr},
      {FG_ERR_INVALID_ARG, "n_kv_head", [](fg_attention_args &a) { a.n_kv_head = 3; }, d},
      {FG_ERR_INVALID_ARG, "n_kv_head", [](fg_attention_args &a) { a.n_kv_head = 0; }, d},
      {FG_ERR_INVALID_ARG, "n_kv_head", [](fg_attention_args &a) { a.n_head = 0; }, d},
      {FG_ERR_INVALID_ARG, "head_dim 0", [](fg_attention_args &a) { a.head_dim = 0; }, d},
      {FG_ERR_INVALID_ARG, "n_seq 0", [](fg_attention_args &a) { a.n_seq = 0; }, d},
      {FG_ERR_INVALID_ARG, "n_ctx 0", [](fg_attention_args &a) { a.n_ctx = 0; }, d},
      {FG_ERR_OVERFLOW, "cache", [](fg_attention_args &a) { a.n_ctx = SIZE_MAX / 16; }, d},
      {FG_ERR_OVERFLOW, "tokens", [](fg_attention_args &a) { a.n_tok = SIZE_MAX / 8; }, d},
      {FG_ERR_INVALID_ARG, "scale", [](fg_attention_args &a) { a.scale = INFINITY; }, d},
      {FG_ERR_INVALID_ARG, "scale", [](fg_attention_args &a) { a.scale = NAN; }, d},
      {FG_ERR_INVALID_ARG, "NULL q", [](fg_attention_args &a) { a.q = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL k", [](fg_attention_args &a) { a.k = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL v", [](fg_attention_args &a) { a.v = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL pos", [](fg_attention_args &a) { a.pos = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL out", [](fg_attention_args &a) { a.out = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "out overlaps q", [](fg_attention_args &a) { a.out = (float *)a.q + 3; }, d},
      {FG_ERR_INVALID_ARG, "out overlaps k", [](fg_attention_args &a) { a.out = (float *)a.k; }, d},
      {FG_ERR_INVALID_ARG, "out overlaps v", [](fg_attention_args &a) { a.out = (float *)a.v + 60; }, d},
      {FG_ERR_INVALID_ARG, "out overlaps pos", [](fg_attention_args &a) { a.out = (float *)a.pos; }, d},
      {FG_ERR_INVALID_ARG, "out overlaps seq", [](fg_attention_args &a) { a.out = (float *)a.seq; }, d},
      {FG_ERR_INVALID_ARG, "lse overlaps k", [](fg_attention_args &a) { a.lse = (float *)a.k + 1; }, d},
      {FG_ERR_INVALID_ARG, "out overlaps lse", [](fg_attention_args &a) { a.lse = a.out + 8; }, d},
  };
  // Every buffer in one arena, 512 floats apart, so an output moved onto one input
  // overlaps that input only (separate allocations may sit next to each other).
  std::vector<float> arena(8 * 512, 0.0f);
  float *base = arena.data();
  std::memcpy(base, p.q.data(), p.q.size() * 4);
  std::memcpy(base + 512, p.k.data(), p.k.size() * 4);
  std::memcpy(base + 1024, p.v.data(), p.v.size() * 4);
  std::memcpy(base + 1536, p.pos.data(), p.pos.size() * 4);
  std::memcpy(base + 2048, p.seq.data(), p.seq.size() * 4);
  const std::vector<float> arena0 = arena;
  for (const Bad &b : bad) {
    fg_attention_args a = p.args();
    a.q = base, a.k = base + 512, a.v = base + 1024, a.pos = (const int32_t *)(base + 1536);
    a.seq = (const int32_t *)(base + 2048), a.out = base + 2560, a.lse = base + 3072;
    b.edit(a);
    b.edit(a);
    EXPECT_EQ(b.st, fg_attention_forward(b.dev, &a, nullptr)) << b.words;
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), b.words)) << fg_last_error();
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), "fg_attention_forward")) << fg_last_error();
  }
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_attention_forward(cpu.dev, nullptr, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "NULL args")) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(arena.data(), arena0.data(), arena.size() * 4));
  // No tokens: nothing to do, no pointer read.
  fg_attention_args z = {};
  z.n_head = 2, z.n_kv_head = 1, z.head_dim = 8, z.n_seq = 1, z.n_ctx = 4, z.scale = 1.0f;
  EXPECT_EQ(FG_OK, fg_attention_forward(cpu.dev, &z, nullptr)) << fg_last_error();
}

}  // namespace
