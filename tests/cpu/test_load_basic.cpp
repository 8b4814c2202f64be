// The loader on the CPU: every source kind (GGUF, split GGUF, safetensors file, sharded
// directory, index file) loads every byte as written, by each CPU mode (borrowed, borrowed
// lazily, copied, staged through the pinned ring); conversions under each dtype policy give
// the expected bytes on both paths; lookup, order, stats, filters and progress behave.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "load_test_util.h"

namespace {

struct Kind {
  const char *name;
  bool gguf;
};

// Builds one source of the given kind in dir and returns the path to load.
std::string make_source(const fgt::TempDir &dir, const std::string &kind, std::vector<ldt::Tensor> *ts) {
  bool gguf = kind == "gguf" || kind == "split";
  *ts = ldt::model_tensors(gguf);
  if (kind == "gguf") {
    ldt::write_gguf(dir.file("m.gguf"), *ts);
    return dir.file("m.gguf");
  }
  if (kind == "split") return ldt::write_split(dir.file("m"), *ts, 3);
  if (kind == "st") {
    ldt::write_st(dir.file("m.safetensors"), *ts);
    return dir.file("m.safetensors");
  }
  // sharded directory (loaded by directory) or its index file
  EXPECT_GT(ldt::write_st_dir(dir.file("hf"), *ts, 200000), 1u);
  return kind == "dir" ? dir.file("hf") : dir.file("hf/model.safetensors.index.json");
}

const char *const kKinds[] = {"gguf", "split", "st", "dir", "index"};

struct Mode {
  const char *name;
  unsigned flags;
  uint32_t ring_count;
  size_t ring_bytes;
};

// The staged modes use rings small enough that tensors span many buffers, and a ring of one
// buffer (no overlap at all).
const Mode kModes[] = {
    {"borrow", 0, 0, 0},
    {"lazy", FG_LOAD_FLAG_LAZY, 0, 0},
    {"copy", FG_LOAD_FLAG_COPY, 0, 0},
    {"staged", FG_LOAD_FLAG_STAGED, 3, FG_LOAD_RING_MIN_BYTES},
    {"staged1", FG_LOAD_FLAG_STAGED, 1, FG_LOAD_RING_MIN_BYTES},
    {"staged_big", FG_LOAD_FLAG_STAGED, 0, 0},
};

class LoadCpu : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  void TearDown() override { fg_device_close(dev); }
  fg_device *dev = nullptr;
};

TEST_F(LoadCpu, EverySourceKindAndModeKeepsEveryByte) {
  for (const char *kind : kKinds) {
    fgt::TempDir dir;
    std::vector<ldt::Tensor> ts;
    std::string path = make_source(dir, kind, &ts);
    for (const Mode &md : kModes) {
      SCOPED_TRACE(std::string(kind) + "/" + md.name);
      fg_load_options o;
      fg_load_options_init(&o);
      o.flags = md.flags;
      o.ring_count = md.ring_count;
      o.ring_bytes = md.ring_bytes;
      fg_model *m = ldt::load_ok(path, dev, &o);
      ASSERT_NE(nullptr, m);
      ldt::expect_model(m, ts, FG_LOAD_DTYPE_KEEP);
      const fg_load_stats *st = fg_model_stats(m);
      bool borrow = !(md.flags & (FG_LOAD_FLAG_COPY | FG_LOAD_FLAG_STAGED));
      EXPECT_EQ(!borrow, st->staged || (md.flags & FG_LOAD_FLAG_COPY));
      uint64_t total = 0;
      for (const auto &t : ts) total += t.bytes.size();
      EXPECT_EQ(total, st->bytes_read);
      EXPECT_EQ(ts.size(), st->tensors);
      EXPECT_EQ(0u, st->tensors_skipped);
      EXPECT_EQ(borrow ? total : 0u, st->bytes_borrowed);
      for (size_t i = 0; i < fg_model_count(m); i++) EXPECT_EQ(borrow, fg_model_at(m, i)->borrowed);
      EXPECT_STREQ(std::string(kind) == "gguf" || std::string(kind) == "split" ? "gguf" : "safetensors",
                   fg_model_format(m));
      EXPECT_EQ(dev, fg_model_device(m));
      fg_model_free(m);
    }
  }
}

TEST_F(LoadCpu, SplitAndShardsNumberTheirFiles) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "split", &ts);
  fg_model *m = ldt::load_ok(path, dev, nullptr);
  ASSERT_NE(nullptr, m);
  EXPECT_EQ(3u, fg_model_file_count(m));
  EXPECT_EQ(nullptr, fg_model_file_path(m, 3));
  uint32_t prev_file = 0;
  uint64_t prev_off = 0;
  for (size_t i = 0; i < fg_model_count(m); i++) {
    const fg_model_tensor *t = fg_model_at(m, i);
    ASSERT_LT(t->file, 3u);
    // file order: by part, then by offset inside the part
    EXPECT_TRUE(t->file > prev_file || (t->file == prev_file && (i == 0 || t->file_offset > prev_off))) << t->name;
    prev_file = t->file;
    prev_off = t->file_offset;
    // the offset points at the tensor's bytes in that file
    std::vector<uint8_t> f = fgt::read_file(fg_model_file_path(m, t->file));
    ASSERT_LE(t->file_offset + t->nbytes, f.size());
    EXPECT_EQ(0, memcmp(f.data() + t->file_offset, t->data, t->nbytes)) << t->name;
  }
  fg_model_free(m);
}

TEST_F(LoadCpu, ConversionsMatchTheReferenceOnBothPaths) {
  const fg_load_dtype policies[] = {FG_LOAD_DTYPE_F32, FG_LOAD_DTYPE_BF16, FG_LOAD_DTYPE_F16, FG_LOAD_DTYPE_DEQUANT};
  for (const char *kind : {"gguf", "dir"}) {
    fgt::TempDir dir;
    std::vector<ldt::Tensor> ts;
    std::string path = make_source(dir, kind, &ts);
    if (std::string(kind) == "gguf") {
      // the block types are there (dequantized on the host directly, on the device when staged)
      EXPECT_TRUE(std::any_of(ts.begin(), ts.end(), [](const ldt::Tensor &t) { return t.dtype == FG_Q8_0; }));
      EXPECT_TRUE(std::any_of(ts.begin(), ts.end(), [](const ldt::Tensor &t) { return t.dtype == FG_Q4_K; }));
    }
    for (fg_load_dtype p : policies) {
      std::vector<std::vector<uint8_t>> by_mode;
      for (const Mode &md : kModes) {
        if (md.flags & FG_LOAD_FLAG_LAZY) continue;
        SCOPED_TRACE(std::string(kind) + "/" + fg_load_dtype_name(p) + "/" + md.name);
        fg_load_options o;
        fg_load_options_init(&o);
        o.dtype = p;
        o.flags = md.flags;
        o.ring_count = md.ring_count;
        o.ring_bytes = md.ring_bytes;
        fg_model *m = ldt::load_ok(path, dev, &o);
        ASSERT_NE(nullptr, m);
        ldt::expect_model(m, ts, p);
        for (size_t i = 0; i < fg_model_count(m); i++) {
          const fg_model_tensor *t = fg_model_at(m, i);
          // converted tensors are owned; kept ones are borrowed on the direct path only
          if (t->dtype != t->file_dtype) {
            EXPECT_FALSE(t->borrowed) << t->name;
          }
        }
        fg_model_free(m);
      }
    }
  }
}

TEST_F(LoadCpu, LookupByName) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "st", &ts);
  fg_model *m = ldt::load_ok(path, dev, nullptr);
  ASSERT_NE(nullptr, m);
  for (const auto &t : ts) {
    const fg_model_tensor *mt = nullptr;
    ASSERT_EQ(FG_OK, fg_model_get(m, t.name.c_str(), &mt));
    EXPECT_EQ(mt, fg_model_find(m, t.name.c_str()));
  }
  EXPECT_EQ(nullptr, fg_model_find(m, "missing"));
  EXPECT_EQ(nullptr, fg_model_find(m, "tok_embd.weigh"));
  EXPECT_EQ(nullptr, fg_model_find(m, "tok_embd.weightX"));
  EXPECT_EQ(nullptr, fg_model_find(m, nullptr));
  const fg_model_tensor *mt = nullptr;
  EXPECT_EQ(FG_ERR_NOT_FOUND, fg_model_get(m, "nope", &mt));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("nope"));
  EXPECT_EQ(nullptr, fg_model_at(m, fg_model_count(m)));
  // scalar and empty tensors
  const fg_model_tensor *sc = fg_model_find(m, "logit_scale");
  ASSERT_NE(nullptr, sc);
  EXPECT_EQ(0, sc->ndim);
  EXPECT_EQ(1u, sc->numel);
  EXPECT_EQ(4u, sc->nbytes);
  const fg_model_tensor *em = fg_model_find(m, "empty");
  ASSERT_NE(nullptr, em);
  EXPECT_EQ(0u, em->nbytes);
  EXPECT_EQ(nullptr, em->data);
  fg_model_free(m);
  fg_model_free(nullptr);
  EXPECT_EQ(0u, fg_model_count(nullptr));
}

bool only_f16(const fg_load_tensor_info *t, void *user) {
  ++*static_cast<int *>(user);
  return t->dtype == FG_F16;
}

TEST_F(LoadCpu, NamesAndPredicateFilters) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "gguf", &ts);
  for (unsigned flags : {0u, (unsigned)FG_LOAD_FLAG_STAGED}) {
    // a list of names
    const char *names[] = {"blk.0.ffn_up.weight", "token_ids", "token_ids"};
    fg_load_options o;
    fg_load_options_init(&o);
    o.flags = flags;
    o.names = names;
    o.n_names = 3;
    fg_model *m = ldt::load_ok(path, dev, &o);
    ASSERT_NE(nullptr, m);
    std::vector<ldt::Tensor> want;
    for (const auto &t : ts)
      if (t.name == "blk.0.ffn_up.weight" || t.name == "token_ids") want.push_back(t);
    ldt::expect_model(m, want, FG_LOAD_DTYPE_KEEP);
    EXPECT_EQ(ts.size() - 2, fg_model_stats(m)->tensors_skipped);
    fg_model_free(m);
    // a predicate, alone and together with the list
    int calls = 0;
    o.names = nullptr;
    o.n_names = 0;
    o.filter = only_f16;
    o.filter_user = &calls;
    m = ldt::load_ok(path, dev, &o);
    ASSERT_NE(nullptr, m);
    want.clear();
    for (const auto &t : ts)
      if (t.dtype == FG_F16) want.push_back(t);
    ldt::expect_model(m, want, FG_LOAD_DTYPE_KEEP);
    EXPECT_EQ((int)ts.size(), calls);
    fg_model_free(m);
    const char *mixed[] = {"blk.0.attn_q.weight", "token_ids"};
    o.names = mixed;
    o.n_names = 2;
    m = ldt::load_ok(path, dev, &o);
    ASSERT_NE(nullptr, m);
    EXPECT_EQ(1u, fg_model_count(m));
    EXPECT_NE(nullptr, fg_model_find(m, "blk.0.attn_q.weight"));
    fg_model_free(m);
    // a name the source lacks
    const char *bad[] = {"token_ids", "no.such.tensor"};
    o.names = bad;
    o.filter = nullptr;
    fg_model *none = nullptr;
    EXPECT_EQ(FG_ERR_NOT_FOUND, fg_model_create(path.c_str(), dev, &o, &none));
    EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("no.such.tensor")) << fg_last_error();
    EXPECT_EQ(nullptr, none);
  }
}

bool reject_all(const fg_load_tensor_info *, void *) { return false; }

TEST_F(LoadCpu, EmptySelection) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "st", &ts);
  for (unsigned flags : {0u, (unsigned)FG_LOAD_FLAG_STAGED}) {
    fg_load_options o;
    fg_load_options_init(&o);
    o.filter = reject_all;
    o.flags = flags;
    fg_model *m = ldt::load_ok(path, dev, &o);
    ASSERT_NE(nullptr, m);
    EXPECT_EQ(0u, fg_model_count(m));
    EXPECT_EQ(ts.size(), fg_model_stats(m)->tensors_skipped);
    fg_model_free(m);
  }
}

struct Progress {
  std::vector<fg_load_progress> seen;
  int cancel_at = -1;
};

bool record(const fg_load_progress *p, void *user) {
  auto *pr = static_cast<Progress *>(user);
  pr->seen.push_back(*p);
  return pr->cancel_at < 0 || (int)pr->seen.size() < pr->cancel_at;
}

TEST_F(LoadCpu, ProgressIsMonotonicAndEndsAtTheTotals) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "gguf", &ts);
  uint64_t total = 0;
  for (const auto &t : ts) total += t.bytes.size();
  for (const Mode &md : kModes) {
    SCOPED_TRACE(md.name);
    Progress pr;
    fg_load_options o;
    fg_load_options_init(&o);
    o.flags = md.flags;
    o.ring_count = md.ring_count;
    o.ring_bytes = md.ring_bytes;
    o.dtype = FG_LOAD_DTYPE_F32;
    o.progress = record;
    o.progress_user = &pr;
    fg_model *m = ldt::load_ok(path, dev, &o);
    ASSERT_NE(nullptr, m);
    ASSERT_FALSE(pr.seen.empty());
    for (size_t i = 1; i < pr.seen.size(); i++) {
      EXPECT_GE(pr.seen[i].bytes_done, pr.seen[i - 1].bytes_done);
      EXPECT_GE(pr.seen[i].tensors_done, pr.seen[i - 1].tensors_done);
      EXPECT_GE(pr.seen[i].seconds, pr.seen[i - 1].seconds);
    }
    EXPECT_EQ(total, pr.seen.back().bytes_total);
    EXPECT_EQ(total, pr.seen.back().bytes_done);
    EXPECT_EQ(ts.size(), pr.seen.back().tensors_done);
    EXPECT_EQ(ts.size(), pr.seen.back().tensors_total);
    fg_model_free(m);
  }
}

TEST_F(LoadCpu, CancelFromProgressFreesEverything) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "gguf", &ts);
  for (const Mode &md : kModes) {
    SCOPED_TRACE(md.name);
    Progress pr;
    pr.cancel_at = 3;
    fg_load_options o;
    fg_load_options_init(&o);
    o.flags = md.flags;
    o.ring_count = md.ring_count;
    o.ring_bytes = md.ring_bytes;
    o.dtype = FG_LOAD_DTYPE_F32;
    o.progress = record;
    o.progress_user = &pr;
    fg_model *m = nullptr;
    EXPECT_EQ(FG_ERR_STATE, fg_model_create(path.c_str(), dev, &o, &m));
    EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("cancelled")) << fg_last_error();
    EXPECT_EQ(nullptr, m);
    EXPECT_EQ(3u, pr.seen.size());
  }
}

TEST_F(LoadCpu, ReusableRing) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "split", &ts);
  fg_load_ring *r = nullptr;
  ASSERT_EQ(FG_OK, fg_load_ring_create(dev, 2, 100000, &r)) << fg_last_error();
  for (fg_load_dtype p : {FG_LOAD_DTYPE_KEEP, FG_LOAD_DTYPE_F32, FG_LOAD_DTYPE_BF16}) {
    fg_load_options o;
    fg_load_options_init(&o);
    o.ring = r;
    o.flags = FG_LOAD_FLAG_STAGED;
    o.dtype = p;
    fg_model *m = ldt::load_ok(path, dev, &o);
    ASSERT_NE(nullptr, m);
    ldt::expect_model(m, ts, p);
    EXPECT_EQ(2u, fg_model_stats(m)->ring_count);
    EXPECT_EQ(0u, fg_model_stats(m)->ring_bytes % 4096);  // rounded up to pages
    EXPECT_EQ(0.0, fg_model_stats(m)->ring_seconds);        // not made by the load
    fg_model_free(m);
  }
  fg_load_ring_free(r);
  fg_load_ring_free(nullptr);
}

TEST_F(LoadCpu, ArgumentsAreChecked) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "st", &ts);
  fg_model *m = nullptr;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(nullptr, dev, nullptr, &m));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(path.c_str(), nullptr, nullptr, &m));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(path.c_str(), dev, nullptr, nullptr));
  fg_load_options o;
  fg_load_options_init(&o);
  o.dtype = (fg_load_dtype)9;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(path.c_str(), dev, &o, &m));
  fg_load_options_init(&o);
  o.flags = FG_LOAD_FLAG_STAGED;
  o.ring_bytes = 4096;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(path.c_str(), dev, &o, &m));
  o.ring_bytes = 0;
  o.ring_count = 65;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(path.c_str(), dev, &o, &m));
  fg_load_ring *r = nullptr;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_load_ring_create(dev, 0, 1 << 20, &r));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_load_ring_create(dev, 2, (size_t)2 << 30, &r));
  EXPECT_EQ(nullptr, r);
  EXPECT_EQ(FG_ERR_NOT_FOUND, fg_model_create(dir.file("absent.gguf").c_str(), dev, nullptr, &m));
  std::string junk = dir.file("junk.bin");
  fgt::write_file(junk, "0123456789abcdef", 16);
  EXPECT_EQ(FG_ERR_BAD_MAGIC, fg_model_create(junk.c_str(), dev, nullptr, &m));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("junk.bin")) << fg_last_error();
  EXPECT_EQ(nullptr, m);

  fg_load_dtype p;
  EXPECT_EQ(FG_OK, fg_load_dtype_from_name("bf16", &p));
  EXPECT_EQ(FG_LOAD_DTYPE_BF16, p);
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_load_dtype_from_name("f8", &p));
  EXPECT_STREQ("dequant", fg_load_dtype_name(FG_LOAD_DTYPE_DEQUANT));
  EXPECT_EQ(FG_F32, fg_load_target_dtype(FG_LOAD_DTYPE_F32, FG_Q4_K));
  EXPECT_EQ(FG_Q4_K, fg_load_target_dtype(FG_LOAD_DTYPE_BF16, FG_Q4_K));
  EXPECT_EQ(FG_BF16, fg_load_target_dtype(FG_LOAD_DTYPE_BF16, FG_F16));
  EXPECT_EQ(FG_I32, fg_load_target_dtype(FG_LOAD_DTYPE_F16, FG_I32));
  EXPECT_EQ(FG_F64, fg_load_target_dtype(FG_LOAD_DTYPE_F32, FG_F64));
  EXPECT_EQ(FG_F16, fg_load_target_dtype(FG_LOAD_DTYPE_DEQUANT, FG_F16));
}

TEST_F(LoadCpu, BorrowedTensorsOutliveNothingButTheModel) {
  // The model keeps the mapping: the source is closed inside fg_model_create, yet the borrowed
  // pointers stay readable until fg_model_free, even after the file is unlinked.
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  std::string path = make_source(dir, "gguf", &ts);
  fg_model *m = ldt::load_ok(path, dev, nullptr);
  ASSERT_NE(nullptr, m);
  ASSERT_EQ(0, unlink(path.c_str()));
  ldt::expect_model(m, ts, FG_LOAD_DTYPE_KEEP);
  fg_model_free(m);
}

}  // namespace
