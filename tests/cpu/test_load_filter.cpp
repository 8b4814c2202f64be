// Tensors the filter rejects are never read: on a file evicted from the page cache first,
// a filtered load (each CPU mode, and the staged path) leaves every page that lies wholly
// inside a rejected tensor non-resident (mincore), while the selected tensors' pages are
// resident after a load that reads them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "load_test_util.h"

namespace {

const size_t kPage = (size_t)sysconf(_SC_PAGESIZE);

// Drops the file's pages from the page cache; false when this file system keeps them.
bool evict(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return true;
}

// Residency of every page of the file.
std::vector<unsigned char> resident(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY);
  struct stat st;
  fstat(fd, &st);
  size_t len = (size_t)st.st_size;
  void *p = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  std::vector<unsigned char> v((len + kPage - 1) / kPage);
  if (p == MAP_FAILED || mincore(p, len, v.data()) != 0) v.clear();
  if (p != MAP_FAILED) munmap(p, len);
  for (auto &b : v) b &= 1;
  return v;
}

// Pages lying wholly inside [off, off+n).
void inner_pages(uint64_t off, uint64_t n, size_t *first, size_t *last) {
  *first = (size_t)((off + kPage - 1) / kPage);
  *last = (size_t)((off + n) / kPage);  // exclusive
}

struct Case {
  const char *name;
  unsigned flags;
  fg_load_dtype dtype;
  bool reads_selected;
};

const Case kCases[] = {
    {"borrow", 0, FG_LOAD_DTYPE_KEEP, true},      {"lazy", FG_LOAD_FLAG_LAZY, FG_LOAD_DTYPE_KEEP, false},
    {"copy", FG_LOAD_FLAG_COPY, FG_LOAD_DTYPE_KEEP, true}, {"convert", 0, FG_LOAD_DTYPE_BF16, true},
    {"staged", FG_LOAD_FLAG_STAGED, FG_LOAD_DTYPE_KEEP, true}, {"staged_convert", FG_LOAD_FLAG_STAGED, FG_LOAD_DTYPE_F16, true},
};

void check_filtered(const std::string &path, bool gguf) {
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  // The first tensor is large and selected: the parser's header read may pull in the
  // kernel's read-around window (read_ahead_kb) after the header, which is not the loader's
  // doing. Rejected tensors come after it, interleaved with selected ones.
  std::vector<const char *> names = {"a_first", "t1", "t4", "t6"};
  for (const Case &c : kCases) {
    SCOPED_TRACE(std::string(gguf ? "gguf/" : "st/") + c.name);
    ASSERT_TRUE(evict(path));
    std::vector<unsigned char> before = resident(path);
    ASSERT_FALSE(before.empty());
    size_t still = 0;
    for (unsigned char b : before) still += b;
    if (still > 0) {
      fg_device_close(dev);
      GTEST_SKIP() << "this file system keeps " << still << " pages of " << path << " after POSIX_FADV_DONTNEED";
    }
    fg_load_options o;
    fg_load_options_init(&o);
    o.names = names.data();
    o.n_names = names.size();
    o.flags = c.flags;
    o.dtype = c.dtype;
    o.ring_count = 2;
    o.ring_bytes = 256 << 10;
    fg_model *m = ldt::load_ok(path, dev, &o);
    ASSERT_NE(nullptr, m);
    std::vector<unsigned char> after = resident(path);
    // every tensor of the file, from a second (unfiltered, lazy) view of its directory
    fg_load_options all;
    fg_load_options_init(&all);
    all.flags = FG_LOAD_FLAG_LAZY;
    fg_model *dir = ldt::load_ok(path, dev, &all);
    ASSERT_NE(nullptr, dir);
    size_t checked = 0;
    for (size_t i = 0; i < fg_model_count(dir); i++) {
      const fg_model_tensor *t = fg_model_at(dir, i);
      bool selected = fg_model_find(m, t->name) != nullptr;
      size_t first, last;
      inner_pages(t->file_offset, t->nbytes, &first, &last);
      size_t res = 0;
      for (size_t pg = first; pg < last; pg++) res += after[pg];
      if (!selected) {
        EXPECT_EQ(0u, res) << t->name << ": " << res << " of " << last - first << " pages were read";
        checked += last - first;
      } else if (c.reads_selected) {
        EXPECT_EQ(last - first, res) << t->name << ": selected but only " << res << " pages resident";
      }
    }
    EXPECT_GT(checked, 1000u);
    fg_model_free(dir);
    fg_model_free(m);
  }
  fg_device_close(dev);
}

std::vector<ldt::Tensor> tensors() {
  std::vector<ldt::Tensor> ts;
  ts.push_back(ldt::make_float("a_first", FG_F32, {4096, 1024}, 1));  // 16 MiB
  for (int i = 0; i < 8; i++)  // a little over 1 MiB each, so offsets fall mid-page
    ts.push_back(ldt::make_float("t" + std::to_string(i), FG_F32, {257, 1024 + (uint64_t)i}, 10 + (uint64_t)i));
  return ts;
}

TEST(LoadFilter, RejectedTensorsStayUnreadSafetensors) {
  fgt::TempDir dir;
  ldt::write_st(dir.file("f.safetensors"), tensors());
  check_filtered(dir.file("f.safetensors"), false);
}

TEST(LoadFilter, RejectedTensorsStayUnreadGguf) {
  fgt::TempDir dir;
  ldt::write_gguf(dir.file("f.gguf"), tensors());
  check_filtered(dir.file("f.gguf"), true);
}

}  // namespace
