// Parity of the quant codecs with gguf-py's numpy reference (tests/interop/quant_ref.py):
// for every type gguf-py can quantize, forgia's bytes equal gguf-py's; for every type it can
// dequantize, forgia's floats equal gguf-py's bit for bit, on encoded rows of every kind and
// on random bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "../cpu/quant_test_rows.h"
#include "forgia/quant.h"
#include "testutil.h"

namespace {

constexpr int64_t kN = 1024;        // elements per row: a multiple of every block size
constexpr int kRowsPerKind = 3;

struct Caps {
  bool quantize = false, dequantize = false;
};

class QuantParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fgt::TempDir();
    rows_ = new std::vector<float>();
    for (const auto &k : fgq::row_kinds())
      for (int r = 0; r < kRowsPerKind; r++) {
        std::vector<float> v = k.make(kN, 1000 + 17 * r);
        rows_->insert(rows_->end(), v.begin(), v.end());
      }
    nrows_ = (int64_t)(rows_->size() / kN);
    fgt::write_file(dir_->file("rows.f32"), rows_->data(), rows_->size() * sizeof(float));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete rows_;
  }

  // Runs quant_ref.py on a job list; returns false with a message when python fails.
  static bool run_jobs(const std::string &jobs, std::string *why) {
    const std::string jf = dir_->file("jobs.txt");
    fgt::write_file(jf, jobs.data(), jobs.size());
    std::string out, err;
    const std::string cmd = std::string("'") + FORGIA_PYTHON + "' '" + FORGIA_SOURCE_DIR +
                            "/tests/interop/quant_ref.py' '" + jf + "'";
    int rc = fgt::run(cmd, &out, &err);
    if (rc != 0) *why = "quant_ref.py failed (" + std::to_string(rc) + "): " + err;
    return rc == 0;
  }

  static bool exists(const std::string &p) { return std::ifstream(p).good(); }

  static std::map<fg_dtype, Caps> caps() {
    std::string why;
    EXPECT_TRUE(run_jobs("caps " + dir_->file("caps.txt") + "\n", &why)) << why;
    std::map<fg_dtype, Caps> m;
    std::ifstream f(dir_->file("caps.txt"));
    int code, q, d;
    while (f >> code >> q >> d) {
      fg_dtype t;
      if (fg_dtype_from_ggml((uint32_t)code, &t) != FG_OK) continue;
      m[t] = Caps{q != 0, d != 0};
    }
    return m;
  }

  static fgt::TempDir *dir_;
  static std::vector<float> *rows_;
  static int64_t nrows_;
};
fgt::TempDir *QuantParity::dir_ = nullptr;
std::vector<float> *QuantParity::rows_ = nullptr;
int64_t QuantParity::nrows_ = 0;

// Bitwise float equality, with every NaN equal to every NaN (payloads may differ).
bool same_float(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}

std::string where(int64_t flat, int64_t n) {
  const int64_t row = flat / n;
  return "row " + std::to_string(row) + " (" + fgq::row_kinds()[(size_t)(row / kRowsPerKind)].name +
         "), element " + std::to_string(flat % n);
}

TEST_F(QuantParity, EveryTypeGgufPyHandles) {
  const auto cap = caps();
  ASSERT_FALSE(cap.empty()) << "no capability list from gguf-py";

  // One Python run for all jobs: encode rows with gguf-py, decode forgia's encodings and
  // random bytes with gguf-py.
  std::string jobs;
  std::map<fg_dtype, std::vector<uint8_t>> ours, noise;
  for (const auto &kv : cap) {
    const fg_dtype t = kv.first;
    const std::string nm = fg_dtype_name(t);
    if (kv.second.quantize)
      jobs += "encode " + nm + " " + std::to_string(kN) + " " + dir_->file("rows.f32") + " " +
              dir_->file(nm + ".py.q") + "\n";
    if (!kv.second.dequantize) continue;
    const size_t rb = fgq::row_bytes(t, kN);
    if (fg_quant_can_encode(t)) {
      // the rows forgia encodes (a row holding a block whose f16 scale overflows is refused)
      std::vector<uint8_t> q;
      for (int64_t r = 0; r < nrows_; r++) {
        std::vector<uint8_t> one(rb);
        const fg_status s = fg_quant_encode_rows(t, rows_->data() + r * kN, 1, kN, one.data(), one.size());
        ASSERT_TRUE(s == FG_OK || s == FG_ERR_RANGE) << nm << ": " << fg_last_error();
        if (s == FG_OK) q.insert(q.end(), one.begin(), one.end());
      }
      fgt::write_file(dir_->file(nm + ".fg.q"), q.data(), q.size());
      jobs += "decode " + nm + " " + std::to_string(kN) + " " + dir_->file(nm + ".fg.q") + " " +
              dir_->file(nm + ".fg.q.py.f32") + "\n";
      ours[t] = std::move(q);
    }
    std::vector<uint8_t> z(rb * 8);
    uint64_t s = 0x1234567ull + (uint64_t)t;
    for (auto &b : z) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      b = (uint8_t)(s >> 56);
    }
    fgt::write_file(dir_->file(nm + ".rnd.q"), z.data(), z.size());
    jobs += "decode " + nm + " " + std::to_string(kN) + " " + dir_->file(nm + ".rnd.q") + " " +
            dir_->file(nm + ".rnd.q.py.f32") + "\n";
    noise[t] = std::move(z);
  }
  std::string why;
  ASSERT_TRUE(run_jobs(jobs, &why)) << why;

  std::vector<std::string> enc_proven, dec_proven;
  for (const auto &kv : cap) {
    const fg_dtype t = kv.first;
    const std::string nm = fg_dtype_name(t);
    if (kv.second.quantize) {
      ASSERT_TRUE(fg_quant_can_encode(t)) << "gguf-py quantizes " << nm << " but forgia cannot";
      const std::vector<uint8_t> ref = fgt::read_file(dir_->file(nm + ".py.q"));
      const size_t rb = fgq::row_bytes(t, kN);
      ASSERT_EQ(ref.size(), rb * (size_t)nrows_) << nm;
      // Where gguf-py's bytes hold a non-finite f16 field (a finite input that overflowed it:
      // ggml and gguf-py store Inf), forgia refuses: the row with FG_ERR_RANGE naming the
      // block, and that block on its own; every other block is gguf-py's byte for byte.
      const size_t be = fg_dtype_info(t)->block_elems, bb = fg_dtype_info(t)->block_bytes, nb = (size_t)kN / be;
      std::string first_over;
      int refused = 0;
      for (int64_t r = 0; r < nrows_; r++) {
        const float *x = rows_->data() + r * kN;
        const uint8_t *want = ref.data() + (size_t)r * rb;
        const std::vector<size_t> over = fgq::overflowed_blocks(t, want, nb);
        std::vector<uint8_t> q(rb);
        const fg_status s = fg_quant_encode_rows(t, x, 1, kN, q.data(), q.size());
        const std::string row = nm + " row " + std::to_string(r) + " (" +
                                fgq::row_kinds()[(size_t)r / kRowsPerKind].name + ")";
        if (over.empty()) {
          ASSERT_EQ(s, FG_OK) << row << ": " << fg_last_error();
          for (size_t i = 0; i < rb; i++)
            ASSERT_EQ(q[i], want[i]) << row << ": encode differs at byte " << i << " of the row";
          continue;
        }
        refused++;
        const std::string blk = "block " + std::to_string(over[0]) + " (elements " + std::to_string(over[0] * be) +
                                ".." + std::to_string(over[0] * be + be - 1) + ")";
        if (first_over.empty()) first_over = "row " + std::to_string(r) + ", " + blk;
        ASSERT_EQ(s, FG_ERR_RANGE) << row << ": gguf-py overflowed " << blk;
        EXPECT_NE(std::string(fg_last_error()).find(blk), std::string::npos) << row << ": " << fg_last_error();
        for (size_t b = 0, k = 0; b < nb; b++) {
          std::vector<uint8_t> one(bb);
          const fg_status sb = fg_quant_encode_rows(t, x + b * be, 1, (int64_t)be, one.data(), bb);
          if (k < over.size() && over[k] == b) {
            k++;
            EXPECT_EQ(sb, FG_ERR_RANGE) << row << " block " << b;
            continue;
          }
          ASSERT_EQ(sb, FG_OK) << row << " block " << b << ": " << fg_last_error();
          for (size_t i = 0; i < bb; i++)
            ASSERT_EQ(one[i], want[b * bb + i]) << row << " block " << b << ": encode differs at byte " << i;
        }
      }
      // all rows as one matrix: refused naming the first row and block gguf-py overflowed
      std::vector<uint8_t> qa(ref.size());
      const fg_status sa = fg_quant_encode_rows(t, rows_->data(), nrows_, kN, qa.data(), qa.size());
      if (first_over.empty()) {
        ASSERT_EQ(sa, FG_OK) << nm << ": " << fg_last_error();
        ASSERT_EQ(std::memcmp(qa.data(), ref.data(), qa.size()), 0) << nm << ": matrix encode differs";
      } else {
        ASSERT_EQ(sa, FG_ERR_RANGE) << nm;
        EXPECT_NE(std::string(fg_last_error()).find(first_over), std::string::npos) << first_over << ": "
                                                                                    << fg_last_error();
      }
      std::printf("%s: %d of %lld rows hold a block gguf-py overflowed (refused)\n", nm.c_str(), refused,
                  (long long)nrows_);
      enc_proven.push_back(nm);
    }
    if (!kv.second.dequantize) continue;
    ASSERT_TRUE(fg_quant_can_decode(t)) << "gguf-py dequantizes " << nm << " but forgia cannot";
    struct Src {
      const char *tag;
      const std::vector<uint8_t> *bytes;
    } srcs[] = {{"fg.q", ours.count(t) ? &ours[t] : nullptr}, {"rnd.q", &noise[t]}};
    for (const Src &s : srcs) {
      if (!s.bytes) continue;
      const std::vector<uint8_t> refb = fgt::read_file(dir_->file(nm + "." + s.tag + ".py.f32"));
      const int64_t rows = (int64_t)(s.bytes->size() / fgq::row_bytes(t, kN));
      ASSERT_EQ(refb.size(), (size_t)(rows * kN) * sizeof(float)) << nm << " " << s.tag;
      std::vector<float> ref((size_t)(rows * kN)), y((size_t)(rows * kN));
      std::memcpy(ref.data(), refb.data(), refb.size());
      ASSERT_EQ(fg_quant_decode_rows(t, s.bytes->data(), s.bytes->size(), y.data(), rows, kN), FG_OK)
          << nm << ": " << fg_last_error();
      for (size_t i = 0; i < y.size(); i++) {
        ASSERT_TRUE(same_float(y[i], ref[i]))
            << nm << " decode of " << s.tag << " differs at "
            << (s.bytes == &noise[t] ? where((int64_t)i, kN) : "element " + std::to_string(i) + " of the rows encoded")
            << ": forgia "
            << y[i] << " gguf-py " << ref[i];
      }
    }
    dec_proven.push_back(nm);
  }
  auto join = [](const std::vector<std::string> &v) {
    std::string s;
    for (const auto &x : v) s += (s.empty() ? "" : " ") + x;
    return s;
  };
  std::printf("encode parity with gguf-py: %s\n", join(enc_proven).c_str());
  std::printf("decode parity with gguf-py: %s\n", join(dec_proven).c_str());
  EXPECT_GE(enc_proven.size(), 11u);
}

}  // namespace
