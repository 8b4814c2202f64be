/* FG_HD marks a per-element function that both the CPU loops and the CUDA kernels call,
 * so that the arithmetic exists once (docs/design.md, Numerics contract,
 * rule 1). */
#ifndef FORGIA_ELEM_HD_H
#define FORGIA_ELEM_HD_H

#include <stdint.h>

#if defined(__CUDACC__)
#define FG_HD __host__ __device__
#else
#define FG_HD
#endif

/* Bit casts that are legal in C, C++ and CUDA device code. */
static inline FG_HD uint32_t fg_f32_bits(float f) {
  union { float f; uint32_t u; } v;
  v.f = f;
  return v.u;
}
static inline FG_HD float fg_bits_f32(uint32_t u) {
  union { float f; uint32_t u; } v;
  v.u = u;
  return v.f;
}

#endif
