// The CLI contract written in `forgia help`: exit 0 success, 1 a bad file or a runtime
// failure, 2 bad usage (checked before any work), 130/143 after cleanup on SIGINT/SIGTERM;
// one stderr line per failure with one prefix; a failed write to stdout is a failure; control
// bytes escaped in readable output; progress off a terminal at most a line a second.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "forgia/safetensors.h"
#include "testutil.h"

namespace {

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }

int count_lines(const std::string &s) { return (int)std::count(s.begin(), s.end(), '\n'); }

std::set<std::string> list_dir(const std::string &path) {
  std::set<std::string> names;
  if (DIR *d = opendir(path.c_str())) {
    while (dirent *e = readdir(d))
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) names.insert(e->d_name);
    closedir(d);
  }
  return names;
}

bool exists(const std::string &path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// A safetensors file of n f32 tensors [rows, cols] named blk.I.w.weight, cheap to make.
void write_model(const std::string &path, int n, uint64_t rows, uint64_t cols) {
  std::vector<float> data(rows * cols);
  uint32_t x = 12345;
  for (float &v : data) {
    x = x * 1664525u + 1013904223u;
    v = (float)((int32_t)(x >> 8) - (1 << 23)) / (float)(1 << 23);
  }
  std::vector<std::string> names;
  for (int i = 0; i < n; i++) names.push_back("blk." + std::to_string(i) + ".w.weight");
  uint64_t shape[2] = {rows, cols};
  std::vector<fg_st_write_tensor> ts;
  for (int i = 0; i < n; i++) ts.push_back({names[i].c_str(), FG_F32, 2, shape, data.data(), rows * cols * 4});
  ASSERT_EQ(fg_st_save(path.c_str(), ts.data(), ts.size(), nullptr, 0), FG_OK) << fg_last_error();
}

void write_small(const std::string &path) { write_model(path, 3, 4, 256); }

// A failure's stderr: exactly one line, "forgia CMD: ...", the prefix not repeated.
void expect_one_line(const std::string &cmd, const std::string &err, const std::string &what) {
  EXPECT_EQ(count_lines(err), 1) << what << ": " << err;
  EXPECT_EQ(err.rfind("forgia " + cmd + ": ", 0), 0u) << what << ": " << err;
  EXPECT_EQ(err.find("forgia " + cmd + ": ", 1), std::string::npos) << what << ": " << err;
  EXPECT_EQ(err.find(cmd + ": " + cmd + ":"), std::string::npos) << what << ": " << err;
}

struct Case {
  const char *cmd;   // the subcommand named in the message
  std::string args;  // the whole command line after "forgia"
  int rc;
};

void check(const Case &c) {
  std::string out, err;
  int rc = fgt::run(cli(c.args), &out, &err);
  EXPECT_EQ(rc, c.rc) << c.args << "\n" << err;
  if (c.rc != 0) expect_one_line(c.cmd, err, c.args);
}

TEST(CliContract, ExitStatusPerClassAndCommand) {
  fgt::TempDir dir;
  std::string m = dir.file("m.safetensors"), missing = dir.file("missing.safetensors");
  write_small(m);
  std::string o = dir.file("o.gguf");
  const Case cases[] = {
      // success
      {"inspect", "inspect " + m, 0},
      {"inspect", "inspect " + m + " --json --json", 0},  // a flag twice is harmless
      {"cat", "cat " + m + " blk.0.w.weight --as f32", 0},
      {"load", "load " + m + " --device cpu", 0},
      {"export", "export --from-safetensors " + m + " --out " + o, 0},
      {"export", "export --from-safetensors=" + m + " --dry-run", 0},
      {"devices", "devices", 0},
      // bad usage: unknown options, in every command
      {"inspect", "inspect " + m + " --bogus", 2},
      {"cat", "cat " + m + " blk.0.w.weight --bogus", 2},
      {"load", "load " + m + " --bogus", 2},
      {"export", "export --from-safetensors " + m + " --out " + o + " --bogus", 2},
      {"devices", "devices --bogus", 2},
      {"demo", "demo --bogus", 2},
      // a value option given twice
      {"cat", "cat " + m + " blk.0.w.weight --as f32 --as f32", 2},
      {"load", "load " + m + " --device cpu --device cpu", 2},
      {"export", "export --from-safetensors " + m + " --out " + o + " --out " + dir.file("p.gguf"), 2},
      {"export", "export --from-safetensors " + m + " --dtype f16 --dtype=q8_0 --dry-run", 2},
      // missing, empty or bad values, missing or extra arguments
      {"inspect", "inspect", 2},
      {"inspect", "inspect " + m + " " + m, 2},
      {"inspect", "inspect " + m + " --json=yes", 2},
      {"cat", "cat " + m, 2},
      {"cat", "cat " + m + " blk.0.w.weight --as f16", 2},
      {"cat", "cat " + m + " blk.0.w.weight --as", 2},
      {"load", "load " + m + " --device", 2},
      {"load", "load " + m + " --device ''", 2},
      {"load", "load " + m + " --dtype f8", 2},
      {"load", "load " + m + " --ring 2,1K", 2},  // below the ring's minimum: bad value, not a failed load
      {"load", "load " + m + " --only '('", 2},
      {"export", "export --from-safetensors " + m + " --out " + o + " --dtype q9_9", 2},
      {"export", "export --from-safetensors " + m + " --out " + o + " --chunk-mib 0", 2},
      {"export", "export --from-safetensors " + m + " --from-gguf " + m + " --out " + o, 2},
      {"export", "export --from-safetensors " + m, 2},
      {"export", "export --from-safetensors " + m + " --out --dry-run", 2},
      {"devices", "devices extra", 2},
      // bad device names, and a device that is not present
      {"load", "load " + m + " --device tpu", 2},
      {"load", "load " + m + " --device cuda:999", 2},
      {"demo", "demo --device tpu --dir " + dir.file("demo"), 2},
      // an output that would destroy an input or a device is a bad --out
      {"export", "export --from-safetensors " + m + " --out " + m, 2},
      {"export", "export --from-safetensors " + m + " --out /dev/null", 2},
      // bad files
      {"inspect", "inspect " + missing, 1},
      {"cat", "cat " + missing + " x", 1},
      {"cat", "cat " + m + " no.such.tensor", 1},
      {"load", "load " + missing + " --device cpu", 1},
      {"export", "export --from-safetensors " + missing + " --out " + o, 1},
      {"export", "export --from-gguf " + m + " --out " + o, 1},  // a safetensors file given as GGUF
  };
  for (const Case &c : cases) check(c);
  EXPECT_FALSE(exists(dir.file("p.gguf")));
  EXPECT_FALSE(exists(dir.file("demo")));  // refused before it was created
  fgt::TempDir clean;
  write_small(clean.file("m.safetensors"));
  std::vector<uint8_t> before = fgt::read_file(clean.file("m.safetensors"));
  check({"export", "export --from-safetensors " + clean.file("m.safetensors") + " --out " + clean.file("m.safetensors"), 2});
  EXPECT_EQ(fgt::read_file(clean.file("m.safetensors")), before);
  EXPECT_EQ(list_dir(clean.path), std::set<std::string>{"m.safetensors"});
}

// A bad --device is refused before any work: the demo would build 300 MB first otherwise.
TEST(CliContract, DemoChecksItsDeviceBeforeBuilding) {
  fgt::TempDir dir;
  std::string d = dir.file("demo"), out, err;
  EXPECT_EQ(fgt::run(cli("demo --dir " + d + " --device tpu"), &out, &err), 2);
  expect_one_line("demo", err, "demo --device tpu");
  EXPECT_NE(err.find("tpu"), std::string::npos) << err;
  EXPECT_EQ(out, "");
  EXPECT_FALSE(exists(d));
  EXPECT_EQ(fgt::run(cli("demo --dir " + d + " --dir " + d + "2"), &out, &err), 2);
  EXPECT_FALSE(exists(d));
  EXPECT_FALSE(exists(d + "2"));
}

TEST(CliContract, HelpStatesTheContract) {
  std::string out, err;
  ASSERT_EQ(fgt::run(cli("help"), &out, &err), 0) << err;
  for (const char *w : {"exit status", "130", "143", "\n  2 ", "one line", "stdout", "\\xNN"})
    EXPECT_NE(out.find(w), std::string::npos) << w << "\n" << out;
  std::string hh;
  ASSERT_EQ(fgt::run(cli("help help"), &hh, &err), 0) << err;
  EXPECT_EQ(hh, out);
  ASSERT_EQ(fgt::run(cli("help load"), &out, &err), 0) << err;
  EXPECT_NE(out.find("usage: forgia load"), std::string::npos) << out;
  EXPECT_EQ(fgt::run(cli("help frobnicate"), &out, &err), 2);
  expect_one_line("help", err, "help frobnicate");
  EXPECT_EQ(fgt::run(cli("frobnicate"), &out, &err), 2);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_EQ(err.rfind("forgia: frobnicate: ", 0), 0u) << err;
  EXPECT_EQ(fgt::run(cli(""), &out, &err), 2);
  EXPECT_EQ(count_lines(err), 1) << err;
}

// A failed write to stdout is a failure: exit 1 and one line, whatever the command.
TEST(CliContract, StdoutWriteFailureIsAFailure) {
  if (!exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  fgt::TempDir dir;
  std::string m = dir.file("m.safetensors");
  write_small(m);
  const Case cases[] = {
      {"inspect", "inspect " + m, 1},
      {"inspect", "inspect " + m + " --json", 1},
      {"cat", "cat " + m + " blk.1.w.weight", 1},
      {"cat", "cat " + m + " blk.1.w.weight --as f32", 1},
      {"load", "load " + m + " --device cpu --list", 1},
      {"devices", "devices", 1},
      {"export", "export --from-safetensors " + m + " --dry-run", 1},
      {"help", "help", 1},
      {"version", "--version", 1},
  };
  for (const Case &c : cases) {
    std::string out, err;
    EXPECT_EQ(fgt::run(cli(c.args) + " >/dev/full", &out, &err), 1) << c.args << "\n" << err;
    expect_one_line(c.cmd, err, c.args);
    EXPECT_NE(err.find("stdout"), std::string::npos) << c.args << ": " << err;
  }
}

// One file that is no model: the same problem from every command that opens it as a model.
TEST(CliContract, OneNonModelFileOneMessage) {
  fgt::TempDir dir;
  std::string p = dir.file("notes.bin");
  const char junk[] = "hello, this is not a checkpoint at all";
  fgt::write_file(p, junk, sizeof junk - 1);
  const Case cases[] = {
      {"cat", "cat " + p + " x", 1},
      {"load", "load " + p + " --device cpu", 1},
      {"export", "export --from-gguf " + p + " --out " + dir.file("o.gguf"), 1},
      {"export", "export --from-safetensors " + p + " --out " + dir.file("o.gguf"), 1},
  };
  std::string first;
  for (const Case &c : cases) {
    std::string out, err;
    EXPECT_EQ(fgt::run(cli(c.args), &out, &err), 1) << c.args;
    expect_one_line(c.cmd, err, c.args);
    std::string problem = err.substr(strlen("forgia ") + strlen(c.cmd));
    if (first.empty()) first = problem;
    EXPECT_EQ(problem, first) << c.args;
    EXPECT_EQ(problem.rfind(": " + p + ": ", 0), 0u) << problem;  // the file first, once
  }
  // inspect reads more kinds than models, and names them all
  std::string out, err;
  EXPECT_EQ(fgt::run(cli("inspect " + p), &out, &err), 1);
  expect_one_line("inspect", err, "inspect " + p);
  EXPECT_EQ(err, "forgia inspect: " + p + ": 38 bytes starting 68 65 6c 6c 6f 2c 20 74 (\"hello, t\"): not a GGUF, "
                 "safetensors, optimizer frame, imatrix or JSON file\n");
  EXPECT_EQ(list_dir(dir.path), std::set<std::string>{"notes.bin"});
}

// Names, keys and values holding ESC, BEL or a C1 control reach the terminal as \xNN.
TEST(CliContract, ControlBytesAreEscapedInReadableOutput) {
  fgt::TempDir dir;
  std::string p = dir.file("esc.safetensors");
  const std::string red = "blk.0.\x1b[31mred.weight", c1 = "blk.1.\xc2\x9b" "2J.weight";
  std::vector<float> v(8, 1.0f);
  uint64_t shape[2] = {2, 4};
  fg_st_write_tensor ts[] = {{red.c_str(), FG_F32, 2, shape, v.data(), 32}, {c1.c_str(), FG_F32, 2, shape, v.data(), 32}};
  fg_st_kv meta[] = {{"key\x1b[1m", "value\x1b]0;title\x07"}};
  ASSERT_EQ(fg_st_save(p.c_str(), ts, 2, meta, 1), FG_OK) << fg_last_error();
  auto raw = [](const std::string &s) {
    return s.find('\x1b') != std::string::npos || s.find('\x07') != std::string::npos ||
           s.find("\xc2\x9b") != std::string::npos;
  };
  std::string out, err;
  for (const std::string &args : {"inspect " + p + " --full", "load " + p + " --device cpu --list",
                                  "export --from-safetensors " + p + " --dry-run --dtype f16"}) {
    ASSERT_EQ(fgt::run(cli(args), &out, &err), 0) << args << "\n" << err;
    EXPECT_FALSE(raw(out)) << args;
    EXPECT_FALSE(raw(err)) << args;
    EXPECT_NE(out.find("blk.0.\\x1b[31mred.weight"), std::string::npos) << args << "\n" << out;
    EXPECT_NE(out.find("blk.1.\\xc2\\x9b2J.weight"), std::string::npos) << args << "\n" << out;
  }
  ASSERT_EQ(fgt::run(cli("inspect " + p), &out, &err), 0) << err;
  EXPECT_FALSE(raw(out));
  EXPECT_NE(out.find("key\\x1b[1m"), std::string::npos) << out;
  EXPECT_NE(out.find("value\\x1b]0;title\\x07"), std::string::npos) << out;
  ASSERT_EQ(fgt::run(cli("inspect " + p + " --json"), &out, &err), 0) << err;
  EXPECT_FALSE(raw(out)) << out;
  EXPECT_NE(out.find("blk.0.\\u001b[31mred.weight"), std::string::npos) << out;
  EXPECT_NE(out.find("blk.1.\\u009b2J.weight"), std::string::npos) << out;
  // a tensor name from the command line, echoed in the error line
  EXPECT_EQ(fgt::run(cli("cat " + p + " \"$(printf 'no\\033[32mpe')\""), &out, &err), 1);
  expect_one_line("cat", err, "cat with ESC");
  EXPECT_FALSE(raw(err)) << err;
  EXPECT_NE(err.find("no\\x1b[32mpe"), std::string::npos) << err;
}

// ---- long runs: progress and signals -----------------------------------------------------

// 512 tensors, 128 MiB of f32: some seconds of q4_K encoding.
constexpr int kBigTensors = 512;
constexpr int kManyTensors = 1024;
void write_big(const std::string &path) { write_model(path, kBigTensors, 64, 1024); }

// Off a terminal, progress is at most one line a second, plus the last one.
TEST(CliContract, ProgressToAPipeIsAtMostALineASecond) {
  fgt::TempDir dir;
  // many small tensors (a line each would be 1024 lines), some seconds of q4_K encoding
  std::string m = dir.file("many.safetensors");
  ASSERT_NO_FATAL_FAILURE(write_model(m, kManyTensors, 16, 1024));
  std::string out, err;
  auto t0 = std::chrono::steady_clock::now();
  // stderr (where progress goes) into a pipe; stdout dropped
  int rc = fgt::run(cli("export --from-safetensors " + m + " --out " + dir.file("o.gguf") + " --dtype q4_K") +
                        " 2>&1 >/dev/null | cat",
                    &out, &err);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(rc, 0) << out;
  int lines = count_lines(out);
  EXPECT_GE(lines, 1) << out;
  EXPECT_LE(lines, (int)seconds + 2) << seconds << " s\n" << out;
  std::string last = "[" + std::to_string(kManyTensors) + "/" + std::to_string(kManyTensors) + "]";
  EXPECT_NE(out.find(last), std::string::npos) << out;  // the last item always gets its line
}

pid_t spawn(const std::vector<std::string> &args, const std::string &err_path) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int nul = open("/dev/null", O_WRONLY);
    if (fd < 0 || nul < 0) _exit(127);
    dup2(nul, 1);
    dup2(fd, 2);
    std::vector<char *> argv;
    argv.push_back(const_cast<char *>(FORGIA_CLI));
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(FORGIA_CLI, argv.data());
    _exit(127);
  }
  return pid;
}

// SIGINT/SIGTERM in the middle of an export: exit 128 + signo after the temporary file is
// removed; no output, complete or partial, is left.
void interrupt_export(int sig) {
  fgt::TempDir dir;
  std::string src = dir.file("big.safetensors"), outdir = dir.file("out"), errp = dir.file("err.txt");
  ASSERT_NO_FATAL_FAILURE(write_big(src));
  ASSERT_EQ(mkdir(outdir.c_str(), 0755), 0);
  pid_t pid = spawn({"export", "--from-safetensors", src, "--out", outdir + "/o.gguf", "--dtype", "q4_K"}, errp);
  ASSERT_GT(pid, 0);
  // wait until the export is under way: its temporary file exists beside the output
  int st = 0;
  bool started = false;
  for (int i = 0; i < 120000 && !started; i++) {
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    started = !list_dir(outdir).empty();
    if (!started) std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  if (!started) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    FAIL() << "the export ended or never began writing";
  }
  ASSERT_EQ(kill(pid, sig), 0);
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  std::string err;
  {
    std::vector<uint8_t> e = fgt::read_file(errp);
    err.assign(e.begin(), e.end());
  }
  ASSERT_TRUE(WIFEXITED(st)) << "killed by signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  EXPECT_EQ(WEXITSTATUS(st), 128 + sig) << err;
  EXPECT_TRUE(list_dir(outdir).empty()) << *list_dir(outdir).begin();
  // progress lines may come first; the failure is one line, the last
  size_t start = err.rfind('\n', err.size() - 2);
  std::string line = err.substr(start == std::string::npos ? 0 : start + 1);
  expect_one_line("export", line, "interrupted export");
  EXPECT_NE(line.find(sig == SIGINT ? "SIGINT" : "SIGTERM"), std::string::npos) << line;
  EXPECT_EQ(err.find("forgia export:"), err.rfind("forgia export:")) << err;
}

TEST(CliContract, SigintDuringExportExits130AndLeavesNothing) { interrupt_export(SIGINT); }
TEST(CliContract, SigtermDuringExportExits143AndLeavesNothing) { interrupt_export(SIGTERM); }

}  // namespace
