// Every row of the kernel-family table and of the op table, generated from the tables
// (tests/util/family_cases.h): CUDA writes the bytes the CPU writes, compared with memcmp.
#include <gtest/gtest.h>

// The family table is internal (fg_family_name is not exported): naming it here makes the
// build link this test with the library's objects, not with a shared libforgia.
#include "device/family_table.h"
#include "family_cases.h"

namespace {

class CudaFamilies : public ::testing::TestWithParam<int> {};

TEST_P(CudaFamilies, CudaEqualsCpu) {
  FGT_REQUIRE_CUDA();
  const fg_family_id id = (fg_family_id)GetParam();
  const std::vector<fgt::FamilyCase> cases = fgt::family_cases(id);
  ASSERT_FALSE(cases.empty()) << "family " << fg_family_name(id) << " has no case in tests/util/family_cases.h";
  fg_device *cpu = nullptr, *gpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu)) << fg_last_error();
  for (const fgt::FamilyCase &c : cases) {
    const fgt::Bytes want = c.run(cpu), got = c.run(gpu);
    ASSERT_EQ(want.size(), got.size()) << c.name;
    size_t first = 0;
    while (first < want.size() && want[first] == got[first]) first++;
    EXPECT_TRUE(first == want.size()) << c.name << ": first differing byte " << first << " of " << want.size();
  }
  fg_device_close(gpu);
  fg_device_close(cpu);
}

INSTANTIATE_TEST_SUITE_P(EveryRow, CudaFamilies, ::testing::Range(0, (int)FG_FAMILY_COUNT),
                         [](const ::testing::TestParamInfo<int> &i) {
                           return std::string(fg_family_name((fg_family_id)i.param));
                         });

}  // namespace
