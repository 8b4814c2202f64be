// Helpers for the GGUF tests: a byte-level builder that assembles files field by field
// from the layout in the reference (independent of the library's writer), and a walker
// that calls every reader accessor on a parsed file.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/gguf.h"

namespace gg {

using Bytes = std::vector<uint8_t>;

struct Builder {
  Bytes b;
  Builder &raw(const void *p, size_t n) {
    const uint8_t *q = static_cast<const uint8_t *>(p);
    b.insert(b.end(), q, q + n);
    return *this;
  }
  Builder &u8(uint8_t v) { return raw(&v, 1); }
  Builder &u16(uint16_t v) { return u8(v & 0xFF).u8(v >> 8); }
  Builder &u32(uint32_t v) { return u16(v & 0xFFFF).u16(v >> 16); }
  Builder &u64(uint64_t v) { return u32((uint32_t)v).u32((uint32_t)(v >> 32)); }
  Builder &f32(float v) { uint32_t x; memcpy(&x, &v, 4); return u32(x); }
  Builder &f64(double v) { uint64_t x; memcpy(&x, &v, 8); return u64(x); }
  Builder &str(const std::string &s) { u64(s.size()); return raw(s.data(), s.size()); }
  Builder &header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    raw("GGUF", 4);
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  Builder &key(const std::string &k, uint32_t type) { return str(k).u32(type); }
  Builder &tinfo(const std::string &name, std::vector<uint64_t> ne, uint32_t type, uint64_t off) {
    str(name).u32((uint32_t)ne.size());
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(off);
  }
  Builder &pad_to(size_t a) {
    while (b.size() % a) b.push_back(0);
    return *this;
  }
  size_t size() const { return b.size(); }
};

inline uint64_t pad(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Data bytes used by the tests: byte j of a tensor at data offset off is (off + j) % 251.
inline Bytes pattern(uint64_t off, uint64_t n) {
  Bytes v(n);
  for (uint64_t j = 0; j < n; j++) v[j] = (uint8_t)((off + j) % 251);
  return v;
}

inline std::string S(fg_gguf_str s) { return std::string(s.ptr, s.len); }

// Calls every accessor on every KV and tensor; returns a checksum so nothing is elided.
inline uint64_t walk(const fg_gguf_file *f) {
  uint64_t acc = fg_gguf_version(f) + fg_gguf_alignment(f) + fg_gguf_part_count(f);
  for (uint64_t i = 0; i < fg_gguf_kv_count(f); i++) {
    fg_gguf_str k = fg_gguf_kv_key(f, i);
    EXPECT_EQ(fg_gguf_key_index_n(f, k.ptr, k.len), (int64_t)i);
    int64_t iv;
    double dv;
    bool bv;
    fg_gguf_str sv;
    fg_gguf_array av;
    const uint8_t *raw;
    uint64_t rl;
    if (fg_gguf_kv_int(f, i, &iv) == FG_OK) acc += (uint64_t)iv;
    if (fg_gguf_kv_float(f, i, &dv) == FG_OK) acc += (uint64_t)(dv == dv);
    if (fg_gguf_kv_bool(f, i, &bv) == FG_OK) acc += bv;
    if (fg_gguf_kv_str(f, i, &sv) == FG_OK) acc += sv.len ? (uint8_t)sv.ptr[sv.len - 1] : 0;
    EXPECT_EQ(fg_gguf_kv_raw(f, i, &raw, &rl), FG_OK);
    acc += raw[rl - 1];
    EXPECT_EQ(fg_gguf_kv_value_raw(f, i, &raw, &rl), FG_OK);
    if (fg_gguf_kv_array(f, i, &av) == FG_OK) {
      for (uint64_t j = 0; j < av.len; j++) {
        if (fg_gguf_array_int(&av, j, &iv) == FG_OK) acc += (uint64_t)iv;
        if (fg_gguf_array_float(&av, j, &dv) == FG_OK) acc += (uint64_t)(dv == dv);
        if (fg_gguf_array_bool(&av, j, &bv) == FG_OK) acc += bv;
        if (fg_gguf_array_str(&av, j, &sv) == FG_OK) acc += sv.len ? (uint8_t)sv.ptr[0] : 1;
      }
      EXPECT_EQ(fg_gguf_array_int(&av, av.len, &iv), FG_ERR_RANGE);
    }
  }
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    EXPECT_EQ(fg_gguf_find_tensor_n(f, t->name, t->name_len), t);
    if (t->nbytes) acc += t->data[0] + t->data[t->nbytes - 1];
    acc += fg_gguf_tensor_numel(t);
  }
  return acc;
}

// Re-emits a parsed file with the writer: every KV verbatim, every tensor with its data.
inline Bytes reemit(const fg_gguf_file *f) {
  fg_gguf_writer *w = nullptr;
  EXPECT_EQ(fg_gguf_writer_create(&w), FG_OK);
  EXPECT_EQ(fg_gguf_writer_set_version(w, fg_gguf_version(f)), FG_OK);
  EXPECT_EQ(fg_gguf_writer_copy_all_kv(w, f, nullptr, 0), FG_OK) << fg_last_error();
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    EXPECT_EQ(fg_gguf_writer_add_tensor(w, t->name, t->dtype, t->ndim, t->ne, t->data, t->nbytes), FG_OK)
        << fg_last_error();
  }
  void *out = nullptr;
  size_t len = 0;
  EXPECT_EQ(fg_gguf_writer_finish_mem(w, &out, &len), FG_OK) << fg_last_error();
  Bytes r((uint8_t *)out, (uint8_t *)out + len);
  free(out);
  fg_gguf_writer_free(w);
  return r;
}

}  // namespace gg
