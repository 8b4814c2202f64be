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
 * (no FTZ, no contraction: docs/design.md, Numerics contract, rule 2). Exhaustively checked
 * against IEEE in tests. */
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

/* Branch-free so that CPU loops vectorise. Normals: rebias by moving the bits into an f32
 * 2^112 too large and scaling by 2^-112 (exact). Subnormals: the mantissa placed under 0.5,
 * minus 0.5 (exact, Sterbenz). Inf/NaN are selected from integer bits, so the payload is kept
 * exactly (a float operation on a NaN would quieten it differently on CPUs and GPUs). */
static inline FG_HD float fg_f16_to_f32(uint16_t h) {
  const uint32_t w = (uint32_t)h << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  const float normal = fg_bits_f32((two_w >> 4) + (0xe0u << 23)) * 0x1.0p-112f;
  const float subnormal = fg_bits_f32((two_w >> 17) | (126u << 23)) - 0.5f;
  const uint32_t sub = 0u - (uint32_t)(two_w < (1u << 27));
  uint32_t r = (fg_f32_bits(subnormal) & sub) | (fg_f32_bits(normal) & ~sub);
  const uint32_t special = 0u - (uint32_t)((h & 0x7c00u) == 0x7c00u);
  r = (r & ~special) | ((0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13)) & special);
  return fg_bits_f32(sign | r);
}

#endif
