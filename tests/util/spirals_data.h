// The two-spirals data of tools/train_spirals_net.c regenerated in the tests from the
// library's RNG (two spirals of 1.5 turns, 100 points each, gaussian noise 0.02 from the
// stream fg_rng_at(seed, 0)), for an independent check of the CLI's printed accuracy; and a
// byte comparison of two files. Shared by the train and es CLI tests.
#ifndef FORGIA_TEST_SPIRALS_DATA_H
#define FORGIA_TEST_SPIRALS_DATA_H

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/rng.h"
#include "testutil.h"

namespace fgt {

inline void spirals_data(uint64_t seed, std::vector<float> &xy, std::vector<int> &label) {
  std::vector<float> noise(400);
  fg_rng_spec r;
  std::memset(&r, 0, sizeof r);
  r.kind = FG_RNG_GAUSS;
  r.seed = fg_rng_at(seed, 0);
  r.scale = 0.02f;
  ASSERT_EQ(FG_OK, fg_rng_fill_host(&r, noise.data(), noise.size()));
  xy.assign(400, 0);
  label.assign(200, 0);
  for (int i = 0; i < 100; i++)
    for (int c = 0; c < 2; c++) {
      const int row = 2 * i + c;
      const double t = 0.1 + 0.9 * i / 99, a = 3.0 * M_PI * t + c * M_PI;
      xy[2 * row] = (float)(t * std::cos(a)) + noise[2 * row];
      xy[2 * row + 1] = (float)(t * std::sin(a)) + noise[2 * row + 1];
      label[row] = c;
    }
}

// Whether two files hold the same (non-empty) bytes.
inline bool same_bytes(const std::string &a, const std::string &b) {
  auto x = read_file(a), y = read_file(b);
  return !x.empty() && x == y;
}

}  // namespace fgt

#endif
