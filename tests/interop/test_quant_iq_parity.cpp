// Decode parity of the grid i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m)
// with gguf-py's numpy dequantizer (tests/interop/quant_ref.py): random block bytes, most
// with their scale fields forced to finite fp16 values (so every grid entry, sign pattern and
// sub-scale shows up as a finite float) and the rest with random scales (NaN, Inf,
// subnormal), must decode to the same floats bit for bit (any NaN equals any NaN). With a
// CUDA device, the device decode must equal the CPU decode bit for bit as well (NaN payloads
// aside).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "testutil.h"

namespace {

constexpr int64_t kN = 4096;         // elements per row: 16 blocks of 256
constexpr int64_t kRows = 64;        // 1024 blocks a type
constexpr int64_t kFiniteRows = 48;  // rows whose blocks get finite scales

const fg_dtype kTypes[] = {FG_IQ2_XXS, FG_IQ2_XS, FG_IQ2_S, FG_IQ3_XXS, FG_IQ3_S, FG_IQ1_S, FG_IQ1_M};

struct Lcg {
  uint64_t s;
  uint8_t byte() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint8_t)(s >> 56);
  }
  uint16_t u16() { return (uint16_t)(byte() | (byte() << 8)); }
};

// A finite fp16 (exponent field not all ones), subnormals and zeros included.
uint16_t finite_f16(Lcg &r) {
  uint16_t h = r.u16();
  while (((h >> 10) & 0x1f) == 0x1f) h = r.u16();
  return h;
}

// Random bytes for kRows rows of type t; the first kFiniteRows rows get finite scales.
std::vector<uint8_t> make_blocks(fg_dtype t, size_t row_bytes) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  std::vector<uint8_t> q(row_bytes * (size_t)kRows);
  Lcg r{0xC0FFEEull + (uint64_t)t};
  for (auto &b : q) b = r.byte();
  const size_t nfinite = row_bytes * (size_t)kFiniteRows / tr->block_bytes;
  for (size_t i = 0; i < nfinite; i++) {
    uint8_t *blk = q.data() + i * tr->block_bytes;
    const uint16_t d = finite_f16(r);
    if (t == FG_IQ1_M) {
      // d is the top nibbles of the four u16 scale words (bytes 48..55), word 0's lowest.
      for (int k = 0; k < 4; k++) {
        uint8_t &hi = blk[48 + 2 * k + 1];
        hi = (uint8_t)((hi & 0x0f) | (((d >> (4 * k)) & 15) << 4));
      }
    } else {
      blk[0] = (uint8_t)(d & 0xff);
      blk[1] = (uint8_t)(d >> 8);
    }
  }
  return q;
}

bool same_float(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}

TEST(QuantIqParity, DecodeMatchesGgufPy) {
  fgt::TempDir dir;
  std::string jobs;
  std::vector<std::vector<uint8_t>> blocks;
  for (fg_dtype t : kTypes) {
    ASSERT_TRUE(fg_quant_can_decode(t)) << fg_dtype_name(t);
    uint64_t rb = 0;
    ASSERT_EQ(fg_dtype_nbytes(t, kN, &rb), FG_OK);
    blocks.push_back(make_blocks(t, rb));
    const std::string nm = fg_dtype_name(t);
    fgt::write_file(dir.file(nm + ".q"), blocks.back().data(), blocks.back().size());
    jobs += "decode " + nm + " " + std::to_string(kN) + " " + dir.file(nm + ".q") + " " + dir.file(nm + ".f32") + "\n";
  }
  const std::string jf = dir.file("jobs.txt");
  fgt::write_file(jf, jobs.data(), jobs.size());
  std::string out, err;
  const std::string cmd = std::string("'") + FORGIA_PYTHON + "' '" + FORGIA_SOURCE_DIR +
                          "/tests/interop/quant_ref.py' '" + jf + "'";
  ASSERT_EQ(fgt::run(cmd, &out, &err), 0) << err;

  for (size_t k = 0; k < sizeof kTypes / sizeof kTypes[0]; k++) {
    const fg_dtype t = kTypes[k];
    const std::string nm = fg_dtype_name(t);
    const std::vector<uint8_t> refb = fgt::read_file(dir.file(nm + ".f32"));
    ASSERT_EQ(refb.size(), (size_t)(kRows * kN) * 4) << nm << ": gguf-py gave no floats (" << err << ")";
    std::vector<float> ref((size_t)(kRows * kN)), y((size_t)(kRows * kN), -7.0f);
    std::memcpy(ref.data(), refb.data(), refb.size());
    ASSERT_EQ(fg_quant_decode_rows(t, blocks[k].data(), blocks[k].size(), y.data(), kRows, kN), FG_OK)
        << nm << ": " << fg_last_error();
    size_t finite = 0;
    for (size_t i = 0; i < y.size(); i++) {
      ASSERT_TRUE(same_float(y[i], ref[i])) << nm << " differs at row " << i / kN << " element " << i % kN
                                            << ": forgia " << y[i] << " gguf-py " << ref[i];
      finite += std::isfinite(ref[i]) ? 1 : 0;
    }
    // The forced scales make (almost) every value of the first rows finite.
    EXPECT_GE(finite, (size_t)(kFiniteRows * kN) * 99 / 100) << nm;
  }
}

TEST(QuantIqParity, CudaDecodeMatchesCpuBitwise) {
  FGT_REQUIRE_CUDA();
  fg_device *cpu, *gpu;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
  for (fg_dtype t : kTypes) {
    uint64_t rb = 0;
    ASSERT_EQ(fg_dtype_nbytes(t, kN, &rb), FG_OK);
    const std::vector<uint8_t> q = make_blocks(t, rb);
    const size_t n = (size_t)(kRows * kN);
    std::vector<float> c(n), g(n);
    ASSERT_EQ(FG_OK, fg_convert(cpu, c.data(), FG_F32, q.data(), t, n, nullptr)) << fg_last_error();
    void *dq, *dy;
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(gpu, q.size(), &dq));
    ASSERT_EQ(FG_OK, fg_device_mem_alloc(gpu, n * 4, &dy));
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, dq, q.data(), q.size(), FG_COPY_H2D));
    ASSERT_EQ(FG_OK, fg_convert(gpu, dy, FG_F32, dq, t, n, nullptr)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_device_copy(gpu, g.data(), dy, n * 4, FG_COPY_D2H));
    // A NaN's payload is the device's own (CUDA writes its canonical NaN); all else is bitwise.
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += same_float(c[i], g[i]) ? 0 : 1;
    EXPECT_EQ(bad, 0u) << fg_dtype_name(t);
    fg_device_mem_free(gpu, dq);
    fg_device_mem_free(gpu, dy);
  }
  fg_device_close(cpu);
  fg_device_close(gpu);
}

}  // namespace
