// Checkpoint tensors as fg_tensor: a zero-copy, read-only view that outlives the checkpoint,
// and converted copies (bf16 -> f32, q8_0 -> f32); a truncated file fails cleanly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "testutil.h"

namespace {
struct Fixture {
  fgt::TempDir dir;
  std::string path = dir.path + "/m.safetensors";
  std::vector<float> w = fgt::gaussian(64 * 1024, 3);  // many pages: a truncation unmaps some
  std::vector<uint16_t> wb;
  fg_device *cpu = nullptr;
  Fixture() {
    for (float v : w) wb.push_back(fg_f32_to_bf16(v));
    const uint64_t shape[2] = {64, 1024};
    fg_st_write_tensor t[2] = {{"w.f32", FG_F32, 2, shape, w.data(), w.size() * 4},
                               {"w.bf16", FG_BF16, 2, shape, wb.data(), wb.size() * 2}};
    EXPECT_EQ(FG_OK, fg_st_save(path.c_str(), t, 2, nullptr, 0)) << fg_last_error();
    EXPECT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  }
  ~Fixture() { fg_device_close(cpu); }
};
}  // namespace

TEST(TensorCkpt, ViewIsZeroCopyReadOnlyAndOutlivesTheCheckpoint) {
  Fixture f;
  fg_ckpt *c = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(f.path.c_str(), &c));
  const fg_ckpt_tensor *ct = fg_ckpt_find(c, "w.f32");
  ASSERT_NE(nullptr, ct);
  fg_tensor *v = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_view_ckpt(f.cpu, c, ct, &v)) << fg_last_error();
  EXPECT_EQ((const void *)ct->data, v->data);
  EXPECT_TRUE(v->readonly);
  EXPECT_FALSE(v->owns_data);
  EXPECT_EQ(2, v->ndim);
  EXPECT_EQ(1024u, v->shape[1]);
  fg_ckpt_close(c);
  EXPECT_EQ(0, std::memcmp(v->data, f.w.data(), f.w.size() * 4));  // the mapping is still alive
  EXPECT_EQ(FG_ERR_STATE, fg_tensor_upload(v, f.w.data(), v->nbytes, nullptr));
  fg_tensor_free(v);
}

TEST(TensorCkpt, LoadConvertsToTheAskedDtype) {
  Fixture f;
  fg_ckpt *c = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(f.path.c_str(), &c));
  fg_tensor *t = nullptr;
  ASSERT_EQ(FG_OK, fg_tensor_load_ckpt(f.cpu, c, fg_ckpt_find(c, "w.bf16"), FG_F32, &t)) << fg_last_error();
  ASSERT_EQ(FG_F32, t->dtype);
  for (size_t i = 0; i < f.w.size(); i++) ASSERT_EQ(fg_bf16_to_f32(f.wb[i]), ((float *)t->data)[i]) << i;
  EXPECT_TRUE(t->owns_data);
  EXPECT_FALSE(t->readonly);
  fg_tensor_free(t);
  ASSERT_EQ(FG_OK, fg_tensor_load_ckpt(f.cpu, c, fg_ckpt_find(c, "w.f32"), FG_F32, &t));
  EXPECT_EQ(0, std::memcmp(t->data, f.w.data(), f.w.size() * 4));
  fg_tensor_free(t);
  EXPECT_EQ(FG_ERR_UNSUPPORTED, fg_tensor_load_ckpt(f.cpu, c, fg_ckpt_find(c, "w.bf16"), FG_F16, &t));
  EXPECT_EQ(nullptr, t);
  fg_ckpt_close(c);
}

TEST(TensorCkpt, ATruncatedFileIsAnErrorNotACrash) {
  Fixture f;
  fg_ckpt *c = nullptr;
  ASSERT_EQ(FG_OK, fg_ckpt_open(f.path.c_str(), &c));
  const fg_ckpt_tensor *ct = fg_ckpt_find(c, "w.f32");
  ASSERT_EQ(0, truncate(f.path.c_str(), (off_t)(ct->offset + 8)));
  fg_tensor *t = nullptr;
  fg_status s = fg_tensor_load_ckpt(f.cpu, c, ct, FG_F32, &t);
  EXPECT_NE(FG_OK, s);
  EXPECT_EQ(nullptr, t);
  EXPECT_NE(nullptr, std::strstr(fg_last_error(), "w.f32")) << fg_last_error();
  fg_ckpt_close(c);
}
