// The CPU loader's windows and pieces: a model larger than one window (64 MiB), whose tensors
// straddle window and piece boundaries, of every kind the loader treats differently (borrowed
// f32 norms between converted matrices, block types with rows longer than a piece, float
// types widened and narrowed), loads to the same bytes as the row codecs give, with any
// thread count, from a warm file, a cold one and one half in the page cache; and the
// recycled output memory of fg_load_options.recycle.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "load_test_util.h"

namespace {

// About 73 MB: an f16 matrix that fills all but 3.6 MB of the first window, then block types whose
// bytes cross into the second, a q8_0 row of 2^18 elements (278 KiB: longer than a piece),
// small f32 norms (borrowed under f32) in between, and a bf16 and an f32 matrix at the end.
// Without the filler (small), the same tensors in about 9.5 MB: one window, many pieces.
std::vector<ldt::Tensor> big_tensors(bool filler) {
  std::vector<ldt::Tensor> ts;
  if (filler) ts.push_back(ldt::make_float("a.f16", FG_F16, {3000, 10585}, 11));  // 63,510,000 bytes
  ts.push_back(ldt::make_float("a.norm", FG_F32, {4000}, 12));
  ts.push_back(ldt::make_quant("b.q8_0", FG_Q8_0, 96, 4096, 13));
  ts.push_back(ldt::make_quant("b.q4_K", FG_Q4_K, 40, 8192, 14));
  ts.push_back(ldt::make_float("b.norm", FG_F32, {333}, 15));
  ts.push_back(ldt::make_quant("c.q6_K", FG_Q6_K, 64, 2048, 16));
  ts.push_back(ldt::make_quant("c.row", FG_Q8_0, 1, 262144, 17));
  ts.push_back(ldt::make_float("d.bf16", FG_BF16, {512, 1500}, 18));
  ts.push_back(ldt::make_float("d.f32", FG_F32, {700, 1024}, 19));
  for (const ldt::Tensor &t : ts) EXPECT_FALSE(t.bytes.empty()) << t.name << ": this build cannot encode it";
  return ts;
}

class LoadWindows : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir = new fgt::TempDir();
    ts = new std::vector<ldt::Tensor>(big_tensors(false));
    path = new std::string(dir->file("small.gguf"));
    ldt::write_gguf(*path, *ts);
  }
  static void TearDownTestSuite() {
    delete path;
    delete ts;
    delete dir;
  }
  // The large variant for one test: the windows themselves (slow under sanitizers).
  void use_big() {
    *ts = big_tensors(true);
    *path = dir->file("big.gguf");
    ldt::write_gguf(*path, *ts);
  }
  void SetUp() override { ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  void TearDown() override { fg_device_close(dev); }

  fg_model *load(fg_load_dtype p, int threads, unsigned flags = 0, fg_model *recycle = nullptr) {
    fg_load_options o;
    fg_load_options_init(&o);
    o.dtype = p;
    o.threads = threads;
    o.flags = flags;
    o.recycle = recycle;
    return ldt::load_ok(*path, dev, &o);
  }

  // Drops [off, off+len) of the file from the page cache (best effort: pages some other
  // process maps stay).
  static void uncache(uint64_t off, uint64_t len) {
    int fd = open(path->c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(0, fdatasync(fd));
    EXPECT_EQ(0, posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED));
    close(fd);
  }

  static fgt::TempDir *dir;
  static std::vector<ldt::Tensor> *ts;
  static std::string *path;
  fg_device *dev = nullptr;
};

fgt::TempDir *LoadWindows::dir;
std::vector<ldt::Tensor> *LoadWindows::ts;
std::string *LoadWindows::path;

TEST_F(LoadWindows, EveryPolicyAndThreadCountGivesTheCodecsBytes) {
  const struct {
    fg_load_dtype p;
    int threads;
  } runs[] = {{FG_LOAD_DTYPE_F32, 1}, {FG_LOAD_DTYPE_F32, 2}, {FG_LOAD_DTYPE_F32, 3},
              {FG_LOAD_DTYPE_F16, 2}, {FG_LOAD_DTYPE_BF16, 3}, {FG_LOAD_DTYPE_DEQUANT, 2}};
  for (const auto &r : runs) {
    SCOPED_TRACE(std::string(fg_load_dtype_name(r.p)) + " threads " + std::to_string(r.threads));
    fg_model *m = load(r.p, r.threads);
    ldt::expect_model(m, *ts, r.p);
    fg_model_free(m);
  }
}

TEST_F(LoadWindows, KeptCopiesAndF64WithAnyThreadCount) {
  for (int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    fg_model *m = load(FG_LOAD_DTYPE_KEEP, threads, FG_LOAD_FLAG_COPY);
    ldt::expect_model(m, *ts, FG_LOAD_DTYPE_KEEP);
    ASSERT_NE(nullptr, m);
    EXPECT_EQ(0u, fg_model_stats(m)->bytes_borrowed);
    fg_model_free(m);
    // f64: every element is its f32 value (decoded for a block type), widened exactly
    m = load(FG_LOAD_DTYPE_F64, threads);
    ASSERT_NE(nullptr, m);
    for (const ldt::Tensor &t : *ts) {
      const fg_model_tensor *mt = fg_model_find(m, t.name.c_str());
      ASSERT_NE(nullptr, mt) << t.name;
      ASSERT_EQ(FG_F64, mt->dtype) << t.name;
      std::vector<float> f = ldt::as_f32(t);
      std::vector<double> want(f.begin(), f.end());
      ASSERT_EQ(want.size() * 8, mt->nbytes) << t.name;
      EXPECT_EQ(0, memcmp(want.data(), mt->data, mt->nbytes)) << t.name;
    }
    fg_model_free(m);
  }
}

TEST_F(LoadWindows, ColdAndHalfCachedFilesGiveTheSameBytes) {
  uint64_t size = fgt::read_file(*path).size();
  // every other MiB out of the cache: pieces with cached and uncached runs of pages
  for (uint64_t off = 0; off < size; off += 2u << 20) uncache(off, 1u << 20);
  fg_model *m = load(FG_LOAD_DTYPE_F32, 2);
  ldt::expect_model(m, *ts, FG_LOAD_DTYPE_F32);
  fg_model_free(m);
  uncache(0, 0);  // the whole file
  m = load(FG_LOAD_DTYPE_F16, 3);
  ldt::expect_model(m, *ts, FG_LOAD_DTYPE_F16);
  fg_model_free(m);
  uncache(0, 0);
  m = load(FG_LOAD_DTYPE_KEEP, 2, FG_LOAD_FLAG_COPY);
  ldt::expect_model(m, *ts, FG_LOAD_DTYPE_KEEP);
  fg_model_free(m);
  uncache(0, 0);
  m = load(FG_LOAD_DTYPE_KEEP, 2);  // borrowed: populated from a cold file
  ldt::expect_model(m, *ts, FG_LOAD_DTYPE_KEEP);
  fg_model_free(m);
}

TEST_F(LoadWindows, RecycledMemoryIsTakenAndOverwritten) {
  fg_model *a = load(FG_LOAD_DTYPE_F32, 2);
  ASSERT_NE(nullptr, a);
  EXPECT_FALSE(fg_model_stats(a)->recycled);
  const fg_model_tensor *fa = fg_model_find(a, "b.q8_0");
  ASSERT_NE(nullptr, fa);
  const void *first = fa->data;
  // scribble over a's output: the next load must write every byte of its own
  for (size_t i = 0; i < fg_model_count(a); i++) {
    const fg_model_tensor *t = fg_model_at(a, i);
    if (!t->borrowed && t->nbytes) memset(t->data, 0xa5, t->nbytes);
  }
  fg_model *b = load(FG_LOAD_DTYPE_F32, 3, 0, a);  // a is consumed
  ASSERT_NE(nullptr, b);
  EXPECT_TRUE(fg_model_stats(b)->recycled);
  const fg_model_tensor *fb = fg_model_find(b, "b.q8_0");
  ASSERT_NE(nullptr, fb);
  EXPECT_EQ(first, fb->data);
  ldt::expect_model(b, *ts, FG_LOAD_DTYPE_F32);
  // a smaller output fits in b's memory (the tail goes back); a larger one does not fit in c's
  fg_model *c = load(FG_LOAD_DTYPE_BF16, 1, 0, b);
  ASSERT_NE(nullptr, c);
  EXPECT_TRUE(fg_model_stats(c)->recycled);
  ldt::expect_model(c, *ts, FG_LOAD_DTYPE_BF16);
  fg_model *d = load(FG_LOAD_DTYPE_F64, 2, 0, c);
  ASSERT_NE(nullptr, d);
  EXPECT_FALSE(fg_model_stats(d)->recycled);
  fg_model_free(d);
}

TEST_F(LoadWindows, RecycledModelIsFreedWhateverHappens) {
  // Leaks show under ASan/LSan in CI; here the loads must succeed or fail as without it.
  fg_model *a = load(FG_LOAD_DTYPE_F32, 2);
  ASSERT_NE(nullptr, a);
  fg_load_options o;
  fg_load_options_init(&o);
  o.recycle = a;
  fg_model *m = nullptr;
  EXPECT_EQ(FG_ERR_NOT_FOUND, fg_model_create(dir->file("missing.gguf").c_str(), dev, &o, &m));
  EXPECT_EQ(nullptr, m);
  // bad options fail the same way with a model handed over
  a = load(FG_LOAD_DTYPE_F32, 1);
  ASSERT_NE(nullptr, a);
  o.recycle = a;
  o.dtype = FG_LOAD_DTYPE_DEQUANT;
  o.flags = FG_LOAD_FLAG_KEEP_QUANT;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(path->c_str(), dev, &o, &m));
  // an all-borrowed load owns no memory: the recycled model is simply freed
  a = load(FG_LOAD_DTYPE_F32, 1);
  ASSERT_NE(nullptr, a);
  fg_model *k = load(FG_LOAD_DTYPE_KEEP, 2, 0, a);
  ASSERT_NE(nullptr, k);
  EXPECT_FALSE(fg_model_stats(k)->recycled);
  EXPECT_EQ(0u, fg_model_stats(k)->bytes_owned);
  ldt::expect_model(k, *ts, FG_LOAD_DTYPE_KEEP);
  fg_model_free(k);
  // a model on another device is not taken
  fg_device *other = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &other));
  fg_load_options oo;
  fg_load_options_init(&oo);
  oo.dtype = FG_LOAD_DTYPE_F32;
  fg_model *x = ldt::load_ok(*path, other, &oo);
  ASSERT_NE(nullptr, x);
  fg_model *y = load(FG_LOAD_DTYPE_F32, 2, 0, x);
  ASSERT_NE(nullptr, y);
  EXPECT_FALSE(fg_model_stats(y)->recycled);
  ldt::expect_model(y, *ts, FG_LOAD_DTYPE_F32);
  fg_model_free(y);
  fg_device_close(other);
}

// Last in the file: it swaps in the large model, whose tensors straddle the 64 MiB window.
TEST_F(LoadWindows, TensorsAcrossWindowsGiveTheCodecsBytes) {
  use_big();
  const struct {
    fg_load_dtype p;
    int threads;
  } runs[] = {{FG_LOAD_DTYPE_F32, 1}, {FG_LOAD_DTYPE_F32, 3}, {FG_LOAD_DTYPE_BF16, 2}};
  for (const auto &r : runs) {
    SCOPED_TRACE(std::string(fg_load_dtype_name(r.p)) + " threads " + std::to_string(r.threads));
    fg_model *m = load(r.p, r.threads);
    ldt::expect_model(m, *ts, r.p);
    fg_model_free(m);
  }
}

}  // namespace
