// Every optimizer trajectory of the torch goldens (and with bf16 state) on CUDA against the
// CPU, compared with memcmp: the updates are the same elem/ ops on both.
#include <gtest/gtest.h>

#include "forgia/forgia.h"
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
