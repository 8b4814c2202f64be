// The runtime on CUDA: whole-model logits in exact mode equal the CPU's bit for bit for every
// architecture and weight dtype (tiny checkpoints, tests/util/lm_tiny.h), token by token and
// in one batch; fast mode (cuBLAS) stays within rounding of them; the NLL equals the CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "lm_tiny.h"
#include "testutil.h"

namespace {

using fgt::TempDir;

// Logits of every row of ids, fed in pieces of `step` tokens.
std::vector<float> logits_on(const std::string &path, const char *spec, fg_gemm_mode mode,
                             const std::vector<int32_t> &ids, size_t step) {
  fg_device *dev = nullptr;
  EXPECT_EQ(FG_OK, fg_device_open(spec, &dev)) << fg_last_error();
  fg_lm_options o = {};
  o.mode = mode;
  fg_lm *lm = nullptr;
  EXPECT_EQ(FG_OK, fg_lm_open(path.c_str(), dev, &o, &lm)) << fg_last_error();
  std::vector<float> out;
  if (lm) {
    const size_t V = fg_lm_get_config(lm)->n_vocab;
    fg_lm_cache *c = nullptr;
    EXPECT_EQ(FG_OK, fg_lm_cache_create(lm, 1, ids.size(), &c));
    for (size_t t = 0; c && t < ids.size(); t += step) {
      const size_t n = std::min(step, ids.size() - t);
      const fg_lm_batch b = {n, ids.data() + t, nullptr, nullptr};
      const float *lg = nullptr;
      size_t rows = 0;
      EXPECT_EQ(FG_OK, fg_lm_forward(lm, c, &b, &lg, &rows)) << fg_last_error();
      std::vector<float> host(rows * V);
      EXPECT_EQ(FG_OK, fg_device_copy(dev, host.data(), lg, host.size() * 4, FG_COPY_D2H));
      out.insert(out.end(), host.begin(), host.end());
    }
    fg_lm_cache_free(c);
  }
  fg_lm_free(lm);
  fg_device_close(dev);
  return out;
}

TEST(CudaLm, ExactLogitsEqualTheCpusForEveryArchitecture) {
  FGT_REQUIRE_CUDA();
  for (const char *arch : {"llama", "qwen2", "qwen3", "gemma3"})
    for (fg_dtype wt : {FG_F32, FG_Q8_0, FG_Q4_K, FG_Q6_K}) {
      fgt::TinySpec s;
      s.arch = arch;
      s.E = 256;
      s.F = 512;
      s.HD = 64;
      s.wtype = wt;
      if (s.arch == "gemma3") s.L = 6, s.window = 3;
      TempDir td;
      const fgt::TinyModel m = fgt::tiny_make(s);
      ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf"))) << fg_last_error();
      std::vector<int32_t> ids;
      for (int i = 0; i < 11; i++) ids.push_back((i * 17 + 3) % (int)s.V);
      const auto cpu = logits_on(td.file("m.gguf"), "cpu", FG_GEMM_EXACT, ids, ids.size());
      for (size_t step : {ids.size(), (size_t)1, (size_t)4}) {
        const auto gpu = logits_on(td.file("m.gguf"), "cuda:0", FG_GEMM_EXACT, ids, step);
        ASSERT_EQ(cpu.size(), gpu.size());
        EXPECT_EQ(0, memcmp(cpu.data(), gpu.data(), cpu.size() * 4))
            << arch << " " << fg_dtype_name(wt) << " in steps of " << step;
      }
      const auto fast = logits_on(td.file("m.gguf"), "cuda:0", FG_GEMM_FAST, ids, ids.size());
      ASSERT_EQ(cpu.size(), fast.size());
      for (size_t i = 0; i < cpu.size(); i++)
        ASSERT_NEAR(cpu[i], fast[i], 1e-3 * (1.0 + std::fabs(cpu[i]))) << arch << " " << fg_dtype_name(wt) << " at " << i;
    }
}

TEST(CudaLm, NllEqualsTheCpus) {
  FGT_REQUIRE_CUDA();
  fgt::TinySpec s;
  s.wtype = FG_Q8_0;
  TempDir td;
  const fgt::TinyModel m = fgt::tiny_make(s);
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf"))) << fg_last_error();
  std::vector<int32_t> ids;
  for (int i = 0; i < 40; i++) ids.push_back((i * 7 + 1) % (int)s.V);
  std::vector<double> nll[2];
  const char *specs[2] = {"cpu", "cuda:0"};
  for (int d = 0; d < 2; d++) {
    fg_device *dev = nullptr;
    ASSERT_EQ(FG_OK, fg_device_open(specs[d], &dev));
    fg_lm_options o = {};
    o.mode = FG_GEMM_EXACT;
    fg_lm *lm = nullptr;
    ASSERT_EQ(FG_OK, fg_lm_open(td.file("m.gguf").c_str(), dev, &o, &lm)) << fg_last_error();
    nll[d].resize(ids.size() - 1);
    ASSERT_EQ(FG_OK, fg_lm_nll(lm, ids.data(), ids.size(), 16, nll[d].data())) << fg_last_error();
    fg_lm_free(lm);
    fg_device_close(dev);
  }
  EXPECT_EQ(0, memcmp(nll[0].data(), nll[1].data(), nll[0].size() * 8));
}

}  // namespace
