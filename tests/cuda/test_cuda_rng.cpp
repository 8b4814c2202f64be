// Random fills on a GPU give the host fills' bits (memcmp), for every kind, 10^7 values from
// an odd counter, in each output dtype, synchronous and on a stream.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "testutil.h"

namespace {

TEST(CudaRng, FillsMatchTheHostBitForBit) {
  FGT_REQUIRE_CUDA();
  fg_device *dev = nullptr;
  ASSERT_EQ(fg_device_open("cuda", &dev), FG_OK) << fg_last_error();
  fg_stream *s = nullptr;
  ASSERT_EQ(fg_stream_create(dev, &s), FG_OK);
  const size_t n = 10000003;
  void *d = nullptr;
  ASSERT_EQ(fg_device_mem_alloc(dev, n * 4, &d), FG_OK);
  fg_rng_spec specs[4] = {};
  specs[0].kind = FG_RNG_GAUSS_FAST, specs[0].scale = 0.02f;
  specs[1].kind = FG_RNG_UNIFORM, specs[1].lo = -3.0f, specs[1].hi = 0.5f;
  specs[2].kind = FG_RNG_KAIMING, specs[2].fan_in = 4096;
  specs[3].kind = FG_RNG_GAUSS, specs[3].scale = 1.0f;
  for (fg_rng_spec &r : specs) {
    r.seed = 0xDEADBEEFCAFEF00Dull, r.first = 12345;
    std::vector<float> want(n), got(n);
    ASSERT_EQ(fg_rng_fill_host(&r, want.data(), n), FG_OK) << fg_last_error();
    for (fg_stream *st : {(fg_stream *)nullptr, s}) {
      ASSERT_EQ(fg_rng_fill(dev, &r, d, FG_F32, n, st), FG_OK) << fg_last_error();
      if (st) {
        ASSERT_EQ(fg_stream_sync(st), FG_OK);
      }
      ASSERT_EQ(fg_device_copy(dev, got.data(), d, n * 4, FG_COPY_D2H), FG_OK);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), n * 4)) << fg_rng_kind_name(r.kind);
    }
    for (fg_dtype dt : {FG_F16, FG_BF16}) {
      ASSERT_EQ(fg_rng_fill(dev, &r, d, dt, n, nullptr), FG_OK) << fg_last_error();
      std::vector<uint16_t> h(n);
      ASSERT_EQ(fg_device_copy(dev, h.data(), d, n * 2, FG_COPY_D2H), FG_OK);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) bad += h[i] != (dt == FG_F16 ? fg_f32_to_f16(want[i]) : fg_f32_to_bf16(want[i]));
      EXPECT_EQ(bad, 0u) << fg_rng_kind_name(r.kind) << " " << fg_dtype_name(dt);
    }
  }
  fg_rng_spec k = {};
  k.kind = FG_RNG_KEEP_MASK, k.seed = 7, k.first = 1, k.p = 0.3f;
  std::vector<uint8_t> want(n), got(n);
  ASSERT_EQ(fg_rng_fill_host(&k, want.data(), n), FG_OK);
  for (fg_dtype dt : {FG_U8, FG_BOOL}) {
    ASSERT_EQ(fg_rng_fill(dev, &k, d, dt, n, s), FG_OK) << fg_last_error();
    ASSERT_EQ(fg_stream_sync(s), FG_OK);
    ASSERT_EQ(fg_device_copy(dev, got.data(), d, n, FG_COPY_D2H), FG_OK);
    EXPECT_EQ(got, want) << fg_dtype_name(dt);
  }
  fg_device_mem_free(dev, d);
  fg_stream_free(s);
  fg_device_close(dev);
}

// The fast-gaussian hashes computed independently of Fucina's build (tests/cpu/test_rng.cpp), on
// the GPU.
TEST(CudaRng, FastGaussianGoldens) {
  FGT_REQUIRE_CUDA();
  fg_device *dev = nullptr;
  ASSERT_EQ(fg_device_open("cuda", &dev), FG_OK);
  void *d = nullptr;
  ASSERT_EQ(fg_device_mem_alloc(dev, 4096 * 4, &d), FG_OK);
  const std::pair<uint64_t, uint64_t> hashes[] = {
      {42, 0x7f3489df756bc2a1ull}, {1, 0xb1a2ea86c5b48a05ull}, {0xDEADBEEFCAFEF00Dull, 0x78dd4580a8405435ull}};
  for (auto &h : hashes) {
    fg_rng_spec r = {};
    r.kind = FG_RNG_GAUSS_FAST, r.seed = h.first, r.scale = 1.0f;
    ASSERT_EQ(fg_rng_fill(dev, &r, d, FG_F32, 4096, nullptr), FG_OK) << fg_last_error();
    std::vector<uint8_t> b(4096 * 4);
    ASSERT_EQ(fg_device_copy(dev, b.data(), d, b.size(), FG_COPY_D2H), FG_OK);
    uint64_t x = 0xcbf29ce484222325ull;
    for (uint8_t c : b) x = (x ^ c) * 0x100000001b3ull;
    EXPECT_EQ(x, h.second) << h.first;
  }
  fg_device_mem_free(dev, d);
  fg_device_close(dev);
}

}  // namespace
