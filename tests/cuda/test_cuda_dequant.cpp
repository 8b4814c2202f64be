// Every decodable block type: the CUDA decode kernel equals the CPU decoder bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "testutil.h"

TEST(CudaDequant, EveryDecodableTypeMatchesCpuBitwise) {
  FGT_REQUIRE_CUDA();
  fg_device *cpu, *gpu;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  int tested = 0;
  for (int v = 0; v < FG_GGML_TYPE_COUNT; v++) {
    if (!fg_dtype_valid(v) || !fg_dtype_info((fg_dtype)v)->is_quant) continue;
    fg_dtype t = (fg_dtype)v;
    if (!fg_quant_can_encode(t)) continue;
    const int64_t rows = 512, n = 4096;  // 2M elements a type
    std::vector<float> x = fgt::gaussian(rows * n, 90 + v, 3.0f);
    for (int64_t r = 0; r < rows; r += 7) x[r * n + 5] = 1e4f;  // outliers
    uint64_t rb;
    ASSERT_EQ(FG_OK, fg_dtype_nbytes(t, n, &rb));
    std::vector<uint8_t> q(rb * rows);
    ASSERT_EQ(FG_OK, fg_quant_encode_rows(t, x.data(), rows, n, q.data(), q.size()));
    std::vector<float> c(rows * n), g(rows * n);
    ASSERT_EQ(FG_OK, fg_convert(cpu, c.data(), FG_F32, q.data(), t, c.size(), nullptr));
    void *dq, *dy;
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(gpu, q.size(), &dq));
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(gpu, g.size() * 4, &dy));
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, dq, q.data(), q.size(), FG_COPY_H2D));
    ASSERT_EQ(FG_OK, fg_convert(gpu, dy, FG_F32, dq, t, g.size(), nullptr)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, g.data(), dy, g.size() * 4, FG_COPY_D2H));
    EXPECT_EQ(0, std::memcmp(c.data(), g.data(), g.size() * 4)) << fg_dtype_name(t);
    fg_device_mem_free(gpu, dq);
    fg_device_mem_free(gpu, dy);
    tested++;
  }
  EXPECT_GE(tested, 15);
  fg_device_close(cpu);
  fg_device_close(gpu);
}
