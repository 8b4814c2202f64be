// fg_tensor: creation, shapes, ownership, copies and gradients through the public API.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "forgia/forgia.h"

namespace {
struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  ~Cpu() { fg_device_close(dev); }
};
}  // namespace

TEST(Tensor, CreateIsZeroFilledAndRoundTrips) {
  Cpu cpu;
  const uint64_t shape[3] = {2, 3, 5};
  fg_tensor *t = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "blk.0.w", FG_BF16, 3, shape, &t)) << fg_last_error();
  EXPECT_STREQ("blk.0.w", t->name);
  EXPECT_EQ(30u, t->numel);
  EXPECT_EQ(60u, t->nbytes);
  EXPECT_TRUE(t->owns_data);
  EXPECT_EQ(nullptr, t->grad);
  std::vector<uint16_t> got(30, 0xffff), src(30);
  ASSERT_EQ(FG_OK, fg_tensor_download(t, got.data(), 60, nullptr));
  EXPECT_EQ(std::vector<uint16_t>(30, 0), got);
  for (int i = 0; i < 30; i++) src[i] = (uint16_t)(0x3f80 + i);
  ASSERT_EQ(FG_OK, fg_tensor_upload(t, src.data(), 60, nullptr));
  ASSERT_EQ(FG_OK, fg_tensor_download(t, got.data(), 60, fg_device_stream(cpu.dev)));
  ASSERT_EQ(FG_OK, fg_stream_sync(fg_device_stream(cpu.dev)));
  EXPECT_EQ(src, got);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_tensor_upload(t, src.data(), 58, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "blk.0.w")) << fg_last_error();
  fg_tensor_free(t);
  fg_tensor_free(nullptr);
}

TEST(Tensor, GradientIsF32ZeroedAndClearable) {
  Cpu cpu;
  const uint64_t shape[1] = {100001};
  fg_tensor *t = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, nullptr, FG_F16, 1, shape, &t));
  EXPECT_STREQ("", t->name);
  EXPECT_EQ(FG_ERR_STATE, fg_tensor_grad_zero(t, nullptr));
  ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));
  ASSERT_NE(nullptr, t->grad);
  float *g = t->grad;
  for (size_t i = 0; i < t->numel; i++) ASSERT_EQ(0.0f, g[i]);
  g[7] = 3.0f;
  g[100000] = -1.0f;
  ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));  // idempotent: keeps the gradient
  EXPECT_EQ(3.0f, t->grad[7]);
  ASSERT_EQ(FG_OK, fg_tensor_grad_zero(t, nullptr));
  EXPECT_EQ(0.0f, t->grad[7]);
  EXPECT_EQ(0.0f, t->grad[100000]);
  fg_tensor_free(t);
}

TEST(Tensor, ScalarsAndEmptyTensors) {
  Cpu cpu;
  fg_tensor *t = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "s", FG_F32, 0, nullptr, &t));
  EXPECT_EQ(1u, t->numel);
  EXPECT_EQ(4u, t->nbytes);
  fg_tensor_free(t);
  const uint64_t shape[2] = {0, 7};
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "e", FG_F32, 2, shape, &t));
  EXPECT_EQ(0u, t->numel);
  ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));
  EXPECT_EQ(FG_OK, fg_tensor_grad_zero(t, nullptr));
  fg_tensor_free(t);
}

TEST(Tensor, WrapBorrowsAndBadShapesAreRefused) {
  Cpu cpu;
  std::vector<float> mem(12, 1.5f);
  const uint64_t shape[2] = {3, 4};
  fg_tensor *t = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_wrap(cpu.dev, "w", FG_F32, 2, shape, mem.data(), &t));
  EXPECT_FALSE(t->owns_data);
  EXPECT_EQ(mem.data(), t->data);
  fg_tensor_free(t);
  EXPECT_EQ(1.5f, mem[0]);  // borrowed memory untouched
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_tensor_wrap(cpu.dev, "w", FG_F32, 2, shape, nullptr, &t));
  EXPECT_EQ(nullptr, t);
  const uint64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_tensor_create(cpu.dev, "x", FG_F32, 9, nine, &t));
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_tensor_create(cpu.dev, "x", FG_F32, -1, nine, &t));
  const uint64_t q[2] = {4, 48};  // q4_0 blocks are 32 elements
  EXPECT_EQ(FG_ERR_BAD_SHAPE, fg_tensor_create(cpu.dev, "q", FG_Q4_0, 2, q, &t));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "'q'")) << fg_last_error();
  const uint64_t q_ok[2] = {4, 64};
  ASSERT_EQ(FG_OK, fg_tensor_create(cpu.dev, "q", FG_Q4_0, 2, q_ok, &t));
  EXPECT_EQ(4u * 2 * 18, t->nbytes);
  fg_tensor_free(t);
  const uint64_t huge[2] = {1ull << 40, 1ull << 40};
  EXPECT_EQ(FG_ERR_OVERFLOW, fg_tensor_create(cpu.dev, "h", FG_F32, 2, huge, &t));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_tensor_create(nullptr, "x", FG_F32, 1, shape, &t));
}
