// core/: the shared name table and the atomic file writer.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/name_table.h"
#include "forgia/cancel.h"
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

// Directory entries by readdir, sorted, without "." and "..": names may hold any byte.
std::vector<std::string> listing(const std::string &dir) {
  std::vector<std::string> v;
  DIR *d = opendir(dir.c_str());
  if (!d) return v;
  for (struct dirent *e; (e = readdir(d)) != nullptr;)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) v.push_back(e->d_name);
  closedir(d);
  std::sort(v.begin(), v.end());
  return v;
}

std::string base_name(const std::string &p) { return p.substr(p.rfind('/') + 1); }

// The part of a temporary name shared by every write of one destination ("...fgtmp.").
std::string stem_of(const std::string &tmp) {
  std::string b = base_name(tmp);
  size_t k = b.rfind(".fgtmp.");
  return k == std::string::npos ? std::string() : b.substr(0, k + 7);
}

TEST(AtomicFile, TemporaryNameFitsAnyLegalName) {
  fgt::TempDir d;
  // 250 bytes (NAME_MAX is 255), a two-byte UTF-8 letter across byte 32 of the name.
  std::string name = std::string(31, 'a') + "\xc3\xa9" + std::string(217, 'b');
  ASSERT_EQ(name.size(), 250u);
  std::string p = d.file(name);
  fg_atomic_file f;
  ASSERT_EQ(fg_atomic_file_begin(&f, p.c_str()), FG_OK) << fg_last_error();
  std::string tmp = base_name(f.tmp);
  EXPECT_LE(tmp.size(), 100u) << tmp;
  EXPECT_EQ(tmp[0], '.');
  // The kept prefix stops before the letter it would split: still UTF-8.
  EXPECT_EQ(tmp.substr(0, 33), "." + std::string(31, 'a') + ".") << tmp;
  EXPECT_EQ(tmp.rfind("." + std::to_string(getpid()) + ".0"), tmp.size() - std::to_string(getpid()).size() - 3);
  ASSERT_EQ(fg_atomic_file_write(&f, "long", 4), FG_OK);
  ASSERT_EQ(fg_atomic_file_commit(&f), FG_OK) << fg_last_error();
  EXPECT_EQ(slurp(p), "long");
  EXPECT_EQ(listing(d.path), std::vector<std::string>{name});

  // One destination, one stem; another destination, another.
  fg_atomic_file a, b, c;
  ASSERT_EQ(fg_atomic_file_begin(&a, p.c_str()), FG_OK);
  ASSERT_EQ(fg_atomic_file_begin(&b, p.c_str()), FG_OK);
  ASSERT_EQ(fg_atomic_file_begin(&c, (p.substr(0, p.size() - 1) + "c").c_str()), FG_OK);
  EXPECT_NE(std::string(a.tmp), std::string(b.tmp));
  EXPECT_EQ(stem_of(a.tmp), stem_of(b.tmp));
  EXPECT_NE(stem_of(a.tmp), stem_of(c.tmp));  // same first 32 bytes, different hash
  EXPECT_EQ(stem_of(a.tmp).substr(0, 33), stem_of(c.tmp).substr(0, 33));
  fg_atomic_file_abort(&a);
  fg_atomic_file_abort(&b);
  fg_atomic_file_abort(&c);
  EXPECT_EQ(listing(d.path), std::vector<std::string>{name});
}

// A child that begins a write to path, writes, then reports its temporary file's name on
// the pipe and either dies by SIGKILL at once or waits for the parent to close `hold`.
pid_t child_writer(const std::string &path, bool wait_for_parent, int report[2], int hold[2]) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  close(report[0]);
  if (hold) close(hold[1]);
  fg_atomic_file f;
  if (fg_atomic_file_begin(&f, path.c_str()) || fg_atomic_file_write(&f, "partial", 7)) _exit(3);
  std::string t = base_name(f.tmp) + "\n";
  if (write(report[1], t.data(), t.size()) != (ssize_t)t.size()) _exit(4);
  if (!wait_for_parent) {
    kill(getpid(), SIGKILL);
    _exit(5);
  }
  char c;
  while (read(hold[0], &c, 1) < 0 && errno == EINTR) {
  }
  _exit(0);  // no cleanup: the temporary file stays behind, as after a crash
}

std::string read_line(int fd) {
  std::string s;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') s += c;
  return s;
}

TEST(AtomicFile, NextWriteRemovesWhatAKilledWriterLeft) {
  fgt::TempDir d;
  std::string p = d.file("model.gguf");
  ASSERT_EQ(write_whole(p, "old"), FG_OK);
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t pid = child_writer(p, false, report, nullptr);
  ASSERT_GT(pid, 0);
  close(report[1]);
  std::string left = read_line(report[0]);
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  ASSERT_NE(left.find(".fgtmp." + std::to_string(pid) + ".0"), std::string::npos) << left;
  EXPECT_EQ(listing(d.path), (std::vector<std::string>{left, "model.gguf"}));  // what SIGKILL leaves
  EXPECT_EQ(slurp(p), "old");

  fg_atomic_file f;
  ASSERT_EQ(fg_atomic_file_begin(&f, p.c_str()), FG_OK) << fg_last_error();
  EXPECT_EQ(listing(d.path), (std::vector<std::string>{base_name(f.tmp), "model.gguf"}));
  ASSERT_EQ(fg_atomic_file_write(&f, "new", 3), FG_OK);
  ASSERT_EQ(fg_atomic_file_commit(&f), FG_OK);
  EXPECT_EQ(listing(d.path), std::vector<std::string>{"model.gguf"});
  EXPECT_EQ(slurp(p), "new");
}

TEST(AtomicFile, LiveWritersKeepTheirTemporaryFiles) {
  fgt::TempDir d;
  std::string p = d.file("out.bin"), other = d.file("other.bin");
  // Another live process writing the same destination.
  int report[2], hold[2];
  ASSERT_EQ(pipe(report), 0);
  ASSERT_EQ(pipe(hold), 0);
  pid_t pid = child_writer(p, true, report, hold);
  ASSERT_GT(pid, 0);
  close(report[1]);
  close(hold[0]);
  std::string theirs = read_line(report[0]);
  close(report[0]);
  ASSERT_FALSE(theirs.empty());
  // This process's own write in progress (as another thread's would be).
  fg_atomic_file mine, again;
  ASSERT_EQ(fg_atomic_file_begin(&mine, p.c_str()), FG_OK);
  ASSERT_EQ(fg_atomic_file_begin(&again, p.c_str()), FG_OK);
  struct stat st;
  EXPECT_EQ(stat(d.file(theirs).c_str(), &st), 0) << theirs;
  EXPECT_EQ(stat(mine.tmp, &st), 0) << mine.tmp;
  fg_atomic_file_abort(&again);

  // A file whose pid is gone but whose lock is held (a writer in another pid namespace),
  // one whose pid is gone and lock free, and names that only look alike.
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  ASSERT_TRUE(kill(dead, 0) == -1 && errno == ESRCH);
  std::string stem = stem_of(mine.tmp);
  std::string locked = stem + std::to_string(dead) + ".7", free_ = stem + std::to_string(dead) + ".8";
  std::string odd = stem + "x.0", foreign = stem_of(mine.tmp) + "1.0.bak";
  std::string unlocked_live = stem + std::to_string(pid) + ".5";  // a live pid decides alone
  for (const std::string &n : {locked, free_, odd, foreign, unlocked_live}) fgt::write_file(d.file(n), "x", 1);
  int lfd = open(d.file(locked).c_str(), O_RDONLY);
  ASSERT_GE(lfd, 0);
  ASSERT_EQ(flock(lfd, LOCK_EX | LOCK_NB), 0);
  fg_atomic_file other_write;  // another destination in the same folder cleans only its own
  ASSERT_EQ(fg_atomic_file_begin(&other_write, other.c_str()), FG_OK);
  fg_atomic_file_abort(&other_write);
  EXPECT_EQ(stat(d.file(free_).c_str(), &st), 0);

  ASSERT_EQ(fg_atomic_file_begin(&again, p.c_str()), FG_OK);
  EXPECT_EQ(stat(d.file(theirs).c_str(), &st), 0) << "a live writer's file was removed";
  EXPECT_EQ(stat(mine.tmp, &st), 0);
  EXPECT_EQ(stat(d.file(locked).c_str(), &st), 0) << "a locked file was removed";
  EXPECT_EQ(stat(d.file(unlocked_live).c_str(), &st), 0) << "a live pid's file was removed";
  EXPECT_NE(stat(d.file(free_).c_str(), &st), 0) << "a dead writer's file was kept";
  EXPECT_EQ(stat(d.file(odd).c_str(), &st), 0);
  EXPECT_EQ(stat(d.file(foreign).c_str(), &st), 0);
  fg_atomic_file_abort(&again);
  close(lfd);

  // Once the other writer is gone, its file goes with the next write.
  close(hold[1]);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  fg_atomic_file_abort(&mine);
  ASSERT_EQ(fg_atomic_file_begin(&again, p.c_str()), FG_OK);
  EXPECT_NE(stat(d.file(theirs).c_str(), &st), 0);
  EXPECT_NE(stat(d.file(locked).c_str(), &st), 0);
  EXPECT_NE(stat(d.file(unlocked_live).c_str(), &st), 0);
  fg_atomic_file_abort(&again);
  EXPECT_EQ(listing(d.path), (std::vector<std::string>{foreign, odd}));
}

int cancel_calls, cancel_after;
bool cancel_hook(void *user) {
  EXPECT_EQ(user, &cancel_calls);
  return ++cancel_calls > cancel_after;
}

struct CancelHookScope {  // no hook left behind for the next test, whatever fails
  ~CancelHookScope() { fg_cancel_set(nullptr, nullptr); }
};

TEST(AtomicFile, CancelHookStopsAWriteAndKeepsTheOldFile) {
  fgt::TempDir d;
  std::string p = d.file("keep.bin");
  ASSERT_EQ(write_whole(p, "original"), FG_OK);
  CancelHookScope scope;
  // Refused at once: nothing created.
  cancel_calls = 0;
  cancel_after = 0;
  fg_cancel_set(cancel_hook, &cancel_calls);
  EXPECT_TRUE(fg_cancel_requested());
  fg_atomic_file f;
  EXPECT_EQ(fg_atomic_file_begin(&f, p.c_str()), FG_ERR_STATE);
  EXPECT_NE(std::string(fg_last_error()).find("cancelled"), std::string::npos) << fg_last_error();
  EXPECT_EQ(listing(d.path), std::vector<std::string>{"keep.bin"});
  // One large write is stopped between 64 MiB slices: the hook is asked at begin and
  // before each slice, and says stop before the second.
  const size_t big = 2 * FG_ATOMIC_FILE_SLICE + 1;
  uint8_t *zeros = static_cast<uint8_t *>(calloc(big, 1));
  ASSERT_NE(zeros, nullptr);
  cancel_calls = 0;
  cancel_after = 2;
  ASSERT_EQ(fg_atomic_file_begin(&f, p.c_str()), FG_OK);
  EXPECT_EQ(fg_atomic_file_write(&f, zeros, big), FG_ERR_STATE);
  EXPECT_EQ(cancel_calls, 3);
  free(zeros);
  EXPECT_FALSE(fg_atomic_file_open(&f));
  EXPECT_EQ(listing(d.path), std::vector<std::string>{"keep.bin"});
  EXPECT_EQ(slurp(p), "original");
  // At the rename: every byte out, still no new file.
  cancel_calls = 0;
  cancel_after = 2;  // begin, the write
  ASSERT_EQ(fg_atomic_file_begin(&f, p.c_str()), FG_OK);
  ASSERT_EQ(fg_atomic_file_write(&f, "replacement", 11), FG_OK);
  EXPECT_EQ(fg_atomic_file_commit(&f), FG_ERR_STATE);
  EXPECT_EQ(listing(d.path), std::vector<std::string>{"keep.bin"});
  EXPECT_EQ(slurp(p), "original");
  fg_cancel_set(nullptr, nullptr);
  EXPECT_FALSE(fg_cancel_requested());
  ASSERT_EQ(write_whole(p, "replaced"), FG_OK);
  EXPECT_EQ(slurp(p), "replaced");
}

TEST(AtomicFile, CheckCreatesNothingAndResolvesThePath) {
  fgt::TempDir d;
  ASSERT_EQ(mkdir(d.file("sub").c_str(), 0700), 0);
  fgt::write_file(d.file("sub/real.bin"), "r", 1);
  ASSERT_EQ(symlink("sub/real.bin", d.file("link.bin").c_str()), 0);
  ASSERT_EQ(symlink("sub", d.file("subl").c_str()), 0);
  char *real_dir = realpath(d.path.c_str(), nullptr);
  ASSERT_NE(real_dir, nullptr);
  std::string r = real_dir;
  free(real_dir);
  char *c = nullptr;
  ASSERT_EQ(fg_atomic_file_check(d.file("new.bin").c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(std::string(c), r + "/new.bin");
  free(c);
  ASSERT_EQ(fg_atomic_file_check(d.file("link.bin").c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(std::string(c), r + "/sub/real.bin");
  free(c);
  ASSERT_EQ(fg_atomic_file_check(d.file("subl/../subl/x").c_str(), &c), FG_OK) << fg_last_error();
  EXPECT_EQ(std::string(c), r + "/sub/x");
  free(c);
  EXPECT_EQ(fg_atomic_file_check(d.file("sub/real.bin/x").c_str(), nullptr), FG_ERR_IO);
  EXPECT_EQ(fg_atomic_file_check(d.file("none/x").c_str(), nullptr), FG_ERR_IO);
  EXPECT_NE(std::string(fg_last_error()).find(d.file("none/x")), std::string::npos) << fg_last_error();
  EXPECT_EQ(fg_atomic_file_check(d.file("newdir/").c_str(), nullptr), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_atomic_file_check(d.file("sub").c_str(), nullptr), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_atomic_file_check("/dev/null", nullptr), FG_ERR_INVALID_ARG);
  EXPECT_EQ(fg_atomic_file_check("", nullptr), FG_ERR_INVALID_ARG);
  if (geteuid() != 0) {  // root may write anywhere
    ASSERT_EQ(chmod(d.file("sub").c_str(), 0500), 0);
    EXPECT_EQ(fg_atomic_file_check(d.file("sub/x").c_str(), nullptr), FG_ERR_IO);
    ASSERT_EQ(chmod(d.file("sub").c_str(), 0700), 0);
  }
  EXPECT_EQ(listing(d.path), (std::vector<std::string>{"link.bin", "sub", "subl"}));
  EXPECT_EQ(listing(d.file("sub")), std::vector<std::string>{"real.bin"});
}

TEST(Clock, IsMonotonic) {
  double a = fg_clock_seconds(), b = fg_clock_seconds();
  EXPECT_GT(a, 0.0);
  EXPECT_GE(b, a);
}

}  // namespace
