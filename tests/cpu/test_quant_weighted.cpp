// Weighted encoders against ggml (tests/data/golden/weighted, README there): for every row of
// weighted_rows.h with every weight kind, and for rows quantized with the imatrix fixtures'
// weights read through fg_imatrix, fg_quant_encode_rows_weighted writes ggml_quantize_chunk's
// bytes (memcmp). Where ggml stored an Inf f16 field, forgia refuses the block instead.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/imatrix.h"
#include "forgia/quant.h"
#include "forgia/quant_weighted.h"
#include "quant_test_rows.h"
#include "testutil.h"

extern "C" {
#include "../data/golden/weighted/weighted_rows.h"
}

namespace {

const std::string kDir = std::string(FORGIA_TEST_DATA) + "/golden/weighted/";

struct Rec {
  uint32_t kind, n, wkind, nrows;
  uint64_t seed, wseed, in_fnv, w_fnv;
  std::vector<uint8_t> q;
};

bool load(const std::string &path, uint32_t *type, std::vector<Rec> *out, std::string *why) {
  const std::vector<uint8_t> b = fgt::read_file(path);
  size_t off = 0;
  auto take = [&](void *p, size_t n) {
    if (off + n > b.size()) return false;
    std::memcpy(p, b.data() + off, n);
    off += n;
    return true;
  };
  char magic[8];
  uint32_t ver = 0, nrec = 0, res = 0;
  if (!take(magic, 8) || std::memcmp(magic, "FGWEIGHT", 8) != 0 || !take(&ver, 4) || ver != 1 || !take(type, 4) ||
      !take(&nrec, 4) || !take(&res, 4)) {
    *why = path + ": bad header";
    return false;
  }
  for (uint32_t i = 0; i < nrec; i++) {
    Rec r;
    uint32_t qb = 0, z = 0;
    if (!take(&r.kind, 4) || !take(&r.n, 4) || !take(&r.seed, 8) || !take(&r.wkind, 4) || !take(&r.nrows, 4) ||
        !take(&r.wseed, 8) || !take(&r.in_fnv, 8) || !take(&r.w_fnv, 8) || !take(&qb, 4) || !take(&z, 4)) {
      *why = path + ": truncated record";
      return false;
    }
    r.q.resize(qb);
    if (!take(r.q.data(), qb)) {
      *why = path + ": truncated bytes";
      return false;
    }
    out->push_back(std::move(r));
  }
  if (off != b.size()) {
    *why = path + ": trailing bytes";
    return false;
  }
  return true;
}

struct Fixtures {
  fg_imatrix *gguf = nullptr, *dat = nullptr;
  Fixtures() {
    EXPECT_EQ(fg_imatrix_open((kDir + "imatrix.gguf").c_str(), &gguf), FG_OK) << fg_last_error();
    EXPECT_EQ(fg_imatrix_open((kDir + "imatrix.dat").c_str(), &dat), FG_OK) << fg_last_error();
  }
  ~Fixtures() {
    fg_imatrix_close(gguf);
    fg_imatrix_close(dat);
  }
  // the weights a record used, through the reader (NULL: none)
  const float *weights(uint32_t wkind) const {
    const float *w = nullptr;
    if (wkind >= 0x1000 && wkind < 0x1004) {
      EXPECT_EQ(fg_imatrix_weights_for(gguf, "blk.0.ffn_down_exps.weight", 256, 4, &w), FG_OK) << fg_last_error();
      return w ? w + 256 * (wkind - 0x1000) : nullptr;
    }
    if (wkind == 0x2000 || wkind == 0x3000) {
      EXPECT_EQ(fg_imatrix_weights_for(wkind == 0x2000 ? gguf : dat, "blk.0.attn_q.weight", 256, 1, &w), FG_OK);
    }
    return w;
  }
};

struct Case {
  const char *file;
  fg_dtype t;
};

const Case kCases[] = {
    {"q4_0", FG_Q4_0},     {"q4_1", FG_Q4_1},     {"q5_0", FG_Q5_0},   {"q5_1", FG_Q5_1},   {"q8_0", FG_Q8_0},
    {"q2_K", FG_Q2_K},     {"q3_K", FG_Q3_K},     {"q4_K", FG_Q4_K},   {"q5_K", FG_Q5_K},   {"q6_K", FG_Q6_K},
    {"iq4_nl", FG_IQ4_NL}, {"iq4_xs", FG_IQ4_XS}, {"tq1_0", FG_TQ1_0}, {"tq2_0", FG_TQ2_0}, {"mxfp4", FG_MXFP4},
    {"nvfp4", FG_NVFP4},   {"q1_0", FG_Q1_0},     {"q2_0", FG_Q2_0},   {"iq3_xxs", FG_IQ3_XXS}, {"iq3_s", FG_IQ3_S},
    {"iq2_xxs", FG_IQ2_XXS}, {"iq2_xs", FG_IQ2_XS}, {"iq2_s", FG_IQ2_S}, {"iq1_s", FG_IQ1_S}, {"iq1_m", FG_IQ1_M},
};

class QuantWeighted : public ::testing::TestWithParam<Case> {};

TEST_P(QuantWeighted, MatchesGgmlBytes) {
  const Case c = GetParam();
  ASSERT_TRUE(fg_quant_can_encode_weighted(c.t)) << c.file;
  uint32_t type = 0;
  std::vector<Rec> recs;
  std::string why;
  ASSERT_TRUE(load(kDir + c.file + ".bin", &type, &recs, &why)) << why;
  ASSERT_EQ(type, (uint32_t)c.t);
  ASSERT_EQ(recs.size(), FGW_NROWS_TABLE * FGW_WKINDS + 7);
  Fixtures fx;
  const size_t bb = fg_dtype_info(c.t)->block_bytes;
  size_t matched = 0, refused = 0;
  for (const Rec &r : recs) {
    std::vector<float> x((size_t)r.n * r.nrows), wv(r.n);
    for (uint32_t k = 0; k < r.nrows; k++) fgw_row(r.kind, r.n, r.seed + k, x.data() + (size_t)k * r.n);
    ASSERT_EQ(fgw_fnv1a(x.data(), x.size() * 4), r.in_fnv) << c.file << " seed " << r.seed << ": rows regenerate wrong";
    const float *w = nullptr;
    if (r.wkind < FGW_WKINDS) {
      fgw_weights(r.wkind, r.n, r.wseed, wv.data());
      w = wv.data();
    } else {
      w = fx.weights(r.wkind);
    }
    ASSERT_EQ(w ? fgw_fnv1a(w, (size_t)r.n * 4) : 0, r.w_fnv)
        << c.file << " wkind " << std::hex << r.wkind << ": weights differ from ggml's run (reader or generator)";
    std::vector<uint8_t> q(r.q.size(), 0xAB);
    const fg_status st = fg_quant_encode_rows_weighted(c.t, x.data(), r.nrows, r.n, w, q.data(), q.size());
    const std::vector<size_t> over = fgq::overflowed_blocks(c.t, r.q.data(), r.q.size() / bb);
    const std::string where = std::string(c.file) + " kind " + std::to_string(r.kind) + " seed " +
                              std::to_string(r.seed) + " wkind " + std::to_string(r.wkind);
    if (!over.empty()) {
      EXPECT_EQ(st, FG_ERR_RANGE) << where << ": ggml stored Inf in block " << over[0];
      refused++;
      continue;
    }
    ASSERT_EQ(st, FG_OK) << where << ": " << fg_last_error();
    for (size_t b = 0; b < q.size(); b++)
      if (q[b] != r.q[b]) {
        ADD_FAILURE() << where << ": first difference at byte " << b << " (block " << b / bb << "): forgia "
                      << (int)q[b] << ", ggml " << (int)r.q[b];
        break;
      }
    matched += std::memcmp(q.data(), r.q.data(), q.size()) == 0;
  }
  printf("%s: %zu records equal to ggml, %zu refused where ggml stores Inf\n", c.file, matched, refused);
}

// Many rows with one set of weights: the same bytes on 1 and 2 threads and row by row.
TEST_P(QuantWeighted, RowsIndependentOfThreads) {
  const Case c = GetParam();
  const int64_t n = 512, nrows = 48;
  std::vector<float> x((size_t)(n * nrows)), w((size_t)n);
  for (int64_t r = 0; r < nrows; r++) fgw_row(r % 3 == 0 ? 11 : 0, (uint64_t)n, 500 + (uint64_t)r, x.data() + r * n);
  fgw_weights(3, (uint64_t)n, 77, w.data());
  const size_t rb = fgq::row_bytes(c.t, n);
  std::vector<uint8_t> a(rb * nrows), b(rb * nrows), one(rb * nrows);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  ASSERT_EQ(fg_quant_encode_rows_weighted(c.t, x.data(), nrows, n, w.data(), a.data(), a.size()), FG_OK) << fg_last_error();
  omp_set_num_threads(2);
  ASSERT_EQ(fg_quant_encode_rows_weighted(c.t, x.data(), nrows, n, w.data(), b.data(), b.size()), FG_OK);
  omp_set_num_threads(saved);
  for (int64_t r = 0; r < nrows; r++)
    ASSERT_EQ(fg_quant_encode_rows_weighted(c.t, x.data() + r * n, 1, n, w.data(), one.data() + r * rb, rb), FG_OK);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0);
  EXPECT_EQ(std::memcmp(a.data(), one.data(), a.size()), 0);
  // without weights: the unweighted encoder's bytes (the grid i-quants, which
  // fg_quant_encode_rows does not encode, are checked on ggml's unweighted record above)
  std::vector<uint8_t> u(rb * nrows), v(rb * nrows);
  if (fg_quant_needs_weights(c.t)) {
    EXPECT_EQ(fg_quant_encode_rows_weighted(c.t, x.data(), nrows, n, nullptr, u.data(), u.size()), FG_ERR_INVALID_ARG);
    EXPECT_NE(std::string(fg_last_error()).find("importance matrix"), std::string::npos) << fg_last_error();
    return;
  }
  ASSERT_EQ(fg_quant_encode_rows_weighted(c.t, x.data(), nrows, n, nullptr, u.data(), u.size()), FG_OK);
  if (fg_quant_can_encode(c.t)) {
    ASSERT_EQ(fg_quant_encode_rows(c.t, x.data(), nrows, n, v.data(), v.size()), FG_OK);
    EXPECT_EQ(std::memcmp(u.data(), v.data(), u.size()), 0);
  } else {
    v = u;
  }
  // the types that use weights give other bytes with them (these rows are not degenerate)
  if (fg_quant_uses_weights(c.t)) EXPECT_NE(std::memcmp(a.data(), v.data(), a.size()), 0) << c.file;
  else EXPECT_EQ(std::memcmp(a.data(), v.data(), a.size()), 0) << c.file;
}

INSTANTIATE_TEST_SUITE_P(Ggml, QuantWeighted, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &i) { return std::string(i.param.file); });

TEST(QuantWeightedContract, RefusesBadInputs) {
  const int64_t n = 256;
  std::vector<float> x(2 * n), w(n, 1.0f);
  fgw_row(0, 2 * n, 9, x.data());
  std::vector<uint8_t> q(2 * 144);
  // sizes
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_Q4_K, x.data(), 2, n, w.data(), q.data(), q.size() - 1), FG_ERR_BAD_ROW);
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_Q4_K, x.data(), 1, 100, w.data(), q.data(), 144), FG_ERR_BAD_ROW);
  // weights
  w[17] = NAN;
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_Q4_K, x.data(), 2, n, w.data(), q.data(), q.size()), FG_ERR_NONFINITE);
  EXPECT_NE(std::string(fg_last_error()).find("weight 17"), std::string::npos) << fg_last_error();
  w[17] = -1.0f;
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_Q4_K, x.data(), 2, n, w.data(), q.data(), q.size()), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("weight 17"), std::string::npos) << fg_last_error();
  w[17] = 1.0f;
  // inputs: the first problem in row-major order
  x[n + 5] = INFINITY;
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_Q4_K, x.data(), 2, n, w.data(), q.data(), q.size()), FG_ERR_NONFINITE);
  EXPECT_NE(std::string(fg_last_error()).find("row 1, element 5"), std::string::npos) << fg_last_error();
  x[n + 5] = 0.5f;
  x[40] = 5e9f;
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_Q4_K, x.data(), 2, n, w.data(), q.data(), q.size()), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("2^32"), std::string::npos) << fg_last_error();
  x[40] = 1e6f;  // Q4_0's f16 scale overflows (1e6 / 8 > 65504)
  std::vector<uint8_t> q0(2 * 8 * 18);
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_Q4_0, x.data(), 2, n, w.data(), q0.data(), q0.size()), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("block 1"), std::string::npos) << fg_last_error();
  // types
  std::vector<uint8_t> iq(2 * 66);
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_IQ2_XXS, x.data(), 2, n, nullptr, iq.data(), iq.size()), FG_ERR_INVALID_ARG);
  EXPECT_NE(std::string(fg_last_error()).find("iq2_xxs: needs an importance matrix"), std::string::npos) << fg_last_error();
  // weights so large that every weighted sum overflows: ggml's IQ2_XXS search is left with
  // its first fit's codes, off the grid, and aborts ("found point 18212 not on grid")
  std::vector<float> huge(n, 3e38f), xs(n);
  for (int i = 0; i < n; i++) xs[i] = (float)((i * 37) % 17 - 8) / 7.0f;
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_IQ2_XXS, xs.data(), 1, n, huge.data(), iq.data(), 66), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find("grid search"), std::string::npos) << fg_last_error();
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_I32, x.data(), 2, n, w.data(), q.data(), q.size()), FG_ERR_UNSUPPORTED);
  EXPECT_TRUE(fg_quant_needs_weights(FG_IQ2_XXS));
  EXPECT_TRUE(fg_quant_needs_weights(FG_IQ1_S));
  EXPECT_FALSE(fg_quant_needs_weights(FG_IQ1_M));
  EXPECT_TRUE(fg_quant_llama_requires_imatrix(FG_IQ1_M));
  EXPECT_FALSE(fg_quant_uses_weights(FG_Q8_0));
  EXPECT_TRUE(fg_quant_uses_weights(FG_Q6_K));
  // zero rows are fine
  EXPECT_EQ(fg_quant_encode_rows_weighted(FG_Q4_K, x.data(), 0, n, w.data(), nullptr, 0), FG_OK);
}

}  // namespace
