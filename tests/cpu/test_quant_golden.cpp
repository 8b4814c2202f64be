// Golden vectors from ggml (tests/data/golden, produced as its README says): for the types
// gguf-py cannot encode or decode, forgia's encoder must write ggml's bytes and its decoder
// must read ggml's floats back, bit for bit. The input rows are regenerated here by the rule
// the README gives; a checksum in each file catches a regeneration that drifts. The
// decode-only grid i-quants have only random-bytes files (<type>.decode.bin).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "forgia/quant.h"
#include "quant_test_rows.h"
#include "testutil.h"

namespace {

// ---- the row rule of tests/data/golden/README.md ----

struct SplitMix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t u24() { return (int64_t)(next() >> 40); }
  float G() {
    int64_t a = u24();
    a += u24();
    a += u24();
    a += u24();
    return (float)(a - 33554432) * 0x1p-23f;
  }
  float U() { return (float)(u24() - 8388608) * 0x1p-23f; }
};

float f_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits_f(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float steps_val(uint64_t i, uint64_t seed) { return 0.5f * (float)((int)((i * 7 + seed) % 33) - 16); }

enum Kind {
  K_GAUSS, K_UNIFORM, K_ZERO, K_OUTLIER, K_TINY, K_TINIER, K_CONST, K_NEG, K_STEPS, K_NEARTIE,
  K_LARGE, K_BLOCKSCALE, K_SPARSE, K_FMATIE, K_HALFZERO, K_COUNT
};
const char *const kKindName[K_COUNT] = {"gaussian", "uniform",   "zero",       "outlier", "tiny",
                                        "tinier",   "constant",  "negative",   "steps",   "near_ties",
                                        "large",    "blockscale", "sparse",    "fma_tie", "halfzero"};

std::vector<float> gen_row(uint32_t kind, uint64_t n, uint64_t seed) {
  std::vector<float> v(n);
  SplitMix r{seed};
  for (uint64_t i = 0; i < n; i++) {
    float x = 0.0f;
    switch (kind) {
      case K_GAUSS: x = r.G(); break;
      case K_UNIFORM: x = r.U(); break;
      case K_ZERO: x = 0.0f; break;
      case K_OUTLIER: x = r.G() * 0.02f; break;
      case K_TINY: x = r.G() * 1e-6f; break;
      case K_TINIER: x = r.G() * 1e-20f; break;
      case K_CONST: x = (seed & 1) ? 0.37f : -2.5f; break;
      case K_NEG: x = -std::fabs(r.G() * 3.0f) - 0.001f; break;
      case K_STEPS: x = steps_val(i, seed); break;
      case K_NEARTIE:
        x = steps_val(i, seed);
        if (x != 0.0f) x = f_bits(bits_f(x) + (uint32_t)((int)(i % 3) - 1));
        break;
      case K_LARGE: x = r.G() * 1e4f; break;
      case K_BLOCKSCALE: x = r.G() * std::ldexp(1.0f, (int)((i / 16) % 13) - 6); break;
      case K_SPARSE: {
        uint64_t m = r.next();
        float g = r.G();
        x = (m & 7) == 0 ? g : 0.0f;
      } break;
      case K_FMATIE: x = f_bits(i % 32 == 0 ? 0x403c2fdfu : 0xbfd3b5dau); break;
      case K_HALFZERO: {
        float g = r.G();
        x = ((i / 32) % 2 == 0) ? g : 0.0f;
      } break;
      default: ADD_FAILURE() << "unknown row kind " << kind; break;
    }
    v[i] = x;
  }
  if (kind == K_OUTLIER) v[(seed * 7919u) % n] = (seed & 1) ? 60000.0f : -1.0e6f;
  return v;
}

uint64_t fnv1a64(const void *p, size_t n) {
  const uint8_t *b = static_cast<const uint8_t *>(p);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// ---- the golden file ----

struct GoldenRow {
  uint32_t kind = 0, n = 0;
  uint64_t seed = 0, input_hash = 0;
  std::vector<uint8_t> q;
  std::vector<float> deq;  // empty when the file has no floats
};

struct Golden {
  uint32_t type = 0, flags = 0;
  std::vector<GoldenRow> rows;
};

struct Reader {
  const std::vector<uint8_t> &b;
  size_t off = 0;
  bool ok = true;
  void take(void *dst, size_t n) {
    if (!ok || b.size() - off < n) {
      ok = false;
      return;
    }
    std::memcpy(dst, b.data() + off, n);
    off += n;
  }
  // The files are little-endian, as is every host forgia targets.
  uint32_t u32() {
    uint32_t v = 0;
    take(&v, 4);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    take(&v, 8);
    return v;
  }
};

bool load_golden(const std::string &path, Golden *g, std::string *why) {
  std::vector<uint8_t> b = fgt::read_file(path);
  if (b.empty()) {
    *why = "cannot read " + path;
    return false;
  }
  Reader r{b};
  char magic[8] = {};
  r.take(magic, 8);
  if (!r.ok || std::memcmp(magic, "FGGOLDEN", 8) != 0) {
    *why = "bad magic";
    return false;
  }
  uint32_t version = r.u32();
  g->type = r.u32();
  uint32_t nrows = r.u32();
  g->flags = r.u32();
  if (version != 1 || nrows == 0 || nrows > 1000) {
    *why = "bad header";
    return false;
  }
  for (uint32_t i = 0; i < nrows && r.ok; i++) {
    GoldenRow row;
    row.kind = r.u32();
    row.n = r.u32();
    row.seed = r.u64();
    row.input_hash = r.u64();
    uint32_t qbytes = r.u32();
    (void)r.u32();
    if (!r.ok || row.n == 0 || row.n > (1u << 20) || qbytes > 8u * row.n) {
      *why = "bad row header " + std::to_string(i);
      return false;
    }
    row.q.resize(qbytes);
    r.take(row.q.data(), qbytes);
    if (g->flags & 1) {
      row.deq.resize(row.n);
      r.take(row.deq.data(), (size_t)row.n * 4);
    }
    g->rows.push_back(std::move(row));
  }
  if (!r.ok || r.off != b.size()) {
    *why = "truncated or trailing bytes";
    return false;
  }
  return true;
}

std::string first_byte_diff(const uint8_t *a, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "first difference at byte %zu: forgia 0x%02x, ggml 0x%02x", i, a[i], b[i]);
      return buf;
    }
  return "equal";
}

std::string first_float_diff(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (bits_f(a[i]) != bits_f(b[i])) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "first difference at element %zu: forgia %.9g (0x%08x), ggml %.9g (0x%08x)",
                    i, (double)a[i], bits_f(a[i]), (double)b[i], bits_f(b[i]));
      return buf;
    }
  return "equal";
}

struct GoldenCase {
  const char *file;
  fg_dtype type;
  bool has_floats;  // ggml has a dequantizer for the type
};

void PrintTo(const GoldenCase &c, std::ostream *os) { *os << c.file; }

const GoldenCase kCases[] = {
    {"q8_1", FG_Q8_1, false},    {"q2_K", FG_Q2_K, true},   {"q3_K", FG_Q3_K, true},
    {"q4_K", FG_Q4_K, true},     {"q5_K", FG_Q5_K, true},   {"q6_K", FG_Q6_K, true},
    {"q8_K", FG_Q8_K, true},     {"iq4_nl", FG_IQ4_NL, true}, {"iq4_xs", FG_IQ4_XS, true},
    {"nvfp4", FG_NVFP4, true},   {"q1_0", FG_Q1_0, true},   {"q2_0", FG_Q2_0, true},
    {"mxfp4", FG_MXFP4, true},   {"tq1_0", FG_TQ1_0, true}, {"tq2_0", FG_TQ2_0, true},
};

class QuantGolden : public ::testing::TestWithParam<GoldenCase> {
 protected:
  void SetUp() override {
    const GoldenCase &c = GetParam();
    std::string why;
    ASSERT_TRUE(load_golden(std::string(FORGIA_TEST_DATA) + "/golden/" + c.file + ".bin", &g_, &why)) << why;
    ASSERT_EQ(g_.type, (uint32_t)c.type) << "ggml type id in the file";
    ASSERT_EQ((g_.flags & 1) != 0, c.has_floats);
    ASSERT_EQ(g_.rows.size(), 18u);
    for (size_t i = 0; i < g_.rows.size(); i++) {
      const GoldenRow &row = g_.rows[i];
      ASSERT_LT(row.kind, (uint32_t)K_COUNT);
      ASSERT_EQ(g_.flags & 2, 0u);
      inputs_.push_back(gen_row(row.kind, row.n, row.seed));
      ASSERT_EQ(fnv1a64(inputs_.back().data(), (size_t)row.n * 4), row.input_hash)
          << "row " << i << " (" << kKindName[row.kind] << "): regenerated input differs from ggml's";
      uint64_t nb = 0;
      ASSERT_EQ(fg_dtype_nbytes(c.type, row.n, &nb), FG_OK);
      ASSERT_EQ(nb, row.q.size()) << "row size of " << c.file << " with n=" << row.n;
    }
  }
  Golden g_;
  std::vector<std::vector<float>> inputs_;
};

// "block B (elements F..L)" as the encoder's FG_ERR_RANGE message names block b of a row.
std::string block_words(size_t b, size_t be) {
  return "block " + std::to_string(b) + " (elements " + std::to_string(b * be) + ".." + std::to_string(b * be + be - 1) +
         ")";
}

// Where ggml's bytes hold a non-finite f16 field (a finite input that overflowed it; ggml
// stores Inf and the block decodes to NaN), forgia refuses the row with FG_ERR_RANGE naming
// the first such block, and refuses that block on its own; every other block, encoded on its
// own, is ggml's byte for byte. Returns whether the row was refused.
bool expect_ggml_bytes(fg_dtype t, const float *x, uint32_t n, const std::vector<uint8_t> &want,
                       const std::string &what) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  const size_t be = tr->block_elems, bb = tr->block_bytes, nb = n / be;
  const std::vector<size_t> over = fgq::overflowed_blocks(t, want.data(), nb);
  std::vector<uint8_t> q(want.size(), 0xA5);
  const fg_status s = fg_quant_encode_rows(t, x, 1, n, q.data(), q.size());
  if (over.empty()) {
    EXPECT_EQ(s, FG_OK) << what << ": " << fg_last_error();
    EXPECT_EQ(std::memcmp(q.data(), want.data(), q.size()), 0)
        << what << ": " << first_byte_diff(q.data(), want.data(), q.size());
    return false;
  }
  EXPECT_EQ(s, FG_ERR_RANGE) << what << ": ggml overflowed block " << over[0];
  EXPECT_NE(std::string(fg_last_error()).find(block_words(over[0], be)), std::string::npos)
      << what << ": " << fg_last_error();
  for (size_t b = 0, k = 0; b < nb; b++) {
    std::vector<uint8_t> one(bb, 0xA5);
    const fg_status sb = fg_quant_encode_rows(t, x + b * be, 1, (int64_t)be, one.data(), bb);
    if (k < over.size() && over[k] == b) {
      k++;
      EXPECT_EQ(sb, FG_ERR_RANGE) << what << " block " << b;
    } else {
      EXPECT_EQ(sb, FG_OK) << what << " block " << b << ": " << fg_last_error();
      EXPECT_EQ(std::memcmp(one.data(), want.data() + b * bb, bb), 0)
          << what << " block " << b << ": " << first_byte_diff(one.data(), want.data() + b * bb, bb);
    }
  }
  return true;
}

TEST_P(QuantGolden, EncodeMatchesGgmlBytes) {
  const GoldenCase &c = GetParam();
  int refused = 0;
  for (size_t i = 0; i < g_.rows.size(); i++) {
    const GoldenRow &row = g_.rows[i];
    refused += expect_ggml_bytes(c.type, inputs_[i].data(), row.n, row.q,
                                 std::string(c.file) + " row " + std::to_string(i) + " (" + kKindName[row.kind] +
                                     ", n=" + std::to_string(row.n) + ")");
  }
  std::printf("%s: %d of %zu rows hold a block ggml overflowed (refused)\n", c.file, refused, g_.rows.size());
}

// The rows of equal length encoded as one matrix (OpenMP over rows) give the same bytes; with
// the rows ggml overflowed among them, the matrix is refused naming the first such row and
// block.
TEST_P(QuantGolden, EncodeRowsMatrixMatchesGgmlBytes) {
  const GoldenCase &c = GetParam();
  const size_t be = fg_dtype_info(c.type)->block_elems, nb = 256 / be;
  std::vector<float> src, all;
  std::vector<uint8_t> want;
  int64_t nrows = 0, nall = 0;
  std::string first_over;
  for (size_t i = 0; i < g_.rows.size(); i++) {
    if (g_.rows[i].n != 256) continue;
    all.insert(all.end(), inputs_[i].begin(), inputs_[i].end());
    nall++;
    const std::vector<size_t> over = fgq::overflowed_blocks(c.type, g_.rows[i].q.data(), nb);
    if (!over.empty()) {
      if (first_over.empty()) first_over = "row " + std::to_string(nall - 1) + ", " + block_words(over[0], be);
      continue;
    }
    src.insert(src.end(), inputs_[i].begin(), inputs_[i].end());
    want.insert(want.end(), g_.rows[i].q.begin(), g_.rows[i].q.end());
    nrows++;
  }
  ASSERT_GT(nrows, 1);
  std::vector<uint8_t> q(want.size(), 0x5A);
  ASSERT_EQ(fg_quant_encode_rows(c.type, src.data(), nrows, 256, q.data(), q.size()), FG_OK) << fg_last_error();
  EXPECT_EQ(std::memcmp(q.data(), want.data(), q.size()), 0) << first_byte_diff(q.data(), want.data(), q.size());
  if (first_over.empty()) return;
  std::vector<uint8_t> qa((size_t)nall * fgq::row_bytes(c.type, 256));
  EXPECT_EQ(fg_quant_encode_rows(c.type, all.data(), nall, 256, qa.data(), qa.size()), FG_ERR_RANGE);
  EXPECT_NE(std::string(fg_last_error()).find(first_over), std::string::npos) << first_over << ": " << fg_last_error();
}

TEST_P(QuantGolden, DecodeMatchesGgmlFloats) {
  const GoldenCase &c = GetParam();
  if (!c.has_floats) GTEST_SKIP() << "ggml has no dequantizer for " << c.file;
  for (size_t i = 0; i < g_.rows.size(); i++) {
    const GoldenRow &row = g_.rows[i];
    std::vector<float> f(row.n, -7.0f);
    ASSERT_EQ(fg_quant_decode_rows(c.type, row.q.data(), row.q.size(), f.data(), 1, row.n), FG_OK)
        << fg_last_error();
    // Bitwise: NaN equals NaN only with the same payload, and -0 differs from +0.
    EXPECT_EQ(std::memcmp(f.data(), row.deq.data(), (size_t)row.n * 4), 0)
        << c.file << " row " << i << " (" << kKindName[row.kind] << ", n=" << row.n << "): "
        << first_float_diff(f.data(), row.deq.data(), row.n);
  }
}

// Random bytes (arbitrary scales, NaN and Inf included) decoded as ggml decodes them
// (<file>.decode.bin). The floats were made on x86-64: there they must match bit for bit;
// elsewhere a NaN's payload may follow other propagation rules, so any NaN equals any NaN.
void check_random_decode(const char *file, fg_dtype type) {
  Golden d;
  std::string why;
  ASSERT_TRUE(load_golden(std::string(FORGIA_TEST_DATA) + "/golden/" + file + ".decode.bin", &d, &why)) << why;
  ASSERT_EQ(d.type, (uint32_t)type);
  ASSERT_EQ(d.flags, 3u);
  ASSERT_EQ(d.rows.size(), 8u);
  for (size_t i = 0; i < d.rows.size(); i++) {
    const GoldenRow &row = d.rows[i];
    uint64_t nb = 0;
    ASSERT_EQ(fg_dtype_nbytes(type, row.n, &nb), FG_OK);
    ASSERT_EQ(nb, row.q.size());
    std::vector<float> f(row.n, -7.0f);
    ASSERT_EQ(fg_quant_decode_rows(type, row.q.data(), row.q.size(), f.data(), 1, row.n), FG_OK)
        << fg_last_error();
#if defined(__x86_64__)
    EXPECT_EQ(std::memcmp(f.data(), row.deq.data(), (size_t)row.n * 4), 0)
        << file << " random row " << i << ": " << first_float_diff(f.data(), row.deq.data(), row.n);
#else
    for (uint32_t j = 0; j < row.n; j++) {
      bool same = bits_f(f[j]) == bits_f(row.deq[j]) || (std::isnan(f[j]) && std::isnan(row.deq[j]));
      ASSERT_TRUE(same) << file << " random row " << i << " element " << j << ": forgia " << f[j]
                        << ", ggml " << row.deq[j];
    }
#endif
  }
}

TEST_P(QuantGolden, DecodeRandomBytesMatchesGgmlFloats) {
  const GoldenCase &c = GetParam();
  if (!c.has_floats) GTEST_SKIP() << "ggml has no dequantizer for " << c.file;
  check_random_decode(c.file, c.type);
}

INSTANTIATE_TEST_SUITE_P(Ggml, QuantGolden, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase> &info) { return std::string(info.param.file); });

// The decode-only grid i-quants (no encoder here, so no <type>.bin): their random-bytes files.
const GoldenCase kDecodeOnlyCases[] = {
    {"iq2_xxs", FG_IQ2_XXS, true}, {"iq2_xs", FG_IQ2_XS, true}, {"iq2_s", FG_IQ2_S, true},
    {"iq3_xxs", FG_IQ3_XXS, true}, {"iq3_s", FG_IQ3_S, true},   {"iq1_s", FG_IQ1_S, true},
    {"iq1_m", FG_IQ1_M, true},
};

class QuantGoldenDecodeOnly : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(QuantGoldenDecodeOnly, DecodeRandomBytesMatchesGgmlFloats) {
  const GoldenCase &c = GetParam();
  EXPECT_FALSE(fg_quant_can_encode(c.type)) << c.file;
  ASSERT_TRUE(fg_quant_can_decode(c.type)) << c.file;
  check_random_decode(c.file, c.type);
}

INSTANTIATE_TEST_SUITE_P(Ggml, QuantGoldenDecodeOnly, ::testing::ValuesIn(kDecodeOnlyCases),
                         [](const ::testing::TestParamInfo<GoldenCase> &info) { return std::string(info.param.file); });

}  // namespace
