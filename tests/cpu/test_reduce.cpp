// Reductions on the CPU against the reference grid (tests/util/reduce_ref.h: Fucina's
// sumSquares written as plain loops), Fucina's own sumSquares bits (golden file written by a
// Zig build of Fucina), special values, f16/bf16 inputs, list totals, thread-count
// invariance, the sumsq -> clip_scale pipeline on one stream, and argument validation.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/elem/rng.h"
#include "forgia/forgia.h"
#include "reduce_ref.h"
#include "testutil.h"

using fgt::dbits;

namespace {

const fg_reduce_op kOps[] = {FG_REDUCE_SUM, FG_REDUCE_SUMSQ, FG_REDUCE_MAXABS};
const float kInf = std::numeric_limits<float>::infinity();

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  ~Cpu() { fg_device_close(dev); }
};

struct Tensor {
  fg_dtype dt;
  std::vector<uint8_t> b;
  size_t n() const { return b.size() / (dt == FG_F32 ? 4 : 2); }
};

Tensor f32(const std::vector<float> &v) {
  Tensor t{FG_F32, std::vector<uint8_t>(v.size() * 4)};
  if (!v.empty()) std::memcpy(t.b.data(), v.data(), v.size() * 4);
  return t;
}

Tensor narrow(fg_dtype d, const std::vector<float> &v) {
  Tensor t{d, std::vector<uint8_t>(v.size() * 2)};
  for (size_t i = 0; i < v.size(); i++) {
    uint16_t h = d == FG_F16 ? fg_f32_to_f16(v[i]) : fg_f32_to_bf16(v[i]);
    std::memcpy(&t.b[i * 2], &h, 2);
  }
  return t;
}

// Runs fg_reduce_list on dev (the CPU: device memory is host memory, but the results still
// travel through device allocations and an explicit copy, as on any device).
void run(fg_device *dev, fg_reduce_op op, const std::vector<Tensor> &list, std::vector<double> *per, double *total,
         fg_stream *s = nullptr) {
  std::vector<const void *> xs;
  std::vector<fg_dtype> dts;
  std::vector<size_t> ns;
  for (const Tensor &t : list) xs.push_back(t.b.data()), dts.push_back(t.dt), ns.push_back(t.n());
  double *d;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(dev, (list.size() + 1) * 8, (void **)&d));
  ASSERT_EQ(FG_OK, fg_reduce_list(dev, op, xs.data(), dts.data(), ns.data(), list.size(), per ? d + 1 : nullptr,
                                  total ? d : nullptr, s))
      << fg_last_error();
  if (s) {
    ASSERT_EQ(FG_OK, fg_stream_sync(s));
  }
  std::vector<double> h(list.size() + 1);
  ASSERT_EQ(FG_OK, fg_device_copy(dev, h.data(), d, h.size() * 8, FG_COPY_D2H));
  if (total) *total = h[0];
  if (per) per->assign(h.begin() + 1, h.end());
  fg_device_mem_free(dev, d);
}

double one(fg_device *dev, fg_reduce_op op, const Tensor &t) {
  std::vector<double> per;
  run(dev, op, {t}, &per, nullptr);
  return per.empty() ? -1.0 : per[0];
}

// Gaussian values with large and tiny magnitudes mixed in, so that the order of additions
// shows in the last bits.
std::vector<float> values(size_t n, uint64_t seed) {
  std::vector<float> x = fgt::gaussian(n, seed, 3.0f);
  for (size_t i = seed % 13; i < n; i += 101) x[i] *= 1e6f;
  for (size_t i = seed % 17; i < n; i += 211) x[i] *= 1e-6f;
  return x;
}

#define EXPECT_BITS(want, got, what) EXPECT_EQ(dbits(want), dbits(got)) << what << ": want " << (want) << " got " << (got)

TEST(Reduce, GridMatchesReferenceAtChunkAndStrideBoundaries) {
  Cpu c;
  for (size_t n : {0ul, 1ul, 3ul, 4ul, 5ul, 8ul, 12ul, 15ul, 16ul, 17ul, 19ul, 28ul, 31ul, 32ul, 33ul, 2047ul, 2048ul,
                   2049ul, 32767ul, 32768ul, 32769ul, 32783ul, 65536ul, 65551ul, 100003ul, 10'000'000ul}) {
    const std::vector<float> x = values(n, n + 3);
    for (fg_reduce_op op : kOps) EXPECT_BITS(fgt::ref_tensor(op, x), one(c.dev, op, f32(x)), fg_reduce_op_name(op) << " n=" << n);
  }
}

TEST(Reduce, EmptyGivesZero) {
  Cpu c;
  for (fg_reduce_op op : kOps) {
    Tensor t{FG_F32, {}};
    EXPECT_EQ(0u, dbits(one(c.dev, op, t))) << fg_reduce_op_name(op);
    // NULL data is fine for no values
    double *d;
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(c.dev, 8, (void **)&d));
    *d = 5.0;
    ASSERT_EQ(FG_OK, fg_reduce_array(c.dev, op, nullptr, FG_BF16, 0, d, nullptr)) << fg_last_error();
    EXPECT_EQ(0u, dbits(*d));
    fg_device_mem_free(c.dev, d);
  }
}

// Fucina's sumSquares of uniformFill(42, n, -1, 1), from a Zig build of Fucina 0.2.0.
TEST(Reduce, SumOfSquaresIsFucinasBits) {
  std::ifstream f(std::string(FORGIA_TEST_DATA) + "/golden/fucina_sumsq.txt");
  ASSERT_TRUE(f.good()) << "tests/data/golden/fucina_sumsq.txt is missing (tests/data/fucina_gen/run.sh writes it)";
  const fg_rng_uniform_params u = {-1.0, 2.0, 1.0f, std::nextafter(1.0f, -1.0f)};
  Cpu c;
  std::string line;
  int cases = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    unsigned long long n, seed, want;
    int lo, hi;
    ASSERT_EQ(5, std::sscanf(line.c_str(), "n=%llu seed=%llu lo=%d hi=%d sumsq_bits=%llx", &n, &seed, &lo, &hi, &want))
        << line;
    ASSERT_TRUE(seed == 42 && lo == -1 && hi == 1) << "the generator below makes uniformFill(42, n, -1, 1) only: " << line;
    std::vector<float> x(n);
    for (size_t i = 0; i < n; i++) x[i] = fg_rng_uniform_value(&u, fg_rng_at(seed, i));
    EXPECT_EQ(want, dbits(fgt::ref_tensor(FG_REDUCE_SUMSQ, x))) << "the test's reference, " << line;
    EXPECT_EQ(want, dbits(one(c.dev, FG_REDUCE_SUMSQ, f32(x)))) << line;
    cases++;
  }
  EXPECT_GE(cases, 6);
}

TEST(Reduce, SpecialValues) {
  Cpu c;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const double cnan = fgt::ref_nan();
  // NaN in a lane chain, in a leftover group, in the tail, and in a later chunk.
  for (size_t pos : {5ul, 32768ul - 7, 32768ul - 2, 40000ul}) {
    std::vector<float> x = values(32768 + 10000, 9);
    x[pos] = nan;
    if (pos == 32768 - 7 || pos == 32768 - 2) x.resize(32768 - 1);  // 2047 strides, 3 groups, 3 tail values
    for (fg_reduce_op op : kOps) EXPECT_BITS(cnan, one(c.dev, op, f32(x)), fg_reduce_op_name(op) << " NaN at " << pos);
  }
  // A NaN with a payload and the sign set still gives the canonical NaN.
  {
    std::vector<float> x(100, 1.0f);
    const uint32_t neg_payload = 0xffc12345u;
    std::memcpy(&x[50], &neg_payload, 4);
    for (fg_reduce_op op : kOps) EXPECT_BITS(cnan, one(c.dev, op, f32(x)), fg_reduce_op_name(op));
  }
  std::vector<float> x(40000, 0.5f);
  x[3] = kInf;
  EXPECT_BITS(HUGE_VAL, one(c.dev, FG_REDUCE_SUM, f32(x)), "sum +inf");
  EXPECT_BITS(HUGE_VAL, one(c.dev, FG_REDUCE_SUMSQ, f32(x)), "sumsq +inf");
  EXPECT_BITS(HUGE_VAL, one(c.dev, FG_REDUCE_MAXABS, f32(x)), "maxabs +inf");
  x[39000] = -kInf;  // another chunk
  EXPECT_BITS(cnan, one(c.dev, FG_REDUCE_SUM, f32(x)), "sum inf - inf");
  EXPECT_BITS(HUGE_VAL, one(c.dev, FG_REDUCE_SUMSQ, f32(x)), "sumsq -inf");
  EXPECT_BITS(HUGE_VAL, one(c.dev, FG_REDUCE_MAXABS, f32(x)), "maxabs -inf");
  // -0.0 only: every op gives +0.0 (the accumulators start at +0.0).
  std::vector<float> nz(33, -0.0f);
  for (fg_reduce_op op : kOps) EXPECT_EQ(0u, dbits(one(c.dev, op, f32(nz)))) << fg_reduce_op_name(op);
  // Subnormals: their squares are exact and nonzero in f64.
  std::vector<float> sub(1000);
  for (size_t i = 0; i < sub.size(); i++) {
    uint32_t u = (uint32_t)(i * 7919 % 0x7fffff + 1) | (i % 3 ? 0u : 0x80000000u);
    std::memcpy(&sub[i], &u, 4);
  }
  for (fg_reduce_op op : kOps) {
    const double got = one(c.dev, op, f32(sub));
    EXPECT_BITS(fgt::ref_tensor(op, sub), got, fg_reduce_op_name(op) << " subnormals");
    EXPECT_NE(0.0, got);
  }
  // Largest f32 values: the f64 sum of squares does not overflow.
  std::vector<float> big(20, std::numeric_limits<float>::max());
  const double m = std::numeric_limits<float>::max();
  EXPECT_BITS(20 * (m * m), one(c.dev, FG_REDUCE_SUMSQ, f32(big)), "sumsq of FLT_MAX");
  EXPECT_BITS(m, one(c.dev, FG_REDUCE_MAXABS, f32(big)), "maxabs of FLT_MAX");
}

TEST(Reduce, HalfInputsWidenExactly) {
  Cpu c;
  for (fg_dtype d : {FG_F16, FG_BF16})
    for (size_t n : {0ul, 7ul, 17ul, 2049ul, 32769ul, 300'001ul}) {
      std::vector<float> x = fgt::gaussian(n, n * 5 + 1, 20.0f);
      if (n > 100) {
        x[10] = kInf, x[11] = -0.0f, x[12] = 1e-7f, x[13] = -3e-6f;  // inf, signed zero, subnormal f16
        x[n - 1] = 70000.0f;                                           // f16 overflow -> inf
      }
      Tensor t = narrow(d, x);
      const std::vector<float> wide = fgt::ref_widen(d, t.b);
      for (fg_reduce_op op : kOps) {
        const double got = one(c.dev, op, t);
        EXPECT_BITS(fgt::ref_tensor(op, wide), got, fg_dtype_name(d) << " " << fg_reduce_op_name(op) << " n=" << n);
        EXPECT_BITS(one(c.dev, op, f32(wide)), got, "same as the widened f32 values");
      }
    }
}

TEST(Reduce, SameBitsForOneTwoAndSevenThreads) {
  Cpu c;
  std::vector<float> x = values(3'000'017, 7);
  x[5] = 1e30f, x[6] = -1e30f, x[99] = 1e-40f;  // cancellation and a subnormal
  std::vector<Tensor> list = {f32(x), narrow(FG_BF16, values(100'003, 8)), f32(values(4096, 9)),
                              narrow(FG_F16, values(65'537, 10))};
  const int saved = omp_get_max_threads();
  for (fg_reduce_op op : kOps) {
    std::vector<double> per[3];
    double total[3];
    const int threads[3] = {1, 2, 7};
    for (int k = 0; k < 3; k++) {
      omp_set_num_threads(threads[k]);
      run(c.dev, op, list, &per[k], &total[k]);
    }
    omp_set_num_threads(saved);
    for (int k = 1; k < 3; k++) {
      EXPECT_EQ(0, std::memcmp(per[0].data(), per[k].data(), per[0].size() * 8)) << threads[k] << " threads";
      EXPECT_BITS(total[0], total[k], threads[k] << " threads");
    }
    EXPECT_BITS(fgt::ref_tensor(op, x), per[0][0], fg_reduce_op_name(op));
  }
}

TEST(Reduce, ListTotalsFollowListOrder) {
  Cpu c;
  std::vector<Tensor> list = {f32(values(70'000, 1)), Tensor{FG_F32, {}}, narrow(FG_BF16, values(33, 2)),
                              f32(values(1, 3)), narrow(FG_F16, values(32'768, 4)), f32(values(200'000, 5))};
  for (fg_reduce_op op : kOps) {
    std::vector<double> want;
    for (const Tensor &t : list) want.push_back(fgt::ref_tensor(op, fgt::ref_widen(t.dt, t.b)));
    std::vector<double> per;
    double total = -1, total_only = -1;
    run(c.dev, op, list, &per, &total);
    ASSERT_EQ(list.size(), per.size());
    for (size_t i = 0; i < list.size(); i++) EXPECT_BITS(want[i], per[i], fg_reduce_op_name(op) << " tensor " << i);
    EXPECT_BITS(fgt::ref_total(op, want), total, fg_reduce_op_name(op) << " total");
    run(c.dev, op, list, nullptr, &total_only);
    EXPECT_BITS(total, total_only, "total without per-tensor results");
    std::vector<double> per_only;
    run(c.dev, op, list, &per_only, nullptr);
    EXPECT_EQ(0, std::memcmp(per.data(), per_only.data(), per.size() * 8));
  }
  // The list order is visible in the bits: a tensor that dominates, then small ones.
  std::vector<Tensor> order = {f32({1e16f}), f32({1.0f}), f32({1.0f})}, rev = {f32({1.0f}), f32({1.0f}), f32({1e16f})};
  double a, b;
  run(c.dev, FG_REDUCE_SUM, order, nullptr, &a);
  run(c.dev, FG_REDUCE_SUM, rev, nullptr, &b);
  EXPECT_EQ((double)1e16f, a);          // (1e16 + 1) + 1 rounds back each time
  EXPECT_EQ((double)1e16f + 2.0, b);    // (1 + 1) + 1e16 is exact
  // A NaN in one tensor makes every op's total NaN; MAXABS totals are the maximum.
  std::vector<Tensor> withnan = {f32({1.0f, 2.0f}), f32({std::numeric_limits<float>::quiet_NaN()}), f32({-7.0f})};
  for (fg_reduce_op op : kOps) {
    std::vector<double> per;
    double total;
    run(c.dev, op, withnan, &per, &total);
    EXPECT_BITS(fgt::ref_nan(), total, fg_reduce_op_name(op));
    EXPECT_BITS(fgt::ref_nan(), per[1], fg_reduce_op_name(op));
    EXPECT_FALSE(std::isnan(per[0]) || std::isnan(per[2]));
  }
  double mx;
  run(c.dev, FG_REDUCE_MAXABS, {f32({1.0f, -2.0f}), f32({-7.5f}), f32({3.0f})}, nullptr, &mx);
  EXPECT_EQ(7.5, mx);
  // No tensors: the total is +0.0.
  double *d;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(c.dev, 8, (void **)&d));
  *d = 3.0;
  EXPECT_EQ(FG_OK, fg_reduce_list(c.dev, FG_REDUCE_SUMSQ, nullptr, nullptr, nullptr, 0, nullptr, d, nullptr));
  EXPECT_EQ(0u, dbits(*d));
  fg_device_mem_free(c.dev, d);
}

TEST(Reduce, TensorListAndStreams) {
  Cpu c;
  std::vector<std::vector<float>> vals = {values(50'000, 21), values(3, 22), values(40'000, 23)};
  std::vector<fg_tensor *> ts;
  for (size_t i = 0; i < vals.size(); i++) {
    uint64_t shape[1] = {vals[i].size()};
    fg_tensor *t;
    ASSERT_EQ(FG_OK, fg_tensor_create(c.dev, "w", i == 1 ? FG_BF16 : FG_F32, 1, shape, &t)) << fg_last_error();
    if (i == 1) {
      Tensor h = narrow(FG_BF16, vals[i]);
      ASSERT_EQ(FG_OK, fg_tensor_upload(t, h.b.data(), h.b.size(), nullptr));
      vals[i] = fgt::ref_widen(FG_BF16, h.b);
    } else {
      ASSERT_EQ(FG_OK, fg_tensor_upload(t, vals[i].data(), vals[i].size() * 4, nullptr));
    }
    ts.push_back(t);
  }
  fg_stream *s;
  ASSERT_EQ(FG_OK, fg_stream_create(c.dev, &s));
  double *d;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(c.dev, 4 * 8, (void **)&d));
  for (int rep = 0; rep < 3; rep++)  // repeated calls reuse the stream's scratch
    for (fg_reduce_op op : kOps) {
      ASSERT_EQ(FG_OK, fg_reduce_tensors(c.dev, op, ts.data(), ts.size(), d + 1, d, rep == 1 ? nullptr : s))
          << fg_last_error();
      ASSERT_EQ(FG_OK, fg_stream_sync(s));
      double h[4];
      ASSERT_EQ(FG_OK, fg_device_copy(c.dev, h, d, sizeof h, FG_COPY_D2H));
      std::vector<double> want;
      for (auto &v : vals) want.push_back(fgt::ref_tensor(op, v));
      for (size_t i = 0; i < 3; i++) EXPECT_BITS(want[i], h[1 + i], fg_reduce_op_name(op) << " tensor " << i);
      EXPECT_BITS(fgt::ref_total(op, want), h[0], fg_reduce_op_name(op) << " total");
    }
  fg_device_mem_free(c.dev, d);
  fg_stream_free(s);
  for (fg_tensor *t : ts) fg_tensor_free(t);
}

// Fucina's clipGradNorm with the norm never leaving the device: sumsq over the list, then
// clip_scale reads the device-resident total on the same stream.
TEST(Reduce, SumOfSquaresFeedsClipScaleWithoutHostCopy) {
  Cpu c;
  std::vector<std::vector<float>> g = {values(70'001, 31), values(1000, 32), values(33, 33)};
  std::vector<std::vector<float>> host = g;
  fg_stream *s;
  ASSERT_EQ(FG_OK, fg_stream_create(c.dev, &s));
  double *total;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(c.dev, 8, (void **)&total));
  std::vector<const void *> xs;
  std::vector<fg_dtype> dts;
  std::vector<size_t> ns;
  std::vector<fg_op_args> args;
  for (auto &v : g) {
    xs.push_back(v.data()), dts.push_back(FG_F32), ns.push_back(v.size());
    fg_op_args a = {};
    a.ptr[0] = v.data(), a.dtype[0] = FG_F32, a.n = v.size();
    args.push_back(a);
  }
  const float max_norm = 1.0f;
  ASSERT_EQ(FG_OK, fg_reduce_list(c.dev, FG_REDUCE_SUMSQ, xs.data(), dts.data(), ns.data(), g.size(), nullptr, total, s));
  fg_op_params p = {};
  p.f[0] = max_norm;
  p.dscalar = total;
  ASSERT_EQ(FG_OK, fg_op_run(c.dev, FG_OP_CLIP_SCALE, &p, args.data(), args.size(), s)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_stream_sync(s));
  // The host computation: Fucina's clipByGlobalNorm.
  std::vector<double> per;
  for (auto &v : host) per.push_back(fgt::ref_tensor(FG_REDUCE_SUMSQ, v));
  const float norm = (float)std::sqrt(fgt::ref_total(FG_REDUCE_SUMSQ, per));
  const float coef = max_norm / (norm + 1e-6f);
  ASSERT_LT(coef, 1.0f) << "the case must clip";
  for (size_t t = 0; t < g.size(); t++)
    for (size_t i = 0; i < g[t].size(); i++) {
      const float want = host[t][i] * coef;
      ASSERT_EQ(0, std::memcmp(&want, &g[t][i], 4)) << "tensor " << t << " element " << i;
    }
  fg_device_mem_free(c.dev, total);
  fg_stream_free(s);
}

TEST(Reduce, RejectsBadArguments) {
  Cpu c, other;
  std::vector<float> x(10, 1.0f);
  double out;
  const void *xs[1] = {x.data()};
  size_t ns[1] = {10};
  fg_dtype q[1] = {FG_Q4_0};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_array(nullptr, FG_REDUCE_SUM, x.data(), FG_F32, 10, &out, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_array(c.dev, (fg_reduce_op)7, x.data(), FG_F32, 10, &out, nullptr));
  EXPECT_NE(std::string(fg_last_error()).find("unknown op 7"), std::string::npos) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_array(c.dev, FG_REDUCE_SUM, nullptr, FG_F32, 10, &out, nullptr));
  EXPECT_NE(std::string(fg_last_error()).find("NULL data for 10 values"), std::string::npos) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_array(c.dev, FG_REDUCE_SUM, x.data(), FG_F32, 10, nullptr, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_list(c.dev, FG_REDUCE_SUM, xs, nullptr, ns, 1, &out, nullptr, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG,
            fg_reduce_list(c.dev, FG_REDUCE_SUM, xs, q, ns, 1, nullptr, nullptr, nullptr));  // nothing to write
  EXPECT_NE(std::string(fg_last_error()).find("both NULL"), std::string::npos) << fg_last_error();
  EXPECT_EQ(FG_ERR_TYPE, fg_reduce_list(c.dev, FG_REDUCE_SUMSQ, xs, q, ns, 1, &out, nullptr, nullptr));
  EXPECT_NE(std::string(fg_last_error()).find("q4_0"), std::string::npos) << fg_last_error();
  fg_stream *s;
  ASSERT_EQ(FG_OK, fg_stream_create(other.dev, &s));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_array(c.dev, FG_REDUCE_SUM, x.data(), FG_F32, 10, &out, s));
  fg_stream_free(s);
  uint64_t shape[1] = {10};
  fg_tensor *t;
  ASSERT_EQ(FG_OK, fg_tensor_create(other.dev, "elsewhere", FG_F32, 1, shape, &t));
  const fg_tensor *ts[1] = {t};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_tensors(c.dev, FG_REDUCE_SUM, ts, 1, nullptr, &out, nullptr));
  EXPECT_NE(std::string(fg_last_error()).find("'elsewhere'"), std::string::npos) << fg_last_error();
  const fg_tensor *none[1] = {nullptr};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_reduce_tensors(c.dev, FG_REDUCE_SUM, none, 1, nullptr, &out, nullptr));
  fg_tensor_free(t);
  EXPECT_STREQ("maxabs", fg_reduce_op_name(FG_REDUCE_MAXABS));
  EXPECT_EQ(nullptr, fg_reduce_op_name((fg_reduce_op)3));
}

}  // namespace
