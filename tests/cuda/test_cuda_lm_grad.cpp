// Fine-tuning on CUDA: in exact mode fg_lm_adapters_grad gives the CPU's loss and adapter
// gradients bit for bit, for every architecture and for quantized bases (tiny checkpoints,
// tests/util/lm_tiny.h), with dropout, kept or recomputed internals; fg_lm_full_grad gives the
// CPU's gradient of every weight, and AdamW steps of f16 weights through their masters the
// CPU's weights.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "lm_tiny.h"
#include "testutil.h"

namespace {

using fgt::TempDir;

struct Result {
  double nll = 0;
  std::vector<float> grads;
};

// The model at path on device spec, in exact mode (NULL after reporting a failure).
fg_lm *open_exact(const std::string &path, const char *spec, fg_device **dev) {
  *dev = nullptr;
  EXPECT_EQ(FG_OK, fg_device_open(spec, dev)) << fg_last_error();
  fg_lm_options o = {};
  o.mode = FG_GEMM_EXACT;
  fg_lm *lm = nullptr;
  EXPECT_EQ(FG_OK, fg_lm_open(path.c_str(), *dev, &o, &lm)) << fg_last_error();
  return lm;
}

Result grads_on(const std::string &path, const char *spec, size_t keep_bytes) {
  Result r;
  fg_device *dev = nullptr;
  fg_lm *lm = open_exact(path, spec, &dev);
  if (!lm) {
    fg_device_close(dev);
    return r;
  }
  fg_lm_grad_set_keep_bytes(lm, keep_bytes);
  fg_lm_adapters_config c = {};
  c.targets = FG_LM_ADAPTERS_ALL;
  c.lora = {4, 8.0f, 0.1f};
  c.seed = 3;
  c.mode = FG_GEMM_EXACT;
  fg_lm_adapters *ad = nullptr;
  EXPECT_EQ(FG_OK, fg_lm_adapters_create(lm, &c, &ad)) << fg_last_error();
  const fg_lora_slot *s = nullptr;
  const size_t n = fg_lm_adapters_slots(ad, &s);
  uint64_t st = 17;
  for (size_t i = 0; i < n; i++) {  // B random, the same values on both devices
    std::vector<float> v(s[i].lora->b->numel);
    for (auto &x : v) x = fgt::tiny_rand(st) * 0.5f;
    EXPECT_EQ(FG_OK, fg_tensor_upload(s[i].lora->b, v.data(), v.size() * 4, nullptr));
  }
  std::vector<int32_t> ids;
  for (int i = 0; i < 23; i++) ids.push_back((i * 7 + 3) % 61);
  std::vector<size_t> len = {14, 9};
  const fg_lm_train_batch b = {2, len.data(), ids.data(), nullptr};
  const uint64_t dseed = 5;
  size_t np = 0;
  EXPECT_EQ(FG_OK, fg_lm_adapters_grad(ad, &b, 0.05f, &dseed, &r.nll, &np)) << fg_last_error();
  for (size_t i = 0; i < n; i++)
    for (const fg_tensor *t : {s[i].lora->a, s[i].lora->b}) {
      std::vector<float> h(t->numel);
      EXPECT_EQ(FG_OK, fg_device_copy(dev, h.data(), t->grad, h.size() * 4, FG_COPY_D2H));
      r.grads.insert(r.grads.end(), h.begin(), h.end());
    }
  fg_lm_adapters_free(ad);
  fg_lm_free(lm);
  fg_device_close(dev);
  return r;
}

TEST(CudaLmGrad, ExactGradientsEqualTheCpus) {
  FGT_REQUIRE_CUDA();
  for (const char *arch : {"llama", "qwen2", "qwen3", "gemma3"})
    for (fg_dtype wt : {FG_F32, FG_Q8_0, FG_Q4_K}) {
      fgt::TinySpec s;
      s.arch = arch;
      s.E = 256;
      s.F = 512;
      s.HD = 64;
      s.wtype = wt;
      if (s.arch == "gemma3") s.L = 4, s.window = 3;
      const fgt::TinyModel m = fgt::tiny_make(s);
      TempDir td;
      ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf"))) << fg_last_error();
      for (size_t keep : {(size_t)1 << 30, (size_t)0}) {
        const Result cpu = grads_on(td.file("m.gguf"), "cpu", keep), gpu = grads_on(td.file("m.gguf"), "cuda", keep);
        const std::string what = std::string(arch) + " " + fg_dtype_name(wt) + (keep ? " kept" : " recomputed");
        ASSERT_EQ(cpu.grads.size(), gpu.grads.size()) << what;
        EXPECT_EQ(0, memcmp(&cpu.nll, &gpu.nll, sizeof cpu.nll)) << what << ": " << cpu.nll << " vs " << gpu.nll;
        EXPECT_EQ(0, memcmp(cpu.grads.data(), gpu.grads.data(), cpu.grads.size() * 4)) << what;
      }
    }
}

// Every weight's gradient and three AdamW steps (f16 weights through f32 masters).
std::vector<uint8_t> full_on(const std::string &path, const char *spec, std::vector<float> *grads) {
  std::vector<uint8_t> weights;
  fg_device *dev = nullptr;
  fg_lm *lm = open_exact(path, spec, &dev);
  fg_lm_full *f = nullptr;
  if (lm) {
    EXPECT_EQ(FG_OK, fg_lm_full_create(lm, 0, &f)) << fg_last_error();
  }
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_ADAMW);
  c.lr = 1e-3f;
  fg_optim *opt = nullptr;
  if (f) {
    EXPECT_EQ(FG_OK, fg_optim_create(dev, &c, &opt));
  }
  if (opt) {
    EXPECT_EQ(FG_OK, fg_lm_full_register(f, opt, nullptr)) << fg_last_error();
  }
  std::vector<int32_t> ids;
  for (int i = 0; i < 23; i++) ids.push_back((i * 7 + 3) % 61);
  std::vector<size_t> len = {14, 9};
  const fg_lm_train_batch b = {2, len.data(), ids.data(), nullptr};
  fg_tensor *const *ps = nullptr;
  const size_t n = f ? fg_lm_full_params(f, &ps, nullptr) : 0;
  for (int step = 0; opt && step < 3; step++) {
    double nll = 0;
    size_t np = 0;
    EXPECT_EQ(FG_OK, fg_optim_zero_grad(opt, nullptr));
    EXPECT_EQ(FG_OK, fg_lm_full_grad(f, &b, 0.05f, &nll, &np)) << fg_last_error();
    for (size_t i = 0; step == 0 && i < n; i++) {
      std::vector<float> h(ps[i]->numel);
      EXPECT_EQ(FG_OK, fg_device_copy(dev, h.data(), ps[i]->grad, h.size() * 4, FG_COPY_D2H));
      grads->insert(grads->end(), h.begin(), h.end());
    }
    EXPECT_EQ(FG_OK, fg_optim_step(opt, nullptr)) << fg_last_error();
  }
  for (size_t i = 0; i < n; i++) {
    std::vector<uint8_t> h(ps[i]->nbytes);
    EXPECT_EQ(FG_OK, fg_tensor_download(ps[i], h.data(), h.size(), nullptr));
    weights.insert(weights.end(), h.begin(), h.end());
  }
  fg_optim_free(opt);
  fg_lm_full_free(f);
  fg_lm_free(lm);
  fg_device_close(dev);
  return weights;
}

TEST(CudaLmGrad, FullFineTuningEqualsTheCpus) {
  FGT_REQUIRE_CUDA();
  for (const char *arch : {"llama", "qwen2", "gemma3"})
    for (fg_dtype wt : {FG_F32, FG_F16}) {
      fgt::TinySpec s;
      s.arch = arch;
      s.E = 128, s.F = 256, s.HD = 32;
      s.wtype = wt;
      if (s.arch == "gemma3") s.L = 4, s.window = 3;
      const fgt::TinyModel m = fgt::tiny_make(s);
      TempDir td;
      ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, td.file("m.gguf"))) << fg_last_error();
      std::vector<float> gc, gg;
      const auto wc = full_on(td.file("m.gguf"), "cpu", &gc), wg = full_on(td.file("m.gguf"), "cuda", &gg);
      const std::string what = std::string(arch) + " " + fg_dtype_name(wt);
      ASSERT_EQ(gc.size(), gg.size()) << what;
      ASSERT_FALSE(gc.empty()) << what;
      EXPECT_EQ(0, memcmp(gc.data(), gg.data(), gc.size() * 4)) << what << ": gradients";
      ASSERT_EQ(wc.size(), wg.size()) << what;
      EXPECT_EQ(0, memcmp(wc.data(), wg.data(), wc.size())) << what << ": weights after 3 AdamW steps";
    }
}

}  // namespace
