// Every optimizer trajectory of the torch goldens (and with bf16 state) on CUDA against the
// CPU, compared with memcmp: the updates are the same elem/ ops on both.
#include <gtest/gtest.h>

#include "forgia/forgia.h"
#include "forgia/optimset.h"
#include "optim_cases.h"
#include "testutil.h"

TEST(CudaOptim, EveryTrajectoryMatchesCpuBitwise) {
  FGT_REQUIRE_CUDA();
  fg_device *cpu = nullptr, *gpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  for (auto oc : fgt::optim_cases()) {
    for (fg_dtype sd : {FG_F32, FG_BF16}) {
      oc.c.state_dtype = sd;
      oc.c.second_moment_dtype = sd;
      EXPECT_EQ(fgt::optim_replay(cpu, oc), fgt::optim_replay(gpu, oc)) << oc.line << " state " << fg_dtype_name(sd);
    }
  }
  fg_device_close(cpu);
  fg_device_close(gpu);
}

// A set's global clip and steps on the GPU equal the CPU's, bit for bit.
TEST(CudaOptim, SetClipAndStepMatchCpu) {
  FGT_REQUIRE_CUDA();
  auto run = [](const char *spec) {
    fg_device *dev = nullptr;
    EXPECT_EQ(FG_OK, fg_device_open(spec, &dev));
    std::vector<fg_tensor *> ts;
    const uint64_t shapes[3] = {231, 5, 3'000'001};
    fg_optim_config ca = fg_optim_defaults(FG_OPTIM_ADAMW), cb = fg_optim_defaults(FG_OPTIM_SGD);
    cb.momentum = 0.9f;
    fg_optim *a = nullptr, *b = nullptr;
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &ca, &a));
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &cb, &b));
    fg_optimset *set = nullptr;
    EXPECT_EQ(FG_OK, fg_optimset_create(&set));
    for (int i = 0; i < 3; i++) {
      fg_tensor *t = nullptr;
      EXPECT_EQ(FG_OK, fg_tensor_create(dev, nullptr, i == 1 ? FG_BF16 : FG_F32, 1, &shapes[i], &t));
      EXPECT_EQ(FG_OK, fg_tensor_grad_alloc(t));
      ts.push_back(t);
      EXPECT_EQ(FG_OK, fg_optim_add(i == 2 ? b : a, t, nullptr));
    }
    EXPECT_EQ(FG_OK, fg_optimset_add(set, a));
    EXPECT_EQ(FG_OK, fg_optimset_add(set, b));
    std::vector<std::vector<float>> out;
    for (int k = 0; k < 4; k++) {
      for (size_t i = 0; i < ts.size(); i++) {
        std::vector<float> g = fgt::gaussian(ts[i]->numel, 50 + 10 * k + i, 4.0f);
        EXPECT_EQ(FG_OK, fg_device_copy(dev, ts[i]->grad, g.data(), g.size() * 4, FG_COPY_H2D));
      }
      EXPECT_EQ(FG_OK, fg_optimset_clip_grad_norm(set, 1.0f, nullptr, fg_device_stream(dev)));
      EXPECT_EQ(FG_OK, fg_optimset_step(set, fg_device_stream(dev)));
      EXPECT_EQ(FG_OK, fg_stream_sync(fg_device_stream(dev)));
    }
    for (fg_tensor *t : ts) {
      std::vector<float> h(t->nbytes / 4 + 1);
      EXPECT_EQ(FG_OK, fg_tensor_download(t, h.data(), t->nbytes, nullptr));
      out.push_back(h);
    }
    fg_optimset_free(set);
    fg_optim_free(a);
    fg_optim_free(b);
    for (fg_tensor *t : ts) fg_tensor_free(t);
    fg_device_close(dev);
    return out;
  };
  EXPECT_EQ(run("cpu"), run("cuda"));
}
