// Decode parity of the grid i-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m)
// with gguf-py's numpy dequantizer (tests/interop/quant_ref.py): random block bytes, most
// with their scale fields forced to finite fp16 values (so every grid entry, sign pattern and
// sub-scale shows up as a finite float) and the rest with random scales (NaN, Inf,
// subnormal), must decode to the same floats bit for bit (any NaN equals any NaN). The
// device decode against the CPU's is tests/cuda/test_cuda_quant_iq.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "iq_blocks.h"
#include "testutil.h"

namespace {

using namespace fgt::iq;

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

}  // namespace
