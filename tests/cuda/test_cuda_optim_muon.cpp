// Muon on CUDA with the exact GEMM: every trajectory of fucina_muon.txt gives, after every
// step, the same bytes as the CPU (memcmp) and Fucina's bits; Newton-Schulz alone too, also
// queued on a stream with a caller-owned workspace.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/muon.h"
#include "muon_cases.h"
#include "testutil.h"

using namespace fgt;

namespace {

fg_device *open_exact(const char *spec) {
  fg_device *dev = nullptr;
  EXPECT_EQ(FG_OK, fg_device_open(spec, &dev));
  EXPECT_EQ(FG_OK, fg_device_set_gemm_mode(dev, FG_GEMM_EXACT));
  return dev;
}

TEST(CudaOptimMuon, EveryStepMatchesCpuAndFucina) {
  FGT_REQUIRE_CUDA();
  fg_device *cpu = open_exact("cpu"), *gpu = open_exact("cuda");
  for (const auto &mc : muon_cases()) {
    SCOPED_TRACE(mc.line);
    MuonRun a(cpu, mc), b(gpu, mc);
    for (int k = 1; k <= mc.steps; k++) {
      a.step(k);
      b.step(k);
      EXPECT_EQ(a.all_bytes(), b.all_bytes()) << "step " << k;
      for (size_t j = 0; j < 5; j++) EXPECT_EQ(a.f32(j), b.f32(j)) << "step " << k << " " << kMuonNames[j];
      b.expect_step(k);
    }
    EXPECT_EQ(a.save(), b.save());
  }
  fg_device_close(cpu);
  fg_device_close(gpu);
}

// A halfway save on the GPU loads on the CPU (and back) and both continue alike.
TEST(CudaOptimMuon, StateMovesBetweenDevices) {
  FGT_REQUIRE_CUDA();
  fg_device *cpu = open_exact("cpu"), *gpu = open_exact("cuda");
  const MuonCase &mc = muon_cases()[7];  // bf16 parameters with masters
  MuonRun g(gpu, mc);
  for (int k = 1; k <= 3; k++) g.step(k);
  const std::vector<uint8_t> st = g.save();
  MuonRun c(cpu, mc, g.all_bytes());
  ASSERT_EQ(FG_OK, fg_optim_load_state(c.opt, st.data(), st.size())) << fg_last_error();
  for (int k = 4; k <= mc.steps; k++) {
    g.step(k);
    c.step(k);
  }
  EXPECT_EQ(g.all_bytes(), c.all_bytes());
  EXPECT_EQ(g.save(), c.save());
  fg_device_close(cpu);
  fg_device_close(gpu);
}

TEST(CudaOptimMuon, NewtonSchulzOnAStreamMatchesCpu) {
  FGT_REQUIRE_CUDA();
  fg_device *cpu = open_exact("cpu"), *gpu = open_exact("cuda");
  fg_stream *s = nullptr;
  ASSERT_EQ(FG_OK, fg_stream_create(gpu, &s));
  const size_t dims[][2] = {{300, 130}, {64, 257}, {1, 1000}};
  for (const auto &d : dims) {
    const size_t rows = d[0], cols = d[1], n = rows * cols;
    const std::vector<float> u = golden_stream(9 + rows, n, 3.0f);
    std::vector<float> oc(n), og(n);
    ASSERT_EQ(FG_OK, fg_muon_newton_schulz5(cpu, FG_GEMM_EXACT, u.data(), rows, cols, 5, oc.data(), nullptr, 0, nullptr));
    float *du = nullptr;
    void *work = nullptr;
    const size_t wb = fg_muon_newton_schulz5_workspace(rows, cols);
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(gpu, n * 4, (void **)&du));
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(gpu, wb, &work));
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, du, u.data(), n * 4, FG_COPY_H2D));
    ASSERT_EQ(FG_OK, fg_muon_newton_schulz5(gpu, FG_GEMM_DEFAULT, du, rows, cols, 5, du, work, wb, s)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_stream_sync(s));
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, og.data(), du, n * 4, FG_COPY_D2H));
    EXPECT_EQ(0, std::memcmp(oc.data(), og.data(), n * 4)) << rows << "x" << cols;
    // The fast GEMM (cuBLAS, f32 compute) stays close.
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, du, u.data(), n * 4, FG_COPY_H2D));
    ASSERT_EQ(FG_OK, fg_muon_newton_schulz5(gpu, FG_GEMM_FAST, du, rows, cols, 5, du, work, wb, s)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_stream_sync(s));
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, og.data(), du, n * 4, FG_COPY_D2H));
    for (size_t i = 0; i < n; i++) ASSERT_NEAR(oc[i], og[i], 1e-4) << rows << "x" << cols << " [" << i << "]";
    fg_device_mem_free(gpu, du);
    fg_device_mem_free(gpu, work);
  }
  fg_stream_free(s);
  fg_device_close(cpu);
  fg_device_close(gpu);
}

}  // namespace
