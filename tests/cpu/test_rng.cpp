// Fucina's random streams (include/forgia/rng.h), bit for bit: values computed independently of
// Fucina's build (splitmix64 words, ES seeds, APOLLO's projection) written out here, and every
// stream that Fucina 0.2.0 itself printed into tests/data/golden/fucina_rng.txt
// (tests/data/fucina_gen), through the host fills, the CPU device fills and `forgia rng`; plus
// the window, chunking and thread-count invariance the counter form promises, and the argument
// checks.
#include <gtest/gtest.h>
#include <omp.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "testutil.h"

namespace {

uint64_t fnv1a(const void *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ static_cast<const uint8_t *>(p)[i]) * 0x100000001b3ull;
  return h;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<uint32_t> bit_vec(const std::vector<float> &v) {
  std::vector<uint32_t> b;
  for (float f : v) b.push_back(bits(f));
  return b;
}

std::vector<float> host(const fg_rng_spec &r, size_t n) {
  std::vector<float> v(n, -7.0f);
  EXPECT_EQ(fg_rng_fill_host(&r, v.data(), n), FG_OK) << fg_last_error();
  return v;
}

std::vector<uint8_t> host_mask(const fg_rng_spec &r, size_t n) {
  std::vector<uint8_t> v(n, 7);
  EXPECT_EQ(fg_rng_fill_host(&r, v.data(), n), FG_OK) << fg_last_error();
  return v;
}

fg_rng_spec gauss_fast(uint64_t seed, uint64_t first = 0, float scale = 1.0f) {
  fg_rng_spec r = {};
  r.kind = FG_RNG_GAUSS_FAST, r.seed = seed, r.first = first, r.scale = scale;
  return r;
}
fg_rng_spec gauss(uint64_t seed, uint64_t first = 0, float scale = 1.0f) {
  fg_rng_spec r = gauss_fast(seed, first, scale);
  r.kind = FG_RNG_GAUSS;
  return r;
}
fg_rng_spec uniform(uint64_t seed, float lo, float hi, uint64_t first = 0) {
  fg_rng_spec r = {};
  r.kind = FG_RNG_UNIFORM, r.seed = seed, r.first = first, r.lo = lo, r.hi = hi;
  return r;
}
fg_rng_spec kaiming(uint64_t seed, uint64_t fan_in, uint64_t first = 0) {
  fg_rng_spec r = {};
  r.kind = FG_RNG_KAIMING, r.seed = seed, r.first = first, r.fan_in = fan_in;
  return r;
}
fg_rng_spec keep(uint64_t seed, float p, uint64_t first = 0) {
  fg_rng_spec r = {};
  r.kind = FG_RNG_KEEP_MASK, r.seed = seed, r.first = first, r.p = p;
  return r;
}

// ---- values computed independently of Fucina's build, value by value ----

TEST(Rng, ReferenceSheetWords) {
  EXPECT_EQ(fg_rng_at(0, 0), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(fg_rng_at(0, 1), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(fg_rng_at(0, 2), 0x06C45D188009454Full);
  EXPECT_EQ(fg_rng_at(42, 0), 0xBDD732262FEB6E95ull);
  EXPECT_EQ(fg_rng_at(42, 1), 0x28EFE333B266F103ull);
  EXPECT_EQ(fg_rng_at(42, 2), 0x47526757130F9F52ull);
  EXPECT_EQ(fg_rng_at(0x31628AF67B2131ABull, 0), 0xFFFFFFFFFFFFFFFFull);
  // ES member seeds (seed 42, population 4, iteration 0), member 0's iid slot seeds,
  // and the first noise values of slot 0.
  const uint64_t members[] = {0xE7F75BEC18A61C7Bull, 0x63DE59AD69024497ull, 0x22AD58F3DFBC870Full,
                              0xB03AC3280EF51CE8ull};
  for (uint64_t m = 0; m < 4; m++) EXPECT_EQ(fg_rng_at(42 ^ FG_RNG_DOMAIN_ES_SEEDS, 0 * 4 + m), members[m]);
  const uint64_t slots[] = {0xE01F929105F950D3ull, 0x50394BEB66F1D147ull, 0x9D5CC8D5811FC664ull,
                            0x4FC11874BC13B723ull};
  for (uint64_t k = 0; k < 4; k++) EXPECT_EQ(fg_rng_at(members[0] ^ FG_RNG_DOMAIN_ES_NOISE, k), slots[k]);
  EXPECT_EQ(bit_vec(host(gauss_fast(slots[0]), 4)), (std::vector<uint32_t>{0xBEEB37AC, 0x3FB05F4A, 0xBE821A69, 0xBF3BE53A}));
  // The ternary ES member seed and its slot-0 stream seed.
  const uint64_t t = fg_rng_at(21 ^ FG_RNG_DOMAIN_ES_TRITS, 0);
  EXPECT_EQ(t, 0x580D8851E5BA1021ull);
  const uint64_t q = fg_rng_at(t ^ FG_RNG_DOMAIN_ES_TRITS, 0);
  EXPECT_EQ(q, 0x9F4EF6BE384916FEull);
  // its first flips for len 512: index at(Q, 2i) mod len, +1 when at(Q, 2i + 1) is odd
  const int flips[6][2] = {{295, -1}, {511, 1}, {439, -1}, {368, 1}, {159, 1}, {85, 1}};
  for (uint64_t i = 0; i < 6; i++) {
    EXPECT_EQ(fg_rng_at(q, 2 * i) % 512, (uint64_t)flips[i][0]) << i;
    EXPECT_EQ((fg_rng_at(q, 2 * i + 1) & 1) ? 1 : -1, flips[i][1]) << i;
  }
}

TEST(Rng, ReferenceSheetFills) {
  const std::vector<uint32_t> fast42 = {0x3ED45626, 0x3F27161D, 0xBF6452A7, 0x3FA9D5AE,
                                        0x3FDD634F, 0xBFF113CC, 0x3F0BADCA, 0xBFD41332};
  EXPECT_EQ(bit_vec(host(gauss_fast(42), 8)), fast42);
  EXPECT_EQ(bit_vec(host(gauss_fast(42, 3), 3)), std::vector<uint32_t>(fast42.begin() + 3, fast42.begin() + 6));
  EXPECT_EQ(bit_vec(host(gauss_fast(1), 4)), (std::vector<uint32_t>{0xBCE76BB3, 0xBF886628, 0xBE6963BC, 0x3DAA2D47}));
  const std::pair<uint64_t, uint64_t> hashes[] = {
      {42, 0x7f3489df756bc2a1ull}, {1, 0xb1a2ea86c5b48a05ull}, {0xDEADBEEFCAFEF00Dull, 0x78dd4580a8405435ull}};
  for (auto &h : hashes) {
    std::vector<float> v = host(gauss_fast(h.first), 4096);
    EXPECT_EQ(fnv1a(v.data(), v.size() * 4), h.second) << h.first;
  }
  // the scalar gaussian (f64 libm)
  EXPECT_EQ(bit_vec(host(gauss(42), 8)), (std::vector<uint32_t>{0x3ED45626, 0x3F27161E, 0xBF6452A8, 0x3FA9D5AF,
                                                                 0x3FDD634E, 0xBFF113CD, 0x3F0BADC8, 0xBFD41332}));
  std::vector<float> g = host(gauss(42), 4096);
  EXPECT_EQ(fnv1a(g.data(), g.size() * 4), 0x32da2f68c2a2dcc5ull);
  EXPECT_EQ(bit_vec(host(uniform(42, 0, 1), 4)), (std::vector<uint32_t>{0x3F3DD732, 0x3E23BF8D, 0x3E8EA4CF, 0x3EB039C4}));
  EXPECT_EQ(bit_vec(host(kaiming(7, 64), 4)), (std::vector<uint32_t>{0xBCE1A0F1, 0xBDF76786, 0x3DCD3081, 0x3CA9D75C}));
  // uniformFill's clamp: the all-ones word rounds up to hi and becomes the f32 below it
  for (auto b : {std::pair<float, float>{-0.25f, 0.75f}, {0.0f, 1.0f}, {-1.0f, 1.0f}})
    EXPECT_EQ(bits(host(uniform(0x31628AF67B2131ABull, b.first, b.second), 1)[0]), bits(nextafterf(b.second, b.first)));
  // APOLLO's projection, slot seed 1, rank 2: gaussianFill(slot_seed + chunk * G,
  // scale f32(1 / sqrt_f32(f32(rank))))
  const float scale = 1.0f / sqrtf(2.0f);
  EXPECT_EQ(bit_vec(host(gauss(1 + 0 * 0x9E3779B97F4A7C15ull, 0, scale), 6)),
            (std::vector<uint32_t>{0xBCA3A3D7, 0xBF40E5BC, 0xBE250807, 0x3D70AA9A, 0x3D954AA9, 0xBF65D558}));
  EXPECT_EQ(1 + 1 * 0x9E3779B97F4A7C15ull, 0x9E3779B97F4A7C16ull);
}

// ---- the golden file that Fucina printed ----

struct Record {
  std::string kind;
  std::map<std::string, std::string> f;
  uint64_t u(const std::string &k) const { return std::stoull(f.at(k), nullptr, k == "seed" ? 16 : 10); }
  float bits_f32(const std::string &k) const { return from_bits((uint32_t)std::stoul(f.at(k), nullptr, 16)); }
  std::vector<uint64_t> list() const {
    std::vector<uint64_t> v;
    if (!f.count("v")) return v;
    std::stringstream ss(f.at("v"));
    for (std::string x; std::getline(ss, x, ',');) v.push_back(std::stoull(x, nullptr, 16));
    return v;
  }
  uint64_t fnv() const { return std::stoull(f.at("fnv"), nullptr, 16); }
  std::string line;
};

std::vector<Record> golden() {
  std::ifstream in(std::string(FORGIA_TEST_DATA) + "/golden/fucina_rng.txt");
  std::vector<Record> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream ss(line);
    Record r;
    r.line = line;
    ss >> r.kind;
    for (std::string kv; ss >> kv;) {
      size_t eq = kv.find('=');
      r.f[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    out.push_back(r);
  }
  return out;
}

// The record as our spec (false for records that are not fills: at, splitmix64).
bool spec_of(const Record &g, fg_rng_spec *r) {
  *r = {};
  r->seed = g.u("seed");
  if (g.kind == "uniform") {
    *r = uniform(r->seed, g.bits_f32("lo"), g.bits_f32("hi"));
  } else if (g.kind == "kaiming") {
    *r = kaiming(r->seed, g.u("fan_in"));
  } else if (g.kind == "gauss_fill" || g.kind == "gauss_at") {
    *r = gauss(r->seed, g.u("first"), g.bits_f32("scale"));
  } else if (g.kind == "gauss_fast") {
    *r = gauss_fast(r->seed, g.u("first"), g.bits_f32("scale"));
  } else if (g.kind == "keep") {
    *r = keep(r->seed, g.bits_f32("p"));
  } else {
    return false;
  }
  return true;
}

// Compares n values (f32 patterns, or mask bytes) with a record: its list and its hash.
void expect_matches(const Record &g, const void *vals, size_t n, const char *how) {
  ASSERT_EQ(n, g.u("n")) << g.line;
  const bool mask = g.kind == "keep";
  EXPECT_EQ(fnv1a(vals, mask ? n : 4 * n), g.fnv()) << how << ": " << g.line;
  if (mask && g.f.count("mask")) {
    std::string m;
    for (size_t i = 0; i < n; i++) m += static_cast<const uint8_t *>(vals)[i] ? '1' : '0';
    EXPECT_EQ(m, g.f.at("mask")) << how;
  }
  std::vector<uint64_t> want = g.list();
  for (size_t i = 0; i < want.size(); i++) {
    uint32_t got;
    std::memcpy(&got, static_cast<const uint8_t *>(vals) + 4 * i, 4);
    EXPECT_EQ(got, want[i]) << how << ": value " << i << " of " << g.line;
  }
}

TEST(Rng, FucinaGoldenFileHost) {
  std::vector<Record> recs = golden();
  ASSERT_GE(recs.size(), 50u) << "tests/data/golden/fucina_rng.txt missing or short";
  size_t fills = 0;
  for (const Record &g : recs) {
    if (g.kind == "at") {
      std::vector<uint64_t> want = g.list();
      for (size_t k = 0; k < want.size(); k++) EXPECT_EQ(fg_rng_at(g.u("seed"), g.u("first") + k), want[k]) << g.line;
      continue;
    }
    if (g.kind == "splitmix64") {
      EXPECT_EQ(fg_rng_at(g.u("seed"), 0), g.list()[0]);
      continue;
    }
    fg_rng_spec r;
    ASSERT_TRUE(spec_of(g, &r)) << g.line;
    const size_t n = g.u("n");
    fills++;
    if (r.kind == FG_RNG_KEEP_MASK) {
      std::vector<uint8_t> m = host_mask(r, n);
      expect_matches(g, m.data(), n, "host");
      // Fucina's dropout kept each element as 1 * f32(1 / (1 - p)): our op parameters
      fg_op_kind op;
      fg_op_params P;
      ASSERT_EQ(fg_rng_op_params(&r, &op, &P), FG_OK);
      EXPECT_EQ(op, FG_OP_RNG_KEEP_MASK);
      if (g.f.count("scale")) {
        EXPECT_EQ(bits(P.f[0]), bits(g.bits_f32("scale"))) << g.line;
      }
    } else {
      std::vector<float> v = host(r, n);
      expect_matches(g, v.data(), n, "host");
    }
  }
  EXPECT_GE(fills, 40u);
}

TEST(Rng, FucinaGoldenFileCpuDevice) {
  fg_device *dev = nullptr;
  ASSERT_EQ(fg_device_open("cpu", &dev), FG_OK);
  for (const Record &g : golden()) {
    fg_rng_spec r;
    if (!spec_of(g, &r)) continue;
    const size_t n = g.u("n");
    const bool mask = r.kind == FG_RNG_KEEP_MASK;
    void *d = nullptr;
    ASSERT_EQ(fg_device_mem_alloc(dev, n * 4, &d), FG_OK);
    ASSERT_EQ(fg_rng_fill(dev, &r, d, mask ? FG_U8 : FG_F32, n, nullptr), FG_OK) << fg_last_error() << "\n" << g.line;
    std::vector<uint8_t> back(n * 4);
    ASSERT_EQ(fg_device_copy(dev, back.data(), d, mask ? n : 4 * n, FG_COPY_D2H), FG_OK);
    expect_matches(g, back.data(), n, "cpu device");
    // dropout itself: the op layer on all-ones input keeps 1 * scale exactly where the mask is 1
    if (mask && g.f.count("scale")) {
      std::vector<float> ones(n, 1.0f);
      ASSERT_EQ(fg_device_copy(dev, d, ones.data(), 4 * n, FG_COPY_H2D), FG_OK);
      fg_op_params P;
      ASSERT_EQ(fg_rng_op_params(&r, nullptr, &P), FG_OK);
      fg_op_args a = {};
      a.ptr[0] = a.ptr[1] = d, a.dtype[0] = a.dtype[1] = FG_F32, a.n = n, a.seed = r.seed;
      ASSERT_EQ(fg_op_run(dev, FG_OP_DROPOUT, &P, &a, 1, nullptr), FG_OK) << fg_last_error();
      std::vector<float> y(n);
      ASSERT_EQ(fg_device_copy(dev, y.data(), d, 4 * n, FG_COPY_D2H), FG_OK);
      std::vector<uint8_t> m(n);
      for (size_t i = 0; i < n; i++) {
        m[i] = y[i] != 0.0f;
        if (m[i]) {
          EXPECT_EQ(bits(y[i]), bits(g.bits_f32("scale"))) << g.line;
        }
      }
      expect_matches(g, m.data(), n, "dropout op");
    }
    fg_device_mem_free(dev, d);
  }
  fg_device_close(dev);
}

// ---- the counter form: windows, chunks, threads ----

TEST(Rng, WindowsAndChunksGiveTheSameValues) {
  const size_t n = 5003;
  const fg_rng_spec specs[] = {gauss_fast(9, 0, 0.5f), gauss(9), uniform(9, -2, 3), kaiming(9, 17)};
  for (fg_rng_spec r : specs) {
    std::vector<float> whole = host(r, n);
    // any window [a, b) is that slice of the whole, with odd and even ends
    for (size_t a : {0, 1, 2, 7, 1000, 4097}) {
      for (size_t b : {a + 1, a + 2, a + 3, (size_t)n}) {
        fg_rng_spec w = r;
        w.first = a;
        std::vector<float> part = host(w, b - a);
        EXPECT_EQ(0, std::memcmp(part.data(), whole.data() + a, (b - a) * 4)) << fg_rng_kind_name(r.kind) << " " << a
                                                                               << ".." << b;
      }
    }
    // and the same values from consecutive chunks of odd sizes
    std::vector<float> chunked(n);
    for (size_t a = 0, step = 1; a < n; a += step, step = step * 3 % 997 + 1) {
      fg_rng_spec w = r;
      w.first = a;
      size_t m = std::min(step, n - a);
      ASSERT_EQ(fg_rng_fill_host(&w, chunked.data() + a, m), FG_OK);
    }
    EXPECT_EQ(0, std::memcmp(chunked.data(), whole.data(), n * 4)) << fg_rng_kind_name(r.kind);
  }
  std::vector<uint8_t> m = host_mask(keep(5, 0.3f), n), w = host_mask(keep(5, 0.3f, 333), 77);
  EXPECT_EQ(0, std::memcmp(w.data(), m.data() + 333, 77));
}

TEST(Rng, CpuDeviceFillIsThreadCountInvariantAndNarrowsLikeTheOpLayer) {
  fg_device *dev = nullptr;
  ASSERT_EQ(fg_device_open("cpu", &dev), FG_OK);
  const size_t n = (1u << 20) + 3;
  const fg_rng_spec specs[] = {gauss_fast(77, 5), uniform(77, -1, 1, 5), kaiming(77, 3, 5), gauss(77, 5, 2.0f)};
  void *d = nullptr;
  ASSERT_EQ(fg_device_mem_alloc(dev, n * 4, &d), FG_OK);
  const int saved = omp_get_max_threads();
  for (fg_rng_spec r : specs) {
    std::vector<float> want = host(r, n), got(n);
    for (int threads : {1, 2, 7}) {
      omp_set_num_threads(threads);
      ASSERT_EQ(fg_rng_fill(dev, &r, d, FG_F32, n, nullptr), FG_OK) << fg_last_error();
      ASSERT_EQ(fg_device_copy(dev, got.data(), d, n * 4, FG_COPY_D2H), FG_OK);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), n * 4)) << fg_rng_kind_name(r.kind) << " threads " << threads;
    }
    for (fg_dtype dt : {FG_F16, FG_BF16}) {
      ASSERT_EQ(fg_rng_fill(dev, &r, d, dt, n, fg_device_stream(dev)), FG_OK) << fg_last_error();
      ASSERT_EQ(fg_stream_sync(fg_device_stream(dev)), FG_OK);
      std::vector<uint16_t> h(n);
      ASSERT_EQ(fg_device_copy(dev, h.data(), d, n * 2, FG_COPY_D2H), FG_OK);
      size_t bad = 0;
      for (size_t i = 0; i < n; i++) bad += h[i] != (dt == FG_F16 ? fg_f32_to_f16(want[i]) : fg_f32_to_bf16(want[i]));
      EXPECT_EQ(bad, 0u) << fg_rng_kind_name(r.kind) << " " << fg_dtype_name(dt);
    }
  }
  omp_set_num_threads(saved);
  std::vector<uint8_t> want = host_mask(keep(3, 0.25f, 11), n), got(n);
  fg_rng_spec k = keep(3, 0.25f, 11);
  ASSERT_EQ(fg_rng_fill(dev, &k, d, FG_BOOL, n, nullptr), FG_OK) << fg_last_error();
  ASSERT_EQ(fg_device_copy(dev, got.data(), d, n, FG_COPY_D2H), FG_OK);
  EXPECT_EQ(got, want);
  fg_device_mem_free(dev, d);

  // a whole tensor, and a read-only one refused
  fg_tensor *t = nullptr;
  uint64_t shape[2] = {3, 7};
  ASSERT_EQ(fg_tensor_create(dev, "noise", FG_F32, 2, shape, &t), FG_OK);
  fg_rng_spec r = gauss_fast(123, 4);
  ASSERT_EQ(fg_rng_fill_tensor(t, &r, nullptr), FG_OK) << fg_last_error();
  std::vector<float> tv(21);
  ASSERT_EQ(fg_tensor_download(t, tv.data(), 84, nullptr), FG_OK);
  EXPECT_EQ(bit_vec(tv), bit_vec(host(r, 21)));
  t->readonly = true;
  EXPECT_EQ(fg_rng_fill_tensor(t, &r, nullptr), FG_ERR_INVALID_ARG);
  EXPECT_NE(std::string(fg_last_error()).find("read-only"), std::string::npos) << fg_last_error();
  t->readonly = false;
  fg_tensor_free(t);
  fg_device_close(dev);
}

// ---- arguments ----

TEST(Rng, RefusesBadArgumentsAndWritesNothing) {
  struct Bad {
    fg_rng_spec r;
    fg_status st;
    const char *says;
  };
  fg_rng_spec unknown = {};
  unknown.kind = (fg_rng_kind)99;
  const Bad bad[] = {
      {uniform(1, 1, 1), FG_ERR_INVALID_ARG, "below hi"},
      {uniform(1, 2, 1), FG_ERR_INVALID_ARG, "below hi"},
      {uniform(1, NAN, 1), FG_ERR_NONFINITE, "finite"},
      {uniform(1, 0, INFINITY), FG_ERR_NONFINITE, "finite"},
      {kaiming(1, 0), FG_ERR_INVALID_ARG, "fan_in is 0"},
      {keep(1, 1.0f), FG_ERR_INVALID_ARG, "[0, 1)"},
      {keep(1, -0.1f), FG_ERR_INVALID_ARG, "[0, 1)"},
      {keep(1, NAN), FG_ERR_INVALID_ARG, "[0, 1)"},
      {gauss(1, 0, NAN), FG_ERR_NONFINITE, "scale"},
      {gauss_fast(1, 0, INFINITY), FG_ERR_NONFINITE, "scale"},
      {gauss_fast(1, UINT64_MAX - 2), FG_ERR_OVERFLOW, "2^64-1"},
      {unknown, FG_ERR_INVALID_ARG, "unknown kind"},
  };
  for (const Bad &b : bad) {
    std::vector<float> v(4, 5.0f);
    EXPECT_EQ(fg_rng_fill_host(&b.r, v.data(), 4), b.st) << b.says;
    EXPECT_NE(std::string(fg_last_error()).find(b.says), std::string::npos) << fg_last_error();
    EXPECT_EQ(v, std::vector<float>(4, 5.0f));
  }
  // the last counter itself is reachable
  fg_rng_spec last = gauss_fast(1, UINT64_MAX - 2);
  std::vector<float> v(3);
  EXPECT_EQ(fg_rng_fill_host(&last, v.data(), 3), FG_OK);
  fg_rng_spec pair_of_last = gauss_fast(1, UINT64_MAX - 1);
  EXPECT_EQ(bits(host(pair_of_last, 2)[1]), bits(v[2]));
  fg_rng_spec g = gauss_fast(1);
  EXPECT_EQ(fg_rng_fill_host(&g, nullptr, 1), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_rng_fill_host(nullptr, v.data(), 1), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_rng_fill_host(&g, nullptr, 0), FG_OK);

  fg_device *dev = nullptr;
  ASSERT_EQ(fg_device_open("cpu", &dev), FG_OK);
  void *d = nullptr;
  ASSERT_EQ(fg_device_mem_alloc(dev, 64, &d), FG_OK);
  EXPECT_EQ(fg_rng_fill(dev, &g, d, FG_U8, 4, nullptr), FG_ERR_TYPE);
  fg_rng_spec k = keep(1, 0.5f);
  EXPECT_EQ(fg_rng_fill(dev, &k, d, FG_F32, 4, nullptr), FG_ERR_TYPE);
  EXPECT_EQ(fg_rng_fill(nullptr, &g, d, FG_F32, 4, nullptr), FG_ERR_INVALID_ARG);
  fg_device_mem_free(dev, d);
  fg_device_close(dev);
}

TEST(Rng, OpParamsAreFucinasScalars) {
  fg_op_kind op;
  fg_op_params P;
  fg_rng_spec k = keep(1, 0.5f);
  ASSERT_EQ(fg_rng_op_params(&k, &op, &P), FG_OK);
  EXPECT_EQ(op, FG_OP_RNG_KEEP_MASK);
  EXPECT_EQ(P.u[0], 1ull << 52);
  EXPECT_EQ(P.f[0], 2.0f);
  k.p = 0.0f;
  ASSERT_EQ(fg_rng_op_params(&k, &op, &P), FG_OK);
  EXPECT_EQ(P.u[0], 1ull << 53);  // every word kept
  k.p = 0.1f;                      // ceil((1 - f64(0.1f)) * 2^53), not the f32 1 - p
  ASSERT_EQ(fg_rng_op_params(&k, &op, &P), FG_OK);
  EXPECT_EQ(P.u[0], (uint64_t)std::ceil((1.0 - (double)0.1f) * 9007199254740992.0));
  fg_rng_spec u = kaiming(1, 3);
  ASSERT_EQ(fg_rng_op_params(&u, &op, &P), FG_OK);
  EXPECT_EQ(op, FG_OP_RNG_UNIFORM);
  const float bound = (float)std::sqrt(1.0 / 3.0);
  EXPECT_EQ(P.f[0], bound);
  EXPECT_EQ(P.f[1], nextafterf(bound, -bound));
  EXPECT_EQ(P.d[0], -(double)bound);
  EXPECT_EQ(P.d[1], 2.0 * (double)bound);
  fg_rng_spec g = gauss(1);
  EXPECT_EQ(fg_rng_op_params(&g, &op, &P), FG_ERR_UNSUPPORTED);
  g = gauss_fast(1, 0, 0.25f);
  ASSERT_EQ(fg_rng_op_params(&g, nullptr, &P), FG_OK);
  EXPECT_EQ(P.f[0], 0.25f);
}

// ---- forgia rng ----

std::string rng_cli(const std::string &args) { return std::string(FORGIA_CLI) + " rng " + args; }

std::vector<uint8_t> as_bytes(const void *p, size_t n) {
  return std::vector<uint8_t>(static_cast<const uint8_t *>(p), static_cast<const uint8_t *>(p) + n);
}

std::vector<uint8_t> cli_out(const std::string &args) {
  std::string out, err;
  EXPECT_EQ(fgt::run(rng_cli(args), &out, &err), 0) << args << "\n" << err;
  EXPECT_EQ(err, "") << args;
  return std::vector<uint8_t>(out.begin(), out.end());
}

std::string hexf(float f) {
  char b[64];
  std::snprintf(b, sizeof b, "%a", (double)f);
  return b;
}

TEST(RngCli, WritesTheGoldenStreams) {
  for (const Record &g : golden()) {
    if (g.kind == "splitmix64") continue;
    const std::string seed = std::to_string(g.u("seed")), n = std::to_string(g.u("n"));
    if (g.kind == "at") {
      std::vector<uint64_t> w = g.list();
      if (g.u("first") > UINT64_MAX - (w.size() - 1)) continue;  // wraps: the CLI refuses that
      EXPECT_EQ(cli_out("--kind u64 --seed " + seed + " --offset " + g.f.at("first") + " --count " + n),
                as_bytes(w.data(), w.size() * 8))
          << g.line;
      continue;
    }
    fg_rng_spec r;
    if (!spec_of(g, &r)) continue;
    std::string a = "--seed " + seed + " --count " + n;
    if (g.kind == "uniform") a += " --kind uniform --lo " + hexf(r.lo) + " --hi " + hexf(r.hi);
    if (g.kind == "kaiming") a += " --kind kaiming --fan-in " + g.f.at("fan_in");
    if (g.kind == "keep") a += " --kind dropout --p " + hexf(r.p);
    if (g.kind.rfind("gauss", 0) == 0)
      a += std::string(" --kind ") + (g.kind == "gauss_fast" ? "gauss-fast" : "gauss") + " --offset " +
           g.f.at("first") + " --scale " + hexf(r.scale);
    std::vector<uint8_t> out = cli_out(a);
    expect_matches(g, out.data(), out.size() / (g.kind == "keep" ? 1 : 4), a.c_str());
    // the same through the CPU device, for the smaller ones
    if (g.u("n") <= 4097) {
      EXPECT_EQ(cli_out(a + " --device cpu"), out) << a;
    }
  }
}

TEST(RngCli, WindowsMatchTheLibrary) {
  const uint64_t off = 18446744073709551000ull;  // near the end of the counter range
  fg_rng_spec r = gauss_fast(18446744073709551615ull, off, 0.5f);
  std::vector<float> v = host(r, 615);
  EXPECT_EQ(cli_out("--kind gauss-fast --seed 18446744073709551615 --offset 18446744073709551000 --count 615 "
                    "--scale 0.5"),
            as_bytes(v.data(), v.size() * 4));
  r = uniform(5, -3, 2, 99);
  v = host(r, 1001);
  EXPECT_EQ(cli_out("--kind uniform --seed 5 --offset 99 --count 1001 --lo -3 --hi 2 --device cpu"),
            as_bytes(v.data(), v.size() * 4));
  std::vector<uint8_t> m = host_mask(keep(8, 0.75f, 3), 70001);
  EXPECT_EQ(cli_out("--kind dropout --seed 8 --offset 3 --count 70001 --p 0.75"), m);
  // chunked output: more than one internal chunk, odd start
  r = gauss(3, 1);
  v = host(r, 200001);
  EXPECT_EQ(cli_out("--kind gauss --seed 3 --offset 1 --count 200001"), as_bytes(v.data(), v.size() * 4));
  EXPECT_EQ(cli_out("--kind gauss --seed 3 --count 0"), std::vector<uint8_t>());
}

TEST(RngCli, BadUsageExitsTwoWithOneLine) {
  const char *bad[] = {
      "--seed 1 --count 4",                                 // no kind
      "--kind normal --seed 1 --count 4",                   // unknown kind
      "--kind u64 --count 4",                               // no seed
      "--kind u64 --seed 1",                                // no count
      "--kind u64 --seed 0x2a --count 4",                   // not decimal
      "--kind u64 --seed -1 --count 4",                     // signed
      "--kind u64 --seed ' 1' --count 4",                   // spaces
      "--kind u64 --seed 1e3 --count 4",                    // not an integer
      "--kind u64 --seed 18446744073709551616 --count 4",   // 2^64
      "--kind u64 --seed 1 --offset 18446744073709551615 --count 2",  // past the last counter
      "--kind u64 --seed 1 --count 4 --scale 2",            // does not apply
      "--kind gauss --seed 1 --count 4 --scale nan",
      "--kind gauss-fast --seed 1 --count 4 --scale inf",
      "--kind gauss-fast --seed 1 --count 4 --scale 1x",
      "--kind gauss-fast --seed 1 --count 4 --p 0.5",
      "--kind uniform --seed 1 --count 4 --lo 0",           // no hi
      "--kind uniform --seed 1 --count 4 --lo 1 --hi 1",
      "--kind uniform --seed 1 --count 4 --lo 1 --hi 1.00000001",  // equal as f32
      "--kind uniform --seed 1 --count 4 --lo -1e39 --hi 0",       // not finite as f32
      "--kind kaiming --seed 1 --count 4",
      "--kind kaiming --seed 1 --count 4 --fan-in 0",
      "--kind kaiming --seed 1 --count 4 --fan-in -3",
      "--kind dropout --seed 1 --count 4 --p 1",
      "--kind dropout --seed 1 --count 4 --p -0.5",
      "--kind dropout --seed 1 --count 4",
      "--kind u64 --seed 1 --count 4 --device tpu",
      "--kind u64 --seed 1 --seed 2 --count 4",
      "--kind u64 --seed 1 --count 4 extra",
  };
  for (const char *a : bad) {
    std::string out, err;
    EXPECT_EQ(fgt::run(rng_cli(a), &out, &err), 2) << a << "\n" << err;
    EXPECT_EQ(out, "") << a;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << a << "\n" << err;
    EXPECT_EQ(err.rfind("forgia rng: ", 0), 0u) << err;
  }
  std::string out;
  EXPECT_EQ(fgt::run(std::string(FORGIA_CLI) + " help rng", &out), 0);
  EXPECT_NE(out.find("usage: forgia rng"), std::string::npos);
}

TEST(RngCli, FailedWriteExitsOne) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  std::string err;
  EXPECT_EQ(fgt::run(rng_cli("--kind gauss-fast --seed 1 --count 100000 >/dev/full"), nullptr, &err), 1) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("forgia rng: stdout: write failed"), std::string::npos) << err;
}

// Binary on a terminal is refused before any work: the values would only garble it.
TEST(RngCli, RefusesATerminal) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) GTEST_SKIP() << "no pseudo-terminal";
  const char *slave = ptsname(master);
  ASSERT_NE(slave, nullptr);
  std::string err;
  int rc = fgt::run(rng_cli("--kind u64 --seed 1 --count 4 >" + std::string(slave)), nullptr, &err);
  close(master);
  EXPECT_EQ(rc, 2) << err;
  EXPECT_NE(err.find("forgia rng: stdout: is a terminal"), std::string::npos) << err;
}

// N values never sit in memory: a stream far larger than the address-space limit streams
// through a pipe (the reader stops after its first bytes).
TEST(RngCli, MemoryDoesNotGrowWithCount) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FGT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(FGT_ASAN)
  GTEST_SKIP() << "AddressSanitizer reserves more address space than the limit allows";
#else
  std::string out, err;
  int rc = fgt::run("ulimit -v 400000; " + rng_cli("--kind u64 --seed 42 --count 1000000000") + " | head -c 24", &out,
                    &err);
  EXPECT_EQ(rc, 0) << err;
  uint64_t w[3] = {fg_rng_at(42, 0), fg_rng_at(42, 1), fg_rng_at(42, 2)};
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), as_bytes(w, 24));
  rc = fgt::run("ulimit -v 400000; " + rng_cli("--kind gauss-fast --seed 42 --count 1000000000 --device cpu") +
                    " | head -c 32",
                &out, &err);
  EXPECT_EQ(rc, 0) << err;
  std::vector<float> v = host(gauss_fast(42), 8);
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), as_bytes(v.data(), 32));
#endif
}

}  // namespace
