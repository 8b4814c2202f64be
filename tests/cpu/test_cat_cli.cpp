// forgia cat: any name the file holds is a TENSOR, the empty name included (safetensors allows
// it, and files in the wild carry one), while a duplicate stays refused; an empty PATH is
// still bad usage. The output is binary, so a terminal on stdout is refused (exit 2, one
// line, nothing written to it), as forgia rng does; a pseudo-terminal stands in for one.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "testutil.h"

namespace {

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }

int count_lines(const std::string &s) { return (int)std::count(s.begin(), s.end(), '\n'); }

// A safetensors file written byte by byte (the library's writer is not what is tested):
// header is the JSON, data the bytes after it.
void write_st(const std::string &path, const std::string &header, const std::vector<uint8_t> &data) {
  std::vector<uint8_t> b(8);
  for (int i = 0; i < 8; i++) b[(size_t)i] = (uint8_t)((uint64_t)header.size() >> (8 * i));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  fgt::write_file(path, b.data(), b.size());
}

// f32 1.5 and -2 (little-endian) under "", then three bytes under "b".
const std::vector<uint8_t> kData = {0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0xc0, 'x', 'y', 'z'};
const char kHeader[] =
    R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";

TEST(CatCli, TheEmptyNameIsATensorName) {
  fgt::TempDir d;
  const std::string st = d.file("e.safetensors");
  write_st(st, kHeader, kData);
  const std::string want(kData.begin(), kData.begin() + 8);
  std::string out, err;
  for (const char *args : {" ''", " -- ''", " '' --as f32", " --as f32 ''"}) {
    ASSERT_EQ(fgt::run(cli("cat " + st + args), &out, &err), 0) << args << ": " << err;
    EXPECT_EQ(out, want) << args;
    EXPECT_EQ(err, "") << args;
  }
  ASSERT_EQ(fgt::run(cli("cat " + st + " b"), &out, &err), 0) << err;
  EXPECT_EQ(out, "xyz");

  // The same through a sharded Hugging Face folder, whose index maps "" to its shard.
  const std::string hf = d.file("hf");
  ASSERT_EQ(mkdir(hf.c_str(), 0755), 0);
  write_st(hf + "/model-00001-of-00001.safetensors", kHeader, kData);
  const char index[] = R"({"metadata":{},"weight_map":{"":"model-00001-of-00001.safetensors",)"
                       R"("b":"model-00001-of-00001.safetensors"}})";
  fgt::write_file(hf + "/model.safetensors.index.json", index, sizeof index - 1);
  ASSERT_EQ(fgt::run(cli("cat " + hf + " ''"), &out, &err), 0) << err;
  EXPECT_EQ(out, want);

  // An empty PATH, an empty --as and a third (empty) positional stay bad usage: exit 2, one line.
  for (const std::string &args : {std::string("cat '' b"), "cat " + st + " --as '' b", "cat " + st + " b ''"}) {
    EXPECT_EQ(fgt::run(cli(args), &out, &err), 2) << args;
    EXPECT_EQ(count_lines(err), 1) << args << ": " << err;
    EXPECT_EQ(err.rfind("forgia cat: ", 0), 0u) << err;
    EXPECT_EQ(out, "") << args;
  }
  EXPECT_NE(fgt::run(cli("cat '' b"), &out, &err), 0);
  EXPECT_NE(err.find("PATH: empty"), std::string::npos) << err;

  // A file without the empty name: not found, naming it, exit 1.
  const std::string other = d.file("o.safetensors");
  write_st(other, R"({"b":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})", {'x', 'y', 'z'});
  EXPECT_EQ(fgt::run(cli("cat " + other + " ''"), &out, &err), 1);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_NE(err.find("no tensor named ''"), std::string::npos) << err;
  EXPECT_EQ(out, "");

  // Two tensors named "" are a duplicate, refused as any other.
  const std::string dup = d.file("dup.safetensors");
  write_st(dup,
           R"({"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
           {'p', 'q'});
  const std::vector<uint8_t> before = fgt::read_file(dup);
  EXPECT_EQ(fgt::run(cli("cat " + dup + " ''"), &out, &err), 1);
  EXPECT_EQ(count_lines(err), 1) << err;
  EXPECT_EQ(out, "");
  EXPECT_EQ(fgt::read_file(dup), before);
}

// Whether this machine gives out pseudo-terminals at all (a sandbox may have no /dev/ptmx).
bool have_pty() {
  int m = posix_openpt(O_RDWR | O_NOCTTY);
  if (m < 0) return false;
  close(m);
  return true;
}

// Runs forgia with stdout on a pseudo-terminal; returns the exit status, the stderr text and
// whatever reached the terminal.
int run_on_tty(const std::vector<std::string> &args, std::string *err, std::string *tty) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return -1;
  const char *slave_name = ptsname(master);
  int epipe[2];
  if (!slave_name || pipe(epipe) != 0) return -1;
  std::string slave_path = slave_name;
  pid_t pid = fork();
  if (pid == 0) {
    int slave = open(slave_path.c_str(), O_RDWR | O_NOCTTY);
    if (slave < 0) _exit(120);
    dup2(slave, STDOUT_FILENO);
    dup2(epipe[1], STDERR_FILENO);
    close(epipe[0]);
    close(master);
    std::vector<char *> argv;
    std::string exe = FORGIA_CLI;
    argv.push_back(const_cast<char *>(exe.c_str()));
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(121);
  }
  close(epipe[1]);
  err->clear();
  char buf[4096];
  ssize_t k;
  while ((k = read(epipe[0], buf, sizeof buf)) > 0) err->append(buf, (size_t)k);
  close(epipe[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  // What the child wrote to the terminal is waiting on the master side.
  tty->clear();
  struct pollfd p = {master, POLLIN, 0};
  while (poll(&p, 1, 50) > 0 && (p.revents & POLLIN) && (k = read(master, buf, sizeof buf)) > 0)
    tty->append(buf, (size_t)k);
  close(master);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(CatCli, RefusesToWriteBinaryToATerminal) {
  if (!have_pty()) GTEST_SKIP() << "no pseudo-terminal to be had here (posix_openpt failed)";
  fgt::TempDir d;
  const std::string st = d.file("e.safetensors");
  write_st(st, kHeader, kData);
  std::string err, tty;
  for (const std::vector<std::string> &args :
       {std::vector<std::string>{"cat", st, "b"}, std::vector<std::string>{"cat", st, "", "--as", "f32"}}) {
    ASSERT_EQ(run_on_tty(args, &err, &tty), 2) << err;
    EXPECT_EQ(count_lines(err), 1) << err;
    EXPECT_EQ(err.rfind("forgia cat: stdout: is a terminal", 0), 0u) << err;
    EXPECT_EQ(tty, "");
  }
  // rng, whose refusal cat's copies, answers the same way on the same terminal.
  const std::vector<std::string> rng = {"rng", "--kind", "uniform", "--seed", "1", "--count",
                                        "4",   "--lo",   "0",       "--hi",   "1"};
  ASSERT_EQ(run_on_tty(rng, &err, &tty), 2) << err;
  EXPECT_EQ(err.rfind("forgia rng: stdout: is a terminal", 0), 0u) << err;
  // Off a terminal the same command writes its bytes.
  std::string out;
  ASSERT_EQ(fgt::run(cli("cat " + st + " b | cat"), &out, &err), 0) << err;
  EXPECT_EQ(out, "xyz");
}

}  // namespace
