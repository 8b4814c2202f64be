// Float ES on CUDA against Fucina's own es.Trainer: every scenario of
// tests/data/golden/fucina_es.txt replayed with the parameters on the GPU, every byte after
// every event and every update's statistics required to be Fucina's (and so the CPU's) bits.
#include <gtest/gtest.h>

#include "es_fucina_cases.h"
#include "forgia/forgia.h"
#include "testutil.h"

TEST(CudaEsFucina, EveryScenarioBitExactOnTheGpu) {
  FGT_REQUIRE_CUDA();
  fg_device *gpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  const auto cases = fgt::load_cases();
  ASSERT_EQ(13u, cases.size());
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    fgt::replay(gpu, c);
  }
  fg_device_close(gpu);
}
