// Attention's backward (forgia/attention.h): gradients against central finite differences of
// an f64 model of the forward and against an f64 analytic backward; grouped-query heads,
// sliding windows and several sequences; out-of-range tokens as NaN dq rows that add nothing;
// slots no token attends as +0; every refusal before anything is written. CPU == scalar loop
// at every thread count and CPU == CUDA are tests/cpu/test_families.cpp and
// tests/cuda/test_cuda_families.cpp.
#include <gtest/gtest.h>

#include <algorithm>
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

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// One problem with its host buffers: the forward's inputs, its out and lse (from the
// library's forward), dout, and the gradients.
struct Problem {
  size_t n_tok, n_head, n_kv_head, D, n_seq, n_ctx, window = 0;
  std::vector<float> q, k, v, out, lse, dout, dq, dk, dv;
  std::vector<int32_t> seq, pos;
  float scale;
  Problem(size_t t, size_t h, size_t kvh, size_t d, size_t ns, size_t nc, uint64_t seed)
      : n_tok(t), n_head(h), n_kv_head(kvh), D(d), n_seq(ns), n_ctx(nc) {
    q = fgt::gaussian(t * h * d, seed, 1.5f);
    k = fgt::gaussian(ns * kvh * nc * d, seed + 1, 1.5f);
    v = fgt::gaussian(ns * kvh * nc * d, seed + 2);
    dout = fgt::gaussian(t * h * d, seed + 3);
    out.assign(t * h * d, 0.0f), lse.assign(t * h, 0.0f);
    dq.assign(t * h * d, 7.0f), dk.assign(ns * kvh * nc * d, 7.0f), dv.assign(ns * kvh * nc * d, 7.0f);
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
  fg_attention_grads grads() { return {dout.data(), dq.data(), dk.data(), dv.data()}; }
  // The library's forward, then its backward.
  void run(fg_device *dev) {
    fg_attention_args a = args();
    ASSERT_EQ(FG_OK, fg_attention_forward(dev, &a, nullptr)) << fg_last_error();
    const fg_attention_grads g = grads();
    ASSERT_EQ(FG_OK, fg_attention_backward(dev, &a, &g, nullptr)) << fg_last_error();
  }
  bool in_range(size_t t) const {
    return seq[t] >= 0 && (size_t)seq[t] < n_seq && pos[t] >= 0 && (size_t)pos[t] < n_ctx;
  }
  size_t lo(size_t t) const { return window && (size_t)pos[t] + 1 > window ? (size_t)pos[t] + 1 - window : 0; }
  size_t cache_row(size_t t, size_t h, size_t j) const {
    return (((size_t)seq[t] * n_kv_head + h / (n_head / n_kv_head)) * n_ctx + j);
  }
  // The f64 model of the forward on (Q, K, V): out, and the softmax weights per row.
  void forward64(const std::vector<double> &Q, const std::vector<double> &K, const std::vector<double> &V,
                 std::vector<double> *o, std::vector<std::vector<double>> *P) const {
    o->assign(n_tok * n_head * D, 0.0);
    P->assign(n_tok * n_head, {});
    for (size_t t = 0; t < n_tok; t++) {
      if (!in_range(t)) continue;
      for (size_t h = 0; h < n_head; h++) {
        const size_t row = t * n_head + h;
        std::vector<double> &p = (*P)[row];
        double m = -INFINITY;
        for (size_t j = lo(t); j <= (size_t)pos[t]; j++) {
          double dot = 0;
          for (size_t d = 0; d < D; d++) dot += Q[row * D + d] * K[cache_row(t, h, j) * D + d];
          p.push_back((double)scale * dot);
          m = std::max(m, p.back());
        }
        double sum = 0;
        for (double &x : p) sum += (x = std::exp(x - m));
        for (double &x : p) x /= sum;
        for (size_t j = lo(t); j <= (size_t)pos[t]; j++)
          for (size_t d = 0; d < D; d++) (*o)[row * D + d] += p[j - lo(t)] * V[cache_row(t, h, j) * D + d];
      }
    }
  }
  std::vector<double> d64(const std::vector<float> &x) const { return std::vector<double>(x.begin(), x.end()); }
  // sum(out * dout) in f64: the loss whose gradients the backward computes.
  double loss(const std::vector<double> &Q, const std::vector<double> &K, const std::vector<double> &V) const {
    std::vector<double> o;
    std::vector<std::vector<double>> P;
    forward64(Q, K, V, &o, &P);
    double l = 0;
    for (size_t t = 0; t < n_tok; t++)
      for (size_t i = t * n_head * D; in_range(t) && i < (t + 1) * n_head * D; i++) l += o[i] * (double)dout[i];
    return l;
  }
  // The f64 analytic backward: ds_j = p_j (dp_j - dout . out), dq = scale sum ds_j k_j,
  // dk_j = scale sum ds_j q, dv_j = sum p_j dout.
  void backward64(std::vector<double> *gq, std::vector<double> *gk, std::vector<double> *gv) const {
    const std::vector<double> Q = d64(q), K = d64(k), V = d64(v);
    std::vector<double> o;
    std::vector<std::vector<double>> P;
    forward64(Q, K, V, &o, &P);
    gq->assign(q.size(), 0.0), gk->assign(k.size(), 0.0), gv->assign(v.size(), 0.0);
    for (size_t t = 0; t < n_tok; t++) {
      if (!in_range(t)) continue;
      for (size_t h = 0; h < n_head; h++) {
        const size_t row = t * n_head + h;
        double Dt = 0;
        for (size_t d = 0; d < D; d++) Dt += (double)dout[row * D + d] * o[row * D + d];
        for (size_t j = lo(t); j <= (size_t)pos[t]; j++) {
          const size_t kr = cache_row(t, h, j);
          const double p = P[row][j - lo(t)];
          double dp = 0;
          for (size_t d = 0; d < D; d++) dp += (double)dout[row * D + d] * V[kr * D + d];
          const double ds = p * (dp - Dt);
          for (size_t d = 0; d < D; d++) {
            (*gq)[row * D + d] += (double)scale * ds * K[kr * D + d];
            (*gk)[kr * D + d] += (double)scale * ds * Q[row * D + d];
            (*gv)[kr * D + d] += p * (double)dout[row * D + d];
          }
        }
      }
    }
  }
};

// |got - want| <= tol * (1 + |want|) elementwise (NaN fails).
void expect_close(const std::vector<float> &got, const std::vector<double> &want, double tol, const char *what) {
  for (size_t i = 0; i < got.size(); i++)
    EXPECT_LE(std::fabs((double)got[i] - want[i]) / (1 + std::fabs(want[i])), tol)
        << what << "[" << i << "] = " << got[i] << ", want " << want[i];
}

// A model with 9 query heads over 3 kv heads (SmolLM2-135M's grouping), a window and two
// sequences, at positions that do not start at 0: the library's gradients within 3e-6 of the
// f64 analytic backward (relative to 1 + |g|; the f32 sums run over at most 24 slots).
TEST(AttentionBackward, MatchesTheF64AnalyticBackward) {
  Cpu cpu;
  Problem p(20, 9, 3, 64, 2, 24, 11);
  p.window = 9;
  for (size_t t = 0; t < p.n_tok; t++) p.seq[t] = (int32_t)(t % 2), p.pos[t] = (int32_t)(4 + t / 2 + (t % 3));
  p.run(cpu.dev);
  std::vector<double> gq, gk, gv;
  p.backward64(&gq, &gk, &gv);
  expect_close(p.dq, gq, 3e-6, "dq");
  expect_close(p.dk, gk, 3e-6, "dk");
  expect_close(p.dv, gv, 3e-6, "dv");
}

// Central differences of the f64 forward's loss sum(out * dout), for every element of q, k
// and v of a small problem with GQA, a window and two sequences: first the f64 analytic
// backward (within 1e-8, so the model's gradient is the loss's), then the library (within
// 1e-5 of 1 + |g|: f32 arithmetic against f64 differences).
TEST(AttentionBackward, MatchesFiniteDifferencesOfTheForward) {
  Cpu cpu;
  Problem p(7, 4, 2, 8, 2, 6, 12);
  p.window = 4;
  p.seq = {0, 1, 0, 1, 1, 0, 0};
  p.pos = {0, 2, 3, 5, 1, 5, 2};
  p.run(cpu.dev);
  std::vector<double> gq, gk, gv;
  p.backward64(&gq, &gk, &gv);
  const double h = 1e-5;
  std::vector<double> Q = p.d64(p.q), K = p.d64(p.k), V = p.d64(p.v);
  for (int which = 0; which < 3; which++) {
    std::vector<double> &x = which == 0 ? Q : which == 1 ? K : V;
    const std::vector<double> &g = which == 0 ? gq : which == 1 ? gk : gv;
    std::vector<double> fd(x.size());
    for (size_t i = 0; i < x.size(); i++) {
      const double x0 = x[i];
      x[i] = x0 + h;
      const double up = p.loss(Q, K, V);
      x[i] = x0 - h;
      const double down = p.loss(Q, K, V);
      x[i] = x0;
      fd[i] = (up - down) / (2 * h);
      EXPECT_NEAR(g[i], fd[i], 1e-8 * (1 + std::fabs(fd[i]))) << which << "[" << i << "]";
    }
    const char *name = which == 0 ? "dq" : which == 1 ? "dk" : "dv";
    expect_close(which == 0 ? p.dq : which == 1 ? p.dk : p.dv, fd, 3e-6, name);
  }
}

// A training-like batch: one sequence of 96 consecutive tokens, 9 heads over 3 kv heads,
// head_dim 64. dk and dv of slot 0 sum 96 tokens x 3 heads in f32, so the bound is 8e-6.
TEST(AttentionBackward, ALongCausalSequenceMatchesTheModel) {
  Cpu cpu;
  Problem p(96, 9, 3, 64, 1, 96, 13);
  p.run(cpu.dev);
  std::vector<double> gq, gk, gv;
  p.backward64(&gq, &gk, &gv);
  expect_close(p.dq, gq, 8e-6, "dq");
  expect_close(p.dk, gk, 8e-6, "dk");
  expect_close(p.dv, gv, 8e-6, "dv");
}

// A token out of range gets a canonical NaN dq row and adds nothing: dk and dv have the bits
// of the call without it, and so do the other tokens' dq rows.
TEST(AttentionBackward, TokensOutOfRangeGetNanRowsAndAddNothing) {
  Cpu cpu;
  Problem p(6, 4, 2, 8, 2, 10, 14);
  p.seq = {0, 2, 1, -1, 0, 1};
  p.pos = {3, 1, 10, 2, -5, 9};
  p.run(cpu.dev);
  for (size_t t : {1, 2, 3, 4})
    for (size_t i = 0; i < 4 * 8; i++) EXPECT_EQ(0x7fc00000u, bits(p.dq[t * 32 + i])) << t;
  Problem r(2, 4, 2, 8, 2, 10, 14);
  r.q.assign(p.q.begin(), p.q.begin() + 32), r.q.insert(r.q.end(), p.q.begin() + 5 * 32, p.q.end());
  r.dout.assign(p.dout.begin(), p.dout.begin() + 32);
  r.dout.insert(r.dout.end(), p.dout.begin() + 5 * 32, p.dout.end());
  r.k = p.k, r.v = p.v, r.seq = {0, 1}, r.pos = {3, 9};
  r.run(cpu.dev);
  EXPECT_EQ(0, std::memcmp(r.dk.data(), p.dk.data(), p.dk.size() * 4));
  EXPECT_EQ(0, std::memcmp(r.dv.data(), p.dv.data(), p.dv.size() * 4));
  EXPECT_EQ(0, std::memcmp(r.dq.data(), p.dq.data(), 32 * 4));
  EXPECT_EQ(0, std::memcmp(r.dq.data() + 32, p.dq.data() + 5 * 32, 32 * 4));
  std::vector<double> gq, gk, gv;
  p.backward64(&gq, &gk, &gv);
  expect_close(p.dk, gk, 3e-6, "dk");
  expect_close(p.dv, gv, 3e-6, "dv");
}

// Slots that no token attends (past the last position, before a window, in a sequence with
// no tokens) are +0 in dk and dv, for either sign of scale; the attended ones are not.
TEST(AttentionBackward, SlotsNoTokenAttendsArePositiveZero) {
  Cpu cpu;
  for (float sign : {1.0f, -1.0f}) {
    Problem p(4, 2, 1, 16, 3, 12, 15);
    p.window = 3, p.scale *= sign;
    p.seq = {0, 0, 2, 2};
    p.pos = {5, 6, 2, 3};
    p.run(cpu.dev);
    for (size_t sq = 0; sq < 3; sq++)
      for (size_t j = 0; j < 12; j++) {
        const bool attended = (sq == 0 && j >= 3 && j <= 6) || (sq == 2 && j <= 3);
        const size_t base = (sq * 12 + j) * 16;
        size_t zeros = 0;
        for (size_t d = 0; d < 16; d++) zeros += bits(p.dk[base + d]) == 0 && bits(p.dv[base + d]) == 0;
        EXPECT_EQ(attended ? 0u : 16u, zeros) << sq << "," << j << ", scale " << p.scale;
      }
    if (sign < 0) {
      std::vector<double> gq, gk, gv;
      p.backward64(&gq, &gk, &gv);
      expect_close(p.dq, gq, 3e-6, "dq");
      expect_close(p.dk, gk, 3e-6, "dk");
    }
  }
  // No tokens: every slot of dk and dv is written +0; dq is not touched.
  Problem z(0, 2, 1, 16, 3, 12, 15);
  z.scale = -z.scale;
  fg_attention_args a = z.args();
  a.q = nullptr, a.out = nullptr, a.pos = nullptr;
  fg_attention_grads g = z.grads();
  g.dq = nullptr, g.dout = nullptr;
  ASSERT_EQ(FG_OK, fg_attention_backward(cpu.dev, &a, &g, nullptr)) << fg_last_error();
  for (size_t i = 0; i < z.dk.size(); i++) ASSERT_TRUE(bits(z.dk[i]) == 0 && bits(z.dv[i]) == 0) << i;
}

// Grouped-query heads: the kv head's gradient is the sum over its group, in head order, so a
// model where each query head has its own copy of the kv head gives dq bitwise, and dk, dv
// that sum (in f64) to the grouped ones.
TEST(AttentionBackward, GroupedHeadsSumIntoTheirKvHead) {
  Cpu cpu;
  Problem g(5, 6, 2, 16, 1, 8, 16);
  for (size_t t = 0; t < g.n_tok; t++) g.pos[t] = (int32_t)(3 + t);
  g.run(cpu.dev);
  Problem m = g;
  m.n_kv_head = 6;
  m.k.assign(6 * 8 * 16, 0.0f), m.v.assign(6 * 8 * 16, 0.0f);
  m.dk.assign(6 * 8 * 16, 7.0f), m.dv.assign(6 * 8 * 16, 7.0f);
  for (size_t h = 0; h < 6; h++) {
    std::memcpy(&m.k[h * 8 * 16], &g.k[(h / 3) * 8 * 16], 8 * 16 * 4);
    std::memcpy(&m.v[h * 8 * 16], &g.v[(h / 3) * 8 * 16], 8 * 16 * 4);
  }
  m.run(cpu.dev);
  EXPECT_EQ(0, std::memcmp(g.dq.data(), m.dq.data(), g.dq.size() * 4));
  for (size_t kvh = 0; kvh < 2; kvh++)
    for (size_t i = 0; i < 8 * 16; i++) {
      double sk = 0, sv = 0;
      for (size_t h = kvh * 3; h < kvh * 3 + 3; h++) sk += m.dk[h * 8 * 16 + i], sv += m.dv[h * 8 * 16 + i];
      EXPECT_NEAR(g.dk[kvh * 8 * 16 + i], sk, 4e-6 * (1 + std::fabs(sk))) << kvh << "," << i;
      EXPECT_NEAR(g.dv[kvh * 8 * 16 + i], sv, 4e-6 * (1 + std::fabs(sv))) << kvh << "," << i;
    }
}

TEST(AttentionBackward, RefusesBadCallsBeforeWriting) {
  Cpu cpu;
  Problem p(2, 4, 2, 8, 1, 4, 17);
  struct Bad {
    fg_status st;
    const char *words;
    std::function<void(fg_attention_args &, fg_attention_grads &)> edit;
    fg_device *dev;
  };
  using A = fg_attention_args;
  using G = fg_attention_grads;
  fg_device *d = cpu.dev;
  const std::vector<Bad> bad = {
      {FG_ERR_INVALID_ARG, "NULL device", [](A &, G &) {}, nullptr},
      {FG_ERR_INVALID_ARG, "n_kv_head", [](A &a, G &) { a.n_kv_head = 3; }, d},
      {FG_ERR_INVALID_ARG, "n_kv_head", [](A &a, G &) { a.n_kv_head = 0; }, d},
      {FG_ERR_INVALID_ARG, "head_dim 0", [](A &a, G &) { a.head_dim = 0; }, d},
      {FG_ERR_INVALID_ARG, "n_ctx 0", [](A &a, G &) { a.n_ctx = 0; }, d},
      {FG_ERR_OVERFLOW, "cache", [](A &a, G &) { a.n_ctx = SIZE_MAX / 16; }, d},
      {FG_ERR_OVERFLOW, "tokens", [](A &a, G &) { a.n_tok = SIZE_MAX / 8; }, d},
      {FG_ERR_INVALID_ARG, "scale", [](A &a, G &) { a.scale = INFINITY; }, d},
      {FG_ERR_INVALID_ARG, "scale", [](A &a, G &) { a.scale = NAN; }, d},
      {FG_ERR_INVALID_ARG, "NULL lse", [](A &a, G &) { a.lse = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL q", [](A &a, G &) { a.q = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL k", [](A &a, G &) { a.k = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL v", [](A &a, G &) { a.v = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL pos", [](A &a, G &) { a.pos = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL out", [](A &a, G &) { a.out = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL dout", [](A &, G &g) { g.dout = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL dq", [](A &, G &g) { g.dq = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL dk", [](A &, G &g) { g.dk = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "NULL dv", [](A &, G &g) { g.dv = nullptr; }, d},
      {FG_ERR_INVALID_ARG, "dq overlaps q", [](A &a, G &g) { g.dq = (float *)a.q + 3; }, d},
      {FG_ERR_INVALID_ARG, "dq overlaps dout", [](A &, G &g) { g.dq = (float *)g.dout; }, d},
      {FG_ERR_INVALID_ARG, "dq overlaps lse", [](A &a, G &g) { g.dq = a.lse + 1; }, d},
      {FG_ERR_INVALID_ARG, "dk overlaps k", [](A &a, G &g) { g.dk = (float *)a.k; }, d},
      {FG_ERR_INVALID_ARG, "dk overlaps v", [](A &a, G &g) { g.dk = (float *)a.v + 60; }, d},
      {FG_ERR_INVALID_ARG, "dk overlaps seq", [](A &a, G &g) { g.dk = (float *)a.seq; }, d},
      {FG_ERR_INVALID_ARG, "dv overlaps out", [](A &a, G &g) { g.dv = a.out + 2; }, d},
      {FG_ERR_INVALID_ARG, "dv overlaps pos", [](A &a, G &g) { g.dv = (float *)a.pos; }, d},
      {FG_ERR_INVALID_ARG, "dq overlaps dk", [](A &, G &g) { g.dk = g.dq + 10; }, d},
      {FG_ERR_INVALID_ARG, "dq overlaps dv", [](A &, G &g) { g.dv = g.dq + 63; }, d},
      {FG_ERR_INVALID_ARG, "dk overlaps dv", [](A &, G &g) { g.dv = g.dk + 5; }, d},
  };
  // Every buffer in one arena, 512 floats apart, so an output moved onto one buffer overlaps
  // that buffer only.
  std::vector<float> arena(12 * 512, 0.0f);
  float *base = arena.data();
  std::memcpy(base, p.q.data(), p.q.size() * 4);
  std::memcpy(base + 512, p.k.data(), p.k.size() * 4);
  std::memcpy(base + 1024, p.v.data(), p.v.size() * 4);
  std::memcpy(base + 1536, p.pos.data(), p.pos.size() * 4);
  std::memcpy(base + 2048, p.seq.data(), p.seq.size() * 4);
  std::memcpy(base + 3584, p.dout.data(), p.dout.size() * 4);
  const std::vector<float> arena0 = arena;
  for (const Bad &b : bad) {
    fg_attention_args a = p.args();
    a.q = base, a.k = base + 512, a.v = base + 1024, a.pos = (const int32_t *)(base + 1536);
    a.seq = (const int32_t *)(base + 2048), a.out = base + 2560, a.lse = base + 3072;
    fg_attention_grads g = {base + 3584, base + 4096, base + 4608, base + 5120};
    b.edit(a, g);
    EXPECT_EQ(b.st, fg_attention_backward(b.dev, &a, &g, nullptr)) << b.words;
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), b.words)) << b.words << ": " << fg_last_error();
    EXPECT_NE(nullptr, std::strstr(fg_last_error(), "fg_attention_backward")) << fg_last_error();
  }
  fg_attention_args a = p.args();
  fg_attention_grads g = p.grads();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_attention_backward(cpu.dev, nullptr, &g, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "NULL args")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_attention_backward(cpu.dev, &a, nullptr, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "NULL grads")) << fg_last_error();
  EXPECT_EQ(0, std::memcmp(arena.data(), arena0.data(), arena.size() * 4));
}

}  // namespace
