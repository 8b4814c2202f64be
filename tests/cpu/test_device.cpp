// The device API on the CPU backend, and the error paths of device selection.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "testutil.h"

TEST(Device, CpuAllocCopyMemset) {
  fg_device *d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d));
  EXPECT_EQ(FG_DEVICE_CPU, fg_device_kind_of(d));
  EXPECT_STREQ("cpu", fg_device_spec(d));
  void *a, *b;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(d, 1 << 20, &a));
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(d, 1 << 20, &b));
  EXPECT_EQ(0u, (uintptr_t)a % 256);
  std::vector<uint8_t> h(1 << 20), back(1 << 20);
  for (size_t i = 0; i < h.size(); i++) h[i] = (uint8_t)(i * 31 + 7);
  ASSERT_EQ(FG_OK, fg_device_copy(d, a, h.data(), h.size(), FG_COPY_H2D));
  ASSERT_EQ(FG_OK, fg_device_copy(d, b, a, h.size(), FG_COPY_D2D));
  ASSERT_EQ(FG_OK, fg_device_copy(d, back.data(), b, h.size(), FG_COPY_D2H));
  EXPECT_EQ(h, back);
  ASSERT_EQ(FG_OK, fg_device_memset(d, b, 0xab, 100));
  ASSERT_EQ(FG_OK, fg_device_copy(d, back.data(), b, 100, FG_COPY_D2H));
  for (int i = 0; i < 100; i++) ASSERT_EQ(0xab, back[i]);
  fg_device_mem_free(d, a);
  fg_device_mem_free(d, b);
  fg_device_mem_free(d, nullptr);
  fg_device_close(d);
  fg_device_close(nullptr);
}

TEST(Device, CpuStreamsEventsPinned) {
  fg_device *d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d));
  fg_stream *s;
  fg_event *e0, *e1;
  ASSERT_EQ(FG_OK, fg_stream_create(d, &s));
  ASSERT_EQ(FG_OK, fg_event_create(d, &e0));
  ASSERT_EQ(FG_OK, fg_event_create(d, &e1));
  void *pin;
  ASSERT_EQ(FG_OK, fg_device_pinned_alloc(d, 3 << 20, 0, &pin));
  std::memset(pin, 5, 3 << 20);
  void *dev;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(d, 3 << 20, &dev));
  ASSERT_EQ(FG_OK, fg_event_record(e0, s));
  ASSERT_EQ(FG_OK, fg_device_copy_async(d, dev, pin, 3 << 20, FG_COPY_H2D, s));
  ASSERT_EQ(FG_OK, fg_event_record(e1, s));
  ASSERT_EQ(FG_OK, fg_stream_wait_event(s, e1));
  ASSERT_EQ(FG_OK, fg_event_sync(e1));
  bool done = false;
  ASSERT_EQ(FG_OK, fg_event_query(e1, &done));
  EXPECT_TRUE(done);
  float ms = -1;
  ASSERT_EQ(FG_OK, fg_event_elapsed_ms(e0, e1, &ms));
  EXPECT_GE(ms, 0.0f);
  ASSERT_EQ(FG_OK, fg_stream_sync(s));
  EXPECT_EQ(0, std::memcmp(dev, pin, 3 << 20));
  fg_device_mem_free(d, dev);
  fg_device_pinned_free(d, pin);
  fg_event_free(e0);
  fg_event_free(e1);
  fg_stream_free(s);
  fg_device_close(d);
}

TEST(Device, CpuQueryReportsTopology) {
  fg_device *d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d));
  fg_device_info info;
  ASSERT_EQ(FG_OK, fg_device_query(d, &info));
  EXPECT_EQ(FG_DEVICE_CPU, info.kind);
  EXPECT_GT(info.total_mem, 0u);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GT(info.numa_cores, 0);
  EXPECT_GT(std::strlen(info.name), 0u);
  fg_device_close(d);
}

TEST(Device, BadSpecsAreClearErrors) {
  fg_device *d = reinterpret_cast<fg_device *>(0x1);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_device_open("tpu", &d));
  EXPECT_EQ(nullptr, d);
  EXPECT_NE(std::string(fg_last_error()).find("tpu"), std::string::npos);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_device_open("cuda:x", &d));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_device_open("cuda:-1", &d));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_device_open(nullptr, &d));
}

TEST(Device, CudaWithoutGpuIsAnErrorNotACrash) {
  if (fg_cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present; this checks the GPU-less path";
  fg_device *d = nullptr;
  EXPECT_EQ(FG_ERR_NO_DEVICE, fg_device_open("cuda", &d));
  EXPECT_EQ(nullptr, d);
  EXPECT_NE(std::string(fg_last_error()).find("cuda"), std::string::npos);
  EXPECT_EQ(FG_ERR_NO_DEVICE, fg_device_open("cuda:3", &d));
}

TEST(Device, AutoHonoursForgiaDevice) {
  fg_device *d;
  setenv("FORGIA_DEVICE", "cpu", 1);
  ASSERT_EQ(FG_OK, fg_device_open("auto", &d));
  EXPECT_EQ(FG_DEVICE_CPU, fg_device_kind_of(d));
  fg_device_close(d);
  setenv("FORGIA_DEVICE", "nonsense", 1);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_device_open("auto", &d));
  EXPECT_NE(std::string(fg_last_error()).find("FORGIA_DEVICE"), std::string::npos);
  unsetenv("FORGIA_DEVICE");
  ASSERT_EQ(FG_OK, fg_device_open("auto", &d));
  EXPECT_EQ(fg_cuda_device_count() > 0 ? FG_DEVICE_CUDA : FG_DEVICE_CPU, fg_device_kind_of(d));
  fg_device_close(d);
}

TEST(Device, ConvertOnCpuMatchesElemFunctions) {
  fg_device *d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d));
  std::vector<float> x = fgt::gaussian(300'001, 3);
  std::vector<uint16_t> h(x.size());
  std::vector<float> back(x.size());
  ASSERT_EQ(FG_OK, fg_convert(d, h.data(), FG_BF16, x.data(), FG_F32, x.size(), nullptr));
  for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(fg_f32_to_bf16(x[i]), h[i]);
  ASSERT_EQ(FG_OK, fg_convert(d, back.data(), FG_F32, h.data(), FG_BF16, x.size(), nullptr));
  for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(fg_bf16_to_f32(h[i]), back[i]);
  ASSERT_EQ(FG_OK, fg_convert(d, h.data(), FG_F16, x.data(), FG_F32, x.size(), nullptr));
  for (size_t i = 0; i < x.size(); i++) ASSERT_EQ(fg_f32_to_f16(x[i]), h[i]);
  EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_convert(d, h.data(), FG_Q4_0, x.data(), FG_F32, 32, nullptr));
  fg_device_close(d);
}
