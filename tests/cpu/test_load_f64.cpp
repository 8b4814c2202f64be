// Reading conveniences of the loader: the f64 destination (floats widened exactly, block
// types decoded as ggml does then widened, on the host for every path) and
// FG_LOAD_FLAG_KEEP_QUANT (the float target applies to float tensors; block types keep
// their bytes). Every CPU mode is checked byte for byte against values computed here from
// the tensors as written; `forgia load --dtype f64 --keep-quant` too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "load_test_util.h"

namespace {

// t as f64: each element's f32 value (exact for f32/f16/bf16; a block type's decoded
// value), widened.
std::vector<uint8_t> as_f64(const ldt::Tensor &t) {
  uint64_t n = t.numel();
  std::vector<float> f = ldt::as_f32(t);
  std::vector<uint8_t> out(n * 8);
  for (uint64_t i = 0; i < n; i++) {
    double d = f[i];
    memcpy(&out[i * 8], &d, 8);
  }
  return out;
}

bool is_cvt(fg_dtype t) { return t == FG_F32 || t == FG_F16 || t == FG_BF16 || fg_dtype_info(t)->is_quant; }

struct Mode {
  const char *name;
  unsigned flags;
  uint32_t ring_count;
  size_t ring_bytes;
  int threads;
};

// Staged rings of 64 KiB make every tensor span several buffers (8192 f64 per buffer).
const Mode kModes[] = {
    {"cpu", 0, 0, 0, 0},
    {"cpu1", 0, 0, 0, 1},
    {"copy", FG_LOAD_FLAG_COPY, 0, 0, 0},
    {"staged", FG_LOAD_FLAG_STAGED, 3, FG_LOAD_RING_MIN_BYTES, 0},
    {"staged1", FG_LOAD_FLAG_STAGED, 1, FG_LOAD_RING_MIN_BYTES, 1},
};

class LoadRead : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(FG_OK, fg_device_open("cpu", &dev)); }
  void TearDown() override { fg_device_close(dev); }
  fg_device *dev = nullptr;
  fgt::TempDir dir;
};

TEST_F(LoadRead, PolicyNamesAndTargets) {
  fg_load_dtype p;
  ASSERT_EQ(FG_OK, fg_load_dtype_from_name("f64", &p));
  EXPECT_EQ(FG_LOAD_DTYPE_F64, p);
  EXPECT_STREQ("f64", fg_load_dtype_name(FG_LOAD_DTYPE_F64));
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_load_dtype_from_name("f128", &p));
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("f64")) << fg_last_error();
  for (fg_dtype t : {FG_F32, FG_F16, FG_BF16, FG_Q8_0, FG_Q4_K}) EXPECT_EQ(FG_F64, fg_load_target_dtype(FG_LOAD_DTYPE_F64, t));
  for (fg_dtype t : {FG_F64, FG_I32, FG_F8_E4M3, FG_BOOL}) EXPECT_EQ(t, fg_load_target_dtype(FG_LOAD_DTYPE_F64, t));

  fg_load_options o;
  fg_load_options_init(&o);
  o.dtype = FG_LOAD_DTYPE_F32;
  EXPECT_EQ(FG_F32, fg_load_options_target(&o, FG_Q8_0));
  o.flags = FG_LOAD_FLAG_KEEP_QUANT;
  EXPECT_EQ(FG_Q8_0, fg_load_options_target(&o, FG_Q8_0));
  EXPECT_EQ(FG_F32, fg_load_options_target(&o, FG_BF16));
  EXPECT_EQ(FG_I32, fg_load_options_target(&o, FG_I32));
  o.dtype = FG_LOAD_DTYPE_F64;
  EXPECT_EQ(FG_Q4_K, fg_load_options_target(&o, FG_Q4_K));
  EXPECT_EQ(FG_F64, fg_load_options_target(&o, FG_F16));
  EXPECT_EQ(FG_BF16, fg_load_options_target(nullptr, FG_BF16));
}

TEST_F(LoadRead, F64DestinationOnEveryPath) {
  for (bool gguf : {true, false}) {
    std::vector<ldt::Tensor> ts = ldt::model_tensors(gguf);
    std::string path = dir.file(gguf ? "m.gguf" : "m.safetensors");
    if (gguf) ldt::write_gguf(path, ts);
    else ldt::write_st(path, ts);
    for (const Mode &md : kModes) {
      SCOPED_TRACE(std::string(gguf ? "gguf " : "st ") + md.name);
      fg_load_options o;
      fg_load_options_init(&o);
      o.dtype = FG_LOAD_DTYPE_F64;
      o.flags = md.flags;
      o.ring_count = md.ring_count;
      o.ring_bytes = md.ring_bytes;
      o.threads = md.threads;
      fg_model *m = ldt::load_ok(path, dev, &o);
      ASSERT_NE(nullptr, m);
      size_t quant = 0;
      for (const ldt::Tensor &t : ts) {
        const fg_model_tensor *mt = fg_model_find(m, t.name.c_str());
        ASSERT_NE(nullptr, mt) << t.name;
        std::vector<uint8_t> got = ldt::host_bytes(m, mt);
        if (!is_cvt(t.dtype)) {
          EXPECT_EQ(t.dtype, mt->dtype) << t.name;
          EXPECT_TRUE(got == t.bytes) << t.name;
          continue;
        }
        quant += fg_dtype_info(t.dtype)->is_quant;
        EXPECT_EQ(FG_F64, mt->dtype) << t.name;
        EXPECT_EQ(t.dtype, mt->file_dtype) << t.name;
        EXPECT_EQ(t.numel() * 8, mt->nbytes) << t.name;
        EXPECT_FALSE(mt->borrowed) << t.name;
        std::vector<uint8_t> want = as_f64(t);
        ASSERT_EQ(want.size(), got.size()) << t.name;
        EXPECT_TRUE(want == got) << t.name << " bytes differ";
      }
      if (gguf) {
        EXPECT_EQ(2u, quant);  // q8_0 and q4_K were both decoded
      }
      fg_model_free(m);
    }
  }
}

TEST_F(LoadRead, KeepQuantLeavesBlockTypesAlone) {
  std::vector<ldt::Tensor> ts = ldt::model_tensors(true);
  std::string path = dir.file("m.gguf");
  ldt::write_gguf(path, ts);
  for (fg_load_dtype p : {FG_LOAD_DTYPE_F32, FG_LOAD_DTYPE_F64, FG_LOAD_DTYPE_BF16, FG_LOAD_DTYPE_KEEP}) {
    for (const Mode &md : kModes) {
      SCOPED_TRACE(std::string(fg_load_dtype_name(p)) + " " + md.name);
      fg_load_options o;
      fg_load_options_init(&o);
      o.dtype = p;
      o.flags = md.flags | FG_LOAD_FLAG_KEEP_QUANT;
      o.ring_count = md.ring_count;
      o.ring_bytes = md.ring_bytes;
      fg_model *m = ldt::load_ok(path, dev, &o);
      ASSERT_NE(nullptr, m);
      size_t quant = 0;
      for (const ldt::Tensor &t : ts) {
        const fg_model_tensor *mt = fg_model_find(m, t.name.c_str());
        ASSERT_NE(nullptr, mt) << t.name;
        std::vector<uint8_t> got = ldt::host_bytes(m, mt);
        if (fg_dtype_info(t.dtype)->is_quant) {
          quant++;
          EXPECT_EQ(t.dtype, mt->dtype) << t.name;
          EXPECT_TRUE(got == t.bytes) << t.name;
          // Kept like any kept tensor: borrowed from the mapping on the direct CPU path.
          EXPECT_EQ(!(md.flags & (FG_LOAD_FLAG_COPY | FG_LOAD_FLAG_STAGED)), mt->borrowed) << t.name;
        } else if (p == FG_LOAD_DTYPE_F64) {
          EXPECT_EQ(is_cvt(t.dtype) ? FG_F64 : t.dtype, mt->dtype) << t.name;
          EXPECT_TRUE((is_cvt(t.dtype) ? as_f64(t) : t.bytes) == got) << t.name;
        } else {
          // the plain policy's bytes: the float target applies to float tensors as before
          EXPECT_EQ(fg_load_target_dtype(p, t.dtype), mt->dtype) << t.name;
          EXPECT_TRUE(ldt::expected(t, p) == got) << t.name;
        }
      }
      EXPECT_EQ(2u, quant);
      fg_model_free(m);
    }
  }
}

TEST_F(LoadRead, KeepQuantWithDequantIsRefused) {
  std::vector<ldt::Tensor> ts = ldt::model_tensors(true);
  std::string path = dir.file("m.gguf");
  ldt::write_gguf(path, ts);
  fg_load_options o;
  fg_load_options_init(&o);
  o.dtype = FG_LOAD_DTYPE_DEQUANT;
  o.flags = FG_LOAD_FLAG_KEEP_QUANT;
  fg_model *m = nullptr;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(path.c_str(), dev, &o, &m));
  EXPECT_EQ(nullptr, m);
  EXPECT_NE(std::string::npos, std::string(fg_last_error()).find("KEEP_QUANT")) << fg_last_error();
  o.dtype = (fg_load_dtype)6;
  o.flags = 0;
  EXPECT_EQ(FG_ERR_INVALID_ARG, fg_model_create(path.c_str(), dev, &o, &m));
}

// The CLI: --dtype f64 lists f64 tensors, --keep-quant keeps the block types' own dtype.
TEST_F(LoadRead, CliF64AndKeepQuant) {
  std::vector<ldt::Tensor> ts = ldt::model_tensors(true);
  std::string path = dir.file("m.gguf");
  ldt::write_gguf(path, ts);
  const std::string cli = std::string(FORGIA_CLI) + " load " + path + " --device cpu --list";
  std::string out, err;
  auto dtype_of = [&](const std::string &name) {
    size_t a = out.find("  " + name + " ");
    if (a == std::string::npos) return std::string("absent");
    a += 2 + name.size();
    while (out[a] == ' ') a++;
    return out.substr(a, out.find(' ', a) - a);
  };
  ASSERT_EQ(0, fgt::run(cli + " --dtype f64", &out, &err)) << err;
  EXPECT_EQ("f64", dtype_of("blk.0.attn_q.weight")) << out;
  EXPECT_EQ("f64", dtype_of("blk.1.q8.weight")) << out;
  EXPECT_EQ("i32", dtype_of("token_ids")) << out;
  ASSERT_EQ(0, fgt::run(cli + " --dtype f64 --keep-quant", &out, &err)) << err;
  EXPECT_EQ("f64", dtype_of("blk.0.ffn_up.weight")) << out;
  EXPECT_EQ("q8_0", dtype_of("blk.1.q8.weight")) << out;
  EXPECT_EQ("q4_K", dtype_of("blk.1.q4k.weight")) << out;
  ASSERT_EQ(0, fgt::run(cli + " --dtype f32 --keep-quant", &out, &err)) << err;
  EXPECT_EQ("f32", dtype_of("blk.0.attn_q.weight")) << out;
  EXPECT_EQ("q8_0", dtype_of("blk.1.q8.weight")) << out;
  EXPECT_EQ(2, fgt::run(cli + " --dtype dequant --keep-quant", &out, &err));
  EXPECT_NE(std::string::npos, err.find("--keep-quant")) << err;
}

}  // namespace
