// Every row of the kernel-family table and of the op table, generated from the tables
// (tests/util/family_cases.h): the CPU launcher at 1, 2 and 7 threads gives the bytes of the
// scalar loop over the elem/ functions, compared with memcmp.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>

// The family table is internal (fg_family_name is not exported): naming it here makes the
// build link this test with the library's objects, not with a shared libforgia.
#include "device/family_table.h"
#include "family_cases.h"

namespace {

struct CpuDevice {
  fg_device *dev = nullptr;
  CpuDevice() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)) << fg_last_error(); }
  ~CpuDevice() { fg_device_close(dev); }
};

class Families : public ::testing::TestWithParam<int> {};

TEST_P(Families, CpuEqualsScalarReferenceAtEveryThreadCount) {
  const fg_family_id id = (fg_family_id)GetParam();
  const std::vector<fgt::FamilyCase> cases = fgt::family_cases(id);
  ASSERT_FALSE(cases.empty()) << "family " << fg_family_name(id)
                              << " has no case in tests/util/family_cases.h: every row of the table needs one";
  CpuDevice cpu;
  ASSERT_NE(nullptr, cpu.dev);
  const int saved = omp_get_max_threads();
  for (const fgt::FamilyCase &c : cases) {
    const fgt::Bytes want = c.ref();
    ASSERT_FALSE(want.empty()) << c.name;
    for (int threads : {1, 2, 7}) {
      omp_set_num_threads(threads);
      const fgt::Bytes got = c.run(cpu.dev);
      ASSERT_EQ(want.size(), got.size()) << c.name << ", " << threads << " threads";
      size_t first = 0;
      while (first < want.size() && want[first] == got[first]) first++;
      EXPECT_TRUE(first == want.size()) << c.name << ", " << threads << " threads: first differing byte " << first
                                        << " of " << want.size();
    }
  }
  omp_set_num_threads(saved);
}

INSTANTIATE_TEST_SUITE_P(EveryRow, Families, ::testing::Range(0, (int)FG_FAMILY_COUNT),
                         [](const ::testing::TestParamInfo<int> &i) {
                           return std::string(fg_family_name((fg_family_id)i.param));
                         });

// The op family's cases cover every row of the op table, in each float dtype.
TEST(Families, OpCasesCoverEveryOpOfTheTable) {
  const std::vector<fgt::FamilyCase> cases = fgt::family_cases(FG_FAMILY_op);
  EXPECT_EQ((size_t)FG_OP_KIND_COUNT * 3, cases.size());
  for (const fgt::OpRow &r : fgt::op_rows()) {
    size_t n = 0;
    for (const fgt::FamilyCase &c : cases) n += c.name.rfind(std::string("op ") + r.name + " ", 0) == 0;
    EXPECT_EQ(3u, n) << r.name;
  }
}

// The shared dispatch refuses what no family may take, before any backend runs.
TEST(Families, DispatchRefusesAForeignStream) {
  CpuDevice a, b;
  fg_stream *s = nullptr;
  ASSERT_EQ(FG_OK, fg_stream_create(b.dev, &s)) << fg_last_error();
  float x = 1.0f, w = 1.0f, y = 0.0f;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_rmsnorm_forward(a.dev, &x, FG_F32, &w, FG_F32, 1, 1, 1e-6f, 0.0f, &y, nullptr, s));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "the stream belongs to")) << fg_last_error();
  EXPECT_EQ(0.0f, y);
  fg_stream_free(s);
}

}  // namespace
