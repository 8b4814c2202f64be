// The op layer on CUDA against the CPU, compared with memcmp (numerics contract): every op
// of the table on 10^7 elements with special values, for each float dtype and a mixed
// AdamW, plus a thousand-tensor list and a stream-ordered clip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "op_harness.h"
#include "testutil.h"

using fgt::OpCase;
using fgt::OpTensor;

namespace {
struct Both {
  fg_device *cpu = nullptr, *gpu = nullptr;
  Both() {
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &cpu));
    EXPECT_EQ(FG_OK, fg_device_open("cuda", &gpu)) << fg_last_error();
  }
  ~Both() {
    fg_device_close(cpu);
    fg_device_close(gpu);
  }
};
}  // namespace

TEST(CudaOps, EveryOpMatchesCpuBitwiseOnTenMillionElements) {
  FGT_REQUIRE_CUDA();
  Both b;
  for (fg_dtype fd : {FG_F32, FG_F16, FG_BF16}) {
    for (const OpCase &c : fgt::op_cases(fd)) {
      // One large tensor at an odd counter offset, and small ones around chunk edges.
      std::vector<OpTensor> in = fgt::op_inputs(c, {3, 10'000'019, 1, 32768, 32769, 65537}, 17);
      std::vector<OpTensor> cpu = fgt::op_run_on(b.cpu, c, in);
      std::vector<OpTensor> gpu = fgt::op_run_on(b.gpu, c, in);
      EXPECT_TRUE(fgt::op_lists_equal(cpu, gpu)) << fg_op_name(c.op) << " " << fg_dtype_name(fd);
    }
  }
}

TEST(CudaOps, MixedDtypeAdamWMatchesCpuBitwise) {
  FGT_REQUIRE_CUDA();
  Both b;
  OpCase c = fgt::op_cases(FG_F32)[3];
  c.dt[0] = FG_BF16;
  c.dt[2] = FG_BF16;
  c.dt[3] = FG_F16;
  std::vector<OpTensor> in = fgt::op_inputs(c, {10'000'001}, 4);
  EXPECT_TRUE(fgt::op_lists_equal(fgt::op_run_on(b.cpu, c, in), fgt::op_run_on(b.gpu, c, in)));
}

TEST(CudaOps, AThousandSmallTensorsMatchCpuBitwise) {
  FGT_REQUIRE_CUDA();
  Both b;
  for (const OpCase &c : fgt::op_cases(FG_F32)) {
    std::vector<size_t> sizes(1000);
    for (size_t t = 0; t < sizes.size(); t++) sizes[t] = (t * 7919) % 9000;
    std::vector<OpTensor> in = fgt::op_inputs(c, sizes, 8);
    EXPECT_TRUE(fgt::op_lists_equal(fgt::op_run_on(b.cpu, c, in), fgt::op_run_on(b.gpu, c, in))) << fg_op_name(c.op);
  }
}

// The clip coefficient read from device memory on the stream that computed it.
TEST(CudaOps, ClipScaleFromDeviceScalarMatchesCpu) {
  FGT_REQUIRE_CUDA();
  Both b;
  std::vector<float> g = fgt::gaussian(3'000'001, 2, 3.0f);
  const double sumsq = 123456.789;
  fg_op_params p = {};
  p.f[0] = 1.0f;
  std::vector<float> want = g;
  p.dscalar = &sumsq;
  fg_op_args a = {{want.data()}, {FG_F32}, want.size(), 0, 0};
  ASSERT_EQ(FG_OK, fg_op_run(b.cpu, FG_OP_CLIP_SCALE, &p, &a, 1, nullptr));
  void *dg, *ds;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(b.gpu, g.size() * 4, &dg));
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(b.gpu, 8, &ds));
  ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, dg, g.data(), g.size() * 4, FG_COPY_H2D));
  ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, ds, &sumsq, 8, FG_COPY_H2D));
  p.dscalar = (const double *)ds;
  a.ptr[0] = dg;
  fg_stream *s = fg_device_stream(b.gpu);
  ASSERT_EQ(FG_OK, fg_op_run(b.gpu, FG_OP_CLIP_SCALE, &p, &a, 1, s)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_stream_sync(s));
  std::vector<float> got(g.size());
  ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, got.data(), dg, g.size() * 4, FG_COPY_D2H));
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), g.size() * 4));
  fg_device_mem_free(b.gpu, dg);
  fg_device_mem_free(b.gpu, ds);
}

TEST(CudaOps, TensorsLiveOnTheGpu) {
  FGT_REQUIRE_CUDA();
  Both b;
  const uint64_t shape[2] = {1000, 1001};
  fg_tensor *t = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_create(b.gpu, "w", FG_F32, 2, shape, &t)) << fg_last_error();
  std::vector<float> x = fgt::gaussian(t->numel, 1), y(t->numel);
  ASSERT_EQ(FG_OK, fg_tensor_upload(t, x.data(), t->nbytes, nullptr));
  ASSERT_EQ(FG_OK, fg_tensor_grad_alloc(t));
  ASSERT_EQ(FG_OK, fg_tensor_download(t, y.data(), t->nbytes, nullptr));
  EXPECT_EQ(x, y);
  std::vector<float> g(t->numel, 1.0f);
  ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, t->grad, g.data(), t->nbytes, FG_COPY_H2D));
  ASSERT_EQ(FG_OK, fg_tensor_grad_zero(t, nullptr));
  ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, g.data(), t->grad, t->nbytes, FG_COPY_D2H));
  EXPECT_EQ(std::vector<float>(t->numel, 0.0f), g);
  fg_tensor_free(t);
}
