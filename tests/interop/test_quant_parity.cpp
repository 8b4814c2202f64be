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
      std::vector<uint8_t> q(rb * (size_t)nrows_);
      ASSERT_EQ(fg_quant_encode_rows(t, rows_->data(), nrows_, kN, q.data(), q.size()), FG_OK)
          << nm << ": " << fg_last_error();
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
      std::vector<uint8_t> q(ref.size());
      ASSERT_EQ(fg_quant_encode_rows(t, rows_->data(), nrows_, kN, q.data(), q.size()), FG_OK)
          << nm << ": " << fg_last_error();
      for (size_t i = 0; i < q.size(); i++) {
        ASSERT_EQ(q[i], ref[i]) << nm << " encode differs at byte " << i << " of row " << i / rb
                                << " (" << fgq::row_kinds()[i / rb / kRowsPerKind].name
                                << "), byte " << i % rb << " of the row";
      }
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
            << nm << " decode of " << s.tag << " differs at " << where((int64_t)i, kN) << ": forgia "
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
