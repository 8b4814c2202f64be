// Fixtures for the export tests: small GGUF / safetensors models built with forgia's own
// writers, and the bytes the codecs produce for a tensor (the export's expected output).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "forgia/ckpt.h"
#include "forgia/export.h"
#include "forgia/gguf.h"
#include "forgia/quant.h"
#include "forgia/safetensors.h"
#include "testutil.h"

namespace fgx {

struct Tensor {
  std::string name;
  fg_dtype dtype;
  std::vector<uint64_t> shape;  // row-major
  std::vector<uint8_t> data;
  uint64_t row() const { return shape.empty() ? 1 : shape.back(); }
  uint64_t rows() const {
    uint64_t r = 1;
    for (size_t i = 0; i + 1 < shape.size(); i++) r *= shape[i];
    return r;
  }
  std::vector<uint64_t> ne() const { return std::vector<uint64_t>(shape.rbegin(), shape.rend()); }
};

inline std::vector<uint8_t> encode(fg_dtype t, const std::vector<float> &f, uint64_t rows, uint64_t n) {
  uint64_t nb = 0;
  EXPECT_EQ(fg_dtype_nbytes(t, rows * n, &nb), FG_OK) << fg_last_error();
  std::vector<uint8_t> out(nb);
  EXPECT_EQ(fg_quant_encode_rows(t, f.data(), (int64_t)rows, (int64_t)n, out.data(), out.size()), FG_OK)
      << fg_last_error();
  return out;
}

inline std::vector<float> decode(fg_dtype t, const std::vector<uint8_t> &b, uint64_t rows, uint64_t n) {
  std::vector<float> out(rows * n);
  EXPECT_EQ(fg_quant_decode_rows(t, b.data(), b.size(), out.data(), (int64_t)rows, (int64_t)n), FG_OK)
      << fg_last_error();
  return out;
}

// A tensor of gaussian values stored as dtype (float or block types); I32 gets small ints.
inline Tensor make(const std::string &name, fg_dtype dtype, std::vector<uint64_t> shape, uint64_t seed) {
  Tensor t{name, dtype, shape, {}};
  uint64_t numel = t.rows() * t.row();
  if (dtype == FG_I32) {
    t.data.resize(numel * 4);
    for (uint64_t i = 0; i < numel; i++) {
      int32_t v = (int32_t)(i * 7 + seed);
      std::memcpy(&t.data[i * 4], &v, 4);
    }
    return t;
  }
  t.data = encode(dtype, fgt::gaussian(numel, seed), t.rows(), t.row());
  return t;
}

// What the export must write for src transcoded to dst: decode then encode with the codecs.
inline std::vector<uint8_t> transcode(const Tensor &src, fg_dtype dst) {
  return encode(dst, decode(src.dtype, src.data, src.rows(), src.row()), src.rows(), src.row());
}

using KvFn = std::function<void(fg_gguf_writer *)>;

inline void write_gguf(const std::string &path, const KvFn &kvs, const std::vector<Tensor> &ts) {
  fg_gguf_writer *w = nullptr;
  ASSERT_EQ(fg_gguf_writer_create(&w), FG_OK);
  if (kvs) kvs(w);
  for (const Tensor &t : ts) {
    std::vector<uint64_t> ne = t.ne();
    ASSERT_EQ(fg_gguf_writer_add_tensor(w, t.name.c_str(), t.dtype, (uint32_t)ne.size(), ne.data(),
                                        t.data.data(), t.data.size()),
              FG_OK)
        << fg_last_error();
  }
  ASSERT_EQ(fg_gguf_writer_finish(w, path.c_str()), FG_OK) << fg_last_error();
  fg_gguf_writer_free(w);
}

inline void write_safetensors(const std::string &path, const std::vector<Tensor> &ts) {
  std::vector<fg_st_write_tensor> wt;
  std::vector<std::vector<uint64_t>> shapes;
  shapes.reserve(ts.size());
  for (const Tensor &t : ts) {
    shapes.push_back(t.shape);
    wt.push_back({t.name.c_str(), t.dtype, (int)t.shape.size(), shapes.back().data(), t.data.data(),
                  (uint64_t)t.data.size()});
  }
  fg_st_kv meta[] = {{"format", "pt"}};
  ASSERT_EQ(fg_st_save(path.c_str(), wt.data(), wt.size(), meta, 1), FG_OK) << fg_last_error();
}

// Exports with the library; returns the status (the message is in fg_last_error()). The
// checkpoint must open as GGUF when gguf is true, as safetensors otherwise.
inline fg_status export_file(const std::string &in, bool gguf, const fg_export_options &opt,
                             const std::string &out) {
  fg_ckpt *src = nullptr;
  fg_export_plan *plan = nullptr;
  fg_status s = fg_ckpt_open(in.c_str(), &src);
  if (!s) {
    EXPECT_EQ(fg_ckpt_format_of(src), gguf ? FG_CKPT_GGUF : FG_CKPT_SAFETENSORS) << in;
  }
  if (!s) s = fg_export_plan_create(src, &opt, &plan);
  if (!s) s = fg_export_run(plan, out.c_str(), nullptr, nullptr);
  fg_export_plan_free(plan);
  fg_ckpt_close(src);
  return s;
}

inline fg_export_target target(const char *name) {
  fg_export_target t{};
  EXPECT_EQ(fg_export_target_parse(name, &t), FG_OK) << fg_last_error();
  return t;
}

inline fg_export_options opts(const char *dtype, const char *experts = nullptr) {
  fg_export_options o{};
  if (dtype) o.dtype = target(dtype);
  if (experts) o.experts = target(experts);
  return o;
}

// Names of the entries of a directory (to check that nothing was left behind).
inline std::vector<std::string> list_dir(const std::string &dir) {
  std::vector<std::string> out;
  std::string cmd = "ls -A '" + dir + "'";
  std::string s;
  fgt::run(cmd, &s);
  size_t p = 0;
  while (p < s.size()) {
    size_t e = s.find('\n', p);
    if (e == std::string::npos) e = s.size();
    if (e > p) out.push_back(s.substr(p, e - p));
    p = e + 1;
  }
  return out;
}

}  // namespace fgx
