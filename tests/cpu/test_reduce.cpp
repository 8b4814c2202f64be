// The fixed-grid reduction: identical bits for any thread count, equal to an explicit
// emulation of the grid, and close to a long-double reference.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "forgia/device.h"
#include "forgia/elem/reduce.h"
#include "testutil.h"

static void reduce_cpu(const std::vector<float> &x, double *s, double *q) {
  fg_device *d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d));
  ASSERT_EQ(FG_OK, fg_reduce_sum_sumsq(d, x.data(), x.size(), s, q)) << fg_last_error();
  fg_device_close(d);
}

// Written from the prose of elem/reduce.h, not from its helpers.
static void grid_emulation(const std::vector<float> &x, double *s, double *q) {
  size_t n = x.size(), nc = (n + 4095) / 4096, p2 = 1;
  while (p2 < nc) p2 *= 2;
  std::vector<double> cs(p2, 0.0), cq(p2, 0.0);
  for (size_t c = 0; c < nc; c++) {
    double ls[256], lq[256];
    for (int l = 0; l < 256; l++) {
      ls[l] = 0.0, lq[l] = 0.0;
      for (size_t i = c * 4096 + l; i < std::min(n, (c + 1) * 4096); i += 256) {
        ls[l] += (double)x[i];
        lq[l] += (double)x[i] * (double)x[i];
      }
    }
    for (int st = 128; st > 0; st /= 2)
      for (int i = 0; i < st; i++) ls[i] += ls[i + st], lq[i] += lq[i + st];
    cs[c] = ls[0], cq[c] = lq[0];
  }
  for (size_t st = p2 / 2; st > 0; st /= 2)
    for (size_t i = 0; i < st; i++) cs[i] += cs[i + st], cq[i] += cq[i + st];
  *s = cs[0], *q = cq[0];
}

TEST(Reduce, SameBitsForOneTwoAndSevenThreads) {
  std::vector<float> x = fgt::gaussian(3'000'017, 7, 3.0f);
  x[5] = 1e30f, x[6] = -1e30f, x[99] = 1e-40f;  // cancellation and a subnormal
  int saved = omp_get_max_threads();
  double s[3], q[3];
  int threads[3] = {1, 2, 7};
  for (int k = 0; k < 3; k++) {
    omp_set_num_threads(threads[k]);
    reduce_cpu(x, &s[k], &q[k]);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(0, std::memcmp(&s[0], &s[1], 8));
  EXPECT_EQ(0, std::memcmp(&s[0], &s[2], 8));
  EXPECT_EQ(0, std::memcmp(&q[0], &q[1], 8));
  EXPECT_EQ(0, std::memcmp(&q[0], &q[2], 8));
  double es, eq;
  grid_emulation(x, &es, &eq);
  EXPECT_EQ(0, std::memcmp(&s[0], &es, 8));
  EXPECT_EQ(0, std::memcmp(&q[0], &eq, 8));
}

TEST(Reduce, CloseToExtendedPrecisionReference) {
  for (size_t n : {0ul, 1ul, 255ul, 4096ul, 4097ul, 100'003ul}) {
    std::vector<float> x = fgt::gaussian(n, n + 1);
    long double rs = 0, rq = 0;
    for (float v : x) rs += v, rq += (long double)v * v;
    double s, q;
    reduce_cpu(x, &s, &q);
    EXPECT_NEAR((double)rs, s, 1e-9 * (1 + std::fabs((double)rs)) + 1e-9) << n;
    EXPECT_NEAR((double)rq, q, 1e-12 * (1 + (double)rq)) << n;
  }
}

TEST(Reduce, SpecialValues) {
  std::vector<float> x(10000, 1.0f);
  double s, q;
  x[3] = std::numeric_limits<float>::infinity();
  reduce_cpu(x, &s, &q);
  EXPECT_TRUE(std::isinf(s) && s > 0);
  x[9000] = -std::numeric_limits<float>::infinity();
  reduce_cpu(x, &s, &q);
  EXPECT_TRUE(std::isnan(s));
  uint64_t canon, got;
  double cn = __builtin_nan("");
  std::memcpy(&canon, &cn, 8);
  std::memcpy(&got, &s, 8);
  EXPECT_EQ(canon, got) << "NaN results are canonical";
  EXPECT_TRUE(std::isinf(q));
}

TEST(Reduce, RejectsNullArguments) {
  fg_device *d;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &d));
  double s, q;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_sum_sumsq(d, nullptr, 4, &s, &q));
  EXPECT_NE(std::string(fg_last_error()).find("NULL"), std::string::npos);
  fg_device_close(d);
}
