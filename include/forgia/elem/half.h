/* f32 <-> f16 and f32 <-> bf16, bit-exact with ggml's reference routines:
 * - f32 -> f16: round to nearest even; subnormals exact; overflow to +-Inf;
 *   NaN -> sign | 0x7E00 (ggml's software path; numpy agrees apart from NaN payloads).
 * - f32 -> bf16: round to nearest even on the bit pattern, subnormals kept (not flushed),
 *   NaN -> (bits >> 16) | 0x40 (quiet, sign and top payload kept), as ggml and torch.
 * - f16/bf16 -> f32: exact.
 * Integer arithmetic only, so every compiler and device produces the same bits. */
#ifndef FORGIA_ELEM_HALF_H
#define FORGIA_ELEM_HALF_H

#include "forgia/elem/hd.h"

static inline FG_HD uint16_t fg_f32_to_bf16(float f) {
  uint32_t u = fg_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline FG_HD float fg_bf16_to_f32(uint16_t h) {
  return fg_bits_f32((uint32_t)h << 16);
}

/* Branch-free so that the CPU loop vectorises: the float multiplies by 2^112 and 2^-110
 * move the value so that adding the bias constant rounds the mantissa to 10 bits (or to the
 * subnormal grid) to nearest even in IEEE arithmetic, which every backend does identically
 * (no FTZ, no contraction: DESIGN.md rule 2). Exhaustively checked against IEEE in tests. */
static inline FG_HD uint16_t fg_f32_to_f16(float f) {
  uint32_t w = fg_f32_bits(f);
  float base = (fg_bits_f32(w & 0x7fffffffu) * 0x1.0p+112f) * 0x1.0p-110f;
  uint32_t shl1_w = w + w;
  uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xff000000u;
  uint32_t small = 0u - (uint32_t)(bias < 0x71000000u); /* all-ones mask: select without a branch */
  bias = (bias & ~small) | (0x71000000u & small);
  base = fg_bits_f32((bias >> 1) + 0x07800000u) + base;
  uint32_t bits = fg_f32_bits(base);
  uint32_t nonsign = ((bits >> 13) & 0x00007c00u) + (bits & 0x00000fffu);
  uint32_t nan = 0u - (uint32_t)(shl1_w > 0xff000000u);
  return (uint16_t)((sign >> 16) | (0x7e00u & nan) | (nonsign & ~nan));
}

static inline FG_HD float fg_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1fu) return fg_bits_f32(sign | 0x7f800000u | (m << 13)); /* Inf/NaN */
  if (e == 0) {
    if (m == 0) return fg_bits_f32(sign);
    /* subnormal: normalise */
    uint32_t ex = 113u;                                          /* 127 - 15 + 1 */
    while (!(m & 0x400u)) { m <<= 1; ex--; }
    m &= 0x3ffu;
    return fg_bits_f32(sign | (ex << 23) | (m << 13));
  }
  return fg_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

#endif
