// APOLLO and APOLLO-Mini on CUDA: every golden trajectory (Fucina's bits, so the CPU's) step
// by step with its state bytes, and larger shapes on a stream against the CPU with memcmp.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "apollo_cases.h"
#include "forgia/forgia.h"
#include "testutil.h"
#include "training/optim_apollo_internal.h" /* the rig reads masters and fallback slots */

TEST(CudaOptimApollo, FucinaTrajectoriesAndStateOnTheGpu) {
  FGT_REQUIRE_CUDA();
  fg_device *gpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  for (const auto &ac : fgt::apollo_cases()) {
    SCOPED_TRACE(ac.line);
    fgt::ApolloRig rig(gpu, ac);
    for (int k = 1; k <= ac.steps; k++) {
      rig.step(k);
      rig.expect_step(k);
      rig.expect_state(k);
    }
    if (ac.big) continue;  // hashes only: no values to resume from
    const int half = ac.steps / 2;
    fgt::ApolloRig resumed(gpu, ac);
    resumed.set_params(ac.want[half - 1]);
    ASSERT_EQ(FG_OK, resumed.load(ac.state.at(half))) << fg_last_error();
    for (int k = half + 1; k <= ac.steps; k++) resumed.step(k);
    resumed.expect_step(ac.steps);
  }
  fg_device_close(gpu);
}


TEST(CudaOptimApollo, LargerShapesMatchCpuBitwise) {
  FGT_REQUIRE_CUDA();
  for (fg_optim_kind kind : {FG_OPTIM_APOLLO, FG_OPTIM_APOLLO_MINI}) {
    for (fg_apollo_scale_type st : {FG_APOLLO_CHANNEL, FG_APOLLO_TENSOR}) {
      const auto cpu = fgt::apollo_run_big("cpu", kind, st), gpu = fgt::apollo_run_big("cuda", kind, st);
      ASSERT_EQ(cpu.size(), gpu.size());
      EXPECT_EQ(0, std::memcmp(cpu.data(), gpu.data(), cpu.size())) << fg_optim_kind_name(kind) << " " << st;
    }
  }
}
