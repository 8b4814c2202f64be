// CUDA kernels against the CPU backend, compared with memcmp (numerics contract).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

// 10^7 values: gaussian bulk plus every special class at scattered positions.
static std::vector<float> special_values() {
  std::vector<float> x = fgt::gaussian(10'000'000, 11, 100.0f);
  const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                               0x7f800001u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0x477fe000u, 0x477ff000u,
                               0x33000000u, 0x33000001u, 0x3f808000u, 0x3f818000u, 0x38800000u, 0x387fffffu};
  size_t k = 0;
  for (size_t i = 17; i < x.size(); i += 9973) {
    uint32_t u = specials[k++ % (sizeof specials / sizeof specials[0])];
    std::memcpy(&x[i], &u, 4);
  }
  return x;
}

struct Both {
  fg_device *cpu = nullptr, *gpu = nullptr;
  ~Both() {
    fg_device_close(cpu);
    fg_device_close(gpu);
  }
};

TEST(CudaKernels, ConvertMatchesCpuBitwise) {
  FGT_REQUIRE_CUDA();
  Both b;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &b.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &b.gpu));
  std::vector<float> x = special_values();
  size_t n = x.size();
  void *dx, *dh, *df;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(b.gpu, n * 4, &dx));
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(b.gpu, n * 2, &dh));
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(b.gpu, n * 4, &df));
  ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, dx, x.data(), n * 4, FG_COPY_H2D));
  for (fg_dtype t : {FG_BF16, FG_F16}) {
    std::vector<uint16_t> hc(n), hg(n);
    std::vector<float> fc(n), fg(n);
    ASSERT_EQ(FG_OK, fg_convert(b.cpu, hc.data(), t, x.data(), FG_F32, n, nullptr));
    ASSERT_EQ(FG_OK, fg_convert(b.gpu, dh, t, dx, FG_F32, n, nullptr)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, hg.data(), dh, n * 2, FG_COPY_D2H));
    EXPECT_EQ(0, std::memcmp(hc.data(), hg.data(), n * 2)) << fg_dtype_name(t);
    ASSERT_EQ(FG_OK, fg_convert(b.cpu, fc.data(), FG_F32, hc.data(), t, n, nullptr));
    ASSERT_EQ(FG_OK, fg_convert(b.gpu, df, FG_F32, dh, t, n, nullptr));
    ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, fg.data(), df, n * 4, FG_COPY_D2H));
    EXPECT_EQ(0, std::memcmp(fc.data(), fg.data(), n * 4)) << fg_dtype_name(t) << " -> f32";
  }
  fg_device_mem_free(b.gpu, dx);
  fg_device_mem_free(b.gpu, dh);
  fg_device_mem_free(b.gpu, df);
}

TEST(CudaKernels, DeviceMemoryStreamsEvents) {
  FGT_REQUIRE_CUDA();
  fg_device *d;
  ASSERT_EQ(FG_OK, fg_device_open("cuda:0", &d));
  fg_device_info info;
  ASSERT_EQ(FG_OK, fg_device_query(d, &info));
  EXPECT_GE(info.cc_major, 7);
  EXPECT_GT(info.total_mem, 1ull << 30);
  size_t n = 64 << 20;
  void *pin, *dev;
  ASSERT_EQ(FG_OK, fg_device_pinned_alloc(d, n, info.numa_node, &pin));
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(d, n, &dev));
  std::memset(pin, 0x3c, n);
  fg_stream *s;
  fg_event *e0, *e1;
  ASSERT_EQ(FG_OK, fg_stream_create(d, &s));
  ASSERT_EQ(FG_OK, fg_event_create(d, &e0));
  ASSERT_EQ(FG_OK, fg_event_create(d, &e1));
  ASSERT_EQ(FG_OK, fg_event_record(e0, s));
  ASSERT_EQ(FG_OK, fg_device_copy_async(d, dev, pin, n, FG_COPY_H2D, s));
  ASSERT_EQ(FG_OK, fg_event_record(e1, s));
  ASSERT_EQ(FG_OK, fg_event_sync(e1));
  float ms;
  ASSERT_EQ(FG_OK, fg_event_elapsed_ms(e0, e1, &ms));
  EXPECT_GT(ms, 0.0f);
  std::vector<uint8_t> back(n);
  ASSERT_EQ(FG_OK, fg_device_copy(d, back.data(), dev, n, FG_COPY_D2H));
  EXPECT_EQ(0, std::memcmp(back.data(), pin, n));
  void *huge = nullptr;
  EXPECT_EQ(FG_ERR_DEVICE_NOMEM, fg_device_mem_alloc(d, (size_t)1 << 50, &huge));
  fg_event_free(e0);
  fg_event_free(e1);
  fg_stream_free(s);
  fg_device_mem_free(d, dev);
  fg_device_pinned_free(d, pin);
  fg_device_close(d);
}
