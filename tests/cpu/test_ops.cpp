// The op layer on the CPU: every op against a serial element-by-element application of its
// elem/ function (which checks the launcher: lists, chunking, dtypes, pair alignment), the
// Fucina goldens for the op math, thread-count invariance, and argument validation.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "forgia/forgia.h"
#include "op_harness.h"
#include "testutil.h"

using fgt::OpCase;
using fgt::OpTensor;

namespace {

struct Cpu {
  fg_device *dev = nullptr;
  Cpu() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  ~Cpu() { fg_device_close(dev); }
};

struct OpInfo {
  unsigned w, ns, rm, wm;
};

OpInfo info(fg_op_kind op) {
  switch (op) {
#define X(E, id, name, W, ns, rm, wm, dts) \
  case FG_OP_##E: return {W, ns, rm, wm};
    FG_OP_TABLE(X)
#undef X
    default: ADD_FAILURE() << "op " << op; return {};
  }
}

void call(fg_op_kind op, const fg_op_params *p, fg_op_vals *v, uint64_t seed, uint64_t c) {
  switch (op) {
#define X(E, id, name, W, ns, rm, wm, dts) \
  case FG_OP_##E:                                \
    fg_op_##name(p, v, seed, c);                 \
    break;
    FG_OP_TABLE(X)
#undef X
    default: FAIL();
  }
}

float ld(const std::vector<uint8_t> &s, fg_dtype d, size_t i) {
  if (d == FG_F32) {
    float f;
    std::memcpy(&f, &s[i * 4], 4);
    return f;
  }
  if (d == FG_F16 || d == FG_BF16) {
    uint16_t h;
    std::memcpy(&h, &s[i * 2], 2);
    return d == FG_F16 ? fg_f16_to_f32(h) : fg_bf16_to_f32(h);
  }
  return (float)s[i];
}

void st(std::vector<uint8_t> &s, fg_dtype d, size_t i, float v) {
  if (v != v && d != FG_U8 && d != FG_BOOL) v = fg_bits_f32(0x7fc00000u);  // the stored NaN
  if (d == FG_F32) {
    std::memcpy(&s[i * 4], &v, 4);
  } else if (d == FG_F16 || d == FG_BF16) {
    uint16_t h = d == FG_F16 ? fg_f32_to_f16(v) : fg_f32_to_bf16(v);
    std::memcpy(&s[i * 2], &h, 2);
  } else {
    s[i] = v != 0.0f;
  }
}

// One element at a time, in order, with the pair of a W = 2 op recomputed per element.
std::vector<OpTensor> serial(const OpCase &c, std::vector<OpTensor> list) {
  const OpInfo in = info(c.op);
  for (OpTensor &x : list)
    for (size_t i = 0; i < x.n; i++) {
      const uint64_t ctr = x.index0 + i;
      const unsigned lane = in.w == 2 ? (unsigned)(ctr & 1) : 0;
      fg_op_vals v[2] = {};
      for (unsigned k = 0; k < in.ns; k++)
        if (in.rm >> k & 1) v[lane][k] = ld(x.s[k], c.dt[k], i);
      call(c.op, &c.p, v, x.seed, ctr - lane);
      for (unsigned k = 0; k < in.ns; k++)
        if (in.wm >> k & 1) st(x.s[k], c.dt[k], i, v[lane][k]);
    }
  return list;
}

const std::vector<size_t> kSizes = {0, 1, 2, 3, 4095, 4096, 32767, 32768, 32769, 100001};

}  // namespace

TEST(Ops, EveryOpMatchesSerialApplicationForEachDtype) {
  Cpu cpu;
  for (fg_dtype fd : {FG_F32, FG_F16, FG_BF16}) {
    for (const OpCase &c : fgt::op_cases(fd)) {
      std::vector<OpTensor> in = fgt::op_inputs(c, kSizes, 5);
      std::vector<OpTensor> got = fgt::op_run_on(cpu.dev, c, in);
      EXPECT_TRUE(fgt::op_lists_equal(got, serial(c, in))) << fg_op_name(c.op) << " " << fg_dtype_name(fd);
    }
  }
}

TEST(Ops, MixedStateDtypesNarrowPerStream) {
  Cpu cpu;
  OpCase c = fgt::op_cases(FG_F32)[3];
  ASSERT_EQ(FG_OP_ADAMW, c.op);
  c.dt[0] = FG_BF16;  // bf16 parameter, f32 grad, bf16 m, f16 v
  c.dt[2] = FG_BF16;
  c.dt[3] = FG_F16;
  std::vector<OpTensor> in = fgt::op_inputs(c, kSizes, 9);
  EXPECT_TRUE(fgt::op_lists_equal(fgt::op_run_on(cpu.dev, c, in), serial(c, in)));
}

TEST(Ops, ResultsDoNotDependOnThreadCount) {
  Cpu cpu;
  const int saved = omp_get_max_threads();
  for (fg_dtype fd : {FG_F32, FG_BF16}) {
    for (const OpCase &c : fgt::op_cases(fd)) {
      std::vector<OpTensor> in = fgt::op_inputs(c, {(1u << 20) + 3, 5, 70001}, 21);
      std::vector<std::vector<OpTensor>> outs;
      for (int th : {1, 2, 7}) {
        omp_set_num_threads(th);
        outs.push_back(fgt::op_run_on(cpu.dev, c, in));
      }
      EXPECT_TRUE(fgt::op_lists_equal(outs[0], outs[1])) << fg_op_name(c.op);
      EXPECT_TRUE(fgt::op_lists_equal(outs[0], outs[2])) << fg_op_name(c.op);
    }
  }
  omp_set_num_threads(saved);
}

TEST(Ops, AThousandTensorsInOneCallEqualOneCallEach) {
  Cpu cpu;
  const OpCase c = fgt::op_cases(FG_F32)[3];
  std::vector<size_t> sizes(1000);
  for (size_t t = 0; t < sizes.size(); t++) sizes[t] = 1 + (t * 7919) % 9000;
  std::vector<OpTensor> in = fgt::op_inputs(c, sizes, 3);
  std::vector<OpTensor> all = fgt::op_run_on(cpu.dev, c, in);
  for (size_t t = 0; t < in.size(); t += 97) {
    std::vector<OpTensor> one = fgt::op_run_on(cpu.dev, c, {in[t]});
    EXPECT_TRUE(fgt::op_lists_equal(one, {all[t]})) << "tensor " << t;
  }
}

// Fucina's AdamW golden (src/optim_tests.zig): lr 0.1, betas 0.9/0.999, eps 1e-8, wd 0.1, three
// steps. The golden is printed to 9 digits, hence the tolerance of the reference test.
TEST(Ops, AdamWReproducesFucinaGolden) {
  Cpu cpu;
  float w[6] = {1, -2, 0.5f, 3, -0.25f, 1.5f}, m[6] = {}, v[6] = {};
  const float g[3][6] = {{.5f, -1, 2, .25f, -.75f, 1.25f}, {-.3f, .8f, -1.2f, .6f, .1f, -.9f}, {1.1f, .2f, -.4f, -1.3f, .7f, .05f}};
  for (int t = 1; t <= 3; t++) {
    fg_op_params p = fgt::adamw_params(0.1, 0.9, 0.999, 1e-8, 0.1, (uint64_t)t);
    fg_op_args a = {{w, (void *)g[t - 1], m, v}, {FG_F32, FG_F32, FG_F32, FG_F32}, 6, 0, 0};
    ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_ADAMW, &p, &a, 1, nullptr)) << fg_last_error();
  }
  const float want[6] = {0.789949954f, -1.84225929f, 0.364398748f, 2.74388266f, -0.0998689979f, 1.33619833f};
  for (int i = 0; i < 6; i++) EXPECT_NEAR(want[i], w[i], 2e-6) << i;
}

static std::vector<uint32_t> bits_of(const float *x, size_t n) {
  std::vector<uint32_t> b(n);
  std::memcpy(b.data(), x, n * 4);
  return b;
}

// Computed independently of Fucina's build: gaussianFillAtFast(42, first 0, 8) and the window
// first = 3, n = 3.
TEST(Ops, FastGaussianOpGivesFucinaStream) {
  Cpu cpu;
  float x[8];
  fg_op_params p = {};
  p.f[0] = 1.0f;
  fg_op_args a = {{x}, {FG_F32}, 8, 42, 0};
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_RNG_GAUSS_FAST, &p, &a, 1, nullptr));
  EXPECT_EQ(bits_of(x, 8), (std::vector<uint32_t>{0x3ED45626, 0x3F27161D, 0xBF6452A7, 0x3FA9D5AE, 0x3FDD634F,
                                                   0xBFF113CC, 0x3F0BADCA, 0xBFD41332}));
  a.n = 3;
  a.index0 = 3;
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_RNG_GAUSS_FAST, &p, &a, 1, nullptr));
  EXPECT_EQ(bits_of(x, 3), (std::vector<uint32_t>{0x3FA9D5AE, 0x3FDD634F, 0xBFF113CC}));
}

// Computed independently of Fucina's build: uniformFill(42, 4, 0, 1) and kaimingUniformFill(7,
// 4, fan_in 64).
TEST(Ops, UniformOpGivesFucinaStream) {
  Cpu cpu;
  float x[4];
  fg_op_params p = {};
  p.d[0] = 0.0;
  p.d[1] = 1.0;
  p.f[0] = 1.0f;
  p.f[1] = std::nextafter(1.0f, 0.0f);
  fg_op_args a = {{x}, {FG_F32}, 4, 42, 0};
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_RNG_UNIFORM, &p, &a, 1, nullptr));
  EXPECT_EQ(bits_of(x, 4), (std::vector<uint32_t>{0x3F3DD732, 0x3E23BF8D, 0x3E8EA4CF, 0x3EB039C4}));
  const float bound = (float)std::sqrt(1.0 / 64.0);
  p.d[0] = (double)-bound;
  p.d[1] = (double)bound - (double)-bound;
  p.f[0] = bound;
  p.f[1] = std::nextafter(bound, -bound);
  a.seed = 7;
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_RNG_UNIFORM, &p, &a, 1, nullptr));
  EXPECT_EQ(bits_of(x, 4), (std::vector<uint32_t>{0xBCE1A0F1, 0xBDF76786, 0x3DCD3081, 0x3CA9D75C}));
}

// Dropout keeps what the mask keeps, scaled by f32(1/(1-p)); the mask op and the dropout op
// agree element for element, and the kept fraction is near 1 - p.
TEST(Ops, DropoutAgreesWithItsMask) {
  Cpu cpu;
  const size_t n = 200000;
  std::vector<float> x(n, 2.0f), y(n);
  std::vector<uint8_t> mask(n);
  fg_op_params p = {};
  p.u[0] = (uint64_t)std::ceil((1.0 - 0.3) * 9007199254740992.0);
  p.f[0] = 1.0f / (1.0f - 0.3f);
  fg_op_args am = {{mask.data()}, {FG_U8}, n, 99, 0};
  fg_op_args ad = {{y.data(), x.data()}, {FG_F32, FG_F32}, n, 99, 0};
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_RNG_KEEP_MASK, &p, &am, 1, nullptr));
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_DROPOUT, &p, &ad, 1, nullptr));
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    ASSERT_EQ(mask[i] ? 2.0f * p.f[0] : 0.0f, y[i]) << i;
    kept += mask[i];
  }
  EXPECT_NEAR(0.7, (double)kept / n, 0.005);
}

// The clip coefficient comes from a sum of squares in device memory (here host memory,
// the CPU's device memory): coef = max_norm / (f32(sqrt(total)) + 1e-6), applied only if < 1.
TEST(Ops, ClipScaleReadsTheDeviceResidentSumOfSquares) {
  Cpu cpu;
  std::vector<float> g = {3.0f, -4.0f, 0.5f};
  double sumsq = 9.0 + 16.0 + 0.25;
  fg_op_params p = {};
  p.f[0] = 1.0f;
  p.dscalar = &sumsq;
  fg_op_args a = {{g.data()}, {FG_F32}, g.size(), 0, 0};
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_CLIP_SCALE, &p, &a, 1, nullptr));
  const float coef = 1.0f / ((float)std::sqrt(sumsq) + 1e-6f);
  EXPECT_EQ(3.0f * coef, g[0]);
  EXPECT_EQ(-4.0f * coef, g[1]);
  EXPECT_EQ(0.5f * coef, g[2]);
  std::vector<float> before = g;
  p.f[0] = 100.0f;  // coef > 1: untouched
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_CLIP_SCALE, &p, &a, 1, nullptr));
  EXPECT_EQ(before, g);
}

TEST(Ops, BadArgumentsAreRefusedBeforeAnythingRuns) {
  Cpu cpu;
  float w[4] = {1, 2, 3, 4}, m[4] = {}, v[4] = {};
  uint16_t gb[4] = {};
  fg_op_params p = fgt::adamw_params(0.1, 0.9, 0.999, 1e-8, 0.0, 1);
  fg_op_args a[2] = {{{w, w, m, v}, {FG_F32, FG_F32, FG_F32, FG_F32}, 4, 0, 0},
                     {{w, gb, m, v}, {FG_F32, FG_BF16, FG_F32, FG_F32}, 4, 0, 0}};
  EXPECT_EQ(FG_ERR_TYPE, fg_op_run(cpu.dev, FG_OP_ADAMW, &p, a, 2, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "tensor 1 of the list, stream 1: dtype bf16, expected f32"))
      << fg_last_error();
  EXPECT_EQ(1.0f, w[0]) << "the first tensor must not have been updated";
  a[1] = {{w, nullptr, m, v}, {FG_F32, FG_F32, FG_F32, FG_F32}, 4, 0, 0};
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_op_run(cpu.dev, FG_OP_ADAMW, &p, a, 2, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "NULL data")) << fg_last_error();
  a[1].n = 0;  // an empty tensor needs no data
  EXPECT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_ADAMW, &p, a, 2, nullptr)) << fg_last_error();
  EXPECT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_ADAMW, &p, nullptr, 0, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_op_run(cpu.dev, (fg_op_kind)FG_OP_KIND_COUNT, &p, a, 1, nullptr));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_op_run(cpu.dev, FG_OP_CLIP_SCALE, &p, a, 1, nullptr));
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "dscalar")) << fg_last_error();
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_op_run(cpu.dev, FG_OP_ADAMW, nullptr, a, 1, nullptr));
  fg_device *other = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &other));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_op_run(cpu.dev, FG_OP_ADAMW, &p, a, 1, fg_device_stream(other)));
  fg_device_close(other);
  EXPECT_STREQ("adamw", fg_op_name(FG_OP_ADAMW));
  EXPECT_EQ(nullptr, fg_op_name((fg_op_kind)-1));
}

// Work queued on a stream runs in order: a fill then a scale on the device's own stream.
TEST(Ops, QueuedOnTheDeviceStreamInOrder) {
  Cpu cpu;
  std::vector<float> x(70000);
  fg_op_params p = {};
  p.f[0] = 2.5f;
  fg_op_args a = {{x.data()}, {FG_F32}, x.size(), 0, 0};
  fg_stream *s = fg_device_stream(cpu.dev);
  ASSERT_NE(nullptr, s);
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_FILL, &p, &a, 1, s));
  p.f[0] = 4.0f;
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_SCALE, &p, &a, 1, s));
  ASSERT_EQ(FG_OK, fg_stream_sync(s));
  for (float v : x) ASSERT_EQ(10.0f, v);
  fg_stream_free(s);  // the device's stream: ignored, still usable
  ASSERT_EQ(FG_OK, fg_op_run(cpu.dev, FG_OP_SCALE, &p, &a, 1, fg_device_stream(cpu.dev)));
  EXPECT_EQ(40.0f, x[0]);
}

// Calls given no stream share the device's stream and its scratch: threads take turns, so
// lists of different lengths (scratch growing under another call) stay correct.
TEST(Ops, ThreadsSharingADeviceWithoutStreams) {
  Cpu cpu;
  std::vector<std::thread> th;
  std::vector<int> ok(4, 0);
  for (int k = 0; k < 4; k++)
    th.emplace_back([&, k] {
      const OpCase c = fgt::op_cases(FG_F32)[3];
      std::vector<size_t> sizes((size_t)(k + 1) * 300, 100 + 50 * (size_t)k);
      std::vector<OpTensor> in = fgt::op_inputs(c, sizes, 40 + (uint64_t)k);
      bool same = true;
      for (int r = 0; r < 5; r++) same = same && fgt::op_lists_equal(fgt::op_run_on(cpu.dev, c, in), serial(c, in));
      ok[(size_t)k] = same;
    });
  for (auto &t : th) t.join();
  EXPECT_EQ(std::vector<int>(4, 1), ok);
}
