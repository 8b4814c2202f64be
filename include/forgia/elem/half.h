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

static inline FG_HD uint16_t fg_f32_to_f16(float f) {
  uint32_t x = fg_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);       /* NaN */
  if (ax >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);      /* >= 65536: Inf (also Inf) */
  if (ax < 0x38800000u) {                                        /* f16 subnormal or zero */
    if (ax < 0x33000000u) return (uint16_t)sign;                 /* < 2^-25: rounds to 0 */
    uint32_t e = ax >> 23;                                       /* 102..112 */
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;                                   /* 14..24 */
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  /* normal: rebias exponent 127 -> 15, round the 13 dropped mantissa bits to even;
   * a carry out of the mantissa correctly bumps the exponent (up to Inf). */
  uint32_t r = ax - 0x38000000u;                                 /* (127-15) << 23 */
  r = (r + 0x0fffu + ((r >> 13) & 1u)) >> 13;
  return (uint16_t)(sign | r);
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
