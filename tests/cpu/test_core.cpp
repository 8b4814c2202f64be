// core/: the shared name table and the atomic file writer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/name_table.h"
#include "forgia/status.h"
#include "testutil.h"

namespace {

struct Names {
  std::vector<std::string> v;
};

fg_name name_at(const void *ctx, uint64_t i) {
  const Names *n = static_cast<const Names *>(ctx);
  return fg_name{n->v[i].data(), n->v[i].size()};
}

TEST(NameTable, FindsEveryNameAndReportsDuplicates) {
  Names n;
  fg_name_table t = {};
  ASSERT_EQ(fg_name_table_reset(&t, 4), FG_OK);  // grows past its first size
  for (int i = 0; i < 5000; i++) {
    n.v.push_back("blk." + std::to_string(i) + ".attn_q.weight");
    int64_t dup = 7;
    ASSERT_EQ(fg_name_table_insert(&t, n.v.back().data(), n.v.back().size(), (uint64_t)i, name_at, &n, &dup), FG_OK);
    ASSERT_EQ(dup, -1);
  }
  for (int i = 0; i < 5000; i++)
    ASSERT_EQ(fg_name_table_find(&t, n.v[i].data(), n.v[i].size(), name_at, &n), i);
  EXPECT_EQ(fg_name_table_find(&t, "blk.5000.attn_q.weight", 22, name_at, &n), -1);
  // A prefix of a stored name is a different name.
  EXPECT_EQ(fg_name_table_find(&t, "blk.1", 5, name_at, &n), -1);
  // The same bytes again: nothing stored, the first index reported.
  std::string again = "blk.42.attn_q.weight";
  n.v.push_back(again);
  int64_t dup = -1;
  ASSERT_EQ(fg_name_table_insert(&t, again.data(), again.size(), 5000, name_at, &n, &dup), FG_OK);
  EXPECT_EQ(dup, 42);
  EXPECT_EQ(t.used, 5000u);
  fg_name_table_free(&t);
  EXPECT_EQ(t.cap, 0u);
  EXPECT_EQ(fg_name_table_find(&t, "x", 1, name_at, &n), -1);  // a freed table is empty, not broken
}

TEST(NameTable, EmptyNamesAndEmbeddedNulsAreNames) {
  Names n;
  n.v = {std::string(), std::string("a\0b", 3), std::string("a")};
  fg_name_table t = {};
  for (size_t i = 0; i < n.v.size(); i++) {
    int64_t dup;
    ASSERT_EQ(fg_name_table_insert(&t, n.v[i].data(), n.v[i].size(), i, name_at, &n, &dup), FG_OK);
    EXPECT_EQ(dup, -1) << i;
  }
  EXPECT_EQ(fg_name_table_find(&t, "", 0, name_at, &n), 0);
  EXPECT_EQ(fg_name_table_find(&t, "a\0b", 3, name_at, &n), 1);
  EXPECT_EQ(fg_name_table_find(&t, "a", 1, name_at, &n), 2);
  fg_name_table_free(&t);
}

TEST(NameTable, HashIsKeyedButStableWithinTheProcess) {
  // Equal bytes hash equally; the low bits that pick a slot are not the FNV ones that
  // crafted inputs could target (FNV-1a of "" is the offset basis).
  EXPECT_EQ(fg_name_hash("tensor", 6), fg_name_hash("tensor", 6));
  EXPECT_NE(fg_name_hash("tensor", 6), fg_name_hash("tensos", 6));
  EXPECT_NE(fg_name_hash("", 0), 0xcbf29ce484222325ull);
}

std::vector<std::string> entries(const std::string &dir) {
  std::string out;
  fgt::run("ls -A '" + dir + "'", &out);
  std::vector<std::string> v;
  size_t a = 0;
  for (size_t b; (b = out.find('\n', a)) != std::string::npos; a = b + 1) v.push_back(out.substr(a, b - a));
  return v;
}

fg_status write_whole(const std::string &path, const std::string &bytes) {
  fg_atomic_file f;
  fg_status s = fg_atomic_file_begin(&f, path.c_str());
  if (s) return s;
  if ((s = fg_atomic_file_write(&f, bytes.data(), bytes.size()))) return s;
  return fg_atomic_file_commit(&f);
}

std::string slurp(const std::string &path) {
  auto v = fgt::read_file(path);
  return std::string(v.begin(), v.end());
}

TEST(AtomicFile, CreatesAndReplacesKeepingTheMode) {
  fgt::TempDir d;
  std::string p = d.file("out.bin");
  ASSERT_EQ(write_whole(p, "first"), FG_OK) << fg_last_error();
  EXPECT_EQ(slurp(p), "first");
  ASSERT_EQ(chmod(p.c_str(), 0600), 0);
  ASSERT_EQ(write_whole(p, "second, longer"), FG_OK) << fg_last_error();
  EXPECT_EQ(slurp(p), "second, longer");
  struct stat st;
  ASSERT_EQ(stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);  // a private file stays private
  EXPECT_EQ(entries(d.path), std::vector<std::string>{"out.bin"});  // no temporary left
}

TEST(AtomicFile, WritesThroughASymlinkAndKeepsIt) {
  fgt::TempDir d;
  std::string target = d.file("real.bin"), link = d.file("link.bin");
  ASSERT_EQ(write_whole(target, "old"), FG_OK);
  ASSERT_EQ(symlink("real.bin", link.c_str()), 0);
  ASSERT_EQ(write_whole(link, "new"), FG_OK) << fg_last_error();
  struct stat st;
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(target), "new");
}

TEST(AtomicFile, RefusesToReplaceWhatIsNotARegularFile) {
  fgt::TempDir d;
  std::string fifo = d.file("pipe"), sub = d.file("sub"), dangling = d.file("dangling");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(mkdir(sub.c_str(), 0700), 0);
  ASSERT_EQ(symlink("nowhere", dangling.c_str()), 0);
  for (const std::string &p : {std::string("/dev/null"), fifo, sub, dangling}) {
    fg_atomic_file f;
    EXPECT_EQ(fg_atomic_file_begin(&f, p.c_str()), FG_ERR_INVALID_ARG) << p;
    EXPECT_NE(std::string(fg_last_error()).find(p), std::string::npos) << fg_last_error();
    EXPECT_FALSE(fg_atomic_file_open(&f));
  }
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(entries(d.path).size(), 3u);  // pipe, sub, dangling: nothing created
}

TEST(AtomicFile, AbortLeavesTheOldFileAndNoTemporary) {
  fgt::TempDir d;
  std::string p = d.file("keep.bin");
  ASSERT_EQ(write_whole(p, "original"), FG_OK);
  fg_atomic_file f;
  ASSERT_EQ(fg_atomic_file_begin(&f, p.c_str()), FG_OK);
  ASSERT_EQ(fg_atomic_file_write(&f, "partial", 7), FG_OK);
  ASSERT_EQ(fg_atomic_file_write_zeros(&f, 100000), FG_OK);
  EXPECT_EQ(entries(d.path).size(), 2u);  // the temporary sits beside the target
  fg_atomic_file_abort(&f);
  fg_atomic_file_abort(&f);  // idempotent
  EXPECT_EQ(slurp(p), "original");
  EXPECT_EQ(entries(d.path), std::vector<std::string>{"keep.bin"});
  EXPECT_EQ(fg_atomic_file_write(&f, "x", 1), FG_ERR_STATE);
  EXPECT_EQ(fg_atomic_file_commit(&f), FG_ERR_STATE);
}

TEST(AtomicFile, MissingDirectoryIsAnIoErrorNamingThePath) {
  fgt::TempDir d;
  std::string p = d.file("no/such/dir/out.bin");
  fg_atomic_file f;
  EXPECT_EQ(fg_atomic_file_begin(&f, p.c_str()), FG_ERR_IO);
  EXPECT_NE(std::string(fg_last_error()).find(p), std::string::npos) << fg_last_error();
}

TEST(Clock, IsMonotonic) {
  double a = fg_clock_seconds(), b = fg_clock_seconds();
  EXPECT_GT(a, 0.0);
  EXPECT_GE(b, a);
}

}  // namespace
