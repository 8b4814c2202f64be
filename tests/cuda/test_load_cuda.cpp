// The loader on a GPU: every source kind loads every byte; converted tensors are
// memcmp-equal to the CPU target's (both convert with the elem/ functions); a failed device
// allocation leaves no device memory behind; a reusable ring serves several loads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "../cpu/load_test_util.h"

namespace {

class LoadCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    FGT_REQUIRE_CUDA();
    ASSERT_EQ(FG_OK, fg_device_open("cuda", &gpu));
    ASSERT_EQ(FG_OK, fg_device_open("cpu", &cpu));
  }
  void TearDown() override {
    fg_device_close(gpu);
    fg_device_close(cpu);
  }
  fg_device *gpu = nullptr, *cpu = nullptr;
};

TEST_F(LoadCuda, EverySourceKindKeepsEveryByte) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> g = ldt::model_tensors(true), s = ldt::model_tensors(false);
  ldt::write_gguf(dir.file("m.gguf"), g);
  std::string split = ldt::write_split(dir.file("sp"), g, 3);
  ldt::write_st(dir.file("m.safetensors"), s);
  ASSERT_GT(ldt::write_st_dir(dir.file("hf"), s, 200000), 1u);
  const struct {
    std::string path;
    const std::vector<ldt::Tensor> *ts;
  } srcs[] = {{dir.file("m.gguf"), &g}, {split, &g}, {dir.file("m.safetensors"), &s}, {dir.file("hf"), &s}};
  for (const auto &src : srcs) {
    for (uint32_t ring : {0u, 1u}) {
      SCOPED_TRACE(src.path + (ring ? " ring 1x64K" : " default ring"));
      fg_load_options o;
      fg_load_options_init(&o);
      o.ring_count = ring;
      o.ring_bytes = ring ? FG_LOAD_RING_MIN_BYTES : 0;
      fg_model *m = ldt::load_ok(src.path, gpu, &o);
      ASSERT_NE(nullptr, m);
      EXPECT_TRUE(fg_model_stats(m)->staged);
      ldt::expect_model(m, *src.ts, FG_LOAD_DTYPE_KEEP);
      fg_model_free(m);
    }
  }
}

TEST_F(LoadCuda, ConvertedTensorsEqualTheCpuTarget) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> g = ldt::model_tensors(true), s = ldt::model_tensors(false);
  ldt::write_gguf(dir.file("m.gguf"), g);
  ldt::write_st(dir.file("m.safetensors"), s);
  for (const std::string &path : {dir.file("m.gguf"), dir.file("m.safetensors")}) {
    for (fg_load_dtype p : {FG_LOAD_DTYPE_F32, FG_LOAD_DTYPE_BF16, FG_LOAD_DTYPE_F16, FG_LOAD_DTYPE_DEQUANT}) {
      SCOPED_TRACE(path + " " + fg_load_dtype_name(p));
      fg_load_options o;
      fg_load_options_init(&o);
      o.dtype = p;
      o.ring_count = 3;
      o.ring_bytes = 96 << 10;  // pieces that split tensors mid-row
      fg_model *mg = ldt::load_ok(path, gpu, &o);
      fg_model *mc = ldt::load_ok(path, cpu, &o);
      ASSERT_NE(nullptr, mg);
      ASSERT_NE(nullptr, mc);
      ASSERT_EQ(fg_model_count(mc), fg_model_count(mg));
      for (size_t i = 0; i < fg_model_count(mc); i++) {
        const fg_model_tensor *a = fg_model_at(mc, i), *b = fg_model_find(mg, a->name);
        ASSERT_NE(nullptr, b) << a->name;
        EXPECT_EQ(a->dtype, b->dtype) << a->name;
        ASSERT_EQ(a->nbytes, b->nbytes) << a->name;
        std::vector<uint8_t> ha = ldt::host_bytes(mc, a), hb = ldt::host_bytes(mg, b);
        EXPECT_EQ(0, a->nbytes ? memcmp(ha.data(), hb.data(), a->nbytes) : 0) << a->name;
      }
      ldt::expect_model(mg, path.find(".gguf") != std::string::npos ? g : s, p);
      fg_model_free(mg);
      fg_model_free(mc);
    }
  }
}

TEST_F(LoadCuda, AllocationFailureLeavesNoDeviceMemory) {
  fgt::TempDir dir;
  // a sparse file whose f32 form (256 GiB) exceeds any GPU
  std::string header = "{\"big\":{\"dtype\":\"BF16\",\"shape\":[68719476736],\"data_offsets\":[0,137438953472]}}";
  while (header.size() % 8) header += ' ';
  std::string path = dir.file("huge.safetensors");
  FILE *f = fopen(path.c_str(), "wb");
  uint64_t n = header.size();
  fwrite(&n, 8, 1, f);
  fwrite(header.data(), 1, header.size(), f);
  fclose(f);
  if (truncate(path.c_str(), (off_t)(8 + n + (1ull << 37))) != 0) GTEST_SKIP() << "no sparse files here";
  fg_device_info before, after;
  ASSERT_EQ(FG_OK, fg_device_query(gpu, &before));
  fg_load_options o;
  fg_load_options_init(&o);
  o.dtype = FG_LOAD_DTYPE_F32;
  fg_model *m = nullptr;
  EXPECT_EQ(FG_ERR_DEVICE_NOMEM, fg_model_create(path.c_str(), gpu, &o, &m)) << fg_last_error();
  EXPECT_EQ(nullptr, m);
  ASSERT_EQ(FG_OK, fg_device_query(gpu, &after));
  EXPECT_GE(after.free_mem + (64u << 20), before.free_mem);  // nothing kept (slack: other processes)
}

TEST_F(LoadCuda, CancelMidwayFreesDeviceMemory) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> ts;
  for (int i = 0; i < 16; i++) ts.push_back(ldt::make_float("w" + std::to_string(i), FG_F16, {1024, 1024}, (uint64_t)i));
  ldt::write_st(dir.file("m.safetensors"), ts);
  fg_device_info before, after;
  ASSERT_EQ(FG_OK, fg_device_query(gpu, &before));
  fg_load_options o;
  fg_load_options_init(&o);
  o.dtype = FG_LOAD_DTYPE_F32;
  int calls = 0;
  o.progress = [](const fg_load_progress *, void *u) { return ++*static_cast<int *>(u) < 5; };
  o.progress_user = &calls;
  fg_model *m = nullptr;
  EXPECT_EQ(FG_ERR_STATE, fg_model_create(dir.file("m.safetensors").c_str(), gpu, &o, &m));
  ASSERT_EQ(FG_OK, fg_device_query(gpu, &after));
  EXPECT_GE(after.free_mem + (64u << 20), before.free_mem);
}

TEST_F(LoadCuda, ReusableRingOnTheNumaNodeOfTheGpu) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> g = ldt::model_tensors(true);
  ldt::write_gguf(dir.file("m.gguf"), g);
  fg_load_ring *r = nullptr;
  ASSERT_EQ(FG_OK, fg_load_ring_create(gpu, 2, 1 << 20, &r)) << fg_last_error();
  fg_load_options o;
  fg_load_options_init(&o);
  o.ring = r;
  for (int i = 0; i < 3; i++) {
    fg_model *m = ldt::load_ok(dir.file("m.gguf"), gpu, &o);
    ASSERT_NE(nullptr, m);
    ldt::expect_model(m, g, FG_LOAD_DTYPE_KEEP);
    fg_model_free(m);
  }
  fg_model *m = nullptr;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(dir.file("m.gguf").c_str(), cpu, &o, &m));  // ring of another device
  fg_load_ring_free(r);
}

}  // namespace
