// Fixtures for the loader tests: deterministic tensors of every kind the loader treats
// differently (f32, f16, bf16, integers, block types, scalars, empty), written as GGUF,
// split GGUF, safetensors and sharded safetensors directories with the library's writers,
// plus the expected bytes of each tensor under each dtype policy computed independently of
// the loader (elem/half.h conversions and the row codecs).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/gguf.h"
#include "forgia/load.h"
#include "forgia/quant.h"
#include "forgia/safetensors.h"
#include "testutil.h"

namespace ldt {

struct Tensor {
  std::string name;
  fg_dtype dtype;
  std::vector<uint64_t> shape;  // row-major
  std::vector<uint8_t> bytes;
  uint64_t numel() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
  }
};

inline uint64_t fnv1a(const void *p, size_t n) {
  const uint8_t *b = static_cast<const uint8_t *>(p);
  uint64_t h = 14695981039346656037ull; // FNV-1a 64 offset basis
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

inline Tensor make_float(const std::string &name, fg_dtype dt, std::vector<uint64_t> shape, uint64_t seed) {
  Tensor t{name, dt, shape, {}};
  std::vector<float> v = fgt::gaussian(t.numel(), seed);
  if (dt == FG_F32) {
    t.bytes.resize(v.size() * 4);
    if (!v.empty()) memcpy(t.bytes.data(), v.data(), t.bytes.size());
  } else {
    t.bytes.resize(v.size() * 2);
    for (size_t i = 0; i < v.size(); i++) {
      uint16_t h = dt == FG_F16 ? fg_f32_to_f16(v[i]) : fg_f32_to_bf16(v[i]);
      memcpy(&t.bytes[i * 2], &h, 2);
    }
  }
  return t;
}

inline Tensor make_ints(const std::string &name, uint64_t n) {
  Tensor t{name, FG_I32, {n}, std::vector<uint8_t>(n * 4)};
  for (uint64_t i = 0; i < n; i++) {
    int32_t x = (int32_t)(i * 2654435761u);
    memcpy(&t.bytes[i * 4], &x, 4);
  }
  return t;
}

// A block-type tensor encoded from gaussian values; empty bytes when the build cannot encode.
inline Tensor make_quant(const std::string &name, fg_dtype dt, uint64_t rows, uint64_t cols, uint64_t seed) {
  Tensor t{name, dt, {rows, cols}, {}};
  if (!fg_quant_can_encode(dt)) return t;
  uint64_t nb = 0;
  if (fg_dtype_nbytes(dt, rows * cols, &nb) != FG_OK) return t;
  t.bytes.resize(nb);
  std::vector<float> v = fgt::gaussian(rows * cols, seed);
  if (fg_quant_encode_rows(dt, v.data(), (int64_t)rows, (int64_t)cols, t.bytes.data(), nb) != FG_OK) t.bytes.clear();
  return t;
}

// The common set; GGUF adds block types, safetensors adds a scalar and an empty tensor.
inline std::vector<Tensor> model_tensors(bool gguf) {
  std::vector<Tensor> ts;
  ts.push_back(make_float("tok_embd.weight", FG_F32, {300, 256}, 1));
  ts.push_back(make_float("blk.0.attn_q.weight", FG_F16, {256, 257}, 2));
  ts.push_back(make_float("blk.0.ffn_up.weight", FG_BF16, {128, 384}, 3));
  ts.push_back(make_float("blk.0.attn_norm.weight", FG_F32, {256}, 4));
  ts.push_back(make_ints("token_ids", 77));
  ts.push_back(make_float("blk.1.ffn_down.weight", FG_F16, {96, 1000}, 5));
  if (gguf) {
    Tensor q8 = make_quant("blk.1.q8.weight", FG_Q8_0, 40, 512, 6);
    if (!q8.bytes.empty()) ts.push_back(q8);
    Tensor q4k = make_quant("blk.1.q4k.weight", FG_Q4_K, 6, 1024, 7);
    if (!q4k.bytes.empty()) ts.push_back(q4k);
  } else {
    ts.push_back(make_float("logit_scale", FG_F32, {}, 8));
    ts.push_back(make_float("empty", FG_F32, {0, 16}, 9));
  }
  return ts;
}

inline void write_gguf(const std::string &path, const std::vector<Tensor> &ts, size_t first = 0,
                       size_t count = SIZE_MAX, int split_no = -1, int split_count = 0) {
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(FG_OK, fg_gguf_writer_create(&w));
  ASSERT_EQ(FG_OK, fg_gguf_writer_set_str(w, "general.architecture", "llama", 5));
  if (split_no >= 0) {
    ASSERT_EQ(FG_OK, fg_gguf_writer_set_u16(w, "split.no", (uint16_t)split_no));
    ASSERT_EQ(FG_OK, fg_gguf_writer_set_u16(w, "split.count", (uint16_t)split_count));
    ASSERT_EQ(FG_OK, fg_gguf_writer_set_i32(w, "split.tensors.count", (int32_t)ts.size()));
  }
  for (size_t i = first; i < ts.size() && i - first < count; i++) {
    const Tensor &t = ts[i];
    uint64_t ne[4];
    for (size_t d = 0; d < t.shape.size(); d++) ne[d] = t.shape[t.shape.size() - 1 - d];
    ASSERT_EQ(FG_OK, fg_gguf_writer_add_tensor(w, t.name.c_str(), t.dtype, (uint32_t)t.shape.size(), ne,
                                               t.bytes.data(), t.bytes.size()))
        << fg_last_error();
  }
  ASSERT_EQ(FG_OK, fg_gguf_writer_finish(w, path.c_str())) << fg_last_error();
  fg_gguf_writer_free(w);
}

// Writes NAME-0000k-of-0000n.gguf for k = 1..n and returns part 1's path.
inline std::string write_split(const std::string &prefix, const std::vector<Tensor> &ts, int n) {
  size_t per = (ts.size() + (size_t)n - 1) / (size_t)n;
  std::string first;
  for (int k = 0; k < n; k++) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", k + 1, n);
    std::string p = prefix + suffix;
    if (k == 0) first = p;
    write_gguf(p, ts, (size_t)k * per, per, k, n);
  }
  return first;
}

inline std::vector<fg_st_write_tensor> st_view(const std::vector<Tensor> &ts) {
  std::vector<fg_st_write_tensor> v;
  for (const Tensor &t : ts)
    v.push_back({t.name.c_str(), t.dtype, (int)t.shape.size(), t.shape.data(), t.bytes.data(), t.bytes.size()});
  return v;
}

inline void write_st(const std::string &path, const std::vector<Tensor> &ts) {
  auto v = st_view(ts);
  ASSERT_EQ(FG_OK, fg_st_save(path.c_str(), v.data(), v.size(), nullptr, 0)) << fg_last_error();
}

inline size_t write_st_dir(const std::string &dir, const std::vector<Tensor> &ts, uint64_t max_shard) {
  auto v = st_view(ts);
  size_t nshards = 0;
  EXPECT_EQ(FG_OK, fg_st_save_sharded(dir.c_str(), v.data(), v.size(), nullptr, 0, max_shard, &nshards))
      << fg_last_error();
  return nshards;
}

// Each element of t (f32, f16, bf16 or a block type) as its f32 value (a block type's decoded value).
inline std::vector<float> as_f32(const Tensor &t) {
  uint64_t n = t.numel();
  std::vector<float> f(n);
  if (fg_dtype_info(t.dtype)->is_quant) {
    uint64_t row = t.shape.back();
    EXPECT_EQ(FG_OK, fg_quant_decode_rows(t.dtype, t.bytes.data(), t.bytes.size(), f.data(), (int64_t)(n / row),
                                          (int64_t)row));
  } else {
    for (uint64_t i = 0; i < n; i++) {
      if (t.dtype == FG_F32) {
        memcpy(&f[i], &t.bytes[i * 4], 4);
      } else {
        uint16_t h;
        memcpy(&h, &t.bytes[i * 2], 2);
        f[i] = t.dtype == FG_F16 ? fg_f16_to_f32(h) : fg_bf16_to_f32(h);
      }
    }
  }
  return f;
}

// Expected bytes of t on the device under policy p.
inline std::vector<uint8_t> expected(const Tensor &t, fg_load_dtype p) {
  fg_dtype od = fg_load_target_dtype(p, t.dtype);
  if (od == t.dtype) return t.bytes;
  uint64_t n = t.numel();
  std::vector<float> f = as_f32(t);
  std::vector<uint8_t> out;
  if (od == FG_F32) {
    out.resize(n * 4);
    if (n) memcpy(out.data(), f.data(), n * 4);
  } else {
    out.resize(n * 2);
    for (uint64_t i = 0; i < n; i++) {
      uint16_t h = od == FG_F16 ? fg_f32_to_f16(f[i]) : fg_f32_to_bf16(f[i]);
      memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

// The bytes of a loaded tensor, brought back to the host.
inline std::vector<uint8_t> host_bytes(const fg_model *m, const fg_model_tensor *t) {
  std::vector<uint8_t> b(t->nbytes);
  if (!t->nbytes) return b;
  fg_device *d = fg_model_device(m);
  if (fg_device_kind_of(d) == FG_DEVICE_CPU) memcpy(b.data(), t->data, t->nbytes);
  else EXPECT_EQ(FG_OK, fg_device_copy(d, b.data(), t->data, t->nbytes, FG_COPY_D2H)) << fg_last_error();
  return b;
}

// Every tensor of ts is in m with its name, shape and dtype, and its bytes (checksum, then
// byte for byte) equal the expected ones under policy p.
inline void expect_model(const fg_model *m, const std::vector<Tensor> &ts, fg_load_dtype p) {
  ASSERT_NE(nullptr, m);
  EXPECT_EQ(ts.size(), fg_model_count(m));
  for (const Tensor &t : ts) {
    const fg_model_tensor *mt = fg_model_find(m, t.name.c_str());
    ASSERT_NE(nullptr, mt) << t.name;
    EXPECT_STREQ(t.name.c_str(), mt->name);
    EXPECT_EQ(t.dtype, mt->file_dtype) << t.name;
    EXPECT_EQ(fg_load_target_dtype(p, t.dtype), mt->dtype) << t.name;
    ASSERT_EQ((int)t.shape.size(), mt->ndim) << t.name;
    for (size_t d = 0; d < t.shape.size(); d++) EXPECT_EQ(t.shape[d], mt->shape[d]) << t.name << " dim " << d;
    EXPECT_EQ(t.numel(), mt->numel) << t.name;
    std::vector<uint8_t> want = expected(t, p), got = host_bytes(m, mt);
    ASSERT_EQ(want.size(), got.size()) << t.name;
    EXPECT_EQ(fnv1a(want.data(), want.size()), fnv1a(got.data(), got.size())) << t.name << " checksum";
    EXPECT_TRUE(want == got) << t.name << " bytes differ";
  }
}

inline fg_model *load_ok(const std::string &path, fg_device *dev, const fg_load_options *o) {
  fg_model *m = nullptr;
  fg_status s = fg_model_create(path.c_str(), dev, o, &m);
  EXPECT_EQ(FG_OK, s) << fg_status_name(s) << ": " << fg_last_error();
  return s == FG_OK ? m : nullptr;
}

}  // namespace ldt
