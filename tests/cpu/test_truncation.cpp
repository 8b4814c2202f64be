// Inputs that change underneath: a file truncated (or rewritten) after it was mapped and
// before, or while, its bytes are read. Every reader (the guarded reads of forgia/mapping.h,
// the GGUF and safetensors parsers, the loader, export, `forgia cat`) ends with a status
// and a message naming the file (and the tensor), leaves nothing behind, and the process
// lives on; the same call works again once the file is restored. A program's own
// SIGBUS/SIGSEGV handlers keep getting the faults that are not forgia's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "export_fixtures.h"
#include "forgia/forgia.h"
#include "load_test_util.h"
#include "testutil.h"

namespace {

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> b(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    b[i] = (uint8_t)(x >> 24);
  }
  return b;
}

void cut(const std::string &path, off_t size) { ASSERT_EQ(0, truncate(path.c_str(), size)) << path; }

bool has(const std::string &msg, const std::string &what) { return msg.find(what) != std::string::npos; }

// ---- the guarded reads -------------------------------------------------------------------

class Guarded : public ::testing::Test {
 protected:
  void SetUp() override {
    path = dir.file("bytes.bin");
    bytes = pattern(64 << 10, 1);
    fgt::write_file(path, bytes.data(), bytes.size());
    ASSERT_EQ(FG_OK, fg_mapping_open(path.c_str(), FG_MAP_MMAP, &m)) << fg_last_error();
  }
  void TearDown() override { fg_mapping_release(m); }
  fgt::TempDir dir;
  std::string path;
  std::vector<uint8_t> bytes;
  fg_mapping *m = nullptr;
};

TEST_F(Guarded, CopyOfATruncatedFileIsAStatus) {
  std::vector<uint8_t> got(bytes.size());
  ASSERT_EQ(FG_OK, fg_mapping_copy(m, got.data(), 0, got.size())) << fg_last_error();
  EXPECT_EQ(bytes, got);
  EXPECT_EQ(FG_OK, fg_mapping_check(m)) << fg_last_error();

  cut(path, 10000);
  std::fill(got.begin(), got.end(), 0);
  // The pages still backed read as before; the first one past the end is a status.
  ASSERT_EQ(FG_OK, fg_mapping_copy(m, got.data(), 4096, 4096)) << fg_last_error();
  EXPECT_EQ(0, memcmp(got.data(), bytes.data() + 4096, 4096));
  fg_status s = fg_mapping_copy(m, got.data(), 0, bytes.size());
  EXPECT_EQ(FG_ERR_TRUNCATED, s) << fg_status_name(s);
  std::string msg = fg_last_error();
  EXPECT_TRUE(has(msg, path)) << msg;
  EXPECT_TRUE(has(msg, "10000 bytes now")) << msg;
  EXPECT_TRUE(has(msg, "65536 when it was opened")) << msg;
  EXPECT_EQ(FG_ERR_TRUNCATED, fg_mapping_check(m));
  EXPECT_TRUE(has(fg_last_error(), "truncated since it was opened")) << fg_last_error();

  // Restored in place: the mapping sees the file again; the check says it was modified.
  fgt::write_file(path, bytes.data(), bytes.size());
  std::fill(got.begin(), got.end(), 0);
  ASSERT_EQ(FG_OK, fg_mapping_copy(m, got.data(), 0, got.size())) << fg_last_error();
  EXPECT_EQ(bytes, got);
  fg_status c = fg_mapping_check(m);
  EXPECT_TRUE(c == FG_OK || c == FG_ERR_IO) << fg_status_name(c);  // same mtime tick is possible
}

TEST_F(Guarded, RangesOutsideTheMappingAreRefused) {
  uint8_t b[16];
  EXPECT_EQ(FG_ERR_RANGE, fg_mapping_copy(m, b, bytes.size() - 8, 16));
  EXPECT_EQ(FG_ERR_RANGE, fg_mapping_copy(m, b, UINT64_MAX, 2));
  EXPECT_EQ(FG_OK, fg_mapping_copy(m, b, bytes.size(), 0));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_mapping_copy(nullptr, b, 0, 1));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_mapping_access(m, nullptr, nullptr));
}

struct Reader {
  const fg_mapping *m;
  uint64_t at;
  int inner;       // 0: read in place; 1: a nested guarded copy that faults, then go on
  fg_status inner_status = FG_OK;
  uint32_t sum = 0;
  bool finished = false;
};

fg_status read_in_place(void *user) {
  auto *r = static_cast<Reader *>(user);
  if (r->inner) {
    uint8_t b[4096];
    r->inner_status = fg_mapping_copy(r->m, b, r->at, sizeof b);
  } else {
    r->sum += fg_mapping_data(r->m)[r->at];
  }
  r->finished = true;
  return FG_ERR_STATE;  // a status of fn's own passes through
}

TEST_F(Guarded, AccessEndsTheFunctionAtTheFaultAndNests) {
  Reader ok{m, 100, 0};
  EXPECT_EQ(FG_ERR_STATE, fg_mapping_access(m, read_in_place, &ok));
  EXPECT_TRUE(ok.finished);
  EXPECT_EQ(bytes[100], ok.sum);

  cut(path, 8192);
  Reader bad{m, 40000, 0};
  fg_status s = fg_mapping_access(m, read_in_place, &bad);
  EXPECT_EQ(FG_ERR_TRUNCATED, s) << fg_status_name(s);
  EXPECT_FALSE(bad.finished);
  EXPECT_TRUE(has(fg_last_error(), "offset 40000 is past the end")) << fg_last_error();

  // The innermost guard takes the fault; the outer function goes on.
  Reader nested{m, 40000, 1};
  EXPECT_EQ(FG_ERR_STATE, fg_mapping_access(m, read_in_place, &nested));
  EXPECT_TRUE(nested.finished);
  EXPECT_EQ(FG_ERR_TRUNCATED, nested.inner_status);

  // A guard without a mapping catches SIGBUS anywhere (bytes of a file mapped elsewhere).
  Reader none{m, 40000, 0};
  EXPECT_EQ(FG_ERR_IO, fg_mapping_access(nullptr, read_in_place, &none));
  EXPECT_FALSE(none.finished);
}

TEST_F(Guarded, EveryThreadGuardsItsOwnReads) {
  cut(path, 12288);
  std::atomic<int> truncated{0}, ok{0};
  std::vector<std::thread> th;
  for (int t = 0; t < 4; t++)
    th.emplace_back([&, t] {
      for (int i = 0; i < 50; i++) {
        std::vector<uint8_t> b(8192);
        uint64_t at = (i + t) % 2 ? 0 : 32768;
        fg_status s = fg_mapping_copy(m, b.data(), at, b.size());
        if (at == 0 && s == FG_OK && memcmp(b.data(), bytes.data(), b.size()) == 0) ok++;
        if (at != 0 && s == FG_ERR_TRUNCATED) truncated++;
      }
    });
  for (auto &x : th) x.join();
  EXPECT_EQ(100, ok.load());
  EXPECT_EQ(100, truncated.load());
}

// Owned bytes (FG_MAP_READ) are a copy: the file changing does not reach them.
TEST_F(Guarded, ReadMappingsAreUnaffected) {
  fg_mapping *r = nullptr;
  ASSERT_EQ(FG_OK, fg_mapping_open(path.c_str(), FG_MAP_READ, &r));
  cut(path, 100);
  std::vector<uint8_t> got(bytes.size());
  EXPECT_EQ(FG_OK, fg_mapping_copy(r, got.data(), 0, got.size()));
  EXPECT_EQ(bytes, got);
  EXPECT_EQ(FG_OK, fg_mapping_check(r));
  fg_mapping_release(r);
}

// ---- the program's own handlers --------------------------------------------------------

sigjmp_buf g_user_env;
volatile sig_atomic_t g_user_sig = 0;
void *volatile g_user_addr = nullptr;

void user_handler(int sig, siginfo_t *si, void *) {
  g_user_sig = sig;
  g_user_addr = si->si_addr;
  siglongjmp(g_user_env, 1);
}

// A private mapping of a file of our own, truncated: reading its second page faults.
uint8_t *own_faulting_page(const std::string &p) {
  std::vector<uint8_t> b = pattern(16384, 9);
  fgt::write_file(p, b.data(), b.size());
  int fd = open(p.c_str(), O_RDONLY);
  if (fd < 0) return nullptr;
  void *q = mmap(nullptr, 16384, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (q == MAP_FAILED || truncate(p.c_str(), 100) != 0) return nullptr;
  return static_cast<uint8_t *>(q) + 8192;
}

// A child that is meant to die: its report (ASan's, when present) is not the test's output.
void quiet() {
  int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) dup2(fd, 2);
}

// Runs body in a child process (the signal dispositions it sets stay there) and returns
// its wait status.
template <class F>
int in_child(F body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

// Runs this test binary again with only `test` selected and FG_TRUNCATION_CHILD set: a
// process in which forgia has not installed its handler yet. Returns its wait status.
int run_fresh(const char *test) {
  std::string filter = std::string("--gtest_filter=") + test;
  fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("FG_TRUNCATION_CHILD", "1", 1);
    char exe[] = "/proc/self/exe";
    char *args[] = {exe, const_cast<char *>(filter.c_str()), nullptr};
    execv(exe, args);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return st;
}

// The program's handler, installed before forgia's, still gets the faults of its own
// mappings; forgia's guard still works for forgia's reads.
TEST_F(Guarded, AProgramsEarlierHandlerGetsItsOwnFaults) {
  if (!getenv("FG_TRUNCATION_CHILD")) {
    int st = run_fresh("Guarded.AProgramsEarlierHandlerGetsItsOwnFaults");
    ASSERT_TRUE(WIFEXITED(st)) << "child killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_EQ(0, WEXITSTATUS(st));
    return;
  }
  std::string own = dir.file("own.bin");
  int st = in_child([&]() -> int {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = user_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, nullptr) != 0 || sigaction(SIGSEGV, &sa, nullptr) != 0) return 10;
    // forgia's handler goes in now, at the first guarded read of this fresh process.
    cut(path, 4096);
    uint8_t b[8192];
    if (fg_mapping_copy(m, b, 0, sizeof b) != FG_ERR_TRUNCATED) return 11;
    uint8_t *p = own_faulting_page(own);
    if (!p) return 12;
    if (sigsetjmp(g_user_env, 1) == 0) {
      volatile uint8_t x = *p;  // faults: SIGBUS, outside any forgia guard
      (void)x;
      return 13;
    }
    if (g_user_sig != SIGBUS || g_user_addr != p) return 14;
    g_user_sig = 0;
    void *none = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (none == MAP_FAILED) return 18;
    if (sigsetjmp(g_user_env, 1) == 0) {
      volatile uint8_t x = *(volatile uint8_t *)none;  // SIGSEGV, not forgia's either
      (void)x;
      return 15;
    }
    if (g_user_sig != SIGSEGV || g_user_addr != none) return 16;
    // and forgia's guard is still in force afterwards
    if (fg_mapping_copy(m, b, 0, sizeof b) != FG_ERR_TRUNCATED) return 17;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(st)) << "child killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  EXPECT_EQ(0, WEXITSTATUS(st));
}

// A handler installed after forgia's that passes on what it does not handle (as a chaining
// handler does) keeps forgia's guarded reads working.
struct sigaction g_old_bus;
void chaining_handler(int sig, siginfo_t *si, void *uc) {
  g_user_sig = sig;
  if (g_old_bus.sa_flags & SA_SIGINFO) g_old_bus.sa_sigaction(sig, si, uc);
  else if (g_old_bus.sa_handler != SIG_DFL && g_old_bus.sa_handler != SIG_IGN) g_old_bus.sa_handler(sig);
  else signal(sig, SIG_DFL);
}

TEST_F(Guarded, ALaterChainingHandlerKeepsGuardsWorking) {
  int st = in_child([&]() -> int {
    uint8_t b[8192];
    if (fg_mapping_copy(m, b, 0, sizeof b) != FG_OK) return 10;  // forgia's handler is in
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = chaining_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &g_old_bus) != 0) return 11;
    cut(path, 4096);
    if (fg_mapping_copy(m, b, 0, sizeof b) != FG_ERR_TRUNCATED) return 12;
    if (g_user_sig != SIGBUS) return 13;  // the program's handler saw it first
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(st)) << "child killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  EXPECT_EQ(0, WEXITSTATUS(st));
}

// Without a handler of the program's own, a fault outside forgia's guards still ends the
// process as it would have without forgia (ASan, when present, reports it first).
TEST_F(Guarded, FaultsOutsideGuardsStillKill) {
  std::string own = dir.file("own.bin");
  int st = in_child([&]() -> int {
    quiet();
    uint8_t b[16];
    if (fg_mapping_copy(m, b, 0, sizeof b) != FG_OK) return 10;
    uint8_t *p = own_faulting_page(own);
    if (!p) return 12;
    volatile uint8_t x = *p;
    (void)x;
    return 0;
  });
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_TRUE(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) < 10)) << st;
#else
  ASSERT_TRUE(WIFSIGNALED(st)) << "exit status " << WEXITSTATUS(st);
  EXPECT_EQ(SIGBUS, WTERMSIG(st));
#endif
  // A SIGBUS sent with kill(2) is not a fault: it keeps its default action too.
  st = in_child([&]() -> int {
    quiet();
    uint8_t b[16];
    if (fg_mapping_copy(m, b, 0, sizeof b) != FG_OK) return 10;
    kill(getpid(), SIGBUS);
    return 0;
  });
#if !defined(__SANITIZE_ADDRESS__)
  ASSERT_TRUE(WIFSIGNALED(st)) << "exit status " << WEXITSTATUS(st);
  EXPECT_EQ(SIGBUS, WTERMSIG(st));
#else
  EXPECT_FALSE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
#endif
}

// ---- parsers -----------------------------------------------------------------------------

// Header bigger than a few pages: a long string array in GGUF, many tensors in safetensors.
std::vector<ldt::Tensor> many_small(int n) {
  std::vector<ldt::Tensor> ts;
  for (int i = 0; i < n; i++)
    ts.push_back(ldt::make_float("blk." + std::to_string(i) + ".a_fairly_long_tensor_name.weight", FG_F32, {4}, i));
  return ts;
}

TEST(TruncatedParse, GgufHeaderTruncatedAfterMapping) {
  fgt::TempDir dir;
  std::string path = dir.file("m.gguf");
  ldt::write_gguf(path, many_small(600));
  std::vector<uint8_t> orig = fgt::read_file(path);
  ASSERT_GT(orig.size(), 40000u);
  fg_mapping *m = nullptr;
  ASSERT_EQ(FG_OK, fg_mapping_open(path.c_str(), FG_MAP_MMAP, &m));
  cut(path, 8192);  // in the middle of the tensor directory
  fg_gguf_file *g = nullptr;
  fg_status s = fg_gguf_open_mapping(m, &g);
  EXPECT_EQ(FG_ERR_TRUNCATED, s) << fg_status_name(s) << ": " << fg_last_error();
  EXPECT_EQ(nullptr, g);
  EXPECT_TRUE(has(fg_last_error(), path)) << fg_last_error();
  EXPECT_TRUE(has(fg_last_error(), "truncated while being read")) << fg_last_error();
  // restored: the same mapping parses
  fgt::write_file(path, orig.data(), orig.size());
  ASSERT_EQ(FG_OK, fg_gguf_open_mapping(m, &g)) << fg_last_error();
  EXPECT_EQ(600u, fg_gguf_tensor_count(g));
  fg_gguf_close(g);
  fg_mapping_release(m);
}

TEST(TruncatedParse, SafetensorsHeaderTruncatedAfterMapping) {
  fgt::TempDir dir;
  std::string path = dir.file("m.safetensors");
  ldt::write_st(path, many_small(600));
  std::vector<uint8_t> orig = fgt::read_file(path);
  for (off_t at : {(off_t)4, (off_t)5000}) {  // in the length prefix; in the JSON
    SCOPED_TRACE(at);
    fg_mapping *m = nullptr;
    ASSERT_EQ(FG_OK, fg_mapping_open(path.c_str(), FG_MAP_MMAP, &m));
    cut(path, at);
    fg_st_file *f = nullptr;
    fg_status s = fg_st_open_mapping(m, &f);
    EXPECT_EQ(FG_ERR_TRUNCATED, s) << fg_status_name(s) << ": " << fg_last_error();
    EXPECT_EQ(nullptr, f);
    EXPECT_TRUE(has(fg_last_error(), path)) << fg_last_error();
    fgt::write_file(path, orig.data(), orig.size());
    ASSERT_EQ(FG_OK, fg_st_open_mapping(m, &f)) << fg_last_error();
    EXPECT_EQ(600u, fg_st_count(f));
    fg_st_close(f);
    fg_mapping_release(m);
  }
}

// A slice copied out of a file truncated since it was opened (the tensor record does not
// know its file: the message names the tensor).
TEST(TruncatedParse, SliceOfATruncatedFile) {
  fgt::TempDir dir;
  std::string path = dir.file("m.safetensors");
  ldt::Tensor big = ldt::make_float("w", FG_F32, {64, 1024}, 3);
  ldt::write_st(path, {big});
  std::vector<uint8_t> orig = fgt::read_file(path);
  fg_st_file *f = nullptr;
  ASSERT_EQ(FG_OK, fg_st_open(path.c_str(), FG_MAP_MMAP, &f)) << fg_last_error();
  const fg_st_tensor *t = nullptr;
  ASSERT_EQ(FG_OK, fg_st_get(f, "w", &t));
  std::vector<uint8_t> out(big.bytes.size());
  fg_st_range rows[2] = {{40, 60}, {0, 1024}};
  fg_st_range cols[2] = {{0, 64}, {512, 1024}};
  cut(path, (off_t)(orig.size() - big.bytes.size() / 2));
  for (int nr : {0, 1, 2}) {
    SCOPED_TRACE(nr);
    fg_status s = fg_st_slice_copy(t, nr == 2 ? cols : rows, nr, out.data(), out.size());
    EXPECT_EQ(FG_ERR_IO, s) << fg_status_name(s);
    EXPECT_TRUE(has(fg_last_error(), "tensor 'w'")) << fg_last_error();
    EXPECT_TRUE(has(fg_last_error(), "truncated")) << fg_last_error();
  }
  fgt::write_file(path, orig.data(), orig.size());
  ASSERT_EQ(FG_OK, fg_st_slice_copy(t, cols, 2, out.data(), out.size())) << fg_last_error();
  for (uint64_t r = 0; r < 64; r++)
    ASSERT_EQ(0, memcmp(&out[r * 512 * 4], &big.bytes[(r * 1024 + 512) * 4], 512 * 4)) << r;
  fg_st_close(f);
}

// ---- export ------------------------------------------------------------------------------

struct ExportCase {
  const char *name;
  const char *dtype;  // nullptr: verbatim
  fg_dtype stored;
};

class TruncatedExport : public ::testing::TestWithParam<ExportCase> {};

TEST_P(TruncatedExport, SourceTruncatedBetweenOpenAndRun) {
  const ExportCase &ec = GetParam();
  fgt::TempDir dir;
  std::string in = dir.file("src.gguf"), out = dir.file("out.gguf");
  std::vector<fgx::Tensor> ts;
  for (int i = 0; i < 4; i++) ts.push_back(fgx::make("blk." + std::to_string(i) + ".w.weight", ec.stored, {256, 1024}, i));
  fgx::write_gguf(in, nullptr, ts);
  std::vector<uint8_t> orig = fgt::read_file(in);
  fg_export_options o = fgx::opts(ec.dtype);
  o.chunk_bytes = 64 << 10;  // several chunks per tensor
  for (int round = 0; round < 2; round++) {
    SCOPED_TRACE(round ? "restored" : "truncated");
    fg_ckpt *src = nullptr;
    fg_export_plan *plan = nullptr;
    ASSERT_EQ(FG_OK, fg_ckpt_open(in.c_str(), &src)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_export_plan_create(src, &o, &plan)) << fg_last_error();
    const fg_ckpt_tensor *t2 = fg_ckpt_tensor_at(src, 2);
    if (round == 0) cut(in, (off_t)(t2->offset + t2->nbytes / 2));  // in the middle of tensor 2
    fg_status s = fg_export_run(plan, out.c_str(), nullptr, nullptr);
    std::string msg = fg_last_error();
    if (round == 0) {
      EXPECT_EQ(FG_ERR_TRUNCATED, s) << fg_status_name(s) << ": " << msg;
      EXPECT_TRUE(has(msg, in)) << msg;
      EXPECT_TRUE(has(msg, "blk.2.w.weight")) << msg;
      EXPECT_FALSE(has(msg, out)) << msg;  // about the input, not the output
      EXPECT_EQ(std::vector<std::string>{"src.gguf"}, fgx::list_dir(dir.path));
    } else {
      ASSERT_EQ(FG_OK, s) << msg;
      fg_ckpt *back = nullptr;
      ASSERT_EQ(FG_OK, fg_ckpt_open(out.c_str(), &back)) << fg_last_error();
      ASSERT_EQ(4u, fg_ckpt_count(back));
      const fg_ckpt_tensor *b2 = fg_ckpt_tensor_at(back, 2);
      std::vector<uint8_t> want = ec.dtype ? fgx::transcode(ts[2], fgx::target(ec.dtype).dtype) : ts[2].data;
      ASSERT_EQ(want.size(), b2->nbytes);
      EXPECT_EQ(0, memcmp(want.data(), b2->data, want.size()));
      fg_ckpt_close(back);
    }
    fg_export_plan_free(plan);
    fg_ckpt_close(src);
    if (round == 0) fgt::write_file(in, orig.data(), orig.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, TruncatedExport,
                         ::testing::Values(ExportCase{"verbatim", nullptr, FG_F16},
                                           ExportCase{"convert_f16_q8_0", "q8_0", FG_F16},
                                           ExportCase{"dequant_q8_0_f32", "f32", FG_Q8_0}),
                         [](const ::testing::TestParamInfo<ExportCase> &i) { return std::string(i.param.name); });

// A source modified in place (same size) while it is exported: the output is not committed.
TEST(TruncatedExportMore, SourceRewrittenInPlaceIsNotCommitted) {
  fgt::TempDir dir;
  std::string in = dir.file("src.gguf"), out = dir.file("out.gguf");
  fgx::write_gguf(in, nullptr, {fgx::make("a.weight", FG_F16, {64, 256}, 1), fgx::make("b.weight", FG_F16, {64, 256}, 2)});
  fg_ckpt *src = nullptr;
  fg_export_plan *plan = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(in.c_str(), &src));
  fg_export_options o = fgx::opts(nullptr);
  ASSERT_EQ(FG_OK, fg_export_plan_create(src, &o, &plan));
  struct Ctx {
    std::string in;
    bool done = false;
  } ctx{in};
  auto rewrite = [](const fg_export_progress *, void *u) -> bool {
    auto *c = static_cast<Ctx *>(u);
    if (!c->done) {
      c->done = true;
      int fd = open(c->in.c_str(), O_WRONLY);
      std::vector<uint8_t> junk(64, 0x5a);
      struct stat st;
      fstat(fd, &st);
      EXPECT_EQ(64, pwrite(fd, junk.data(), junk.size(), st.st_size - 64));
      // a new modification time even on a coarse clock
      struct timespec ts[2] = {{0, UTIME_OMIT}, {st.st_mtim.tv_sec + 5, 0}};
      futimens(fd, ts);
      close(fd);
    }
    return true;
  };
  fg_status s = fg_export_run(plan, out.c_str(), rewrite, &ctx);
  EXPECT_TRUE(ctx.done);
  EXPECT_EQ(FG_ERR_IO, s) << fg_status_name(s);
  EXPECT_TRUE(has(fg_last_error(), in)) << fg_last_error();
  EXPECT_TRUE(has(fg_last_error(), "modified")) << fg_last_error();
  EXPECT_EQ(std::vector<std::string>{"src.gguf"}, fgx::list_dir(dir.path));
  fg_export_plan_free(plan);
  fg_ckpt_close(src);
}

// ---- load ----------------------------------------------------------------------------------

struct LoadMode {
  const char *name;
  unsigned flags;
  fg_load_dtype dtype;
};

const LoadMode kLoadModes[] = {
    {"borrow", 0, FG_LOAD_DTYPE_KEEP},
    {"copy", FG_LOAD_FLAG_COPY, FG_LOAD_DTYPE_KEEP},
    {"convert", 0, FG_LOAD_DTYPE_F32},
    {"staged", FG_LOAD_FLAG_STAGED, FG_LOAD_DTYPE_KEEP},
    {"staged_convert", FG_LOAD_FLAG_STAGED, FG_LOAD_DTYPE_F32},
};

struct MidTensor {
  std::string path;
  off_t at = 0;
  bool done = false;
};

bool cut_when_first_done(const fg_load_progress *p, void *user) {
  auto *c = static_cast<MidTensor *>(user);
  if (!c->done && p->tensors_done >= 1) {
    c->done = true;
    EXPECT_EQ(0, truncate(c->path.c_str(), c->at));
  }
  return true;
}

// Truncated in the middle of a later tensor while the load runs; then restored and loaded.
TEST(TruncatedLoad, MidTensorThenRestored) {
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  std::vector<ldt::Tensor> ts;
  for (int i = 0; i < 4; i++) ts.push_back(ldt::make_float("w" + std::to_string(i), FG_F16, {512, 1024}, i));
  ts.push_back(ldt::make_quant("q", FG_Q8_0, 256, 1024, 9));
  for (bool gguf : {false, true}) {
    for (const LoadMode &md : kLoadModes) {
      SCOPED_TRACE(std::string(gguf ? "gguf/" : "st/") + md.name);
      fgt::TempDir dir;
      std::string path = dir.file(gguf ? "m.gguf" : "m.safetensors");
      std::vector<ldt::Tensor> use = ts;
      if (!gguf || ts.back().bytes.empty()) use.pop_back();
      if (gguf) ldt::write_gguf(path, use);
      else ldt::write_st(path, use);
      std::vector<uint8_t> orig = fgt::read_file(path);
      fg_ckpt *c = nullptr;
      ASSERT_EQ(FG_OK, fg_ckpt_open(path.c_str(), &c));
      const fg_ckpt_tensor *t2 = fg_ckpt_find(c, "w2");
      MidTensor mt;
      mt.path = path;
      mt.at = (off_t)(t2->offset + t2->nbytes / 2 + 1000);
      fg_ckpt_close(c);
      fg_load_options o;
      fg_load_options_init(&o);
      o.flags = md.flags;
      o.dtype = md.dtype;
      o.ring_count = 2;
      o.ring_bytes = 256 << 10;
      o.progress = cut_when_first_done;
      o.progress_user = &mt;
      fg_model *m = nullptr;
      fg_status s = fg_model_create(path.c_str(), dev, &o, &m);
      EXPECT_TRUE(mt.done);
      EXPECT_EQ(FG_ERR_TRUNCATED, s) << fg_status_name(s) << ": " << fg_last_error();
      std::string msg = fg_last_error();
      EXPECT_TRUE(has(msg, path)) << msg;
      EXPECT_TRUE(has(msg, "tensor w")) << msg;
      EXPECT_EQ(nullptr, m);
      fg_model_free(m);

      fgt::write_file(path, orig.data(), orig.size());
      o.progress = nullptr;
      m = ldt::load_ok(path, dev, &o);
      ASSERT_NE(nullptr, m);
      ldt::expect_model(m, use, md.dtype);
      fg_model_free(m);
    }
  }
  fg_device_close(dev);
}

// A file truncated at any moment of a load, from another thread: whatever the moment, the
// load ends with a status (or finishes first) and the process lives.
TEST(TruncatedLoad, RacingTruncationNeverKills) {
  fg_device *dev = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev));
  std::vector<ldt::Tensor> ts;
  for (int i = 0; i < 8; i++) ts.push_back(ldt::make_float("w" + std::to_string(i), FG_F16, {1024, 1024}, i));
  fgt::TempDir dir;
  std::string path = dir.file("m.safetensors");
  int ok = 0, failed = 0;
  for (int round = 0; round < 12; round++) {
    const LoadMode &md = kLoadModes[round % 5];
    ldt::write_st(path, ts);
    fg_load_options o;
    fg_load_options_init(&o);
    o.flags = md.flags;
    o.dtype = md.dtype;
    std::thread cutter([&, round] {
      std::this_thread::sleep_for(std::chrono::microseconds(300 * round));
      EXPECT_EQ(0, truncate(path.c_str(), 3 << 20));
    });
    fg_model *m = nullptr;
    fg_status s = fg_model_create(path.c_str(), dev, &o, &m);
    cutter.join();
    // Early cuts fail the parse instead (the file is short before it is opened).
    if (s) {
      failed++;
      EXPECT_TRUE(has(fg_last_error(), path)) << fg_last_error();
      EXPECT_EQ(nullptr, m);
    } else {
      ok++;
    }
    fg_model_free(m);  // a borrowed model is freed without reading the truncated pages
  }
  EXPECT_EQ(12, ok + failed);
  fg_device_close(dev);
}

// ---- forgia cat ----------------------------------------------------------------------------

// cat writes into a pipe nobody reads yet, so it blocks after its first bytes; the file is
// truncated then, and cat's later reads fall past the end.
TEST(TruncatedCat, RawAndF32) {
  for (bool f32 : {false, true}) {
    SCOPED_TRACE(f32 ? "--as f32" : "raw");
    fgt::TempDir dir;
    std::string path = dir.file("m.gguf"), err = dir.file("err.txt");
    ldt::write_gguf(path, {ldt::make_float("small", FG_F32, {16}, 1), ldt::make_float("big", FG_F16, {4096, 1024}, 2)});
    fg_ckpt *c = nullptr;
    ASSERT_EQ(FG_OK, fg_ckpt_open(path.c_str(), &c));
    const fg_ckpt_tensor *big = fg_ckpt_find(c, "big");
    off_t at = (off_t)(big->offset + (1 << 20));
    fg_ckpt_close(c);
    std::string cmd = std::string(FORGIA_CLI) + " cat '" + path + "' big" + (f32 ? " --as f32" : "") + " 2>'" + err + "'";
    FILE *p = popen(cmd.c_str(), "r");
    ASSERT_NE(nullptr, p);
    std::vector<char> buf(1 << 16);
    size_t got = fread(buf.data(), 1, 1, p);  // cat has mapped the file and is writing
    ASSERT_EQ(1u, got);
    cut(path, at);
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) got += n;
    int st = pclose(p);
    ASSERT_TRUE(WIFEXITED(st)) << "cat killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_EQ(1, WEXITSTATUS(st));
    EXPECT_LT(got, (size_t)(f32 ? 4096 * 1024 * 4 : 4096 * 1024 * 2));
    std::vector<uint8_t> e = fgt::read_file(err);
    std::string msg(e.begin(), e.end());
    EXPECT_TRUE(has(msg, path)) << msg;
    EXPECT_TRUE(has(msg, "'big'")) << msg;
    EXPECT_TRUE(has(msg, "truncated")) << msg;
    EXPECT_EQ(1, std::count(msg.begin(), msg.end(), '\n')) << msg;
  }
}

}  // namespace
