// The deterministic transcendental functions of elem/fmath.h against the C library: fg_exp_f32
// within 2 ulp of exp over its whole finite range (a dense sweep of the f32 values, subnormal
// results included), fg_log_f64 within 2 ulp of logl over every decade (subnormals included),
// tanh, silu and the tanh GELU within 2e-7 of their f64 definitions (absolute up to 1,
// relative beyond), and the special values each one documents.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "forgia/elem/fmath.h"

namespace {

// The f32 ulp at the magnitude of y (the subnormal spacing below FLT_MIN).
double ulp32(double y) {
  const double a = std::fabs(y);
  if (a < (double)FLT_MIN) return std::ldexp(1.0, -149);
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  return std::ldexp(1.0, e - 1 - 23);
}

long double ulp64(long double y) {
  const long double a = std::fabs(y);
  if (a < (long double)DBL_MIN) return std::ldexp(1.0L, -1074);
  int e = 0;
  std::frexp(a, &e);
  return std::ldexp(1.0L, e - 1 - 52);
}

uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Every 61st f32 from lo to hi (same sign), and the ends.
template <class F> void sweep_f32(float lo, float hi, F f) {
  uint32_t a = fg_f32_bits(lo), b = fg_f32_bits(hi);
  if (a > b) std::swap(a, b);
  for (uint64_t u = a; u <= b; u += 61) f(fg_bits_f32((uint32_t)u));
  f(lo), f(hi);
}

TEST(Fmath, ExpWithinTwoUlpOverItsRange) {
  const float lo = -103.97207f, hi = 88.72283172607422f;  // hi: the largest x with exp(x) < FLT_MAX
  double worst = 0;
  float at = 0;
  uint64_t n = 0;
  auto check = [&](float x) {
    const double want = std::exp((double)x), got = (double)fg_exp_f32(x);
    const double err = std::fabs(got - want) / ulp32(want);
    if (err > worst) worst = err, at = x;
    n++;
  };
  sweep_f32(-0.0f, lo, check);
  sweep_f32(0.0f, hi, check);
  EXPECT_GT(n, 35000000u);
  EXPECT_LE(worst, 2.0) << "at x = " << at;
  RecordProperty("exp_worst_ulp", std::to_string(worst));
}

TEST(Fmath, ExpSpecialValues) {
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(fg_exp_f32(NAN)));
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(fg_exp_f32(fg_bits_f32(0xffc00123u))));  // negative NaN with a payload
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(fg_exp_f32(fg_bits_f32(0x7f800001u))));  // signalling NaN
  EXPECT_EQ(INFINITY, fg_exp_f32(INFINITY));
  EXPECT_EQ(INFINITY, fg_exp_f32(88.72283935546875f));  // the first x whose exp rounds past FLT_MAX
  EXPECT_EQ(INFINITY, fg_exp_f32(89.0f));
  EXPECT_EQ(INFINITY, fg_exp_f32(FLT_MAX));
  EXPECT_LT(fg_exp_f32(88.72283172607422f), INFINITY);
  EXPECT_EQ(0u, fg_f32_bits(fg_exp_f32(-INFINITY)));
  EXPECT_EQ(0u, fg_f32_bits(fg_exp_f32(-104.0f)));
  EXPECT_EQ(0u, fg_f32_bits(fg_exp_f32(-FLT_MAX)));
  EXPECT_EQ(1.0f, fg_exp_f32(0.0f));
  EXPECT_EQ(1.0f, fg_exp_f32(-0.0f));
  // Subnormal results: positive, below FLT_MIN, within 2 subnormal ulps (2^-149 each).
  for (float x : {-87.5f, -90.0f, -95.25f, -100.0f, -103.0f, -103.9f}) {
    const float y = fg_exp_f32(x);
    EXPECT_GT(y, 0.0f) << x;
    EXPECT_LT(y, FLT_MIN) << x;
    EXPECT_LE(std::fabs((double)y - std::exp((double)x)), 2.0 * std::ldexp(1.0, -149)) << x;
  }
}

TEST(Fmath, LogWithinTwoUlpOverEveryDecade) {
  uint64_t s = 12345;
  long double worst = 0;
  double at = 0;
  auto check = [&](double x) {
    const long double want = std::log((long double)x), got = (long double)fg_log_f64(x);
    const long double err = std::fabs(got - want) / ulp64(want);
    if (err > worst) worst = err, at = x;
  };
  for (int i = 0; i < 2000000; i++) {
    // Log-uniform over the normal range, and uniform in (0.5, 2) where log is near 0.
    const double u = (double)(splitmix(&s) >> 11) * 0x1p-53;
    check(std::ldexp(1.0 + u, (int)(splitmix(&s) % 2046) - 1022));
    check(0.5 + 1.5 * u);
    // Just below sqrt(1/2), where e ln2 and log m nearly cancel.
    check(0.69 + 0.03 * u);
  }
  for (int k = 1; k <= 100000; k++) {
    check(1.0 + k * DBL_EPSILON), check(1.0 - k * DBL_EPSILON / 2);
    check(std::ldexp((double)(splitmix(&s) >> 12), -1074));  // subnormals of every length
    check(std::ldexp((double)k, -1074));
  }
  check(0.70570010859140242);  // 2.01 ulp before fg_log_f64 summed around the exact m - 1
  check(DBL_MAX), check(DBL_MIN), check(std::ldexp(1.0, -1074)), check(M_SQRT2), check(M_SQRT1_2);
  EXPECT_LE((double)worst, 2.0) << "at x = " << at;
}

TEST(Fmath, LogSpecialValues) {
  EXPECT_EQ(0x7ff8000000000000ull, fg_f64_bits(fg_log_f64(-1.0)));
  EXPECT_EQ(0x7ff8000000000000ull, fg_f64_bits(fg_log_f64(-INFINITY)));
  EXPECT_EQ(0x7ff8000000000000ull, fg_f64_bits(fg_log_f64(-DBL_MIN / 4)));
  EXPECT_EQ(0x7ff8000000000000ull, fg_f64_bits(fg_log_f64(fg_f64_from_bits(0xfff8000000000123ull))));
  EXPECT_EQ(0x7ff8000000000000ull, fg_f64_bits(fg_log_f64(NAN)));
  EXPECT_EQ(-INFINITY, fg_log_f64(0.0));
  EXPECT_EQ(-INFINITY, fg_log_f64(-0.0));
  EXPECT_EQ(INFINITY, fg_log_f64(INFINITY));
  EXPECT_EQ(0.0, fg_log_f64(1.0));
  EXPECT_NEAR(-744.4400719213812, fg_log_f64(std::ldexp(1.0, -1074)), 1e-12);
}

// 2e-7 absolute where the value is at most 1 in magnitude, relative beyond (an f32 result
// cannot be closer than half its ulp, 6e-8 relative).
void expect_close(const char *what, float (*f)(float), double (*ref)(double), double lo, double hi, double step) {
  double worst = 0, at = 0;
  for (double x = lo; x <= hi; x += step) {
    const float xf = (float)x;
    const double want = ref((double)xf), got = (double)f(xf);
    const double err = std::fabs(got - want) / std::max(1.0, std::fabs(want));
    if (err > worst) worst = err, at = xf;
  }
  EXPECT_LE(worst, 2e-7) << what << " at x = " << at;
}

double tanh64(double x) { return std::tanh(x); }
double silu64(double x) { return x / (1.0 + std::exp(-x)); }
double gelu64(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

TEST(Fmath, TanhSiluGeluMatchTheirF64Definitions) {
  expect_close("tanh", fg_tanh_f32, tanh64, -12.0, 12.0, 1.0 / 4096);
  expect_close("tanh", fg_tanh_f32, tanh64, -0.01, 0.01, 1.0 / (1 << 22));  // around the |x| < 2^-12 cut
  expect_close("silu", fg_silu_f32, silu64, -110.0, 110.0, 1.0 / 2048);
  expect_close("gelu", fg_gelu_tanh_f32, gelu64, -20.0, 20.0, 1.0 / 4096);
  expect_close("gelu", fg_gelu_tanh_f32, gelu64, -1e4, 1e4, 0.37);
  // Odd symmetry, limits, NaN.
  for (float x : {0.1f, 0.7f, 3.0f, 8.99f, 9.0f, 20.0f}) EXPECT_EQ(-fg_tanh_f32(x), fg_tanh_f32(-x)) << x;
  EXPECT_EQ(1.0f, fg_tanh_f32(INFINITY));
  EXPECT_EQ(-1.0f, fg_tanh_f32(-INFINITY));
  EXPECT_EQ(0x80000000u, fg_f32_bits(fg_tanh_f32(-0.0f)));
  EXPECT_EQ(0x7fc00000u, fg_f32_bits(fg_tanh_f32(fg_bits_f32(0xffc00005u))));
  EXPECT_EQ(INFINITY, fg_silu_f32(INFINITY));
  EXPECT_EQ(INFINITY, fg_gelu_tanh_f32(INFINITY));
  EXPECT_EQ(0.0f, fg_gelu_tanh_f32(-1e20f));
  EXPECT_EQ(1e20f, fg_gelu_tanh_f32(1e20f));
}

}  // namespace
