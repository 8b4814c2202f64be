// GEMM on the CPU: the exact mode against its definition (memcmp), its thread and kernel
// invariance, the fast mode against the exact one (the one tolerance test), BLAS's rules for
// alpha/beta/k == 0, the per-device mode, and validation.
#include <gtest/gtest.h>
#include <omp.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "gemm_ref.h"
#include "testutil.h"

using fgt::Operand;

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  ~Cpu() { fg_device_close(dev); }
};

struct Case {
  size_t m, n, k;
  bool ta, tb;
  fg_dtype at, bt;
  float alpha, beta;
  size_t pad;  // extra columns in every leading dimension
};

// Operands for a case; C starts gaussian with a sentinel in its padding.
struct Problem {
  Case cs;
  Operand a, b;
  size_t ldc;
  std::vector<float> c0;
  explicit Problem(const Case &x, uint64_t seed) : cs(x) {
    size_t ar = x.ta ? x.k : x.m, ac = x.ta ? x.m : x.k, br = x.tb ? x.n : x.k, bc = x.tb ? x.k : x.n;
    a = Operand(x.at, ar, ac, ac + x.pad, seed);
    b = Operand(x.bt, br, bc, bc + x.pad, seed + 1);
    ldc = x.n + x.pad;
    c0 = fgt::gaussian(x.m * ldc + 1, seed + 2);
    for (size_t i = 0; i < x.m; i++)
      for (size_t j = x.n; j < ldc; j++) c0[i * ldc + j] = 12345.0f;
  }
  std::vector<float> reference() const {
    std::vector<float> c = c0;
    fgt::ref_gemm(cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a, b, cs.beta, c.data(), ldc);
    return c;
  }
  fg_status run(fg_device *dev, fg_gemm_mode mode, std::vector<float> &c) const {
    c = c0;
    return fg_gemm(dev, mode, cs.ta, cs.tb, cs.m, cs.n, cs.k, cs.alpha, a.data(), a.type, a.ld, b.data(), b.type, b.ld,
                   cs.beta, c.data(), ldc, nullptr);
  }
};

std::string describe(const Case &c) {
  char s[200];
  snprintf(s, sizeof s, "m %zu n %zu k %zu ta %d tb %d %s x %s alpha %g beta %g pad %zu", c.m, c.n, c.k, c.ta, c.tb,
           fg_dtype_name(c.at), fg_dtype_name(c.bt), c.alpha, c.beta, c.pad);
  return s;
}

// Shapes below and above the direct path's size (32768 multiply-adds), across tile edges
// (96 rows, 256 and 128 columns), k across the 256-step blocks.
const size_t kShapes[][3] = {{1, 1, 1},    {1, 7, 3},     {5, 1, 9},      {3, 5, 1},     {17, 19, 23},
                             {2, 3, 4097}, {33, 65, 300}, {97, 257, 256}, {100, 70, 513}, {130, 300, 257},
                             {1, 1000, 40}, {200, 1, 300}};
const fg_dtype kTypes[][2] = {{FG_F32, FG_F32}, {FG_BF16, FG_BF16}, {FG_F32, FG_BF16}, {FG_BF16, FG_F32}};
const float kAlphaBeta[][2] = {{1.0f, 0.0f}, {0.5f, 0.0f}, {1.0f, 1.0f}, {-1.5f, 0.25f}, {2.0f, -1.0f}};

}  // namespace

TEST(Gemm, ExactMatchesDefinitionBitwise) {
  Cpu cpu;
  size_t t = 0;
  for (auto &s : kShapes)
    for (int tr = 0; tr < 4; tr++)
      for (auto &ty : kTypes) {
        const float *ab = kAlphaBeta[t % 5];
        Case c{s[0], s[1], s[2], (tr & 1) != 0, (tr & 2) != 0, ty[0], ty[1], ab[0], ab[1], (t % 3 == 1) ? 3u : 0u};
        Problem p(c, 100 + t++);
        std::vector<float> want = p.reference(), got;
        ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_EXACT, got)) << fg_last_error();
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << describe(c);
      }
}

TEST(Gemm, ExactAlphaBetaCases) {
  Cpu cpu;
  const float alphas[] = {1.0f, -1.0f, 0.5f, 3.0f, 1e-30f};
  const float betas[] = {0.0f, 1.0f, -1.0f, 0.75f, 1e30f};
  uint64_t seed = 7;
  for (float al : alphas)
    for (float be : betas)
      for (auto &s : {std::array<size_t, 3>{7, 9, 11}, std::array<size_t, 3>{40, 50, 60}}) {
        Case c{s[0], s[1], s[2], false, true, FG_F32, FG_F32, al, be, 1};
        Problem p(c, seed++);
        std::vector<float> want = p.reference(), got;
        ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_EXACT, got)) << fg_last_error();
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << describe(c);
      }
}

// Fucina's scalar backend (src/backend/cpu.zig, matmul2D / matmulTransA / matmulTransB and
// the accumulate twin): `var acc: f32 = 0; for p: acc += a * b; out = acc` (or out += acc).
TEST(Gemm, ExactIsFucinaScalarMatmul) {
  Cpu cpu;
  const size_t m = 37, n = 45, k = 300;
  for (int tr = 0; tr < 3; tr++) {
    bool ta = tr == 1, tb = tr == 2;
    Operand a(FG_F32, ta ? k : m, ta ? m : k, ta ? m : k, 900 + tr), b(FG_F32, tb ? n : k, tb ? k : n, tb ? k : n, 950);
    std::vector<float> want(m * n), got(m * n, -1.0f), base = fgt::gaussian(m * n, 77);
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        float acc = 0;
        for (size_t p = 0; p < k; p++) acc += fgt::op_at(a, ta, i, p) * fgt::op_at(b, tb, p, j);
        want[i * n + j] = acc;
      }
    ASSERT_EQ(FG_OK, fg_gemm(cpu.dev, FG_GEMM_EXACT, ta, tb, m, n, k, 1.0f, a.data(), FG_F32, a.ld, b.data(), FG_F32,
                             b.ld, 0.0f, got.data(), n, nullptr));
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << "plain, trans " << tr;
    std::vector<float> acc_want = base, acc_got = base;
    for (size_t i = 0; i < m * n; i++) acc_want[i] += want[i];
    ASSERT_EQ(FG_OK, fg_gemm(cpu.dev, FG_GEMM_EXACT, ta, tb, m, n, k, 1.0f, a.data(), FG_F32, a.ld, b.data(), FG_F32,
                             b.ld, 1.0f, acc_got.data(), n, nullptr));
    EXPECT_EQ(0, std::memcmp(acc_want.data(), acc_got.data(), acc_want.size() * 4)) << "accumulate, trans " << tr;
  }
}

TEST(Gemm, ExactSpecialValuesPropagate) {
  Cpu cpu;
  const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7fa00000u, 0x80000000u,
                               0x00000001u, 0x807fffffu, 0x7f7fffffu, 0xff7fffffu, 0x00800000u, 0x00000000u};
  for (auto &ty : kTypes)
    for (auto &s : {std::array<size_t, 3>{9, 11, 13}, std::array<size_t, 3>{70, 90, 300}})
      for (int tr = 0; tr < 4; tr++) {
        Case c{s[0], s[1], s[2], (tr & 1) != 0, (tr & 2) != 0, ty[0], ty[1], 1.0f, 0.5f, 2};
        Problem p(c, 300 + tr);
        size_t q = 0;
        for (size_t r = 0; r < p.a.rows; r += 3)
          for (size_t col = r % 5; col < p.a.cols; col += 7) p.a.set(r, col, specials[q++ % 12]);
        for (size_t r = 1; r < p.b.rows; r += 4)
          for (size_t col = r % 3; col < p.b.cols; col += 11) p.b.set(r, col, specials[q++ % 12]);
        p.c0[0] = std::numeric_limits<float>::quiet_NaN();
        p.c0[1] = -std::numeric_limits<float>::infinity();
        std::vector<float> want = p.reference(), got;
        ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_EXACT, got)) << fg_last_error();
        ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4)) << describe(c);
        size_t nans = 0;
        for (size_t i = 0; i < c.m; i++)
          for (size_t j = 0; j < c.n; j++)
            if (got[i * p.ldc + j] != got[i * p.ldc + j]) {
              EXPECT_EQ(0x7fc00000u, fgt::f32_bits(got[i * p.ldc + j]));
              nans++;
            }
        EXPECT_GT(nans, 0u);
      }
}

// Each output is computed whole by one thread in one order, so 1, 2 and 7 threads and every
// micro-kernel the CPU can run (vector widths 4 to 16) give the same bits.
TEST(Gemm, ExactIndependentOfThreadsAndKernel) {
  Cpu cpu;
  std::vector<Problem> probs;
  std::vector<std::vector<float>> refs;
  for (int tr = 0; tr < 4; tr++) {
    probs.emplace_back(Case{211, 301, 517, (tr & 1) != 0, (tr & 2) != 0, FG_F32, FG_BF16, 0.75f, -0.5f, 1}, 4242);
    refs.push_back(probs.back().reference());
  }
  int saved = omp_get_max_threads();
  const char *saved_env = getenv("FORGIA_CPU_GEMM_KERNEL");
  std::string keep = saved_env ? saved_env : "";
  for (const char *kern : {"", "avx512", "avx2", "generic"}) {
    setenv("FORGIA_CPU_GEMM_KERNEL", kern, 1);
    for (int tr = 0; tr < 4; tr++) {
      std::vector<float> first;
      for (int threads : {1, 2, 7}) {
        omp_set_num_threads(threads);
        std::vector<float> got;
        ASSERT_EQ(FG_OK, probs[tr].run(cpu.dev, FG_GEMM_EXACT, got));
        if (first.empty()) first = got;
        EXPECT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * 4))
            << "kernel '" << kern << "' 1 vs " << threads << " threads, " << describe(probs[tr].cs);
        EXPECT_EQ(0, std::memcmp(refs[tr].data(), got.data(), got.size() * 4))
            << "kernel '" << kern << "' threads " << threads << " " << describe(probs[tr].cs);
      }
    }
  }
  if (saved_env) setenv("FORGIA_CPU_GEMM_KERNEL", keep.c_str(), 1);
  else unsetenv("FORGIA_CPU_GEMM_KERNEL");
  omp_set_num_threads(saved);
}

// OpenBLAS is loaded on the first fast GEMM with a kernel set chosen from the CPU's features
// (cpu/openblas_lazy.h), through OPENBLAS_CORETYPE: the process's environment must be left as
// it was found, whatever it held.
TEST(Gemm, FastLeavesTheEnvironmentAsFound) {
  const char *before = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = before ? before : "";
  const bool threads_before = std::getenv("OPENBLAS_NUM_THREADS") != nullptr;
  Cpu cpu;
  Case c{190, 70, 300, true, true, FG_F32, FG_F32, 1.0f, 0.0f, 0};  // above the row-split threshold
  Problem p(c, 77);
  std::vector<float> exact, fast;
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_FAST, fast)) << fg_last_error();
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_EXACT, exact));
  const char *after = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(before != nullptr, after != nullptr);
  EXPECT_EQ(threads_before, std::getenv("OPENBLAS_NUM_THREADS") != nullptr);
  if (before && after) {
    EXPECT_EQ(saved, after);
  }
  for (size_t i = 0; i < exact.size(); i++) {
    EXPECT_NEAR(exact[i], fast[i], 1e-4f * (1.0f + std::fabs(exact[i]))) << i;
  }
}

// The one tolerance test: BLAS sums in its own order (and may fuse), so fast and exact agree
// within the rounding error bound of k-term sums, scaled by |A||B| per output.
TEST(Gemm, FastAgreesWithExactWithinBound) {
  Cpu cpu;
  size_t t = 0, checked = 0;
  double worst = 0;
  for (auto &s : kShapes)
    for (auto &ty : kTypes) {
      const float *ab = kAlphaBeta[t % 5];
      Case c{s[0], s[1], s[2], t % 2 == 0, t % 3 == 0, ty[0], ty[1], ab[0], ab[1], t % 2};
      Problem p(c, 500 + t++);
      std::vector<float> exact, fast;
      ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_EXACT, exact));
      ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_FAST, fast)) << fg_last_error();
      std::vector<double> absab = fgt::abs_product(c.ta, c.tb, c.m, c.n, c.k, p.a, p.b);
      for (size_t i = 0; i < c.m; i++)
        for (size_t j = 0; j < p.ldc; j++) {
          size_t x = i * p.ldc + j;
          if (j >= c.n) {
            ASSERT_EQ(fgt::f32_bits(p.c0[x]), fgt::f32_bits(fast[x])) << "padding written, " << describe(c);
            continue;
          }
          double tol = fgt::gemm_tolerance(c.k, 0x1.0p-24, c.alpha, absab[i * c.n + j], c.beta, p.c0[x]);
          double d = std::fabs((double)fast[x] - (double)exact[x]);
          ASSERT_LE(d, tol) << describe(c) << " at " << i << "," << j;
          worst = std::max(worst, d / tol);
          checked++;
        }
    }
  EXPECT_GT(checked, 0u);
  // Not a pass/fail figure: the bound is loose, the real difference a few ulps.
  RecordProperty("worst_fraction_of_bound", std::to_string(worst));
}

// BLAS's rules, in both modes: beta == 0 does not read C; alpha == 0 or k == 0 does not read
// A or B (they may be NULL) and gives beta * C; m or n == 0 touches nothing.
TEST(Gemm, BlasRulesForZeroAlphaBetaAndK) {
  Cpu cpu;
  const size_t m = 50, n = 60, k = 70;
  Operand a(FG_F32, m, k, k, 1), b(FG_F32, k, n, n, 2);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (fg_gemm_mode mode : {FG_GEMM_FAST, FG_GEMM_EXACT}) {
    std::vector<float> c(m * n, nan), want(m * n);
    ASSERT_EQ(FG_OK, fg_gemm(cpu.dev, mode, false, false, m, n, k, 1.0f, a.data(), FG_F32, k, b.data(), FG_F32, n,
                             0.0f, c.data(), n, nullptr));
    for (float v : c) ASSERT_FALSE(std::isnan(v)) << "beta 0 read C, mode " << mode;

    std::vector<float> c0 = fgt::gaussian(m * n, 3);
    c0[5] = nan;
    c0[6] = -0.0f;
    for (size_t kk : {(size_t)0, k}) {
      c = c0;
      // alpha 0 (and k 0): A and B unread, NULL allowed, C = beta * C exactly.
      ASSERT_EQ(FG_OK, fg_gemm(cpu.dev, mode, false, false, m, n, kk, kk ? 0.0f : 1.0f, nullptr, FG_F32, 0, nullptr,
                               FG_F32, 0, -0.5f, c.data(), n, nullptr))
          << fg_last_error();
      for (size_t i = 0; i < m * n; i++) want[i] = -0.5f * c0[i];
      want[5] = fgt::bits_f32(0x7fc00000u);
      EXPECT_EQ(0, std::memcmp(want.data(), c.data(), c.size() * 4)) << "mode " << mode << " k " << kk;
      c = c0;
      ASSERT_EQ(FG_OK, fg_gemm(cpu.dev, mode, true, true, m, n, kk, kk ? 0.0f : 2.0f, nullptr, FG_BF16, 0, nullptr,
                               FG_F32, 0, 0.0f, c.data(), n, nullptr));
      for (float v : c) ASSERT_EQ(0u, fgt::f32_bits(v)) << "beta 0 without product: +0";
    }
    // m or n == 0: nothing is read or written, even through NULL pointers.
    ASSERT_EQ(FG_OK, fg_gemm(cpu.dev, mode, false, false, 0, n, k, 1.0f, nullptr, FG_F32, 0, nullptr, FG_F32, 0, 1.0f,
                             nullptr, 0, nullptr));
    ASSERT_EQ(FG_OK, fg_gemm(cpu.dev, mode, false, false, m, 0, k, 1.0f, nullptr, FG_F32, 0, nullptr, FG_F32, 0, 1.0f,
                             nullptr, 0, nullptr));
  }
}

TEST(Gemm, DeviceModeAppliesToDefaultCalls) {
  Cpu cpu;
  Case c{120, 140, 333, true, false, FG_F32, FG_F32, 1.0f, 0.0f, 0};
  Problem p(c, 99);
  std::vector<float> exact, fast, got;
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_EXACT, exact));
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_FAST, fast));
  ASSERT_NE(0, std::memcmp(exact.data(), fast.data(), exact.size() * 4)) << "modes indistinguishable here";
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_DEFAULT, got));
  EXPECT_EQ(0, std::memcmp(fast.data(), got.data(), got.size() * 4)) << "the default mode is FAST";
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_FAST_TF32, got));
  EXPECT_EQ(0, std::memcmp(fast.data(), got.data(), got.size() * 4)) << "TF32 is FAST on the CPU";
  ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(cpu.dev, FG_GEMM_EXACT));
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_DEFAULT, got));
  EXPECT_EQ(0, std::memcmp(exact.data(), got.data(), got.size() * 4));
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_FAST, got));
  EXPECT_EQ(0, std::memcmp(fast.data(), got.data(), got.size() * 4)) << "a call's own mode wins";
  ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(cpu.dev, FG_GEMM_DEFAULT));
  ASSERT_EQ(FG_OK, p.run(cpu.dev, FG_GEMM_DEFAULT, got));
  EXPECT_EQ(0, std::memcmp(fast.data(), got.data(), got.size() * 4));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_device_set_gemm_mode(cpu.dev, (fg_gemm_mode)9));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_device_set_gemm_mode(nullptr, FG_GEMM_EXACT));
}

// Queued on a stream of the device, including its own stream: same bits as synchronous.
TEST(Gemm, StreamsGiveTheSameBits) {
  Cpu cpu;
  Case c{64, 80, 96, false, true, FG_BF16, FG_BF16, 1.0f, 0.5f, 0};
  Problem p(c, 5);
  fg_stream *s = nullptr;
  ASSERT_EQ(FG_OK, fg_stream_create(cpu.dev, &s));
  for (fg_gemm_mode mode : {FG_GEMM_FAST, FG_GEMM_EXACT}) {
    std::vector<float> sync, c1 = p.c0, c2 = p.c0;
    ASSERT_EQ(FG_OK, p.run(cpu.dev, mode, sync));
    for (auto [st, out] : {std::pair{s, &c1}, std::pair{fg_device_stream(cpu.dev), &c2}}) {
      ASSERT_EQ(FG_OK, fg_gemm(cpu.dev, mode, c.ta, c.tb, c.m, c.n, c.k, c.alpha, p.a.data(), p.a.type, p.a.ld,
                               p.b.data(), p.b.type, p.b.ld, c.beta, out->data(), p.ldc, st));
      ASSERT_EQ(FG_OK, fg_stream_sync(st));
      EXPECT_EQ(0, std::memcmp(sync.data(), out->data(), sync.size() * 4)) << "mode " << mode;
    }
  }
  fg_stream_free(s);
}

// Every rejected call names the problem and leaves C as it was.
TEST(Gemm, ValidationRejectsBadCallsCleanly) {
  Cpu cpu, other;
  const size_t m = 4, n = 5, k = 6;
  Operand a(FG_F32, m, k, k, 1), b(FG_F32, k, n, n, 2), ah(FG_BF16, m, k, k, 1);
  std::vector<float> c(m * n + 64, 1.5f), keep = c;
  std::vector<uint8_t> f16(m * k * 2, 0);
  fg_stream *foreign = nullptr;
  ASSERT_EQ(FG_OK, fg_stream_create(other.dev, &foreign));
  struct Res {
    fg_status st;
    std::string msg;
  };
  auto call = [&](fg_device *d, fg_gemm_mode mode, bool ta, bool tb, size_t mm, size_t nn, size_t kk, const void *pa,
                  fg_dtype at, size_t lda, const void *pb, fg_dtype bt, size_t ldb, float *pc, size_t ldc,
                  fg_stream *s) {
    fg_status st = fg_gemm(d, mode, ta, tb, mm, nn, kk, 1.0f, pa, at, lda, pb, bt, ldb, 0.5f, pc, ldc, s);
    return Res{st, st ? fg_last_error() : ""};
  };
  const fg_gemm_mode E = FG_GEMM_EXACT, F = FG_GEMM_FAST;
  const size_t big = (size_t)1 << 40, i31 = (size_t)1 << 31;
  float *pc = c.data();
  const void *pa = a.data(), *pb = b.data();
  struct Bad {
    const char *what;
    fg_status want;
    const char *msg;
    Res got;
  } bad[] = {
    {"NULL device", FG_ERR_INVALID_ARG, "NULL device", call(nullptr, E, 0, 0, m, n, k, pa, FG_F32, k, pb, FG_F32, n, pc, n, nullptr)},
    {"unknown mode", FG_ERR_INVALID_ARG, "unknown mode 7", call(cpu.dev, (fg_gemm_mode)7, 0, 0, m, n, k, pa, FG_F32, k, pb, FG_F32, n, pc, n, nullptr)},
    {"NULL c", FG_ERR_INVALID_ARG, "c is NULL", call(cpu.dev, E, 0, 0, m, n, k, pa, FG_F32, k, pb, FG_F32, n, nullptr, n, nullptr)},
    {"NULL a", FG_ERR_INVALID_ARG, "a is NULL", call(cpu.dev, E, 0, 0, m, n, k, nullptr, FG_F32, k, pb, FG_F32, n, pc, n, nullptr)},
    {"NULL b", FG_ERR_INVALID_ARG, "b is NULL", call(cpu.dev, F, 0, 0, m, n, k, pa, FG_F32, k, nullptr, FG_F32, n, pc, n, nullptr)},
    {"f16 a", FG_ERR_UNSUPPORTED, "a is f16; expected f32 or bf16", call(cpu.dev, E, 0, 0, m, n, k, f16.data(), FG_F16, k, pb, FG_F32, n, pc, n, nullptr)},
    {"q8_0 b", FG_ERR_UNSUPPORTED, "b is q8_0; expected f32 or bf16", call(cpu.dev, F, 0, 0, m, n, k, pa, FG_F32, k, pb, FG_Q8_0, n, pc, n, nullptr)},
    {"lda small", FG_ERR_INVALID_ARG, "lda 5 is below the 6 columns of stored a (4 x 6)", call(cpu.dev, E, 0, 0, m, n, k, pa, FG_F32, k - 1, pb, FG_F32, n, pc, n, nullptr)},
    {"lda small, trans", FG_ERR_INVALID_ARG, "lda 3 is below the 4 columns of stored a (6 x 4, transposed)", call(cpu.dev, E, 1, 0, m, n, k, pa, FG_F32, m - 1, pb, FG_F32, n, pc, n, nullptr)},
    {"ldb small", FG_ERR_INVALID_ARG, "ldb 4 is below the 5 columns of stored b (6 x 5)", call(cpu.dev, F, 0, 0, m, n, k, pa, FG_F32, k, pb, FG_F32, n - 1, pc, n, nullptr)},
    {"ldb small, trans", FG_ERR_INVALID_ARG, "ldb 5 is below the 6 columns of stored b (5 x 6, transposed)", call(cpu.dev, E, 0, 1, m, n, k, pa, FG_F32, k, pb, FG_F32, k - 1, pc, n, nullptr)},
    {"ldc small", FG_ERR_INVALID_ARG, "ldc 4 is below the 5 columns of c (4 x 5)", call(cpu.dev, E, 0, 0, m, n, k, pa, FG_F32, k, pb, FG_F32, n, pc, n - 1, nullptr)},
    {"c overflows", FG_ERR_INVALID_ARG, "spans more bytes than an address space holds", call(cpu.dev, E, 0, 0, big, n, k, pa, FG_F32, k, pb, FG_F32, n, pc, big, nullptr)},
    {"a overflows", FG_ERR_INVALID_ARG, "fg_gemm: a (4 x 1099511627776, ld 4611686018427387904) spans", call(cpu.dev, E, 0, 0, m, n, big, pa, FG_F32, (size_t)1 << 62, pb, FG_F32, n, pc, n, nullptr)},
    {"b overflows", FG_ERR_INVALID_ARG, "fg_gemm: b (6 x 5, ld 18446744073709551615) spans", call(cpu.dev, E, 0, 0, m, n, k, pa, FG_F32, k, pb, FG_BF16, SIZE_MAX, pc, n, nullptr)},
    {"fast beyond int", FG_ERR_UNSUPPORTED, "(BLAS takes int); use FG_GEMM_EXACT", call(cpu.dev, F, 0, 1, 1, 1, i31, pa, FG_F32, i31, pb, FG_F32, i31, pc, 1, nullptr)},
    {"c aliases a", FG_ERR_INVALID_ARG, "c overlaps a", call(cpu.dev, E, 0, 0, m, n, k, pc + 3, FG_F32, k, pb, FG_F32, n, pc, n, nullptr)},
    {"c aliases b", FG_ERR_INVALID_ARG, "c overlaps b", call(cpu.dev, F, 0, 0, m, n, k, pa, FG_F32, k, pc + 19, FG_F32, n, pc, n, nullptr)},
    {"foreign stream", FG_ERR_INVALID_ARG, "the stream belongs to cpu, not cpu", call(cpu.dev, E, 0, 0, m, n, k, pa, FG_F32, k, pb, FG_F32, n, pc, n, foreign)},
  };
  for (const Bad &x : bad) {
    EXPECT_EQ(x.want, x.got.st) << x.what;
    EXPECT_NE(std::string::npos, x.got.msg.find(x.msg)) << x.what << ": " << x.got.msg;
  }
  EXPECT_EQ(0, std::memcmp(keep.data(), c.data(), c.size() * 4)) << "a rejected call wrote C";
  // The same operands are fine once the mistake is gone (bf16 a included).
  EXPECT_EQ(FG_OK, call(cpu.dev, E, 0, 0, m, n, k, ah.data(), FG_BF16, k, pb, FG_F32, n, pc, n, nullptr).st);
  fg_stream_free(foreign);
}
