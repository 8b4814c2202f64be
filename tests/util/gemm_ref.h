// GEMM test helpers: operands in f32 or bf16 with a leading dimension, and the exact mode's
// definition (forgia/gemm.h) written as a plain triple loop, independent of the library.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "forgia/forgia.h"
#include "testutil.h"

namespace fgt {

inline float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A stored rows x cols matrix (op(X) transposed when trans), f32 or bf16, row stride ld.
struct Operand {
  fg_dtype type = FG_F32;
  size_t rows = 0, cols = 0, ld = 0;
  std::vector<float> f;
  std::vector<uint16_t> h;

  Operand() = default;
  // Gaussian values; bf16 keeps the top half of each f32 (any bf16 value will do).
  Operand(fg_dtype t, size_t r, size_t c, size_t ld_, uint64_t seed, float scale = 1.0f)
      : type(t), rows(r), cols(c), ld(ld_) {
    size_t n = r ? (r - 1) * ld + c : 0;
    std::vector<float> g = gaussian(n ? n : 1, seed, scale);
    if (t == FG_F32) {
      f.assign(g.begin(), g.begin() + n);
    } else {
      h.resize(n);
      for (size_t i = 0; i < n; i++) h[i] = (uint16_t)(f32_bits(g[i]) >> 16);
    }
  }
  const void *data() const { return type == FG_F32 ? (const void *)f.data() : (const void *)h.data(); }
  size_t bytes() const { return type == FG_F32 ? f.size() * 4 : h.size() * 2; }
  float at(size_t r, size_t c) const { return type == FG_F32 ? f[r * ld + c] : bf16_value(h[r * ld + c]); }
  void set(size_t r, size_t c, uint32_t f32bits) {
    if (type == FG_F32) f[r * ld + c] = bits_f32(f32bits);
    else h[r * ld + c] = (uint16_t)(f32bits >> 16);
  }
};

// op(A)[i][p] for A stored k x m when trans.
inline float op_at(const Operand &x, bool trans, size_t i, size_t p) { return trans ? x.at(p, i) : x.at(i, p); }

// The exact mode by its definition: each output its own f32 accumulator from +0, k in
// ascending order, every * and + rounded separately (the tests compile with
// -ffp-contract=off, a usage requirement of forgia), NaN written as 0x7fc00000.
inline void ref_gemm(bool ta, bool tb, size_t m, size_t n, size_t k, float alpha, const Operand &a,
                     const Operand &b, float beta, float *c, size_t ldc) {
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      float out;
      float old = beta != 0.0f ? c[i * ldc + j] : 0.0f;
      if (k == 0 || alpha == 0.0f) {
        out = beta != 0.0f ? beta * old : 0.0f;
      } else {
        float acc = 0.0f;
        for (size_t p = 0; p < k; p++) {
          float prod = op_at(a, ta, i, p) * op_at(b, tb, p, j);
          acc = acc + prod;
        }
        out = alpha * acc;
        if (beta != 0.0f) {
          float bc = beta * old;
          out = out + bc;
        }
      }
      if (out != out) out = bits_f32(0x7fc00000u);
      c[i * ldc + j] = out;
    }
}

// |op(A)| |op(B)| in f64: the scale of the rounding error bound of any summation order.
inline std::vector<double> abs_product(bool ta, bool tb, size_t m, size_t n, size_t k, const Operand &a,
                                       const Operand &b) {
  std::vector<double> s(m * n, 0.0);
  for (size_t i = 0; i < m; i++)
    for (size_t p = 0; p < k; p++) {
      double x = std::fabs((double)op_at(a, ta, i, p));
      for (size_t j = 0; j < n; j++) s[i * n + j] += x * std::fabs((double)op_at(b, tb, p, j));
    }
  return s;
}

// Any two f32 evaluations of alpha * op(A) op(B) + beta * C (any order, with or without
// fusion) differ from the true value by at most gamma_k |alpha| |A||B| plus one rounding of
// each term (Higham, Accuracy and Stability, 3.5); two of them by twice that. u is 2^-24 for
// f32 (2^-11 when TF32 rounds the inputs, which adds about 2u |A||B| per product).
inline double gemm_tolerance(size_t k, double u, float alpha, double abs_ab, float beta, float c_old) {
  double gk = (double)(k + 2) * u;
  return 2.0 * (gk * std::fabs((double)alpha) * abs_ab + 2.0 * u * std::fabs((double)beta * (double)c_old)) + 1e-37;
}

}  // namespace fgt
