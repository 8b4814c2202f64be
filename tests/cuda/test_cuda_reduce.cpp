// Reductions on CUDA against the CPU backend with memcmp (numerics contract): >= 10^7 values
// with every special class, f32/f16/bf16, lists of large and many small tensors, unaligned
// data, Fucina's sumSquares golden, and the sumsq -> clip_scale pipeline on one stream.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
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

struct Both {
  fg_device *cpu = nullptr, *gpu = nullptr;
  ~Both() {
    fg_device_close(cpu);
    fg_device_close(gpu);
  }
};

struct Tensor {
  fg_dtype dt;
  std::vector<uint8_t> b;
  size_t off = 0;  // values to skip on the device (an unaligned start)
  size_t es() const { return dt == FG_F32 ? 4 : 2; }
  size_t n() const { return b.size() / es() - off; }
};

// n values in dtype d: a gaussian bulk with every special class scattered (specials: a
// stride between them; 0 = none).
Tensor make(fg_dtype d, size_t n, uint64_t seed, size_t specials = 9973, size_t off = 0) {
  std::vector<float> x = fgt::gaussian(n + off, seed, 100.0f);
  static const uint32_t sp[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                0x7f800001u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0x477fe000u, 0x33000001u,
                                0x38800000u, 0x387fffffu};
  if (specials)
    for (size_t i = 17, k = 0; i < x.size(); i += specials) std::memcpy(&x[i], &sp[k++ % (sizeof sp / 4)], 4);
  Tensor t{d, std::vector<uint8_t>(x.size() * (d == FG_F32 ? 4 : 2)), off};
  for (size_t i = 0; i < x.size(); i++) {
    if (d == FG_F32) {
      std::memcpy(&t.b[i * 4], &x[i], 4);
    } else {
      uint16_t h = d == FG_F16 ? fg_f32_to_f16(x[i]) : fg_f32_to_bf16(x[i]);
      std::memcpy(&t.b[i * 2], &h, 2);
    }
  }
  return t;
}

Tensor finite(Tensor t) {  // NaN and inf zeroed, so that the results' bits say more than "NaN"
  std::vector<float> w = fgt::ref_widen(t.dt, t.b);
  for (size_t i = 0; i < w.size(); i++)
    if (!std::isfinite(w[i])) std::memset(&t.b[i * t.es()], 0, t.es());
  return t;
}

// The list on dev; GPU inputs are uploaded. Results: [total, per_tensor...].
std::vector<double> run(fg_device *dev, bool gpu, fg_reduce_op op, const std::vector<Tensor> &list,
                        fg_stream *s = nullptr) {
  std::vector<const void *> xs;
  std::vector<void *> owned;
  std::vector<fg_dtype> dts;
  std::vector<size_t> ns;
  for (const Tensor &t : list) {
    const uint8_t *p = t.b.data();
    if (gpu) {
      void *d;
      EXPECT_EQ(FG_OK, fg_device_mem_alloc(dev, t.b.size() + 1, &d));
      EXPECT_EQ(FG_OK, fg_device_copy(dev, d, t.b.data(), t.b.size(), FG_COPY_H2D));
      owned.push_back(d);
      p = (const uint8_t *)d;
    }
    xs.push_back(p + t.off * t.es()), dts.push_back(t.dt), ns.push_back(t.n());
  }
  double *d;
  EXPECT_EQ(FG_OK, fg_device_mem_alloc(dev, (list.size() + 1) * 8, (void **)&d));
  EXPECT_EQ(FG_OK, fg_reduce_list(dev, op, xs.data(), dts.data(), ns.data(), list.size(), d + 1, d, s))
      << fg_last_error();
  std::vector<double> h(list.size() + 1);
  if (s) {
    EXPECT_EQ(FG_OK, fg_device_copy_async(dev, h.data(), d, h.size() * 8, FG_COPY_D2H, s));
    EXPECT_EQ(FG_OK, fg_stream_sync(s));
  } else {
    EXPECT_EQ(FG_OK, fg_device_copy(dev, h.data(), d, h.size() * 8, FG_COPY_D2H));
  }
  fg_device_mem_free(dev, d);
  for (void *p : owned) fg_device_mem_free(dev, p);
  return h;
}

void expect_same(const std::vector<double> &c, const std::vector<double> &g, const std::string &what) {
  ASSERT_EQ(c.size(), g.size());
  for (size_t i = 0; i < c.size(); i++)
    EXPECT_EQ(dbits(c[i]), dbits(g[i])) << what << (i ? " tensor " + std::to_string(i - 1) : std::string(" total"))
                                        << ": cpu " << c[i] << " cuda " << g[i];
}

TEST(CudaReduce, TenMillionValuesMatchCpuBitwise) {
  FGT_REQUIRE_CUDA();
  Both b;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &b.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &b.gpu));
  for (fg_dtype d : {FG_F32, FG_BF16, FG_F16}) {
    const Tensor with = make(d, 10'000'019, 5);
    const Tensor fin = finite(with);
    const Tensor plain = make(d, 10'000'019, 6, 0);
    for (fg_reduce_op op : kOps) {
      for (const Tensor *t : {&with, &fin}) {
        const std::string what = std::string(fg_dtype_name(d)) + " " + fg_reduce_op_name(op) +
                                 (t == &with ? " with specials" : " finite specials");
        std::vector<double> c = run(b.cpu, false, op, {*t}), g = run(b.gpu, true, op, {*t});
        expect_same(c, g, what);
        if (t == &with) {
          EXPECT_EQ(fgt::dbits(fgt::ref_nan()), dbits(g[0])) << what;
        } else {
          EXPECT_TRUE(std::isfinite(g[0])) << what;
        }
      }
      // No specials at all: the bits of a plain finite reduction, against the reference too.
      std::vector<double> g = run(b.gpu, true, op, {plain});
      expect_same(run(b.cpu, false, op, {plain}), g, std::string("plain ") + fg_reduce_op_name(op));
      EXPECT_EQ(dbits(fgt::ref_tensor(op, fgt::ref_widen(d, plain.b))), dbits(g[1]));
    }
  }
}

TEST(CudaReduce, ListsMatchCpuBitwise) {
  FGT_REQUIRE_CUDA();
  Both b;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &b.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &b.gpu));
  // Chunk and stride boundaries, an empty tensor, unaligned starts, mixed dtypes.
  std::vector<Tensor> list;
  uint64_t seed = 100;
  for (size_t n : {0ul, 1ul, 3ul, 4ul, 15ul, 16ul, 17ul, 2047ul, 2048ul, 2049ul, 32767ul, 32768ul, 32769ul,
                   65536ul + 20, 1'000'003ul})
    for (fg_dtype d : {FG_F32, FG_F16, FG_BF16}) {
      const size_t off = seed % 3;
      list.push_back(finite(make(d, n, seed++, 997, off)));
    }
  for (fg_reduce_op op : kOps) {
    const std::vector<double> c = run(b.cpu, false, op, list), g = run(b.gpu, true, op, list);
    expect_same(c, g, fg_reduce_op_name(op));
    for (size_t i = 0; i < list.size(); i++) {
      std::vector<float> w = fgt::ref_widen(list[i].dt, list[i].b);
      w.erase(w.begin(), w.begin() + (long)list[i].off);
      EXPECT_EQ(dbits(fgt::ref_tensor(op, w)), dbits(g[i + 1])) << fg_reduce_op_name(op) << " tensor " << i;
    }
  }
  // A thousand small tensors (multi-tensor shape) and a list with one NaN tensor.
  std::vector<Tensor> many;
  for (int i = 0; i < 1000; i++) many.push_back(make(i % 3 ? FG_F32 : FG_BF16, 4096 + (size_t)(i % 5), 1000 + i, 0));
  for (fg_reduce_op op : kOps) expect_same(run(b.cpu, false, op, many), run(b.gpu, true, op, many), "1000 tensors");
  many[500] = make(FG_F32, 4096, 7, 1000);  // holds a NaN
  for (fg_reduce_op op : kOps) {
    const std::vector<double> g = run(b.gpu, true, op, many);
    expect_same(run(b.cpu, false, op, many), g, "1000 tensors, one NaN");
    EXPECT_EQ(dbits(fgt::ref_nan()), dbits(g[0]));
  }
}

TEST(CudaReduce, SumOfSquaresIsFucinasBits) {
  FGT_REQUIRE_CUDA();
  std::ifstream f(std::string(FORGIA_TEST_DATA) + "/golden/fucina_sumsq.txt");
  ASSERT_TRUE(f.good());
  const fg_rng_uniform_params u = {-1.0, 2.0, 1.0f, std::nextafter(1.0f, -1.0f)};
  fg_device *gpu;
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  std::string line;
  int cases = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    unsigned long long n, seed, want;
    int lo, hi;
    ASSERT_EQ(5, std::sscanf(line.c_str(), "n=%llu seed=%llu lo=%d hi=%d sumsq_bits=%llx", &n, &seed, &lo, &hi, &want));
    Tensor t{FG_F32, std::vector<uint8_t>(n * 4)};
    for (size_t i = 0; i < n; i++) {
      const float v = fg_rng_uniform_value(&u, fg_rng_at(seed, i));
      std::memcpy(&t.b[i * 4], &v, 4);
    }
    EXPECT_EQ(want, dbits(run(gpu, true, FG_REDUCE_SUMSQ, {t})[1])) << line;
    cases++;
  }
  EXPECT_GE(cases, 6);
  fg_device_close(gpu);
}

// sumsq over a list, then clip_scale reading the device-resident total, queued on one stream
// with no host copy in between; the scaled gradients equal the CPU's bit for bit.
TEST(CudaReduce, SumOfSquaresFeedsClipScaleOnOneStream) {
  FGT_REQUIRE_CUDA();
  Both b;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &b.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &b.gpu));
  std::vector<Tensor> g = {make(FG_F32, 3'000'001, 41, 0), make(FG_F32, 4096, 42, 0), make(FG_BF16, 70'000, 43, 0)};
  std::vector<std::vector<uint8_t>> out[2];
  for (int dv = 0; dv < 2; dv++) {
    fg_device *dev = dv ? b.gpu : b.cpu;
    fg_stream *s;
    ASSERT_EQ(FG_OK, fg_stream_create(dev, &s));
    std::vector<void *> ptr;
    std::vector<const void *> xs;
    std::vector<fg_dtype> dts;
    std::vector<size_t> ns;
    std::vector<fg_op_args> args;
    for (const Tensor &t : g) {
      void *d;
      ASSERT_EQ(FG_OK, fg_device_mem_alloc(dev, t.b.size(), &d));
      ASSERT_EQ(FG_OK, fg_device_copy(dev, d, t.b.data(), t.b.size(), FG_COPY_H2D));
      ptr.push_back(d), xs.push_back(d), dts.push_back(t.dt), ns.push_back(t.n());
      fg_op_args a = {};
      a.ptr[0] = d, a.dtype[0] = t.dt, a.n = t.n();
      args.push_back(a);
    }
    double *total;
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(dev, 8, (void **)&total));
    ASSERT_EQ(FG_OK, fg_reduce_list(dev, FG_REDUCE_SUMSQ, xs.data(), dts.data(), ns.data(), g.size(), nullptr, total, s))
        << fg_last_error();
    fg_op_params p = {};
    p.f[0] = 1.0f;  // max_norm well below the norm: every value is scaled
    p.dscalar = total;
    ASSERT_EQ(FG_OK, fg_op_run(dev, FG_OP_CLIP_SCALE, &p, args.data(), args.size(), s)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_stream_sync(s));
    for (size_t i = 0; i < g.size(); i++) {
      std::vector<uint8_t> h(g[i].b.size());
      ASSERT_EQ(FG_OK, fg_device_copy(dev, h.data(), ptr[i], h.size(), FG_COPY_D2H));
      out[dv].push_back(h);
      fg_device_mem_free(dev, ptr[i]);
    }
    fg_device_mem_free(dev, total);
    fg_stream_free(s);
  }
  for (size_t i = 0; i < g.size(); i++) {
    EXPECT_EQ(0, std::memcmp(out[0][i].data(), out[1][i].data(), out[0][i].size())) << "tensor " << i;
    EXPECT_NE(0, std::memcmp(out[0][i].data(), g[i].b.data(), g[i].b.size())) << "tensor " << i << " was not scaled";
  }
}

TEST(CudaReduce, QueuedOnAStreamAndRepeated) {
  FGT_REQUIRE_CUDA();
  Both b;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &b.cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &b.gpu));
  fg_stream *s;
  ASSERT_EQ(FG_OK, fg_stream_create(b.gpu, &s));
  // Growing and shrinking lists on one stream reuse (and regrow) its scratch.
  for (size_t n : {100ul, 5'000'000ul, 33ul, 40'000ul})
    for (fg_reduce_op op : kOps) {
      std::vector<Tensor> list = {make(FG_F32, n, n, 0), make(FG_BF16, n / 2 + 1, n + 1, 0)};
      expect_same(run(b.cpu, false, op, list), run(b.gpu, true, op, list, s), "on a stream");
    }
  fg_stream_free(s);
  // No tensors: the total is +0.0 on the device too.
  double *d, h = 1.0;
  ASSERT_EQ(FG_OK, fg_device_mem_alloc(b.gpu, 8, (void **)&d));
  ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, d, &h, 8, FG_COPY_H2D));
  ASSERT_EQ(FG_OK, fg_reduce_list(b.gpu, FG_REDUCE_SUM, nullptr, nullptr, nullptr, 0, nullptr, d, nullptr));
  ASSERT_EQ(FG_OK, fg_device_copy(b.gpu, &h, d, 8, FG_COPY_D2H));
  EXPECT_EQ(0u, dbits(h));
  fg_device_mem_free(b.gpu, d);
}

}  // namespace
