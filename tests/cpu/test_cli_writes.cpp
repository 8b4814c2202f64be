// Every command that writes keeps export's promises: an output that is (or is inside) an input
// is refused with exit 2 before any work and the input's bytes stay; a committed checkpoint is
// replaced only when asked; silence is not success (a gradient file that feeds nothing, a
// filter that selects nothing); an error is one line on stderr; an interrupted training run
// saves where it stopped.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

namespace {

const std::string cli = FORGIA_CLI;

std::string q(const std::string &s) { return "'" + s + "'"; }

size_t lines(const std::string &s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// P: w [2,3] and b [3]; G: their gradients for steps 1..steps under the names given.
void write_params(const std::string &p) {
  std::vector<float> w = fgt::gaussian(6, 1), b = fgt::gaussian(3, 2);
  const uint64_t ws[2] = {2, 3}, bs[1] = {3};
  fg_st_write_tensor t[2] = {{"w", FG_F32, 2, ws, w.data(), 24}, {"b", FG_F32, 1, bs, b.data(), 12}};
  ASSERT_EQ(FG_OK, fg_st_save(p.c_str(), t, 2, nullptr, 0)) << fg_last_error();
}

void write_grads(const std::string &g, int steps, const char *suffix_fmt) {
  std::vector<std::vector<float>> v;
  std::vector<std::string> names;
  const uint64_t ws[2] = {2, 3}, bs[1] = {3};
  for (int k = 1; k <= steps; k++)
    for (const char *n : {"w", "b"}) {
      char buf[64];
      std::snprintf(buf, sizeof buf, suffix_fmt, n, k);
      names.push_back(buf);
      v.push_back(fgt::gaussian(n[0] == 'w' ? 6 : 3, 10 + (uint64_t)k));
    }
  std::vector<fg_st_write_tensor> t;
  for (size_t i = 0; i < v.size(); i++) {
    const bool w = names[i][0] == 'w';
    t.push_back({names[i].c_str(), FG_F32, w ? 2 : 1, w ? ws : bs, v[i].data(), v[i].size() * 4});
  }
  ASSERT_EQ(FG_OK, fg_st_save(g.c_str(), t.data(), t.size(), nullptr, 0)) << fg_last_error();
}

struct OptimFiles {
  fgt::TempDir d;
  std::string cfg = d.file("c.json"), p = d.file("p.safetensors"), g = d.file("g.safetensors"),
              out = d.file("out.safetensors"), state = d.file("state.bin");
  OptimFiles(int steps = 3, const char *fmt = "%s@%d") {
    const std::string c = "{\"optimizer\": \"adamw\", \"lr\": 0.01}";
    fgt::write_file(cfg, c.data(), c.size());
    write_params(p);
    write_grads(g, steps, fmt);
  }
  std::string cmd(const std::string &extra, int steps = 3) const {
    return cli + " optim --config " + q(cfg) + " --params " + q(p) + " --grads " + q(g) + " --steps " +
           std::to_string(steps) + " " + extra;
  }
};

// A refused command: exit 2, one line on stderr naming the output, the protected file as it was.
void expect_refused(const std::string &cmd, const std::string &protect, const std::string &names) {
  const std::string before = fgt::sha256_file(protect);
  ASSERT_FALSE(before.empty()) << protect;
  std::string out, err;
  EXPECT_EQ(2, fgt::run(cmd, &out, &err)) << cmd << "\n" << err;
  EXPECT_EQ(1u, lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find(names)) << err;
  EXPECT_EQ(before, fgt::sha256_file(protect)) << protect << " changed";
}

TEST(CliWrites, OptimOutputsNeverReplaceInputs) {
  OptimFiles f;
  expect_refused(f.cmd("--out " + q(f.g)), f.g, f.g);
  expect_refused(f.cmd("--out " + q(f.p)), f.p, f.p);
  expect_refused(f.cmd("--out " + q(f.out) + " --state-out " + q(f.g)), f.g, f.g);
  expect_refused(f.cmd("--out " + q(f.out) + " --state-out " + q(f.cfg)), f.cfg, f.cfg);
  // a symbolic link to an input, and the input spelled another way, are that input
  ASSERT_EQ(0, symlink(f.g.c_str(), f.d.file("link").c_str()));
  expect_refused(f.cmd("--out " + q(f.d.file("link"))), f.g, "link");
  expect_refused(f.cmd("--out " + q(f.d.path + "/./g.safetensors")), f.g, "g.safetensors");
  // the state written before the run replaces it, then a run whose --state-in is its --out
  std::string out, err;
  ASSERT_EQ(0, fgt::run(f.cmd("--out " + q(f.out) + " --state-out " + q(f.state)), &out, &err)) << err;
  expect_refused(f.cmd("--out " + q(f.state) + " --state-in " + q(f.state)), f.state, f.state);
  // two outputs of one run
  expect_refused(f.cmd("--out " + q(f.out) + " --state-out " + q(f.out)), f.out, "--state-out");
  // special files and folders are not outputs; nothing was read or written
  for (const std::string &bad : {std::string("/dev/null"), f.d.path}) {
    EXPECT_EQ(2, fgt::run(f.cmd("--out " + q(bad)), &out, &err)) << bad;
    EXPECT_EQ(1u, lines(err)) << err;
  }
  ASSERT_EQ(0, mkfifo(f.d.file("fifo").c_str(), 0600));
  EXPECT_EQ(2, fgt::run(f.cmd("--out " + q(f.d.file("fifo"))), &out, &err));
  EXPECT_EQ(1u, lines(err)) << err;
}

TEST(CliWrites, OptimSucceedsWithOneSummaryLine) {
  OptimFiles f;
  std::string out, err;
  ASSERT_EQ(0, fgt::run(f.cmd("--out " + q(f.out)), &out, &err)) << err;
  EXPECT_EQ("", err);
  EXPECT_EQ(1u, lines(out)) << out;
  EXPECT_NE(std::string::npos, out.find("3 steps")) << out;
  EXPECT_NE(std::string::npos, out.find("2 tensors")) << out;
  EXPECT_NE(std::string::npos, out.find(f.out)) << out;
  // the parameters moved
  EXPECT_NE(fgt::sha256_file(f.p), fgt::sha256_file(f.out));
}

TEST(CliWrites, OptimGradientsThatFeedNothingAreErrors) {
  {  // "w" instead of "w@1": no parameter would ever step
    OptimFiles f(1, "%s");
    std::string out, err;
    EXPECT_EQ(1, fgt::run(f.cmd("--out " + q(f.out), 1), &out, &err));
    EXPECT_EQ(1u, lines(err)) << err;
    EXPECT_NE(std::string::npos, err.find("is not the gradient of a tensor")) << err;
    EXPECT_NE(std::string::npos, err.find("@1'")) << err;
    struct stat st;
    EXPECT_NE(0, stat(f.out.c_str(), &st)) << "an output was written";
  }
  {  // --steps 5 with 3 recorded steps
    OptimFiles f(3);
    std::string out, err;
    EXPECT_EQ(1, fgt::run(f.cmd("--out " + q(f.out), 5), &out, &err));
    EXPECT_EQ(1u, lines(err)) << err;
    EXPECT_NE(std::string::npos, err.find("step 4")) << err;
    EXPECT_NE(std::string::npos, err.find("@4'")) << err;
    struct stat st;
    EXPECT_NE(0, stat(f.out.c_str(), &st)) << "an output was written";
  }
}

TEST(CliWrites, EsReplayOutputsNeverReplaceInputs) {
  fgt::TempDir d;
  const std::string cfg = d.file("c.json"), p = d.file("p.safetensors"), r = d.file("r.json");
  const std::string c = "{\"population\": 2, \"antithetic\": true, \"params\": [\"w\"]}";
  const std::string rw = "[[1, -1], [0.5, 0.25]]";
  fgt::write_file(cfg, c.data(), c.size());
  fgt::write_file(r, rw.data(), rw.size());
  write_params(p);
  const std::string base = cli + " es replay --config " + q(cfg) + " --params " + q(p) + " --rewards " + q(r);
  expect_refused(base + " --out " + q(r), r, r);
  expect_refused(base + " --out " + q(p), p, p);
  expect_refused(base + " --out " + q(cfg), cfg, cfg);
  std::string out, err;
  EXPECT_EQ(2, fgt::run(base + " --out /dev/null", &out, &err));
  EXPECT_EQ(1u, lines(err)) << err;
  ASSERT_EQ(0, fgt::run(base + " --out " + q(d.file("o.safetensors")), &out, &err)) << err;
  EXPECT_EQ("", err);
  EXPECT_EQ(1u, lines(out)) << out;
  EXPECT_NE(std::string::npos, out.find("on cpu")) << out;
}

uint64_t committed_step(const std::string &dir) {
  fg_ckpt_dir *d = nullptr;
  if (fg_ckpt_dir_open(dir.c_str(), &d) != FG_OK) return UINT64_MAX;
  const uint64_t s = fg_ckpt_dir_trainer_state(d)->step;
  fg_ckpt_dir_close(d);
  return s;
}

TEST(CliWrites, TrainRefusesToReplaceACommittedCheckpoint) {
  fgt::TempDir d;
  const std::string ck = d.file("ck"), other = d.file("other");
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli + " train spirals --steps 40 --save " + q(ck), &out, &err)) << err;
  ASSERT_EQ(40u, committed_step(ck));
  const std::string state = ck + "/trainer_state.json";
  expect_refused(cli + " train spirals --steps 10 --save " + q(ck), state, "--force");
  EXPECT_EQ(40u, committed_step(ck));
  // continuing its own checkpoint is what --resume DIR --save DIR is for
  ASSERT_EQ(0, fgt::run(cli + " train spirals --steps 50 --resume " + q(ck) + " --save " + q(ck), &out, &err)) << err;
  EXPECT_EQ(50u, committed_step(ck));
  // resuming another checkpoint into this one still needs --force
  ASSERT_EQ(0, fgt::run(cli + " train spirals --steps 20 --save " + q(other), &out, &err)) << err;
  expect_refused(cli + " train spirals --steps 30 --resume " + q(other) + " --save " + q(ck), state, "--force");
  ASSERT_EQ(0, fgt::run(cli + " train spirals --steps 10 --save " + q(ck) + " --force", &out, &err)) << err;
  EXPECT_EQ(10u, committed_step(ck));
  // not a directory, or inside the checkpoint being resumed
  EXPECT_EQ(2, fgt::run(cli + " train spirals --save /dev/null", &out, &err));
  EXPECT_EQ(1u, lines(err)) << err;
  expect_refused(cli + " train spirals --save " + q(ck + "/model.safetensors"), ck + "/model.safetensors",
                 "not a directory");
  expect_refused(cli + " train spirals --steps 60 --resume " + q(ck) + " --save " + q(ck + "/sub"), state, "inside");
  EXPECT_EQ(2, fgt::run(cli + " train spirals --force", &out, &err));
}

TEST(CliWrites, EsRefusesToReplaceACommittedCheckpoint) {
  fgt::TempDir d;
  const std::string ck = d.file("ck");
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli + " es spirals --iterations 4 --target 0 --threads 1 --save " + q(ck), &out, &err)) << err;
  ASSERT_EQ(4u, committed_step(ck));
  expect_refused(cli + " es spirals --iterations 2 --target 0 --threads 1 --save " + q(ck), ck + "/trainer_state.json",
                 "--force");
  ASSERT_EQ(0, fgt::run(cli + " es spirals --iterations 2 --target 0 --threads 1 --force --save " + q(ck), &out, &err));
  EXPECT_EQ(2u, committed_step(ck));
}

// The command in the background, its pid.
pid_t spawn(const std::vector<std::string> &args, const std::string &out, const std::string &err) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE *o = freopen(out.c_str(), "w", stdout);
    FILE *e = freopen(err.c_str(), "w", stderr);
    (void)o;
    (void)e;
    std::vector<char *> av;
    for (const auto &a : args) av.push_back(const_cast<char *>(a.c_str()));
    av.push_back(nullptr);
    execv(av[0], av.data());
    _exit(127);
  }
  return pid;
}

bool wait_for_file(const std::string &path, pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; i++) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0) return true;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int wait_status(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(CliWrites, EsSavesEveryKAndWhenInterrupted) {
  fgt::TempDir d;
  const std::string ck = d.file("ck"), o = d.file("o"), e = d.file("e");
  // a run far too long to end by itself: a committed checkpoint can only be --save-every's
  pid_t pid = spawn({cli, "es", "spirals", "--iterations", "100000000", "--threads", "1", "--save", ck,
                     "--save-every", "7"}, o, e);
  ASSERT_TRUE(wait_for_file(ck + "/trainer_state.json", pid, 120)) << "no checkpoint while running";
  const uint64_t first = committed_step(ck);
  EXPECT_EQ(0u, first % 7) << first;
  ASSERT_EQ(0, kill(pid, SIGINT));
  EXPECT_EQ(130, wait_status(pid));
  const std::vector<uint8_t> eb = fgt::read_file(e);
  std::string err(eb.begin(), eb.end());
  EXPECT_EQ(1u, lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("interrupted by SIGINT")) << err;
  // the final checkpoint is where it stopped, and a resume continues from it
  const uint64_t at = committed_step(ck);
  ASSERT_NE(UINT64_MAX, at);
  EXPECT_GE(at, first);
  EXPECT_NE(std::string::npos, err.find("after iteration " + std::to_string(at))) << err;
  std::string out;
  ASSERT_EQ(0, fgt::run(cli + " es spirals --threads 1 --target 0 --resume " + q(ck) + " --save " + q(ck) +
                            " --iterations " + std::to_string(at + 3), &out, &err)) << err;
  EXPECT_EQ(at + 3, committed_step(ck));
}

TEST(CliWrites, LoadOnlyMatchingNothingIsAnError) {
  OptimFiles f;
  std::string out, err;
  EXPECT_EQ(1, fgt::run(cli + " load " + q(f.p) + " --device cpu --only '^nothing$'", &out, &err));
  EXPECT_EQ(1u, lines(err)) << err;
  EXPECT_NE(std::string::npos, err.find("matches none of its 2 tensors")) << err;
  EXPECT_EQ("", out);
  ASSERT_EQ(0, fgt::run(cli + " load " + q(f.p) + " --only '^w$'", &out, &err)) << err;
  EXPECT_NE(std::string::npos, out.find("1 tensors (1 skipped)")) << out;
  EXPECT_NE(std::string::npos, out.find("on cpu")) << out;  // auto's choice, in the summary
}

TEST(CliWrites, ErrorsAreOneLine) {
  fgt::TempDir d;
  const std::string junk = d.file("junk.bin");
  fgt::write_file(junk, "junk", 4);
  std::string out, err;
  for (const std::string &c :
       {cli + " load " + q(junk), cli + " load " + q(d.file("absent")),
        cli + " train spirals --resume " + q(d.file("absent")),
        cli + " optim --config " + q(junk) + " --params " + q(junk) + " --grads " + q(junk) + " --steps 1 --out " +
            q(d.file("o.safetensors")),
        cli + " es spirals --resume " + q(d.file("absent")), cli + " optim --steps 1 --threads 0"}) {
    EXPECT_NE(0, fgt::run(c, &out, &err)) << c;
    EXPECT_EQ(1u, lines(err)) << c << "\n" << err;
    EXPECT_EQ(std::string::npos, err.find("device auto")) << err;
  }
}

// --threads is the one spelling of the worker count; the bytes written never depend on it.
TEST(CliWrites, ThreadsChangeNoBits) {
  OptimFiles f;
  std::string out, err;
  ASSERT_EQ(0, fgt::run(f.cmd("--threads 1 --out " + q(f.d.file("o1.safetensors"))), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(f.cmd("--threads 3 --out " + q(f.d.file("o3.safetensors"))), &out, &err)) << err;
  EXPECT_EQ(fgt::sha256_file(f.d.file("o1.safetensors")), fgt::sha256_file(f.d.file("o3.safetensors")));
  ASSERT_EQ(0, fgt::run(cli + " train spirals --steps 5 --threads 1 --save " + q(f.d.file("t1")), &out, &err)) << err;
  ASSERT_EQ(0, fgt::run(cli + " train spirals --steps 5 --threads 2 --save " + q(f.d.file("t2")), &out, &err)) << err;
  EXPECT_EQ(fgt::sha256_file(f.d.file("t1/model.safetensors")), fgt::sha256_file(f.d.file("t2/model.safetensors")));
  for (const std::string &c : {f.cmd("--threads 0 --out " + q(f.out)), cli + " train spirals --threads x",
                               cli + " load " + q(f.p) + " --threads 2000", cli + " rng --kind u64 --seed 1 --count 1 --threads -1"}) {
    EXPECT_EQ(2, fgt::run(c, &out, &err)) << c;
    EXPECT_EQ(1u, lines(err)) << err;
    EXPECT_NE(std::string::npos, err.find("--threads")) << err;
  }
}

TEST(CliWrites, HelpEsSaysUsageOnce) {
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli + " help es", &out, &err));
  size_t n = 0;
  for (size_t at = out.find("usage:"); at != std::string::npos; at = out.find("usage:", at + 1)) n++;
  EXPECT_EQ(1u, n) << out;
  EXPECT_NE(std::string::npos, out.find("forgia es spirals:")) << out;
  EXPECT_NE(std::string::npos, out.find("forgia es replay:")) << out;
}

}  // namespace
