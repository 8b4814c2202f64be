// The loader's reading conveniences on a GPU: an f64 load (converted on the host, copied as
// f64) and FG_LOAD_FLAG_KEEP_QUANT give the same bytes on the device as on the CPU target.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../cpu/load_test_util.h"

namespace {

class LoadReadCuda : public ::testing::Test {
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

TEST_F(LoadReadCuda, F64AndKeepQuantEqualTheCpuTarget) {
  fgt::TempDir dir;
  std::vector<ldt::Tensor> g = ldt::model_tensors(true);
  ldt::write_gguf(dir.file("m.gguf"), g);
  for (unsigned flags : {0u, (unsigned)FG_LOAD_FLAG_KEEP_QUANT}) {
    for (fg_load_dtype p : {FG_LOAD_DTYPE_F64, FG_LOAD_DTYPE_F32}) {
      for (uint32_t ring : {0u, 1u}) {
        SCOPED_TRACE(std::string(fg_load_dtype_name(p)) + (flags ? " keep-quant" : "") + (ring ? " ring 1x64K" : ""));
        fg_load_options o;
        fg_load_options_init(&o);
        o.dtype = p;
        o.flags = flags;
        o.ring_count = ring;
        o.ring_bytes = ring ? FG_LOAD_RING_MIN_BYTES : 0;
        fg_model *mg = ldt::load_ok(dir.file("m.gguf"), gpu, &o);
        fg_model *mc = ldt::load_ok(dir.file("m.gguf"), cpu, &o);
        ASSERT_NE(nullptr, mg);
        ASSERT_NE(nullptr, mc);
        ASSERT_EQ(fg_model_count(mc), fg_model_count(mg));
        for (size_t i = 0; i < fg_model_count(mc); i++) {
          const fg_model_tensor *a = fg_model_at(mc, i), *b = fg_model_find(mg, a->name);
          ASSERT_NE(nullptr, b) << a->name;
          EXPECT_EQ(a->dtype, b->dtype) << a->name;
          EXPECT_EQ(fg_load_options_target(&o, a->file_dtype), b->dtype) << a->name;
          EXPECT_TRUE(ldt::host_bytes(mc, a) == ldt::host_bytes(mg, b)) << a->name;
        }
        fg_model_free(mg);
        fg_model_free(mc);
      }
    }
  }
}

}  // namespace
