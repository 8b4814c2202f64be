// What the LoRA tests share (tests/cpu/test_lora.cpp, tests/cuda/test_cuda_lora.cpp): tensors
// built from host values on any device, device buffers, and dense references of the
// adapter's algebra written here as plain loops, independent of the library.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/lora.h"
#include "testutil.h"

namespace fgt {

// A device buffer of f32 values (host memory on the CPU), copied back with get().
struct DevBuf {
  fg_device *dev = nullptr;
  float *p = nullptr;
  size_t n = 0;
  DevBuf(fg_device *d, const std::vector<float> &v) : dev(d), n(v.size()) {
    void *q = nullptr;
    EXPECT_EQ(FG_OK, fg_device_mem_alloc(dev, (n ? n : 1) * 4, &q));
    p = (float *)q;
    if (n) {
      EXPECT_EQ(FG_OK, fg_device_copy(dev, p, v.data(), n * 4, FG_COPY_H2D));
    }
  }
  DevBuf(fg_device *d, size_t count) : DevBuf(d, std::vector<float>(count, 0.0f)) {}
  ~DevBuf() { fg_device_mem_free(dev, p); }
  std::vector<float> get() const {
    std::vector<float> v(n);
    if (n) {
      EXPECT_EQ(FG_OK, fg_device_copy(dev, v.data(), p, n * 4, FG_COPY_D2H));
    }
    return v;
  }
};

// A tensor of dtype dt holding bytes on dev.
inline fg_tensor *lora_tensor_bytes(fg_device *dev, const char *name, fg_dtype dt, uint64_t rows, uint64_t cols,
                                    const void *bytes, size_t nbytes) {
  fg_tensor *t = nullptr;
  const uint64_t shape[2] = {rows, cols};
  EXPECT_EQ(FG_OK, fg_tensor_create(dev, name, dt, 2, shape, &t)) << fg_last_error();
  if (t) {
    EXPECT_EQ(FG_OK, fg_tensor_upload(t, bytes, nbytes, nullptr)) << fg_last_error();
  }
  return t;
}

// f32 values narrowed to dt (f16 RNE, bf16 the library's rule) as bytes.
inline std::vector<uint8_t> lora_narrow(const std::vector<float> &v, fg_dtype dt) {
  std::vector<uint8_t> b(v.size() * (dt == FG_F32 ? 4 : 2));
  for (size_t i = 0; i < v.size(); i++) {
    if (dt == FG_F32) {
      std::memcpy(&b[i * 4], &v[i], 4);
    } else {
      uint16_t h = dt == FG_F16 ? fg_f32_to_f16(v[i]) : fg_f32_to_bf16(v[i]);
      std::memcpy(&b[i * 2], &h, 2);
    }
  }
  return b;
}

inline fg_tensor *lora_tensor(fg_device *dev, const char *name, fg_dtype dt, uint64_t rows, uint64_t cols,
                              const std::vector<float> &v) {
  std::vector<uint8_t> b = lora_narrow(v, dt);
  return lora_tensor_bytes(dev, name, dt, rows, cols, b.data(), b.size());
}

inline std::vector<float> lora_download(const fg_tensor *t) {
  std::vector<float> v(t->numel);
  EXPECT_EQ(FG_OK, fg_tensor_download(t, v.data(), v.size() * 4, nullptr));
  return v;
}

inline std::vector<uint8_t> lora_download_bytes(const fg_tensor *t) {
  std::vector<uint8_t> v(t->nbytes);
  EXPECT_EQ(FG_OK, fg_tensor_download(t, v.data(), v.size(), nullptr));
  return v;
}

inline void lora_set(fg_tensor *t, const std::vector<float> &v) {
  ASSERT_EQ(t->numel, v.size());
  ASSERT_EQ(FG_OK, fg_tensor_upload(t, v.data(), v.size() * 4, nullptr));
}

// The exact GEMM's order for (B A)[o, i]: acc = +0, then acc + b[o, r] * a[r, i] for ascending r.
inline std::vector<float> lora_ref_ba(const std::vector<float> &a, const std::vector<float> &b, uint64_t out,
                                      uint64_t in, uint32_t r) {
  std::vector<float> ba(out * in);
  for (uint64_t o = 0; o < out; o++)
    for (uint64_t i = 0; i < in; i++) {
      volatile float acc = 0.0f;
      for (uint32_t k = 0; k < r; k++) {
        volatile float p = b[o * r + k] * a[k * in + i];
        acc = acc + p;
      }
      ba[o * in + i] = acc;
    }
  return ba;
}

// w + scale * (B A) per element (mul, then add), in f32.
inline std::vector<float> lora_ref_merge(const std::vector<float> &w, const std::vector<float> &ba, float scale) {
  std::vector<float> m(w.size());
  for (size_t i = 0; i < w.size(); i++) {
    volatile float d = scale * ba[i];
    m[i] = w[i] + d;
  }
  return m;
}

// Dense f64 references of the forward and backward passes (no dropout).
struct LoraRef {
  std::vector<double> y, dx, ga, gb;
};
inline LoraRef lora_ref(const std::vector<float> &x, const std::vector<float> &w, const std::vector<float> &a,
                        const std::vector<float> &b, const std::vector<float> &dy, uint64_t n, uint64_t in,
                        uint64_t out, uint32_t r, double scale) {
  LoraRef R;
  std::vector<double> h(n * r, 0.0), g(n * out), gh(n * r, 0.0);
  R.y.assign(n * out, 0.0);
  R.dx.assign(n * in, 0.0);
  R.ga.assign(r * in, 0.0);
  R.gb.assign(out * r, 0.0);
  for (uint64_t s = 0; s < n; s++)
    for (uint32_t k = 0; k < r; k++)
      for (uint64_t i = 0; i < in; i++) h[s * r + k] += (double)x[s * in + i] * a[k * in + i];
  for (uint64_t s = 0; s < n; s++)
    for (uint64_t o = 0; o < out; o++) {
      double base = 0, t = 0;
      for (uint64_t i = 0; i < in; i++) base += (double)x[s * in + i] * w[o * in + i];
      for (uint32_t k = 0; k < r; k++) t += h[s * r + k] * b[o * r + k];
      R.y[s * out + o] = base + scale * t;
      g[s * out + o] = scale * dy[s * out + o];
    }
  for (uint64_t o = 0; o < out; o++)
    for (uint32_t k = 0; k < r; k++)
      for (uint64_t s = 0; s < n; s++) R.gb[o * r + k] += g[s * out + o] * h[s * r + k];
  for (uint64_t s = 0; s < n; s++)
    for (uint32_t k = 0; k < r; k++)
      for (uint64_t o = 0; o < out; o++) gh[s * r + k] += g[s * out + o] * b[o * r + k];
  for (uint32_t k = 0; k < r; k++)
    for (uint64_t i = 0; i < in; i++)
      for (uint64_t s = 0; s < n; s++) R.ga[k * in + i] += gh[s * r + k] * x[s * in + i];
  for (uint64_t s = 0; s < n; s++)
    for (uint64_t i = 0; i < in; i++) {
      double d = 0;
      for (uint64_t o = 0; o < out; o++) d += (double)dy[s * out + o] * w[o * in + i];
      for (uint32_t k = 0; k < r; k++) d += gh[s * r + k] * a[k * in + i];
      R.dx[s * in + i] = d;
    }
  return R;
}

// |got - want| <= tol * (1 + max |want|), element by element (GEMMs: docs/design.md,
// Numerics contract, rule 5).
inline void lora_expect_close(const std::vector<float> &got, const std::vector<double> &want, double tol,
                              const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double mx = 0;
  for (double v : want) mx = std::fmax(mx, std::fabs(v));
  for (size_t i = 0; i < got.size(); i++)
    ASSERT_LE(std::fabs((double)got[i] - want[i]), tol * (1.0 + mx)) << what << " element " << i;
}

inline uint32_t f32_bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline std::vector<double> widen(const std::vector<float> &v) { return std::vector<double>(v.begin(), v.end()); }

}  // namespace fgt
