// PTQTP (forgia/ptqtp.h): Fucina's own plane bytes and statistics for every case of
// tests/data/golden/fucina_ptqtp.txt (tests/data/fucina_gen/gen_ptqtp.zig) at 1, 2 and 7
// threads; exact recovery of a ternary matrix; the error ordering K=3 < K=2 < K=1 < absmean
// on gaussian weights; non-finite values confined to their element; the TQ2_0 layout
// against forgia's encoder; the tied fit's ratio; option and shape checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "forgia/ptqtp.h"
#include "forgia/quant.h"
#include "golden_reader.h"
#include "testutil.h"

namespace {

struct Planes {
  std::vector<uint8_t> p[3];
  fg_ptqtp_stats stats{};
  fg_status st = FG_OK;
};

Planes quantize(const std::vector<float> &w, uint64_t rows, uint64_t cols, fg_ptqtp_options o) {
  Planes r;
  uint64_t bytes = 0;
  EXPECT_EQ(FG_OK, fg_ptqtp_plane_bytes(rows, cols, &bytes)) << fg_last_error();
  void *ptrs[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < o.planes; k++) {
    r.p[k].assign(bytes, 0xAA);
    ptrs[k] = r.p[k].data();
  }
  r.st = fg_ptqtp_quantize(w.data(), rows, cols, &o, ptrs, &r.stats);
  EXPECT_EQ(FG_OK, r.st) << fg_last_error();
  return r;
}

std::vector<float> reconstruct(const Planes &q, int k, uint64_t rows, uint64_t cols) {
  std::vector<float> out(rows * cols);
  const void *ptrs[3] = {q.p[0].data(), k >= 2 ? q.p[1].data() : nullptr, k == 3 ? q.p[2].data() : nullptr};
  EXPECT_EQ(FG_OK, fg_ptqtp_reconstruct(ptrs, k, rows, cols, out.data())) << fg_last_error();
  return out;
}

double rel_err(const std::vector<float> &w, const std::vector<float> &rec) {
  double e = 0, n = 0;
  for (size_t i = 0; i < w.size(); i++) {
    if (!std::isfinite(w[i])) continue;
    const double d = (double)w[i] - (double)rec[i];
    e += d * d;
    n += (double)w[i] * (double)w[i];
  }
  return n > 0 ? std::sqrt(e / n) : 0;
}

uint64_t bits(double x) {
  uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}

fg_ptqtp_options opts(int planes, bool tie = false, int threads = 1) {
  fg_ptqtp_options o = fg_ptqtp_options_default();
  o.planes = planes;
  o.tie_scales = tie;
  o.threads = threads;
  return o;
}

// ---- Fucina's goldens ----

struct GoldenCase {
  std::string name, kind;
  uint64_t rows = 0, cols = 0, seed = 0;
  int planes = 0, tie = 0, max_iterations = 50, zero_group = -1, nonfinite = 0;
  float scale = 0, epsilon = 0;
  uint64_t input_fnv = 0;
  std::string plane_hex[3];
  uint64_t plane_fnv[3] = {0, 0, 0};
  uint64_t rel = 0, zero[3] = {0, 0, 0}, iters = 0, unconverged = 0, groups = 0;
};

float f32_of(const std::string &hex) {
  const uint32_t u = (uint32_t)std::stoul(hex, nullptr, 16);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cs;
  fgt::golden_lines("fucina_ptqtp.txt", [&](const std::string &tag, std::istringstream &ss, const std::string &) {
    if (tag == "case") {
      cs.emplace_back();
      GoldenCase &c = cs.back();
      fgt::golden_fields(ss, [&](const std::string &k, const std::string &v) {
        if (k == "name") c.name = v;
        else if (k == "rows") c.rows = std::stoull(v);
        else if (k == "cols") c.cols = std::stoull(v);
        else if (k == "planes") c.planes = std::stoi(v);
        else if (k == "tie") c.tie = std::stoi(v);
        else if (k == "kind") c.kind = v;
        else if (k == "seed") c.seed = std::stoull(v);
        else if (k == "scale") c.scale = f32_of(v);
        else if (k == "zero_group") c.zero_group = std::stoi(v);
        else if (k == "nonfinite") c.nonfinite = std::stoi(v);
        else if (k == "max_iterations") c.max_iterations = std::stoi(v);
        else if (k == "epsilon") c.epsilon = f32_of(v);
        else ADD_FAILURE() << "unknown case field " << k;
      });
    } else if (tag == "input") {
      fgt::golden_fields(ss, [&](const std::string &, const std::string &v) { cs.back().input_fnv = std::stoull(v, nullptr, 16); });
    } else if (tag == "plane") {
      int p = -1;
      fgt::golden_fields(ss, [&](const std::string &k, const std::string &v) {
        if (k == "p") p = std::stoi(v);
        else if (k == "bytes") cs.back().plane_hex[p] = v;
        else if (k == "fnv") cs.back().plane_fnv[p] = std::stoull(v, nullptr, 16);
      });
    } else if (tag == "stats") {
      GoldenCase &c = cs.back();
      fgt::golden_fields(ss, [&](const std::string &k, const std::string &v) {
        if (k == "rel") c.rel = std::stoull(v, nullptr, 16);
        else if (k == "zero") {
          for (int p = 0; p < 3; p++) c.zero[p] = std::stoull(v.substr(17 * (size_t)p, 16), nullptr, 16);
        } else if (k == "iters") c.iters = std::stoull(v, nullptr, 16);
        else if (k == "unconverged") c.unconverged = std::stoull(v);
        else if (k == "groups") c.groups = std::stoull(v);
      });
    }
  });
  return cs;
}

// The generator's inputs, rebuilt (gen_ptqtp.zig's header).
std::vector<float> golden_input(const GoldenCase &c) {
  const size_t n = c.rows * c.cols;
  std::vector<float> w = fgt::golden_stream(c.seed, n, c.scale);
  if (c.kind == "cube") {
    for (float &v : w) v = v * v * v;
  } else if (c.kind == "ternary") {
    for (size_t i = 0; i < n; i++) w[i] = 0.5f * (float)((int64_t)(fg_rng_at(c.seed, i) % 3) - 1);
  } else {
    EXPECT_EQ("uniform", c.kind);
  }
  if (c.zero_group >= 0) std::fill(w.begin() + 256 * c.zero_group, w.begin() + 256 * (c.zero_group + 1), 0.0f);
  if (c.nonfinite) {
    w[5] = std::numeric_limits<float>::quiet_NaN();
    w[300] = std::numeric_limits<float>::infinity();
    w[700] = -std::numeric_limits<float>::infinity();
  }
  return w;
}

TEST(Ptqtp, FucinaGoldenBytesAndStatsAtAnyThreadCount) {
  const std::vector<GoldenCase> cs = golden_cases();
  ASSERT_GE(cs.size(), 25u);
  int tied = 0, nonfinite = 0, unconverged = 0, hexed = 0;
  for (const GoldenCase &c : cs) {
    SCOPED_TRACE(c.name);
    const std::vector<float> w = golden_input(c);
    ASSERT_EQ(c.input_fnv, fgt::golden_fnv(w.data(), w.size() * 4)) << "input rebuilt differently";
    tied += c.tie;
    nonfinite += c.nonfinite;
    unconverged += c.unconverged != 0;
    for (int threads : {1, 2, 7}) {
      SCOPED_TRACE(threads);
      fg_ptqtp_options o = opts(c.planes, c.tie != 0, threads);
      o.max_iterations = c.max_iterations;
      o.epsilon = c.epsilon;
      const Planes q = quantize(w, c.rows, c.cols, o);
      for (int p = 0; p < c.planes; p++) {
        if (!c.plane_hex[p].empty()) {
          hexed++;
          EXPECT_EQ(fgt::golden_hex_bytes(c.plane_hex[p]), q.p[p]) << "plane " << p;
        } else {
          EXPECT_EQ(c.plane_fnv[p], fgt::golden_fnv(q.p[p].data(), q.p[p].size())) << "plane " << p;
        }
      }
      EXPECT_EQ(c.rel, bits(q.stats.rel_frob_err));
      for (int p = 0; p < 3; p++) EXPECT_EQ(c.zero[p], bits(q.stats.zero_frac[p])) << "zero_frac " << p;
      EXPECT_EQ(c.iters, bits(q.stats.mean_iterations));
      EXPECT_EQ(c.unconverged, q.stats.unconverged_groups);
      EXPECT_EQ(c.groups, q.stats.group_count);
    }
  }
  // the file covers what it claims to
  EXPECT_GE(tied, 5);
  EXPECT_GE(nonfinite, 3);
  EXPECT_GE(unconverged, 1);
  EXPECT_GT(hexed, 0);
}

// ---- behaviour ----

TEST(Ptqtp, RecoversATernaryMatrixExactly) {
  const uint64_t rows = 3, cols = 512;
  std::vector<float> w(rows * cols);
  for (size_t i = 0; i < w.size(); i++) w[i] = 0.5f * (float)((int64_t)(fg_rng_at(42, i) % 3) - 1);
  const Planes q = quantize(w, rows, cols, opts(1));
  EXPECT_EQ(0.0, q.stats.rel_frob_err);
  const std::vector<float> rec = reconstruct(q, 1, rows, cols);
  EXPECT_EQ(0, std::memcmp(w.data(), rec.data(), w.size() * 4));
  // the layout is TQ2_0's: forgia's own encoder (d = absmax = 0.5) writes the same bytes
  std::vector<uint8_t> ref(q.p[0].size());
  ASSERT_EQ(FG_OK, fg_quant_encode_rows(FG_TQ2_0, w.data(), (int64_t)rows, (int64_t)cols, ref.data(), ref.size()));
  EXPECT_EQ(ref, q.p[0]);
  // a lattice scaled by 2^-3 with a second plane: still exact
  std::vector<float> w2(w.size());
  for (size_t i = 0; i < w.size(); i++) w2[i] = w[i] * 0.25f;
  const Planes q2 = quantize(w2, rows, cols, opts(2));
  const std::vector<float> rec2 = reconstruct(q2, 2, rows, cols);
  EXPECT_EQ(0, std::memcmp(w2.data(), rec2.data(), w2.size() * 4));
}

// b1.58: one d = max(f32(mean|w| in f64), 1e-5) for the matrix, stored as f16, round-clip.
double absmean_err(const std::vector<float> &w) {
  double s = 0;
  for (float v : w) s += std::fabs((double)v);
  const float d = std::fmax((float)(s / (double)w.size()), 1e-5f);
  const float d16 = fg_f16_to_f32(fg_f32_to_f16(d));
  std::vector<float> rec(w.size());
  for (size_t i = 0; i < w.size(); i++) rec[i] = d16 * std::fmax(-1.0f, std::fmin(1.0f, std::round(w[i] / d)));
  return rel_err(w, rec);
}

TEST(Ptqtp, MorePlanesGiveLessErrorThanAbsmean) {
  const uint64_t rows = 8, cols = 1024;
  const std::vector<float> w = fgt::gaussian(rows * cols, 1234, 0.02f);
  double e[4];
  for (int k = 1; k <= 3; k++) {
    const Planes q = quantize(w, rows, cols, opts(k, false, 2));
    e[k] = q.stats.rel_frob_err;
    // the statistic is the packed reconstruction's error
    EXPECT_NEAR(e[k], rel_err(w, reconstruct(q, k, rows, cols)), 1e-12);
    EXPECT_LE(q.stats.mean_iterations, 50);
    for (int p = 0; p < k; p++) EXPECT_GT(q.stats.zero_frac[p], 0) << "K=" << k << " plane " << p;
    if (k >= 2) {
      EXPECT_NE(q.p[0], q.p[1]) << "the symmetric start was not broken";
    }
  }
  e[0] = absmean_err(w);
  EXPECT_LT(e[3], e[2]);
  EXPECT_LT(e[2], e[1]);
  EXPECT_LT(e[1], e[0]);
  // roughly threefold per extra plane, as the reference reports
  EXPECT_LT(e[3], e[2] / 2);
  // the tied fit is a valid quantizer too, between one plane and the free fit of its K
  const Planes t2 = quantize(w, rows, cols, opts(2, true));
  EXPECT_LT(t2.stats.rel_frob_err, e[1]);
  const Planes t3 = quantize(w, rows, cols, opts(3, true));
  EXPECT_LT(t3.stats.rel_frob_err, t2.stats.rel_frob_err);
}

TEST(Ptqtp, NaNIsConfinedToItsElement) {
  const uint64_t rows = 4, cols = 768;
  for (int k = 1; k <= 3; k++) {
    for (bool tie : {false, true}) {
      if (tie && k == 1) continue;
      SCOPED_TRACE(k * 10 + tie);
      std::vector<float> w = fgt::gaussian(rows * cols, 77, 0.05f);
      std::vector<float> zeroed = w;
      w[cols + 300] = std::numeric_limits<float>::quiet_NaN();
      zeroed[cols + 300] = 0.0f;
      // a NaN behaves exactly as an absent (zero) element: same bytes, same statistics
      const Planes qn = quantize(w, rows, cols, opts(k, tie));
      const Planes qz = quantize(zeroed, rows, cols, opts(k, tie));
      for (int p = 0; p < k; p++) EXPECT_EQ(qz.p[p], qn.p[p]) << "plane " << p;
      EXPECT_EQ(bits(qz.stats.rel_frob_err), bits(qn.stats.rel_frob_err));
      EXPECT_TRUE(std::isfinite(qn.stats.rel_frob_err));
      const std::vector<float> rec = reconstruct(qn, k, rows, cols);
      EXPECT_EQ(0.0f, rec[cols + 300]);
      for (float v : rec) ASSERT_TRUE(std::isfinite(v));

      // +-Inf: its own group keeps finite scales, the other groups are untouched
      std::vector<float> wi = zeroed;
      wi[2 * cols + 10] = std::numeric_limits<float>::infinity();
      wi[2 * cols + 11] = -std::numeric_limits<float>::infinity();
      const Planes qi = quantize(wi, rows, cols, opts(k, tie));
      const std::vector<float> ri = reconstruct(qi, k, rows, cols);
      EXPECT_EQ(0.0f, ri[2 * cols + 10]);
      EXPECT_EQ(0.0f, ri[2 * cols + 11]);
      for (float v : ri) ASSERT_TRUE(std::isfinite(v));
      const size_t blk = 2 * (cols / 256) * FG_PTQTP_BLOCK_BYTES; /* row 2, group 0 */
      for (int p = 0; p < k; p++) {
        EXPECT_EQ(0, std::memcmp(qz.p[p].data(), qi.p[p].data(), blk));
        EXPECT_EQ(0, std::memcmp(qz.p[p].data() + blk + 66, qi.p[p].data() + blk + 66, qz.p[p].size() - blk - 66));
      }
      EXPECT_LT(rel_err(wi, ri), 0.5);
    }
  }
}

TEST(Ptqtp, SameBytesForAnyThreadCount) {
  const uint64_t rows = 61, cols = 1280;
  const std::vector<float> w = fgt::gaussian(rows * cols, 9, 0.03f);
  for (int k = 1; k <= 3; k++) {
    for (bool tie : {false, true}) {
      if (tie && k == 1) continue;
      const Planes a = quantize(w, rows, cols, opts(k, tie, 1));
      for (int threads : {2, 7}) {
        const Planes b = quantize(w, rows, cols, opts(k, tie, threads));
        for (int p = 0; p < k; p++) EXPECT_EQ(a.p[p], b.p[p]) << "K=" << k << " tie=" << tie << " threads=" << threads;
        EXPECT_EQ(0, std::memcmp(&a.stats, &b.stats, sizeof a.stats));
      }
    }
  }
}

TEST(Ptqtp, TiedScalesKeepRatioThree) {
  const std::vector<float> w = fgt::gaussian(256, 5, 1.0f);
  for (int k = 2; k <= 3; k++) {
    std::vector<int8_t> t[3] = {std::vector<int8_t>(256), std::vector<int8_t>(256), std::vector<int8_t>(256)};
    int8_t *const tp[3] = {t[0].data(), t[1].data(), t[2].data()};
    float alpha[3];
    int iters = 0;
    bool conv = false;
    fg_ptqtp_options o = opts(k, true);
    ASSERT_EQ(FG_OK, fg_ptqtp_solve_group(w.data(), 256, &o, tp, alpha, &iters, &conv)) << fg_last_error();
    EXPECT_EQ(1, iters);
    EXPECT_TRUE(conv);
    EXPECT_EQ(alpha[k - 2], 3 * alpha[k - 1]);
    if (k == 3) {
      EXPECT_EQ(alpha[0], 9 * alpha[2]);
    }
    for (int p = 0; p < k; p++)
      for (int8_t v : t[p]) ASSERT_TRUE(v >= -1 && v <= 1);
    // the code c = sum 3^(K-1-p) t_p is round(w / s) clamped: a uniform quantizer
    const float s = alpha[k - 1];
    const int L = k == 2 ? 4 : 13;
    for (size_t j = 0; j < 256; j++) {
      int c = 0;
      for (int p = 0; p < k; p++) c = 3 * c + t[p][j];
      EXPECT_EQ((float)std::max(-L, std::min(L, (int)std::round(w[j] / s))), (float)c) << j;
    }
  }
  // a free group of any length reports its signed scales
  const float tiny[3] = {-0.5f, 0.0f, -0.5f};
  int8_t a[3], b[3], c[3];
  int8_t *const tp[3] = {a, b, c};
  float alpha[3];
  fg_ptqtp_options o = opts(1);
  ASSERT_EQ(FG_OK, fg_ptqtp_solve_group(tiny, 3, &o, tp, alpha, nullptr, nullptr));
  EXPECT_FLOAT_EQ(0.5f, std::fabs(alpha[0]));
  EXPECT_EQ(-0.5f, alpha[0] * (float)a[0]);
  EXPECT_EQ(0, a[1]);
}

TEST(Ptqtp, AllZeroMatrixPacksToZero) {
  const std::vector<float> w(2 * 256, 0.0f);
  for (int k = 1; k <= 3; k++) {
    const Planes q = quantize(w, 2, 256, opts(k));
    for (int p = 0; p < k; p++)
      for (size_t b = 0; b < 2; b++) {
        for (int i = 0; i < 64; i++) EXPECT_EQ(0x55, q.p[p][b * 66 + i]); /* code 1 = trit 0 */
        EXPECT_EQ(0, q.p[p][b * 66 + 64] | q.p[p][b * 66 + 65]);
      }
    EXPECT_EQ(0.0, q.stats.rel_frob_err);
    EXPECT_EQ(1.0, q.stats.zero_frac[0]);
  }
}

TEST(Ptqtp, ChecksOptionsAndShapes) {
  const std::vector<float> w(512, 1.0f);
  std::vector<uint8_t> p0(2 * 66), p1(2 * 66);
  void *ptrs[3] = {p0.data(), p1.data(), nullptr};
  fg_ptqtp_options o = opts(4);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_ptqtp_quantize(w.data(), 1, 512, &o, ptrs, nullptr));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("planes = 4"));
  o = opts(0);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_ptqtp_quantize(w.data(), 1, 512, &o, ptrs, nullptr));
  o = opts(1, true);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_ptqtp_quantize(w.data(), 1, 512, &o, ptrs, nullptr));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("tie_scales"));
  o = opts(2);
  o.max_iterations = 0;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_ptqtp_quantize(w.data(), 1, 512, &o, ptrs, nullptr));
  o = opts(2);
  o.lambda_max = 0;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_ptqtp_quantize(w.data(), 1, 512, &o, ptrs, nullptr));
  o = opts(2);
  o.epsilon = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_ptqtp_quantize(w.data(), 1, 512, &o, ptrs, nullptr));
  o = opts(2);
  EXPECT_EQ(FG_OK, fg_ptqtp_quantize(w.data(), 2, 256, &o, ptrs, nullptr)) << fg_last_error();
  EXPECT_EQ(FG_ERR_BAD_ROW, fg_ptqtp_quantize(w.data(), 1, 300, &o, ptrs, nullptr));
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_ptqtp_quantize(w.data(), 0, 512, &o, ptrs, nullptr));
  o = opts(3);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_ptqtp_quantize(w.data(), 1, 512, &o, ptrs, nullptr));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("plane 2 of 3 is NULL"));
  uint64_t bytes = 0;
  EXPECT_EQ(FG_ERR_OVERFLOW, fg_ptqtp_plane_bytes(UINT64_MAX / 256, 1ull << 40, &bytes));
  // a plane holding code 3 is not TQ2_0
  p0[7] = 0xFF;
  const void *cp[3] = {p0.data(), nullptr, nullptr};
  std::vector<float> out(512);
  EXPECT_EQ(FG_ERR_RANGE, fg_ptqtp_reconstruct(cp, 1, 1, 512, out.data()));
}

}  // namespace
