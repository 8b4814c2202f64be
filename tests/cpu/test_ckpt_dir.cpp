// Training checkpoint directories: the same bytes as Fucina's (golden directory written by
// Fucina's training_checkpoint + state_dict code), Fucina's directory opens, the sentinel
// protocol, and crash consistency under SIGKILL at random points.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "forgia/ckpt_dir.h"
#include "fucina_ckpt_fixture.h"
#include "testutil.h"

namespace {

const std::string kGoldenDir = std::string(FORGIA_TEST_DATA) + "/golden/fucina_ckpt";

std::set<std::string> listing(const std::string &dir) {
  std::set<std::string> r;
  DIR *d = opendir(dir.c_str());
  if (!d) return r;
  while (dirent *e = readdir(d))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) r.insert(e->d_name);
  closedir(d);
  return r;
}

bool says(const char *what) { return std::string(fg_last_error()).find(what) != std::string::npos; }

TEST(CkptDir, SaveWritesFucinasBytes) {
  fgt::TempDir t;
  std::string dir = t.file("a/b/ckpt");  // parents are created
  fgt::FucinaModel m;
  auto e = m.entries();
  fg_trainer_state s = fgt::fucina_trainer_state();
  ASSERT_EQ(fg_ckpt_dir_save(dir.c_str(), FG_CKPT_DIR_MODEL, e.data(), e.size(), nullptr, 0, &s), FG_OK)
      << fg_last_error();
  EXPECT_EQ(listing(dir), (std::set<std::string>{"model.safetensors", "trainer_state.json"}));
  for (const char *f : {"model.safetensors", "trainer_state.json"})
    EXPECT_EQ(fgt::read_file(dir + "/" + f), fgt::read_file(kGoldenDir + "/" + f)) << f;
}

TEST(CkptDir, OpensFucinasDirectory) {
  fg_ckpt_dir *d = nullptr;
  ASSERT_EQ(fg_ckpt_dir_open(kGoldenDir.c_str(), &d), FG_OK) << fg_last_error();
  const fg_trainer_state *s = fg_ckpt_dir_trainer_state(d);
  EXPECT_EQ(s->step, 1200u);
  EXPECT_EQ(s->seed, 0xDEADBEEFCAFEF00Dull);
  EXPECT_EQ(s->data_seed.v, (1ull << 53) + 1);
  EXPECT_EQ(s->learning_rate.v, (double)3e-4f);
  EXPECT_EQ(fg_ckpt_dir_weights_present(d), (unsigned)FG_CKPT_DIR_MODEL);
  EXPECT_EQ(fg_ckpt_dir_weights_path(d, FG_CKPT_DIR_ADAPTERS), nullptr);
  fg_ckpt *c = nullptr;
  ASSERT_EQ(fg_ckpt_dir_open_weights(d, FG_CKPT_DIR_MODEL, &c), FG_OK) << fg_last_error();
  EXPECT_EQ(fg_ckpt_count(c), 6u);
  const fg_ckpt_tensor *t = fg_ckpt_find(c, "embed");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->nbytes, 24u);
  EXPECT_EQ(memcmp(t->data, fgt::FucinaModel().e, 24), 0);
  fg_ckpt_close(c);
  EXPECT_EQ(fg_ckpt_dir_open_weights(d, FG_CKPT_DIR_ADAPTERS, &c), FG_ERR_NOT_FOUND);
  fgt::FucinaDests dst;
  auto dests = dst.dests();
  ASSERT_EQ(fg_ckpt_dir_load_weights(d, FG_CKPT_DIR_MODEL, dests.data(), dests.size(), nullptr, nullptr), FG_OK)
      << fg_last_error();
  EXPECT_TRUE(dst.equals(fgt::FucinaModel()));
  const uint8_t *b;
  size_t n;
  EXPECT_EQ(fg_ckpt_dir_optimizer(d, &b, &n), FG_ERR_NOT_FOUND);
  fg_ckpt_dir_close(d);
}

TEST(CkptDir, IncompleteDirectoriesAreRefusedAndSaySo) {
  fgt::TempDir t;
  std::string dir = t.file("ckpt");
  mkdir(dir.c_str(), 0777);
  auto model = fgt::read_file(kGoldenDir + "/model.safetensors");
  fgt::write_file(dir + "/model.safetensors", model.data(), model.size());
  fg_ckpt_dir_info info;
  ASSERT_EQ(fg_ckpt_dir_inspect(dir.c_str(), &info), FG_OK);
  EXPECT_FALSE(info.committed);
  EXPECT_EQ(info.weights, (unsigned)FG_CKPT_DIR_MODEL);
  EXPECT_FALSE(info.has_optimizer);
  fg_ckpt_dir *d = reinterpret_cast<fg_ckpt_dir *>(1);
  EXPECT_EQ(fg_ckpt_dir_open(dir.c_str(), &d), FG_ERR_STATE);
  EXPECT_TRUE(says("incomplete checkpoint")) << fg_last_error();
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(fg_ckpt_dir_open(t.file("absent").c_str(), &d), FG_ERR_NOT_FOUND);
  EXPECT_EQ(fg_ckpt_dir_open((dir + "/model.safetensors").c_str(), &d), FG_ERR_INVALID_ARG);
  // A damaged sentinel is its parser's error.
  fgt::write_file(dir + "/trainer_state.json", "{\"format\":1}", 12);
  EXPECT_EQ(fg_ckpt_dir_open(dir.c_str(), &d), FG_ERR_BAD_MAGIC);
  EXPECT_TRUE(says("trainer_state.json")) << fg_last_error();
}

TEST(CkptDir, OptimizerBytesAdaptersAndStalePayloads) {
  fgt::TempDir t;
  std::string dir = t.file("ckpt");
  fgt::FucinaModel m;
  auto e = m.entries();
  fg_trainer_state s;
  fg_trainer_state_init(&s);
  s.step = 8;
  std::vector<uint8_t> opt(1000);
  for (size_t i = 0; i < opt.size(); i++) opt[i] = uint8_t(i * 7);
  ASSERT_EQ(fg_ckpt_dir_save(dir.c_str(), FG_CKPT_DIR_MODEL, e.data(), e.size(), opt.data(), opt.size(), &s), FG_OK);
  fg_ckpt_dir *d = nullptr;
  ASSERT_EQ(fg_ckpt_dir_open(dir.c_str(), &d), FG_OK) << fg_last_error();
  const uint8_t *b = nullptr;
  size_t n = 0;
  ASSERT_EQ(fg_ckpt_dir_optimizer(d, &b, &n), FG_OK);
  EXPECT_EQ(std::vector<uint8_t>(b, b + n), opt);
  fg_ckpt_dir_close(d);

  // Adapters without an optimizer: the model file and optimizer.fucina of the last save go.
  s.step = 16;
  ASSERT_EQ(fg_ckpt_dir_save(dir.c_str(), FG_CKPT_DIR_ADAPTERS, e.data(), 2, nullptr, 0, &s), FG_OK);
  EXPECT_EQ(listing(dir), (std::set<std::string>{"adapters.safetensors", "trainer_state.json"}));
  ASSERT_EQ(fg_ckpt_dir_open(dir.c_str(), &d), FG_OK);
  EXPECT_EQ(fg_ckpt_dir_trainer_state(d)->step, 16u);
  EXPECT_EQ(fg_ckpt_dir_weights_present(d), (unsigned)FG_CKPT_DIR_ADAPTERS);
  fgt::FucinaDests dst;
  auto dests = dst.dests();
  ASSERT_EQ(fg_ckpt_dir_load_weights(d, FG_CKPT_DIR_ADAPTERS, dests.data(), 2, nullptr, nullptr), FG_OK);
  EXPECT_EQ(memcmp(dst.m.e, m.e, sizeof m.e), 0);
  EXPECT_EQ(fg_ckpt_dir_optimizer(d, &b, &n), FG_ERR_NOT_FOUND);
  fg_ckpt_dir_close(d);

  // A refused save (a duplicate name) leaves the committed checkpoint as it was.
  auto bad = e;
  bad[1].name = bad[0].name;
  s.step = 24;
  EXPECT_EQ(fg_ckpt_dir_save(dir.c_str(), FG_CKPT_DIR_MODEL, bad.data(), bad.size(), nullptr, 0, &s),
            FG_ERR_DUPLICATE);
  EXPECT_EQ(listing(dir), (std::set<std::string>{"adapters.safetensors", "trainer_state.json"}));
  fg_trainer_state r;
  ASSERT_EQ(fg_trainer_state_load((dir + "/trainer_state.json").c_str(), &r), FG_OK);
  EXPECT_EQ(r.step, 16u);
}

// ---- crash consistency ----------------------------------------------------------------

constexpr size_t kW = 1 << 16;      // floats in the model tensor
constexpr size_t kOpt = 1 << 18;    // optimizer bytes

// Checkpoint k: every payload byte derives from k, so a mix of two saves is visible.
struct Payload {
  std::vector<float> w = std::vector<float>(kW);
  int64_t k = 0;
  std::vector<uint8_t> opt = std::vector<uint8_t>(kOpt);
  uint64_t sw[1] = {kW}, sk[1] = {1};
  explicit Payload(int64_t step) : k(step) {
    std::fill(w.begin(), w.end(), float(step));
    std::fill(opt.begin(), opt.end(), uint8_t(step * 13 + 1));
    memcpy(opt.data(), &step, 8);
  }
  fg_status save(const std::string &dir) const {
    fg_state_dict_entry e[2] = {{"w", FG_F32, 1, sw, w.data(), kW * 4}, {"k", FG_I64, 1, sk, &k, 8}};
    fg_trainer_state s;
    fg_trainer_state_init(&s);
    s.step = uint64_t(k);
    s.seed = uint64_t(k) * 3;
    FG_TRAINER_STATE_SET(s, learning_rate, 1.0 / double(k + 1));
    return fg_ckpt_dir_save(dir.c_str(), FG_CKPT_DIR_MODEL, e, 2, opt.data(), opt.size(), &s);
  }
};

// The committed checkpoint's step after checking that every file belongs to it; -1 when
// the directory is uncommitted (and opening says so).
int64_t committed_step(const std::string &dir) {
  fg_ckpt_dir *d = nullptr;
  fg_status st = fg_ckpt_dir_open(dir.c_str(), &d);
  if (st == FG_ERR_STATE) {
    EXPECT_TRUE(says("incomplete checkpoint")) << fg_last_error();
    return -1;
  }
  EXPECT_EQ(st, FG_OK) << fg_last_error();
  if (st) return -2;
  const fg_trainer_state *s = fg_ckpt_dir_trainer_state(d);
  int64_t k = int64_t(s->step);
  Payload want(k), got(-1);
  EXPECT_EQ(s->seed, uint64_t(k) * 3);
  EXPECT_EQ(s->learning_rate.v, 1.0 / double(k + 1));
  uint64_t sw[1] = {kW}, sk[1] = {1};
  fg_state_dict_dest dst[2] = {{"w", FG_F32, 1, sw, got.w.data(), kW * 4}, {"k", FG_I64, 1, sk, &got.k, 8}};
  EXPECT_EQ(fg_ckpt_dir_load_weights(d, FG_CKPT_DIR_MODEL, dst, 2, nullptr, nullptr), FG_OK) << fg_last_error();
  EXPECT_EQ(got.k, k);
  EXPECT_EQ(got.w, want.w) << "model.safetensors of another save";
  const uint8_t *b = nullptr;
  size_t n = 0;
  EXPECT_EQ(fg_ckpt_dir_optimizer(d, &b, &n), FG_OK);
  EXPECT_TRUE(n == kOpt && memcmp(b, want.opt.data(), kOpt) == 0) << "optimizer.fucina of another save";
  fg_ckpt_dir_close(d);
  return k;
}

double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

TEST(CkptDir, SigkillAtRandomPointsNeverLeavesACommittedCorruptCheckpoint) {
  fgt::TempDir t;
  std::string dir = t.file("ckpt");
  // Size the random delays to this machine: a few saves' time (fsync-bound).
  double t0 = now_s();
  ASSERT_EQ(Payload(1).save(dir), FG_OK) << fg_last_error();
  ASSERT_EQ(Payload(2).save(dir), FG_OK) << fg_last_error();
  double save_s = std::min((now_s() - t0) / 2, 0.02);
  int64_t last = committed_step(dir), next = 3;
  ASSERT_EQ(last, 2);
  std::mt19937_64 rng(20261201);
  int committed = 0, uncommitted = 0;
  for (int round = 0; round < 50; round++) {
    int64_t start = next;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Saves with a pause between them (the training steps), so that kills find
      // committed directories as well as saves in progress.
      struct timespec pause = {0, long(save_s * 1e9)};
      for (int64_t k = start;; k++) {
        if (Payload(k).save(dir) != FG_OK) _exit(3);
        nanosleep(&pause, nullptr);
      }
    }
    double delay = std::uniform_real_distribution<double>(0, 3 * save_s)(rng);
    struct timespec ts = {0, long(delay * 1e9)};
    nanosleep(&ts, nullptr);
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the saver failed: status " << status;
    int64_t k = committed_step(dir);
    ASSERT_NE(k, -2);
    if (k < 0) {
      uncommitted++;
      last = -1;  // the sentinel is gone: only a newer save can commit now
    } else {
      committed++;
      // The previous checkpoint (killed before its sentinel went) or one this child saved.
      EXPECT_TRUE(k == last || k >= start) << "step " << k << ", last " << last << ", start " << start;
      last = k;
    }
    next = start + 1000000;  // the child's steps never repeat across rounds
  }
  std::cout << "after 50 kills: " << committed << " committed, " << uncommitted << " without a sentinel\n";
  // A save after the crashes commits, and the killed writers' temporary files are gone.
  ASSERT_EQ(Payload(next).save(dir), FG_OK) << fg_last_error();
  EXPECT_EQ(committed_step(dir), next);
  EXPECT_EQ(listing(dir), (std::set<std::string>{"model.safetensors", "optimizer.fucina", "trainer_state.json"}));
}

}  // namespace
