// The CUDA decode of the grid i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s,
// iq1_m) equals the CPU decode bit for bit, NaN payloads aside, on the blocks of the gguf-py
// parity test (tests/interop/test_quant_iq_parity.cpp), whose CPU decode matches gguf-py.
#include <gtest/gtest.h>

#include <vector>

#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "iq_blocks.h"
#include "testutil.h"

namespace {

using namespace fgt::iq;

TEST(QuantIqParity, CudaDecodeMatchesCpuBitwise) {
  FGT_REQUIRE_CUDA();
  fg_device *cpu, *gpu;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  for (fg_dtype t : kTypes) {
    uint64_t rb = 0;
    ASSERT_EQ(fg_dtype_nbytes(t, kN, &rb), FG_OK);
    const std::vector<uint8_t> q = make_blocks(t, rb);
    const size_t n = (size_t)(kRows * kN);
    std::vector<float> c(n), g(n);
    ASSERT_EQ(FG_OK, fg_convert(cpu, c.data(), FG_F32, q.data(), t, n, nullptr)) << fg_last_error();
    void *dq, *dy;
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(gpu, q.size(), &dq));
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(gpu, n * 4, &dy));
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, dq, q.data(), q.size(), FG_COPY_H2D));
    ASSERT_EQ(FG_OK, fg_convert(gpu, dy, FG_F32, dq, t, n, nullptr)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, g.data(), dy, n * 4, FG_COPY_D2H));
    // A NaN's payload is the device's own (CUDA writes its canonical NaN); all else is bitwise.
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += same_float(c[i], g[i]) ? 0 : 1;
    EXPECT_EQ(bad, 0u) << fg_dtype_name(t);
    fg_device_mem_free(gpu, dq);
    fg_device_mem_free(gpu, dy);
  }
  fg_device_close(cpu);
  fg_device_close(gpu);
}

}  // namespace
