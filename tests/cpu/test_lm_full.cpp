// Full fine-tuning's way back to a servable file (forgia/lm_full.h, export --weights): a tiny
// GGUF model of f16 or f32 weights trained by one optimizer step, its weights saved as a state
// dict under the file's names, put in place by fg_export_merge's weights mode, and the written
// GGUF scores every token with the bits of the trained model in memory. Bad weight files are
// refused at open, naming the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/forgia.h"
#include "lm_tiny.h"
#include "testutil.h"

namespace {

using fgt::TempDir;

struct Dev {
  fg_device *d = nullptr;
  Dev() { EXPECT_EQ(FG_OK, fg_device_open("cpu", &d)) << fg_last_error(); }
  ~Dev() { fg_device_close(d); }
};

fg_lm *open_lm(const std::string &path, fg_device *dev) {
  fg_lm_options o = {};
  o.mode = FG_GEMM_EXACT;
  fg_lm *lm = nullptr;
  EXPECT_EQ(FG_OK, fg_lm_open(path.c_str(), dev, &o, &lm)) << fg_last_error();
  return lm;
}

std::vector<double> nll_of(fg_lm *lm, const std::vector<int32_t> &ids) {
  std::vector<double> v(ids.size());
  EXPECT_EQ(FG_OK, fg_lm_nll(lm, ids.data(), ids.size(), 0, v.data())) << fg_last_error();
  return v;
}

// The parameters as a state dict (host copies in bufs).
std::vector<fg_state_dict_entry> entries_of(fg_tensor *const *ps, size_t n, std::vector<std::vector<uint8_t>> &bufs) {
  std::vector<fg_state_dict_entry> e;
  bufs.resize(n);
  for (size_t i = 0; i < n; i++) {
    bufs[i].resize(ps[i]->nbytes);
    EXPECT_EQ(FG_OK, fg_tensor_download(ps[i], bufs[i].data(), bufs[i].size(), nullptr));
    e.push_back({ps[i]->name, ps[i]->dtype, ps[i]->ndim, ps[i]->shape, bufs[i].data(), ps[i]->nbytes});
  }
  return e;
}

fg_status export_weights(const std::string &base, const std::string &weights, const std::string &out) {
  fg_ckpt *src = nullptr;
  fg_status st = fg_ckpt_open(base.c_str(), &src);
  if (st) return st;
  fg_export_merge_options o = {weights.c_str(), 0.0f, 0, true};
  fg_export_merge *m = nullptr;
  st = fg_export_merge_create(src, &o, &m);
  if (!st) st = fg_export_merge_run(m, out.c_str(), nullptr, nullptr);
  fg_export_merge_free(m);
  fg_ckpt_close(src);
  return st;
}

class LmFullExport : public ::testing::TestWithParam<fg_dtype> {};

TEST_P(LmFullExport, TrainedWeightsServeFromTheExportedFile) {
  fgt::TinySpec s;
  s.wtype = GetParam();
  const fgt::TinyModel m = fgt::tiny_make(s);
  TempDir td;
  const std::string base = td.file("base.gguf");
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, base)) << fg_last_error();
  Dev dev;
  fg_lm *lm = open_lm(base, dev.d);
  ASSERT_TRUE(lm);
  const std::vector<int32_t> ids = {3, 17, 5, 42, 8, 1, 29, 33, 7};
  const std::vector<double> before = nll_of(lm, ids);
  fg_lm_full *f = nullptr;
  ASSERT_EQ(FG_OK, fg_lm_full_create(lm, 0, &f)) << fg_last_error();
  fg_optim_config c = fg_optim_defaults(FG_OPTIM_ADAMW);
  c.lr = 0.01f;
  fg_optim *opt = nullptr;
  ASSERT_EQ(FG_OK, fg_optim_create(dev.d, &c, &opt)) << fg_last_error();
  ASSERT_EQ(FG_OK, fg_lm_full_register(f, opt, nullptr)) << fg_last_error();
  const size_t len = ids.size();
  const fg_lm_train_batch b = {1, &len, ids.data(), nullptr};
  for (int step = 0; step < 3; step++) {
    double sum = 0;
    size_t np = 0;
    ASSERT_EQ(FG_OK, fg_optim_zero_grad(opt, nullptr));
    ASSERT_EQ(FG_OK, fg_lm_full_grad(f, &b, 1.0f / 8.0f, &sum, &np)) << fg_last_error();
    ASSERT_EQ(FG_OK, fg_optim_step(opt, nullptr)) << fg_last_error();
  }
  const std::vector<double> after = nll_of(lm, ids);
  double sb = 0, sa = 0;
  for (size_t i = 0; i + 1 < ids.size(); i++) sb += before[i], sa += after[i];
  EXPECT_LT(sa, sb);  // the steps lowered the loss of what they trained on
  fg_tensor *const *ps = nullptr;
  const size_t n = fg_lm_full_params(f, &ps, nullptr);
  std::vector<std::vector<uint8_t>> bufs;
  const auto e = entries_of(ps, n, bufs);
  const std::string w = td.file("model.safetensors"), out = td.file("trained.gguf");
  ASSERT_EQ(FG_OK, fg_state_dict_save(w.c_str(), e.data(), e.size())) << fg_last_error();
  // a directory resolves to its model.safetensors, as finetune --full writes it
  ASSERT_EQ(FG_OK, export_weights(base, td.path, out)) << fg_last_error();
  fg_lm *served = open_lm(out, dev.d);
  ASSERT_TRUE(served);
  const std::vector<double> got = nll_of(served, ids);
  EXPECT_EQ(0, memcmp(after.data(), got.data(), after.size() * sizeof(double)));
  fg_lm_free(served);
  fg_optim_free(opt);
  fg_lm_full_free(f);
  fg_lm_free(lm);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LmFullExport, ::testing::Values(FG_F32, FG_F16, FG_BF16),
                         [](const ::testing::TestParamInfo<fg_dtype> &i) { return std::string(fg_dtype_name(i.param)); });

// f32 weights into an f16 model are rounded once; a wrong name, shape or kind of tensor, and a
// quantized model, are refused at open.
TEST(LmFullExportErrors, BadWeightFilesAreRefused) {
  fgt::TinySpec s;
  s.wtype = FG_F16;
  const fgt::TinyModel m = fgt::tiny_make(s);
  TempDir td;
  const std::string base = td.file("base.gguf"), out = td.file("o.gguf");
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(m, base)) << fg_last_error();
  const size_t E = s.E, Q = s.H * s.HD;
  std::vector<float> wq(Q * E, 0.333333343f);
  const uint64_t shape[2] = {Q, E}, bad[2] = {Q, E + 1};
  struct Case {
    const char *name;
    const uint64_t *shape;
    fg_status want;
    const char *says;
  } cases[] = {{"blk.0.attn_q.weight", shape, FG_OK, nullptr},
               {"blk.9.attn_q.weight", shape, FG_ERR_NOT_FOUND, "blk.9.attn_q.weight"},
               {"blk.0.attn_q.weight", bad, FG_ERR_BAD_SHAPE, "blk.0.attn_q.weight"},
               {"layers.0.q.lora_a", shape, FG_ERR_INVALID_ARG, "--adapters"}};
  for (const Case &k : cases) {
    const std::string w = td.file("w.safetensors");
    const uint64_t bytes = k.shape[0] * k.shape[1] * 4;
    std::vector<float> v(k.shape[0] * k.shape[1], 0.333333343f);
    const fg_state_dict_entry e = {k.name, FG_F32, 2, k.shape, v.data(), bytes};
    ASSERT_EQ(FG_OK, fg_state_dict_save(w.c_str(), &e, 1)) << fg_last_error();
    EXPECT_EQ(k.want, export_weights(base, w, out)) << k.name << ": " << fg_last_error();
    if (k.says) {
      EXPECT_NE(nullptr, strstr(fg_last_error(), k.says)) << fg_last_error();
    }
  }
  // The f32 value went in rounded to the model's f16: 0.333333343 -> 0x3555.
  fg_ckpt *o = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(out.c_str(), &o)) << fg_last_error();
  const fg_ckpt_tensor *t = fg_ckpt_find(o, "blk.0.attn_q.weight");
  ASSERT_TRUE(t);
  EXPECT_EQ(FG_F16, t->dtype);
  std::vector<uint16_t> h(Q * E);
  ASSERT_EQ(t->nbytes, h.size() * 2);
  ASSERT_EQ(FG_OK, fg_mapping_copy(fg_ckpt_file_at(o, t->file)->map, h.data(), t->offset, t->nbytes)) << fg_last_error();
  for (uint16_t x : h) ASSERT_EQ(0x3555, x);
  fg_ckpt_close(o);
  // A quantized model tensor takes no trained weight.
  fgt::TinySpec qs;
  qs.wtype = FG_Q8_0;
  qs.E = 64, qs.F = 64;
  const fgt::TinyModel qm = fgt::tiny_make(qs);
  const std::string qb = td.file("q.gguf");
  ASSERT_EQ(FG_OK, fgt::tiny_write_gguf(qm, qb)) << fg_last_error();
  const uint64_t qshape[2] = {qs.H * qs.HD, qs.E};
  std::vector<float> qv(qshape[0] * qshape[1], 0.5f);
  const fg_state_dict_entry qe = {"blk.0.attn_q.weight", FG_F32, 2, qshape, qv.data(), qv.size() * 4};
  const std::string qw = td.file("qw.safetensors");
  ASSERT_EQ(FG_OK, fg_state_dict_save(qw.c_str(), &qe, 1));
  EXPECT_EQ(FG_ERR_QUANTIZED_BASE, export_weights(qb, qw, out));
  EXPECT_NE(nullptr, strstr(fg_last_error(), "q8_0")) << fg_last_error();
}

}  // namespace
