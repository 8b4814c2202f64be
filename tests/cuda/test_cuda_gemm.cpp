// GEMM on CUDA: the exact mode is the CPU's bits (memcmp), the fast modes (cuBLAS, with and
// without TF32) agree with the exact mode within the rounding bound.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "forgia/forgia.h"
#include "gemm_ref.h"
#include "testutil.h"

using fgt::Operand;

namespace {

struct Both {
  fg_device *cpu = nullptr, *gpu = nullptr;
  std::vector<void *> bufs;
  ~Both() {
    for (void *p : bufs) fg_device_mem_free(gpu, p);
    fg_device_close(cpu);
    fg_device_close(gpu);
  }
  void *upload(const void *src, size_t bytes) {
    void *d = nullptr;
    EXPECT_EQ(FG_OK, fg_device_mem_alloc(gpu, bytes ? bytes : 1, &d));
    if (bytes) {
      EXPECT_EQ(FG_OK, fg_device_copy(gpu, d, src, bytes, FG_COPY_H2D));
    }
    bufs.push_back(d);
    return d;
  }
};

struct Case {
  size_t m, n, k;
  bool ta, tb;
  fg_dtype at, bt;
  float alpha, beta;
  size_t pad;
};

// One problem run on both devices; returns the CPU and GPU results (C with padding).
struct Outcome {
  Operand a, b;
  size_t ldc;
  std::vector<float> c0, cpu, gpu;
};

Outcome run_both(Both &d, const Case &x, fg_gemm_mode cpu_mode, fg_gemm_mode gpu_mode, uint64_t seed,
             bool specials = false, fg_stream *s = nullptr) {
  Outcome r;
  size_t ar = x.ta ? x.k : x.m, ac = x.ta ? x.m : x.k, br = x.tb ? x.n : x.k, bc = x.tb ? x.k : x.n;
  r.a = Operand(x.at, ar, ac, ac + x.pad, seed);
  r.b = Operand(x.bt, br, bc, bc + x.pad, seed + 1);
  if (specials) {
    const uint32_t sp[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x80000000u,
                           0x00000001u, 0x807fffffu, 0x7f7fffffu, 0x00800000u};
    size_t q = 0;
    for (size_t i = 0; i < ar; i += 5)
      for (size_t j = i % 3; j < ac; j += 13) r.a.set(i, j, sp[q++ % 9]);
    for (size_t i = 2; i < br; i += 7)
      for (size_t j = i % 4; j < bc; j += 17) r.b.set(i, j, sp[q++ % 9]);
  }
  r.ldc = x.n + x.pad;
  r.c0 = fgt::gaussian(x.m * r.ldc, seed + 2);
  if (specials && r.c0.size() > 2) {
    r.c0[0] = std::numeric_limits<float>::quiet_NaN();
    r.c0[1] = std::numeric_limits<float>::infinity();
  }
  r.cpu = r.c0;
  EXPECT_EQ(FG_OK, fg_gemm(d.cpu, cpu_mode, x.ta, x.tb, x.m, x.n, x.k, x.alpha, r.a.data(), x.at, r.a.ld, r.b.data(),
                           x.bt, r.b.ld, x.beta, r.cpu.data(), r.ldc, nullptr))
      << fg_last_error();
  void *da = d.upload(r.a.data(), r.a.bytes()), *db = d.upload(r.b.data(), r.b.bytes());
  float *dc = (float *)d.upload(r.c0.data(), r.c0.size() * 4);
  EXPECT_EQ(FG_OK, fg_gemm(d.gpu, gpu_mode, x.ta, x.tb, x.m, x.n, x.k, x.alpha, da, x.at, r.a.ld, db, x.bt, r.b.ld,
                           x.beta, dc, r.ldc, s))
      << fg_last_error();
  if (s) {
    EXPECT_EQ(FG_OK, fg_stream_sync(s));
  }
  r.gpu.resize(r.c0.size());
  EXPECT_EQ(FG_OK, fg_device_copy(d.gpu, r.gpu.data(), dc, r.gpu.size() * 4, FG_COPY_D2H));
  return r;
}

const size_t kShapes[][3] = {{1, 1, 1},     {1, 7, 3},      {5, 1, 9},     {17, 19, 23},  {64, 64, 16},
                             {65, 63, 17},  {33, 65, 300},  {100, 70, 513}, {130, 300, 257}, {2, 3, 4097},
                             {1, 1000, 40}, {300, 1, 300}};
const fg_dtype kTypes[][2] = {{FG_F32, FG_F32}, {FG_BF16, FG_BF16}, {FG_F32, FG_BF16}, {FG_BF16, FG_F32}};
const float kAlphaBeta[][2] = {{1.0f, 0.0f}, {0.5f, 0.0f}, {1.0f, 1.0f}, {-1.5f, 0.25f}, {2.0f, -1.0f}};

}  // namespace

TEST(CudaGemm, ExactMatchesCpuBitwise) {
  FGT_REQUIRE_CUDA();
  Both d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &d.gpu));
  uint64_t t = 0;
  for (auto &s : kShapes)
    for (int tr = 0; tr < 4; tr++)
      for (auto &ty : kTypes) {
        const float *ab = kAlphaBeta[t % 5];
        Case x{s[0], s[1], s[2], (tr & 1) != 0, (tr & 2) != 0, ty[0], ty[1], ab[0], ab[1], (size_t)(t % 3 == 1 ? 3 : 0)};
        Outcome r = run_both(d, x, FG_GEMM_EXACT, FG_GEMM_EXACT, 700 + t, t % 4 == 3);
        t++;
        ASSERT_EQ(0, std::memcmp(r.cpu.data(), r.gpu.data(), r.cpu.size() * 4))
            << x.m << "x" << x.n << "x" << x.k << " trans " << tr << " " << fg_dtype_name(x.at) << "/"
            << fg_dtype_name(x.bt);
      }
}

// Muon-sized products (Gram matrix of a 1024 x 3072 X, and its square), on a stream.
TEST(CudaGemm, ExactMatchesCpuBitwiseMuonShapes) {
  FGT_REQUIRE_CUDA();
  Both d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &d.gpu));
  fg_stream *s = nullptr;
  ASSERT_EQ(FG_OK, fg_stream_create(d.gpu, &s));
  Outcome r = run_both(d, Case{1024, 1024, 3072, false, true, FG_F32, FG_F32, 1.0f, 0.0f, 0}, FG_GEMM_EXACT,
                   FG_GEMM_EXACT, 1, false, s);
  EXPECT_EQ(0, std::memcmp(r.cpu.data(), r.gpu.data(), r.cpu.size() * 4)) << "X X^T";
  r = run_both(d, Case{1024, 1024, 1024, false, false, FG_BF16, FG_BF16, -4.775f, 1.0f, 0}, FG_GEMM_EXACT,
               FG_GEMM_EXACT, 2, false, s);
  EXPECT_EQ(0, std::memcmp(r.cpu.data(), r.gpu.data(), r.cpu.size() * 4)) << "A A + C, bf16";
  fg_stream_free(s);
}

// No product (alpha 0 or k 0) and beta 0 over a NaN-filled C: the same bits in every mode.
TEST(CudaGemm, BlasRulesMatchCpu) {
  FGT_REQUIRE_CUDA();
  Both d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &d.gpu));
  for (fg_gemm_mode mode : {FG_GEMM_FAST, FG_GEMM_EXACT})
    for (auto [k, alpha, beta] : {std::array<float, 3>{0, 1, 0.5f}, std::array<float, 3>{50, 0, -2},
                                  std::array<float, 3>{0, 1, 0}}) {
      Outcome r = run_both(d, Case{70, 90, (size_t)k, false, false, FG_F32, FG_F32, alpha, beta, 1}, mode, mode, 3, true);
      EXPECT_EQ(0, std::memcmp(r.cpu.data(), r.gpu.data(), r.cpu.size() * 4)) << "mode " << mode << " k " << k;
    }
  const size_t m = 40, n = 50, k = 60;
  Operand a(FG_F32, m, k, k, 1), b(FG_F32, k, n, n, 2);
  std::vector<float> nan(m * n, std::numeric_limits<float>::quiet_NaN()), out(m * n);
  void *da = d.upload(a.data(), a.bytes()), *db = d.upload(b.data(), b.bytes());
  for (fg_gemm_mode mode : {FG_GEMM_FAST, FG_GEMM_FAST_TF32, FG_GEMM_EXACT}) {
    float *dc = (float *)d.upload(nan.data(), nan.size() * 4);
    ASSERT_EQ(FG_OK, fg_gemm(d.gpu, mode, false, false, m, n, k, 1.0f, da, FG_F32, k, db, FG_F32, n, 0.0f, dc, n, nullptr));
    ASSERT_EQ(FG_OK, fg_device_copy(d.gpu, out.data(), dc, out.size() * 4, FG_COPY_D2H));
    for (float v : out) ASSERT_FALSE(std::isnan(v)) << "beta 0 read C, mode " << mode;
  }
}

// cuBLAS (f32 compute, and TF32 when asked) against the CPU's exact result, within the
// rounding error bound of k-term sums (2^-11 per input for TF32).
TEST(CudaGemm, FastAgreesWithExactWithinBound) {
  FGT_REQUIRE_CUDA();
  Both d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &d.gpu));
  uint64_t t = 0;
  for (fg_gemm_mode mode : {FG_GEMM_FAST, FG_GEMM_FAST_TF32})
    for (auto &s : kShapes)
      for (auto &ty : kTypes) {
        const float *ab = kAlphaBeta[t % 5];
        Case x{s[0], s[1], s[2], t % 2 == 0, t % 3 == 0, ty[0], ty[1], ab[0], ab[1], (size_t)(t % 2)};
        Outcome r = run_both(d, x, FG_GEMM_EXACT, mode, 800 + t++);
        std::vector<double> absab = fgt::abs_product(x.ta, x.tb, x.m, x.n, x.k, r.a, r.b);
        double u = (mode == FG_GEMM_FAST_TF32 && x.at == FG_F32 && x.bt == FG_F32) ? 0x1.0p-11 : 0x1.0p-24;
        for (size_t i = 0; i < x.m; i++)
          for (size_t j = 0; j < r.ldc; j++) {
            size_t e = i * r.ldc + j;
            if (j >= x.n) {
              ASSERT_EQ(fgt::f32_bits(r.c0[e]), fgt::f32_bits(r.gpu[e])) << "padding written";
              continue;
            }
            double tol = fgt::gemm_tolerance(x.k, u, x.alpha, absab[i * x.n + j], x.beta, r.c0[e]);
            ASSERT_LE(std::fabs((double)r.gpu[e] - (double)r.cpu[e]), tol)
                << "mode " << mode << " " << x.m << "x" << x.n << "x" << x.k << " at " << i << "," << j;
          }
      }
}

// The per-device mode reaches CUDA calls too, and the cuBLAS handle survives many calls on
// several streams.
TEST(CudaGemm, DeviceModeAndStreams) {
  FGT_REQUIRE_CUDA();
  Both d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &d.gpu));
  ASSERT_EQ(FG_OK, fg_device_set_gemm_mode(d.gpu, FG_GEMM_EXACT));
  Outcome r = run_both(d, Case{200, 150, 100, true, false, FG_F32, FG_F32, 1.0f, 0.0f, 0}, FG_GEMM_EXACT, FG_GEMM_DEFAULT, 5);
  EXPECT_EQ(0, std::memcmp(r.cpu.data(), r.gpu.data(), r.cpu.size() * 4));
  fg_stream *s[2];
  ASSERT_EQ(FG_OK, fg_stream_create(d.gpu, &s[0]));
  ASSERT_EQ(FG_OK, fg_stream_create(d.gpu, &s[1]));
  for (int i = 0; i < 4; i++) {
    Outcome f = run_both(d, Case{64, 64, 64, false, false, FG_BF16, FG_F32, 1.0f, 0.0f, 0}, FG_GEMM_EXACT, FG_GEMM_FAST,
                     10 + i, false, s[i % 2]);
    std::vector<double> absab = fgt::abs_product(false, false, 64, 64, 64, f.a, f.b);
    for (size_t e = 0; e < f.cpu.size(); e++)
      ASSERT_LE(std::fabs((double)f.gpu[e] - (double)f.cpu[e]), fgt::gemm_tolerance(64, 0x1.0p-24, 1.0f, absab[e], 0, 0));
  }
  fg_stream_free(s[0]);
  fg_stream_free(s[1]);
}
