// Fine-tuning on CUDA: in exact mode fg_lm_adapters_grad gives the CPU's loss and adapter
// gradients bit for bit, for every architecture and for quantized bases (tiny checkpoints,
// tests/util/lm_tiny.h), with dropout, kept or recomputed internals.
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

Result grads_on(const std::string &path, const char *spec, size_t keep_bytes) {
  Result r;
  fg_device *dev = nullptr;
  EXPECT_EQ(FG_OK, fg_device_open(spec, &dev)) << fg_last_error();
  fg_lm_options o = {};
  o.mode = FG_GEMM_EXACT;
  fg_lm *lm = nullptr;
  EXPECT_EQ(FG_OK, fg_lm_open(path.c_str(), dev, &o, &lm)) << fg_last_error();
  if (!lm) return r;
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

}  // namespace
