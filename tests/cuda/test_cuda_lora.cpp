// LoRA on CUDA against the CPU. The elementwise parts (the LoRA ops: the add of the delta and
// of a merge in f32/f16/bf16, the gradient's scale, the masked dx add) compare with memcmp on
// millions of elements with special values; the whole adapter (A's init, forward with and
// without dropout, backward, merges) compares with memcmp under the exact GEMM, and within
// GEMM tolerance under the fast one (cuBLAS vs OpenBLAS: docs/design.md,
// Numerics contract, rule 5).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/lora.h"
#include "lora_rig.h"
#include "op_harness.h"
#include "testutil.h"

using fgt::DevBuf;
using fgt::OpCase;
using fgt::OpTensor;

namespace {

struct Both {
  fg_device *cpu = nullptr, *gpu = nullptr;
  Both() {
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &cpu));
    if (fgt::have_cuda()) {
      EXPECT_EQ(FG_OK, fg_device_open("cuda", &gpu)) << fg_last_error();
    }
  }
  ~Both() {
    fg_device_close(cpu);
    fg_device_close(gpu);
  }
};

std::vector<OpCase> lora_cases() {
  std::vector<OpCase> v;
  for (fg_dtype fd : {FG_F32, FG_F16, FG_BF16}) {
    OpCase c;
    std::memset(&c, 0, sizeof c);
    c.op = FG_OP_LORA_ADD;
    c.nstreams = 3;
    c.dt[0] = c.dt[1] = fd;
    c.dt[2] = FG_F32;
    c.p.f[0] = 2.5f;
    v.push_back(c);
  }
  OpCase s;
  std::memset(&s, 0, sizeof s);
  s.op = FG_OP_LORA_SCALE;
  s.nstreams = 2;
  s.dt[0] = s.dt[1] = FG_F32;
  s.p.f[0] = -0.375f;
  v.push_back(s);
  for (float p : {0.0f, 0.3f}) {
    OpCase d;
    std::memset(&d, 0, sizeof d);
    d.op = FG_OP_LORA_DROPOUT_ADD;
    d.nstreams = 2;
    d.dt[0] = d.dt[1] = FG_F32;
    fg_rng_spec r;
    std::memset(&r, 0, sizeof r);
    r.kind = FG_RNG_KEEP_MASK;
    r.p = p;
    EXPECT_EQ(FG_OK, fg_rng_op_params(&r, nullptr, &d.p));
    v.push_back(d);
  }
  return v;
}

struct LoraRun {
  std::vector<float> a, y, yd, ga, gb, dx;
  std::vector<uint8_t> merged32, merged16, mergedbf;
};

// One adapter's life on dev: init, forward (eval and dropout), backward, merges.
LoraRun life(fg_device *dev, fg_gemm_mode mode) {
  const uint64_t in = 96, out = 80, n = 33;
  const uint32_t r = 8;
  LoraRun R;
  fg_lora_config c = {r, 16.0f, 0.2f};
  fg_lora *l = nullptr;
  EXPECT_EQ(FG_OK, fg_lora_create(dev, in, out, &c, 77, &l)) << fg_last_error();
  if (!l) return R;
  l->gemm = mode;
  R.a = fgt::lora_download(l->a);
  fgt::lora_set(l->b, fgt::gaussian(out * r, 5, 0.3f));
  std::vector<float> w = fgt::gaussian(out * in, 6);
  fg_tensor *wt = fgt::lora_tensor(dev, "w", FG_F32, out, in, w);
  DevBuf x(dev, fgt::gaussian(n * in, 7)), dy(dev, fgt::gaussian(n * out, 8)), y(dev, n * out), dx(dev, n * in);
  EXPECT_EQ(FG_OK, fg_lora_forward(l, wt, x.p, n, nullptr, y.p, nullptr)) << fg_last_error();
  R.y = y.get();
  const uint64_t seed = 4242;
  EXPECT_EQ(FG_OK, fg_lora_forward(l, wt, x.p, n, &seed, y.p, nullptr));
  R.yd = y.get();
  EXPECT_EQ(FG_OK, fg_lora_backward(l, wt, x.p, n, &seed, dy.p, dx.p, nullptr)) << fg_last_error();
  R.dx = dx.get();
  R.ga.resize(l->a->numel);
  R.gb.resize(l->b->numel);
  EXPECT_EQ(FG_OK, fg_device_copy(dev, R.ga.data(), l->a->grad, R.ga.size() * 4, FG_COPY_D2H));
  EXPECT_EQ(FG_OK, fg_device_copy(dev, R.gb.data(), l->b->grad, R.gb.size() * 4, FG_COPY_D2H));
  for (fg_dtype dt : {FG_F16, FG_BF16}) {
    fg_tensor *w16 = fgt::lora_tensor(dev, "w16", dt, out, in, w), *m = nullptr;
    EXPECT_EQ(FG_OK, fg_lora_merge_copy(l, w16, nullptr, &m, nullptr)) << fg_last_error();
    if (m) (dt == FG_F16 ? R.merged16 : R.mergedbf) = fgt::lora_download_bytes(m);
    fg_tensor_free(m);
    fg_tensor_free(w16);
  }
  EXPECT_EQ(FG_OK, fg_lora_merge_into(l, wt, nullptr));
  R.merged32 = fgt::lora_download_bytes(wt);
  fg_tensor_free(wt);
  fg_lora_free(l);
  return R;
}

void close_vec(const std::vector<float> &a, const std::vector<float> &b, const char *what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  fgt::lora_expect_close(a, fgt::widen(b), 1e-5, what);
}

}  // namespace

TEST(CudaLora, ElementwiseOpsMatchCpuBitwise) {
  FGT_REQUIRE_CUDA();
  Both b;
  for (const OpCase &c : lora_cases()) {
    std::vector<OpTensor> in = fgt::op_inputs(c, {3, 4'000'037, 1, 32769, 65537}, 23);
    std::vector<OpTensor> cpu = fgt::op_run_on(b.cpu, c, in), gpu = fgt::op_run_on(b.gpu, c, in);
    EXPECT_TRUE(fgt::op_lists_equal(cpu, gpu)) << fg_op_name(c.op) << " " << fg_dtype_name(c.dt[0]);
  }
}

TEST(CudaLora, WholeAdapterMatchesCpuBitwiseWithTheExactGemm) {
  FGT_REQUIRE_CUDA();
  Both b;
  LoraRun c = life(b.cpu, FG_GEMM_EXACT), g = life(b.gpu, FG_GEMM_EXACT);
  ASSERT_FALSE(c.a.empty());
  auto same = [](const std::vector<float> &x, const std::vector<float> &y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
  };
  EXPECT_TRUE(same(c.a, g.a)) << "kaiming A";
  EXPECT_TRUE(same(c.y, g.y)) << "forward";
  EXPECT_TRUE(same(c.yd, g.yd)) << "forward with dropout";
  EXPECT_TRUE(same(c.dx, g.dx)) << "dx";
  EXPECT_TRUE(same(c.ga, g.ga)) << "dA";
  EXPECT_TRUE(same(c.gb, g.gb)) << "dB";
  EXPECT_EQ(c.merged32, g.merged32);
  EXPECT_EQ(c.merged16, g.merged16);
  EXPECT_EQ(c.mergedbf, g.mergedbf);
}

TEST(CudaLora, WholeAdapterMatchesCpuWithinToleranceWithTheFastGemm) {
  FGT_REQUIRE_CUDA();
  Both b;
  LoraRun c = life(b.cpu, FG_GEMM_FAST), g = life(b.gpu, FG_GEMM_FAST);
  ASSERT_FALSE(c.a.empty());
  EXPECT_EQ(0, std::memcmp(c.a.data(), g.a.data(), c.a.size() * 4)) << "kaiming A (no GEMM)";
  close_vec(g.y, c.y, "forward");
  close_vec(g.yd, c.yd, "forward with dropout");
  close_vec(g.dx, c.dx, "dx");
  close_vec(g.ga, c.ga, "dA");
  close_vec(g.gb, c.gb, "dB");
  std::vector<float> m32c(c.merged32.size() / 4), m32g(m32c.size());
  std::memcpy(m32c.data(), c.merged32.data(), c.merged32.size());
  std::memcpy(m32g.data(), g.merged32.data(), g.merged32.size());
  close_vec(m32g, m32c, "merge");
}
