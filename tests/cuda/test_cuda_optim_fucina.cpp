// Fucina's SGD/Adam/AdamW trajectories (tests/data/golden/fucina_optim.txt, with and without
// bf16 state) replayed on CUDA: the final parameters, f32 masters and 16-bit parameters are
// Fucina's bits, as on the CPU (tests/cpu/test_optim.cpp, Optim.SameBitsAsFucina).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "optim_cases.h"
#include "testutil.h"

TEST(CudaOptim, SameBitsAsFucina) {
  FGT_REQUIRE_CUDA();
  fg_device *gpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  const auto cases = fgt::optim_cases("fucina_optim.txt");
  ASSERT_EQ(22u, cases.size());
  for (const auto &oc : cases) {
    SCOPED_TRACE(oc.line);
    std::vector<std::vector<uint32_t>> masters;
    const auto got = fgt::optim_replay(gpu, oc, nullptr, &masters);
    ASSERT_EQ(oc.want.size(), masters.size());
    for (size_t j = 0; j < got.size(); j++) {
      ASSERT_EQ(oc.want[j].size(), masters[j].size());
      EXPECT_EQ(0, std::memcmp(oc.want[j].data(), masters[j].data(), masters[j].size() * 4)) << "p" << j;
      if (oc.p16 != FG_F32) {
        ASSERT_EQ(oc.want16.size(), got.size());
        ASSERT_EQ(oc.want16[j].size() * 2, got[j].size());
        EXPECT_EQ(0, std::memcmp(oc.want16[j].data(), got[j].data(), got[j].size())) << "p" << j << "_16";
      }
    }
  }
  fg_device_close(gpu);
}
