// Faults during a load: a file truncated, rewritten in place or replaced under the load, a
// device allocation that fails, a missing shard, a conversion the build cannot do. Each
// ends the load with its status and a message naming the file and tensor, and leaves
// nothing allocated (the suite runs under ASan in CI).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "load_test_util.h"

#if defined(__SANITIZE_ADDRESS__)
// The allocation-failure test asks for far more memory than exists; ASan must say NULL
// instead of aborting, as malloc does.
extern "C" const char *__asan_default_options() { return "allocator_may_return_null=1"; }
#endif

namespace {

struct Mode {
  const char *name;
  unsigned flags;
  fg_load_dtype dtype;
  bool quant;  // q8_0 tensors (GGUF only)
};

// The ways bytes leave the file: populated for borrowing, converted or decoded from the
// mapping, copied with pread, and read into the staging ring.
const Mode kModes[] = {
    {"borrow", 0, FG_LOAD_DTYPE_KEEP, false},
    {"convert", 0, FG_LOAD_DTYPE_BF16, false},
    {"copy", FG_LOAD_FLAG_COPY, FG_LOAD_DTYPE_KEEP, false},
    {"dequant", 0, FG_LOAD_DTYPE_F32, true},
    {"staged", FG_LOAD_FLAG_STAGED, FG_LOAD_DTYPE_KEEP, false},
    {"staged_convert", FG_LOAD_FLAG_STAGED, FG_LOAD_DTYPE_F16, false},
};

// Eight tensors of 1 MiB (f32) or of 1 Mi elements (q8_0, 1.06 MiB): the fault strikes after the
// first one.
std::vector<ldt::Tensor> tensors(bool quant) {
  std::vector<ldt::Tensor> ts;
  for (int i = 0; i < 8; i++) {
    std::string name = "w" + std::to_string(i);
    ts.push_back(quant ? ldt::make_quant(name, FG_Q8_0, 1024, 1024, (uint64_t)i)
                       : ldt::make_float(name, FG_F32, {256, 1024}, (uint64_t)i));
  }
  return ts;
}

struct Sabotage {
  std::string path;
  int what = 0;  // 0 truncate, 1 rewrite in place, 2 replace by rename
  bool done = false;
};

bool sabotage(const fg_load_progress *p, void *user) {
  auto *s = static_cast<Sabotage *>(user);
  if (s->done || p->tensors_done < 1) return true;
  s->done = true;
  if (s->what == 0) {
    EXPECT_EQ(0, truncate(s->path.c_str(), 3 << 20));
  } else if (s->what == 1) {
    int fd = open(s->path.c_str(), O_WRONLY);
    EXPECT_GE(fd, 0);
    std::vector<uint8_t> junk(4096, 0x5a);
    EXPECT_EQ(4096, pwrite(fd, junk.data(), junk.size(), 6 << 20));
    close(fd);
  } else {
    std::string tmp = s->path + ".new";
    std::vector<uint8_t> bytes = fgt::read_file(s->path);
    fgt::write_file(tmp, bytes.data(), bytes.size());
    EXPECT_EQ(0, rename(tmp.c_str(), s->path.c_str()));
  }
  return true;
}

class LoadFaults : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  void TearDown() override { fg_device_close(dev); }
  fg_device *dev = nullptr;
};

void run_sabotage(fg_device *dev, int what, fg_status want, const char *says) {
  for (bool gguf : {false, true}) {
    for (const Mode &md : kModes) {
      if (md.quant && !gguf) continue;
      SCOPED_TRACE(std::string(gguf ? "gguf/" : "st/") + md.name);
      fgt::TempDir dir;
      std::string path = dir.file(gguf ? "m.gguf" : "m.safetensors");
      if (gguf) ldt::write_gguf(path, tensors(md.quant));
      else ldt::write_st(path, tensors(md.quant));
      Sabotage sb;
      sb.path = path;
      sb.what = what;
      fg_load_options o;
      fg_load_options_init(&o);
      o.flags = md.flags;
      o.dtype = md.dtype;
      o.ring_count = 2;
      o.ring_bytes = 256 << 10;
      o.progress = sabotage;
      o.progress_user = &sb;
      fg_model *m = nullptr;
      fg_status s = fg_model_create(path.c_str(), dev, &o, &m);
      EXPECT_TRUE(sb.done);
      EXPECT_EQ(want, s) << fg_status_name(s) << ": " << fg_last_error();
      std::string msg = fg_last_error();
      EXPECT_NE(std::string::npos, msg.find(path)) << msg;
      EXPECT_NE(std::string::npos, msg.find(says)) << msg;
      EXPECT_NE(std::string::npos, msg.find("tensor w")) << msg;
      EXPECT_EQ(nullptr, m);
    }
  }
}

TEST_F(LoadFaults, TruncatedDuringTheLoad) { run_sabotage(dev, 0, FG_ERR_TRUNCATED, "truncated"); }
TEST_F(LoadFaults, RewrittenDuringTheLoad) { run_sabotage(dev, 1, FG_ERR_IO, "modified"); }
TEST_F(LoadFaults, ReplacedDuringTheLoad) { run_sabotage(dev, 2, FG_ERR_IO, "replaced"); }

// A sparse safetensors file with one bf16 tensor of 2^36 elements (128 GiB, no blocks on
// disk): its f32 form needs 256 GiB, more than any test machine has.
std::string huge_file(const fgt::TempDir &dir) {
  std::string header = "{\"big\":{\"dtype\":\"BF16\",\"shape\":[68719476736],\"data_offsets\":[0,137438953472]}}";
  while ((header.size() + 8) % 8) header += ' ';
  std::string path = dir.file("huge.safetensors");
  FILE *f = fopen(path.c_str(), "wb");
  uint64_t n = header.size();
  fwrite(&n, 8, 1, f);
  fwrite(header.data(), 1, header.size(), f);
  fclose(f);
  if (truncate(path.c_str(), (off_t)(8 + n + (1ull << 37))) != 0) return "";
  return path;
}

bool overcommit_always() {
  std::ifstream f("/proc/sys/vm/overcommit_memory");
  int v = 0;
  f >> v;
  return v == 1;
}

TEST_F(LoadFaults, DeviceAllocationFailure) {
  if (overcommit_always()) GTEST_SKIP() << "vm.overcommit_memory=1: a 256 GiB allocation would succeed";
  fgt::TempDir dir;
  std::string path = huge_file(dir);
  if (path.empty()) GTEST_SKIP() << "this file system cannot hold a sparse 128 GiB file";
  for (unsigned flags : {0u, (unsigned)FG_LOAD_FLAG_STAGED}) {
    fg_load_options o;
    fg_load_options_init(&o);
    o.dtype = FG_LOAD_DTYPE_F32;
    o.flags = flags;
    fg_model *m = nullptr;
    EXPECT_EQ(FG_ERR_DEVICE_NOMEM, fg_model_create(path.c_str(), dev, &o, &m)) << fg_last_error();
    std::string msg = fg_last_error();
    EXPECT_NE(std::string::npos, msg.find("huge.safetensors")) << msg;
    EXPECT_NE(std::string::npos, msg.find("274877906944")) << msg;  // the bytes asked for
    EXPECT_EQ(nullptr, m);
  }
}

TEST_F(LoadFaults, MissingShard) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts = ldt::model_tensors(false);
  size_t n = ldt::write_st_dir(dir.file("hf"), ts, 200000);
  ASSERT_GT(n, 1u);
  char shard[64];
  snprintf(shard, sizeof shard, "hf/model-00002-of-%05zu.safetensors", n);
  ASSERT_EQ(0, unlink(dir.file(shard).c_str()));
  fg_model *m = nullptr;
  fg_status s = fg_model_create(dir.file("hf").c_str(), dev, nullptr, &m);
  EXPECT_NE(FG_OK, s);
  EXPECT_EQ(nullptr, m);
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("model-00002")) << fg_last_error();
}

TEST_F(LoadFaults, ConversionTheBuildCannotDo) {
  // Find a block type nothing in this build decodes; with every type decodable there is
  // nothing to refuse.
  fg_dtype missing = FG_F32;
  for (int v = 0; v < FG_GGML_TYPE_COUNT; v++) {
    if (!fg_dtype_valid(v) || !fg_dtype_info((fg_dtype)v)->is_quant) continue;
    if (!fg_quant_can_decode((fg_dtype)v) && fg_convert(dev, nullptr, FG_F32, nullptr, (fg_dtype)v, 0, nullptr) != FG_OK) {
      missing = (fg_dtype)v;
      break;
    }
  }
  if (missing == FG_F32) GTEST_SKIP() << "every block type decodes in this build";
  const fg_dtype_traits *tr = fg_dtype_info(missing);
  fgt::TempDir dir;
  ldt::Tensor t{"q", missing, {2, tr->block_elems}, std::vector<uint8_t>(2 * tr->block_bytes, 0)};
  ldt::write_gguf(dir.file("q.gguf"), {t});
  fg_load_options o;
  fg_load_options_init(&o);
  o.dtype = FG_LOAD_DTYPE_F32;
  fg_model *m = nullptr;
  EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_model_create(dir.file("q.gguf").c_str(), dev, &o, &m));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("tensor q")) << fg_last_error();
}

}  // namespace
