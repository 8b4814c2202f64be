// forgia train spirals and the training part of forgia demo: the MLP trains to >= 95% with
// every optimizer (checked again here by an independent host forward pass over the saved
// state dict), a run of N steps equals N/2 steps + save + resume in a new process + N/2 steps
// byte for byte, runs are deterministic from the seed, bad usage and bad checkpoints are
// refused; and the ReLU ops the example runs on give their exact values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "spirals_data.h"
#include "testutil.h"

namespace {

std::string cli(const std::string &args) { return std::string(FORGIA_CLI) + " " + args; }

std::string train(const std::string &args) { return cli("train spirals " + args); }

// "final: step N, loss L, accuracy A (...)" -> A.
double accuracy_of(const std::string &out) {
  const size_t p = out.find("final: step ");
  if (p == std::string::npos) return -1;
  const size_t a = out.find("accuracy ", p);
  return a == std::string::npos ? -1 : std::atof(out.c_str() + a + 9);
}



// The saved state dict, loaded strictly by name, classifies the data (an f64 forward pass
// written here, independent of the CLI's GEMM path). Returns the number of correct points.
int host_correct(const std::string &model, uint64_t seed) {
  std::vector<float> w1(128), b1(64), w2(4096), b2(64), w3(128), b3(2);
  const uint64_t s_w1[2] = {64, 2}, s_b1[1] = {64}, s_w2[2] = {64, 64}, s_b2[1] = {64}, s_w3[2] = {2, 64},
                 s_b3[1] = {2};
  const fg_state_dict_dest d[] = {{"fc1.weight", FG_F32, 2, s_w1, w1.data(), 512},
                                  {"fc1.bias", FG_F32, 1, s_b1, b1.data(), 256},
                                  {"fc2.weight", FG_F32, 2, s_w2, w2.data(), 16384},
                                  {"fc2.bias", FG_F32, 1, s_b2, b2.data(), 256},
                                  {"fc3.weight", FG_F32, 2, s_w3, w3.data(), 512},
                                  {"fc3.bias", FG_F32, 1, s_b3, b3.data(), 8}};
  EXPECT_EQ(FG_OK, fg_state_dict_load_file(model.c_str(), d, 6, nullptr, nullptr)) << fg_last_error();
  std::vector<float> xy;
  std::vector<int> label;
  fgt::spirals_data(seed, xy, label);
  int ok = 0;
  for (int n = 0; n < 200; n++) {
    double h1[64], h2[64], l[2];
    for (int j = 0; j < 64; j++)
      h1[j] = std::max(0.0, (double)w1[2 * j] * xy[2 * n] + (double)w1[2 * j + 1] * xy[2 * n + 1] + b1[j]);
    for (int j = 0; j < 64; j++) {
      double z = b2[j];
      for (int k = 0; k < 64; k++) z += (double)w2[64 * j + k] * h1[k];
      h2[j] = std::max(0.0, z);
    }
    for (int c = 0; c < 2; c++) {
      l[c] = b3[c];
      for (int k = 0; k < 64; k++) l[c] += (double)w3[64 * c + k] * h2[k];
    }
    ok += (l[1] > l[0] ? 1 : 0) == label[n];
  }
  return ok;
}

}  // namespace

TEST(TrainCli, ReluOpsGiveExactValues) {
  fg_device *cpu = nullptr;
  ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  const float nan = std::nanf(""), inf = INFINITY;
  std::vector<float> x = {-2.0f, -0.0f, 0.0f, 1e-45f, -1e-45f, 3.5f, inf, -inf, nan};
  std::vector<float> y(x.size(), 7.0f);
  fg_op_args a;
  std::memset(&a, 0, sizeof a);
  a.ptr[0] = y.data();
  a.ptr[1] = x.data();
  a.dtype[0] = a.dtype[1] = FG_F32;
  a.n = x.size();
  fg_op_params p;
  std::memset(&p, 0, sizeof p);
  ASSERT_EQ(FG_OK, fg_op_run(cpu, FG_OP_RELU, &p, &a, 1, nullptr)) << fg_last_error();
  const std::vector<float> want = {0.0f, 0.0f, 0.0f, 1e-45f, 0.0f, 3.5f, inf, 0.0f};
  for (size_t i = 0; i < want.size(); i++) {
    uint32_t g, w;
    std::memcpy(&g, &y[i], 4);
    std::memcpy(&w, &want[i], 4);
    EXPECT_EQ(w, g) << i;  // -0 and negatives become +0
  }
  uint32_t nb;
  std::memcpy(&nb, &y.back(), 4);
  EXPECT_EQ(0x7fc00000u, nb);  // NaN passes through, canonical
  // backward: the gradient where the output is > 0, else +0; in place
  std::vector<float> g = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  a.ptr[0] = g.data();
  a.ptr[1] = y.data();
  ASSERT_EQ(FG_OK, fg_op_run(cpu, FG_OP_RELU_BACKWARD, &p, &a, 1, nullptr)) << fg_last_error();
  EXPECT_EQ((std::vector<float>{0, 0, 0, 4, 0, 6, 7, 0, 0}), g);
  fg_device_close(cpu);
}

TEST(TrainCli, EveryOptimizerTrainsToAccuracyAndTheTwinAgrees) {
  fgt::TempDir d;
  for (const char *o : {"sgd", "adam", "adamw", "muon", "apollo", "apollo-mini"}) {
    SCOPED_TRACE(o);
    std::string out, err;
    const std::string dir = d.file(o);
    ASSERT_EQ(0, fgt::run(train(std::string("--device cpu --optim ") + o + " --save " + dir), &out, &err)) << err;
    EXPECT_GE(accuracy_of(out), 0.95) << out;
    EXPECT_NE(std::string::npos, out.find("200/200 predictions equal, logits bit-identical")) << out;
    EXPECT_GE(host_correct(dir + "/model.safetensors", 1), 190);
    fg_trainer_state ts;
    ASSERT_EQ(FG_OK, fg_trainer_state_load((dir + "/trainer_state.json").c_str(), &ts)) << fg_last_error();
    EXPECT_EQ(300u, ts.step);
    EXPECT_EQ(1u, ts.seed);
  }
}

TEST(TrainCli, HalfSaveResumeHalfEqualsOneRunByteForByte) {
  fgt::TempDir d;
  for (const char *o : {"sgd", "adam", "adamw", "muon", "apollo", "apollo-mini"}) {
    SCOPED_TRACE(o);
    const std::string opt = std::string(" --device cpu --optim ") + o;
    const std::string a = d.file(std::string(o) + "_a"), b = d.file(std::string(o) + "_b");
    std::string out, err;
    ASSERT_EQ(0, fgt::run(train("--steps 80 --seed 7 --save " + a + opt), &out, &err)) << err;
    ASSERT_EQ(0, fgt::run(train("--steps 40 --seed 7 --save " + b + opt), &out, &err)) << err;
    ASSERT_EQ(0, fgt::run(train("--steps 80 --resume " + b + " --save " + b + opt), &out, &err)) << err;
    EXPECT_NE(std::string::npos, out.find("steps 40..80")) << out;
    for (const char *f : {"model.safetensors", "optimizer.fucina", "trainer_state.json"})
      EXPECT_TRUE(fgt::same_bytes(a + "/" + f, b + "/" + f)) << f;
  }
}

TEST(TrainCli, TheSeedDecidesEverything) {
  fgt::TempDir d;
  std::string err;
  ASSERT_EQ(0, fgt::run(train("--device cpu --steps 20 --seed 5 --save " + d.file("a")), nullptr, &err)) << err;
  ASSERT_EQ(0, fgt::run(train("--device cpu --steps 20 --seed 5 --save " + d.file("b")), nullptr, &err)) << err;
  ASSERT_EQ(0, fgt::run(train("--device cpu --steps 20 --seed 6 --save " + d.file("c")), nullptr, &err)) << err;
  EXPECT_TRUE(fgt::same_bytes(d.file("a/model.safetensors"), d.file("b/model.safetensors")));
  EXPECT_FALSE(fgt::same_bytes(d.file("a/model.safetensors"), d.file("c/model.safetensors")));
  // --save-every leaves a committed checkpoint at the last step
  ASSERT_EQ(0, fgt::run(train("--device cpu --steps 30 --save-every 20 --save " + d.file("e")), nullptr, &err)) << err;
  fg_trainer_state ts;
  ASSERT_EQ(FG_OK, fg_trainer_state_load(d.file("e/trainer_state.json").c_str(), &ts)) << fg_last_error();
  EXPECT_EQ(30u, ts.step);
}

TEST(TrainCli, BadUsageAndBadCheckpointsAreRefused) {
  fgt::TempDir d;
  std::string out, err;
  EXPECT_EQ(2, fgt::run(cli("train mnist"), &out, &err));
  EXPECT_NE(std::string::npos, err.find("unknown task")) << err;
  EXPECT_EQ(2, fgt::run(train("--optim lion"), &out, &err));
  EXPECT_EQ(2, fgt::run(train("--steps -3"), &out, &err));
  EXPECT_EQ(2, fgt::run(train("--save-every 5"), &out, &err));
  EXPECT_EQ(2, fgt::run(train("--resume x --seed 3"), &out, &err));
  EXPECT_EQ(2, fgt::run(train("--device tpu"), &out, &err));
  const std::string ck = d.file("ck");
  ASSERT_EQ(0, fgt::run(train("--device cpu --optim sgd --steps 10 --save " + ck), &out, &err)) << err;
  // another optimizer's state, a checkpoint past --steps, a missing sentinel
  EXPECT_EQ(1, fgt::run(train("--device cpu --optim adamw --steps 20 --resume " + ck), &out, &err));
  EXPECT_EQ(1, (int)std::count(err.begin(), err.end(), '\n')) << err;
  EXPECT_EQ(1, fgt::run(train("--device cpu --optim sgd --steps 5 --resume " + ck), &out, &err));
  EXPECT_NE(std::string::npos, err.find("past --steps")) << err;
  ASSERT_EQ(0, std::remove((ck + "/trainer_state.json").c_str()));
  EXPECT_EQ(1, fgt::run(train("--device cpu --optim sgd --steps 20 --resume " + ck), &out, &err));
  EXPECT_NE(std::string::npos, err.find("incomplete")) << err;
  EXPECT_EQ(1, fgt::run(train("--device cpu --resume " + d.file("nowhere")), &out, &err));
}

TEST(TrainCli, DemoTrainingPartPassesEveryCheck) {
  fgt::TempDir d;
  std::string out, err;
  ASSERT_EQ(0, fgt::run(cli("demo --only train --device cpu --dir " + d.file("demo")), &out, &err)) << out << err;
  EXPECT_NE(std::string::npos, out.find("memcmp-equal to the uninterrupted run")) << out;
  EXPECT_NE(std::string::npos, out.find("every check passed")) << out;
  EXPECT_TRUE(fgt::same_bytes(d.file("demo/train/full/model.safetensors"), d.file("demo/train/resumed/model.safetensors")));
  fg_ckpt *g = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(d.file("demo/train/spirals.gguf").c_str(), &g)) << fg_last_error();
  EXPECT_EQ(6u, fg_ckpt_count(g));
  fg_ckpt_close(g);
  EXPECT_EQ(2, fgt::run(cli("demo --only everything"), &out, &err));
}

// The example on a GPU gives the CPU's bytes (exact GEMM, elementwise ops).
TEST(TrainCli, CudaTrainsTheSameBytesAsTheCpu) {
  FGT_REQUIRE_CUDA();
  fgt::TempDir d;
  std::string err;
  ASSERT_EQ(0, fgt::run(train("--device cpu --steps 50 --save " + d.file("c")), nullptr, &err)) << err;
  ASSERT_EQ(0, fgt::run(train("--device cuda --steps 50 --save " + d.file("g")), nullptr, &err)) << err;
  EXPECT_TRUE(fgt::same_bytes(d.file("c/model.safetensors"), d.file("g/model.safetensors")));
  EXPECT_TRUE(fgt::same_bytes(d.file("c/optimizer.fucina"), d.file("g/optimizer.fucina")));
}
