/* Per-block decoders of the grid i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and
 * IQ1_M (layouts: ggml's block_iq* structs, ggml-common.h). Every block is 256 elements
 * in groups of 8: a grid index picks a group of magnitudes (quant_iq_grids.h), a sign byte
 * flips some of them, and a group scale multiplies. The float operations and their order are
 * ggml's dequantizer's (group scale first, then scale * magnitude, then the sign), so the
 * floats are bit-identical, signed zero included; only integer ops and + - * on floats. */
#ifndef FORGIA_ELEM_QUANT_IQ_H
#define FORGIA_ELEM_QUANT_IQ_H

#include "forgia/elem/quant_common.h"
#include "forgia/elem/quant_iq_grids.h"

/* v, negated where bit j of a sign byte is set. ggml writes v * (bit ? -1.f : 1.f); a
 * negation gives the same bits for every non-NaN v (zeros and infinities included), and for
 * a NaN it gives what gcc makes of ggml's multiply (gcc folds x * -1 into -x), which is what
 * the golden files hold. A real multiply would keep a NaN's sign on x86 and would depend on
 * whether the compiler folds it. Negation is a flip of the sign bit, done here on the bits: a
 * select on random sign bits would be a mispredicted branch per value. */
static inline FG_HD float fg_iq_signed(float v, unsigned signs, int j) {
  return fg_bits_f32(fg_f32_bits(v) ^ (((signs >> j) & 1u) << 31));
}

/* Byte k of a packed grid entry. */
static inline FG_HD unsigned fg_iq_byte64(uint64_t g, int k) {
  return (unsigned)((g >> (8 * k)) & 0xffu);
}
static inline FG_HD unsigned fg_iq_byte32(uint32_t g, int k) {
  return (g >> (8 * k)) & 0xffu;
}

/* The bytes of a grid entry in order (byte k = bits 8k..). Where the machine is little-endian
 * (x86-64, Arm, every CUDA device) that is the entry's own memory order, so a union reads them
 * as one vector load; shifting them out one by one instead makes the compiler reassemble
 * them byte by byte. */
#if defined(__CUDA_ARCH__) || (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define FG_IQ_LITTLE_ENDIAN 1
#else
#define FG_IQ_LITTLE_ENDIAN 0
#endif
typedef union {
  uint64_t u;
  uint8_t b[8];
} fg_iq_bytes8;
typedef union {
  uint32_t u;
  uint8_t b[4];
} fg_iq_bytes4;

static inline FG_HD fg_iq_bytes8 fg_iq_split8(uint64_t g) {
  fg_iq_bytes8 v;
#if FG_IQ_LITTLE_ENDIAN
  v.u = g;
#else
  for (int k = 0; k < 8; k++) v.b[k] = (uint8_t)fg_iq_byte64(g, k);
#endif
  return v;
}

static inline FG_HD fg_iq_bytes4 fg_iq_split4(uint32_t g) {
  fg_iq_bytes4 v;
#if FG_IQ_LITTLE_ENDIAN
  v.u = g;
#else
  for (int k = 0; k < 4; k++) v.b[k] = (uint8_t)fg_iq_byte32(g, k);
#endif
  return v;
}

#if !defined(__CUDA_ARCH__)
/* On the host, the sign bits of a sign byte as the eight xor masks of its lanes (bit 31 of
 * lane j where bit j is set), one 32-byte row per byte: a lane's mask is a load, not a
 * variable shift, so the 8 values of a group are one vector multiply and one vector xor.
 * (IQ2_XXS decode: 1.56x the shifts, 1.3x ggml's select of -1.f / 1.f; the same bits.) */
#define FG_IQ_SM(i, j) ((((i) >> (j)) & 1) ? 0x80000000u : 0u)
#define FG_IQ_SM1(i) {FG_IQ_SM(i, 0), FG_IQ_SM(i, 1), FG_IQ_SM(i, 2), FG_IQ_SM(i, 3), \
                      FG_IQ_SM(i, 4), FG_IQ_SM(i, 5), FG_IQ_SM(i, 6), FG_IQ_SM(i, 7)}
#define FG_IQ_SM4(i) FG_IQ_SM1(i), FG_IQ_SM1((i) + 1), FG_IQ_SM1((i) + 2), FG_IQ_SM1((i) + 3)
#define FG_IQ_SM16(i) FG_IQ_SM4(i), FG_IQ_SM4((i) + 4), FG_IQ_SM4((i) + 8), FG_IQ_SM4((i) + 12)
#define FG_IQ_SM64(i) FG_IQ_SM16(i), FG_IQ_SM16((i) + 16), FG_IQ_SM16((i) + 32), FG_IQ_SM16((i) + 48)
static const uint32_t fg_iq_sign_masks_h[256][8] = {FG_IQ_SM64(0), FG_IQ_SM64(64), FG_IQ_SM64(128),
                                                     FG_IQ_SM64(192)};
#undef FG_IQ_SM64
#undef FG_IQ_SM16
#undef FG_IQ_SM4
#undef FG_IQ_SM1
#undef FG_IQ_SM
#endif

/* 8 values db * grid[k] * sign(k) of a u64 magnitude grid entry; signs is a byte. */
static inline FG_HD void fg_iq_put8(float db, uint64_t g, unsigned signs, float *FG_RESTRICT y) {
  const fg_iq_bytes8 v = fg_iq_split8(g);
#if defined(__CUDA_ARCH__)
  for (int k = 0; k < 8; k++) y[k] = fg_iq_signed(db * (float)v.b[k], signs, k);
#else
  const uint32_t *m = fg_iq_sign_masks_h[signs & 255u];
  for (int k = 0; k < 8; k++) y[k] = fg_bits_f32(fg_f32_bits(db * (float)v.b[k]) ^ m[k]);
#endif
}

/* 4 values of a u32 magnitude grid entry, with sign bits first..first+3 (first 0 or 4). */
static inline FG_HD void fg_iq_put4(float db, uint32_t g, unsigned signs, int first, float *FG_RESTRICT y) {
  const fg_iq_bytes4 v = fg_iq_split4(g);
#if defined(__CUDA_ARCH__)
  for (int k = 0; k < 4; k++) y[k] = fg_iq_signed(db * (float)v.b[k], signs, first + k);
#else
  const uint32_t *m = fg_iq_sign_masks_h[signs & 255u] + first;
  for (int k = 0; k < 4; k++) y[k] = fg_bits_f32(fg_f32_bits(db * (float)v.b[k]) ^ m[k]);
#endif
}

/* Group scale d * (0.5 + s) * f of IQ2_XXS, IQ2_XS, IQ2_S (f = 0.25) and IQ3_XXS (f = 0.5). */
static inline FG_HD float fg_iq_half_scale(float d, unsigned s, float f) {
  return d * (0.5f + (float)s) * f;
}

/* IQ2_XXS, 66 bytes: d fp16, then per 32-element group two u32: A = 4 x 8-bit grid indices
 * (bytes), B = 4 x 7-bit sign indices (bits 7l..7l+6) and the scale in bits 28..31. */
static inline FG_HD void fg_dequant_iq2_xxs(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  for (int g = 0; g < 8; g++) {
    const uint8_t *q = b + 2 + 8 * g;
    const uint32_t sw = fg_bytes_ld_le32(q + 4);
    const float db = fg_iq_half_scale(d, sw >> 28, 0.25f);
    for (int l = 0; l < 4; l++)
      fg_iq_put8(db, fg_iq2xxs_grid(q[l]), fg_ksigns_iq2xs((sw >> (7 * l)) & 127u), y + 32 * g + 8 * l);
  }
}

/* IQ2_XS, 74 bytes: d fp16, qs[32] u16 (9-bit grid index, 7-bit sign index above it),
 * scales[8] (per 32-element group: low nibble for its first 16 elements, high for the rest). */
static inline FG_HD void fg_dequant_iq2_xs(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 2, *sc = b + 66;
  for (int g = 0; g < 8; g++) {
    const float db0 = fg_iq_half_scale(d, sc[g] & 15u, 0.25f);
    const float db1 = fg_iq_half_scale(d, (unsigned)sc[g] >> 4, 0.25f);
    for (int l = 0; l < 4; l++) {
      const unsigned w = fg_bytes_ld_le16(qs + 2 * (4 * g + l));
      fg_iq_put8(l < 2 ? db0 : db1, fg_iq2xs_grid(w & 511u), fg_ksigns_iq2xs(w >> 9), y + 32 * g + 8 * l);
    }
  }
}

/* IQ2_S, 82 bytes: d fp16, qs[32] (low 8 index bits), signs[32] (explicit sign bytes),
 * qh[8] (bits 2l..2l+1 of qh[g] are index bits 8..9 of group g's l-th 8), scales[8] as IQ2_XS. */
static inline FG_HD void fg_dequant_iq2_s(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *sc = b + 74;
  for (int g = 0; g < 8; g++) {
    const float db0 = fg_iq_half_scale(d, sc[g] & 15u, 0.25f);
    const float db1 = fg_iq_half_scale(d, (unsigned)sc[g] >> 4, 0.25f);
    for (int l = 0; l < 4; l++) {
      const unsigned idx = qs[4 * g + l] | ((((unsigned)qh[g] >> (2 * l)) & 3u) << 8);
      fg_iq_put8(l < 2 ? db0 : db1, fg_iq2s_grid(idx), signs[4 * g + l], y + 32 * g + 8 * l);
    }
  }
}

/* IQ3_XXS, 98 bytes: d fp16, qs[64] (8-bit indices into the 4-value grid, two per 8), then
 * per 32-element group a u32 of 4 x 7-bit sign indices and the scale in bits 28..31. */
static inline FG_HD void fg_dequant_iq3_xxs(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 2;
  for (int g = 0; g < 8; g++) {
    const uint32_t sw = fg_bytes_ld_le32(b + 66 + 4 * g);
    const float db = fg_iq_half_scale(d, sw >> 28, 0.5f);
    for (int l = 0; l < 4; l++) {
      const unsigned s = fg_ksigns_iq2xs((sw >> (7 * l)) & 127u);
      float *o = y + 32 * g + 8 * l;
      fg_iq_put4(db, fg_iq3xxs_grid(qs[8 * g + 2 * l]), s, 0, o);
      fg_iq_put4(db, fg_iq3xxs_grid(qs[8 * g + 2 * l + 1]), s, 4, o + 4);
    }
  }
}

/* IQ3_S, 110 bytes: d fp16, qs[64] (low 8 index bits), qh[8] (bit i of qh[g] is index bit 8
 * of the i-th index of group g), signs[32], scales[4] (nibble per 32-element group; factor
 * 1 + 2s, an integer). */
static inline FG_HD void fg_dequant_iq3_s(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *sc = b + 106;
  for (int g = 0; g < 8; g++) {
    const unsigned s4 = ((unsigned)sc[g >> 1] >> (4 * (g & 1))) & 15u;
    const float db = d * (float)(1 + 2 * (int)s4);
    for (int l = 0; l < 4; l++) {
      const unsigned i0 = qs[8 * g + 2 * l] | ((((unsigned)qh[g] >> (2 * l)) & 1u) << 8);
      const unsigned i1 = qs[8 * g + 2 * l + 1] | ((((unsigned)qh[g] >> (2 * l + 1)) & 1u) << 8);
      const unsigned s = signs[4 * g + l];
      float *o = y + 32 * g + 8 * l;
      fg_iq_put4(db, fg_iq3s_grid(i0), s, 0, o);
      fg_iq_put4(db, fg_iq3s_grid(i1), s, 4, o + 4);
    }
  }
}

/* 8 values dl * (grid[k] + delta) of an IQ1 grid entry (int8 values -1, 0, +1). */
static inline FG_HD void fg_iq1_put8(float dl, float delta, unsigned idx, float *FG_RESTRICT y) {
#if FG_IQ_LITTLE_ENDIAN
  /* the entry's bytes where they lie (the grid's copy on this side): gcc takes the union copy
   * of fg_iq_split8 apart byte by byte in this loop, and a direct read is one vector load */
#if defined(__CUDA_ARCH__)
  const int8_t *v = (const int8_t *)&fg_iq1s_grid_d[idx];
#else
  const int8_t *v = (const int8_t *)&fg_iq1s_grid_h[idx];
#endif
  for (int k = 0; k < 8; k++) y[k] = dl * ((float)v[k] + delta);
#else
  const fg_iq_bytes8 v = fg_iq_split8(fg_iq1s_grid(idx));
  for (int k = 0; k < 8; k++) y[k] = dl * ((float)(int8_t)v.b[k] + delta);
#endif
}

/* IQ1_S, 50 bytes: d fp16, qs[32] (low 8 index bits), qh[8] u16 per 32-element group: bits
 * 3l..3l+2 are index bits 8..10 of its l-th 8, bits 12..14 the scale s (factor 2s + 1),
 * bit 15 the sign of delta. */
static inline FG_HD void fg_dequant_iq1_s(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 2;
  for (int g = 0; g < 8; g++) {
    const unsigned h = fg_bytes_ld_le16(b + 34 + 2 * g);
    const float dl = d * (float)(2 * (int)((h >> 12) & 7u) + 1);
    const float delta = fg_bits_f32(fg_f32_bits(FG_IQ1_DELTA) ^ ((h & 0x8000u) << 16)); /* no branch on a random bit */
    for (int l = 0; l < 4; l++)
      fg_iq1_put8(dl, delta, qs[4 * g + l] | (((h >> (3 * l)) & 7u) << 8), y + 32 * g + 8 * l);
  }
}

/* IQ1_M, 56 bytes: qs[32] (low 8 index bits), qh[16] (per 8 elements a nibble: bits 0..2 index
 * bits 8..10, bit 3 the sign of delta), scales[8] read as 4 u16: per 16 elements a 3-bit scale
 * s (factor 2s + 1) at bits 3k of word k/4, and the top nibbles of the 4 words together form
 * the block's fp16 d (word 0's top nibble lowest). */
/* IQ1_M's block scale d; sc gets the 4 scale words. */
static inline FG_HD float fg_iq1m_d(const uint8_t *FG_RESTRICT b, unsigned sc[4]) {
  for (int k = 0; k < 4; k++) sc[k] = fg_bytes_ld_le16(b + 48 + 2 * k);
  const uint16_t dh = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0u) | ((sc[2] >> 4) & 0x0f00u) |
                                 (sc[3] & 0xf000u));
  return fg_f16_to_f32(dh);
}

/* IQ1_M's scales of group g's two halves: d * (2s + 1). */
static inline FG_HD void fg_iq1m_group(const unsigned sc[4], float d, int g, float *dl1, float *dl2) {
  const unsigned w = sc[g >> 1] >> (6 * (g & 1));
  *dl1 = d * (float)(2 * (int)(w & 7u) + 1);
  *dl2 = d * (float)(2 * (int)((w >> 3) & 7u) + 1);
}

/* IQ1_M's grid index of the l-th 8 of group g, and its delta. */
static inline FG_HD unsigned fg_iq1m_entry(const uint8_t *FG_RESTRICT b, int g, int l, float *delta) {
  const unsigned nib = ((unsigned)b[32 + 2 * g + (l >> 1)] >> (4 * (l & 1))) & 15u;
  *delta = fg_bits_f32(fg_f32_bits(FG_IQ1_DELTA) ^ ((nib & 8u) << 28));
  return b[4 * g + l] | ((nib & 7u) << 8);
}

static inline FG_HD void fg_dequant_iq1_m(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  unsigned sc[4];
  const float d = fg_iq1m_d(b, sc);
  for (int g = 0; g < 8; g++) {
    float dl1, dl2, delta;
    fg_iq1m_group(sc, d, g, &dl1, &dl2);
    for (int l = 0; l < 4; l++) {
      const unsigned idx = fg_iq1m_entry(b, g, l, &delta);
      fg_iq1_put8(l < 2 ? dl1 : dl2, delta, idx, y + 32 * g + 8 * l);
    }
  }
}

#endif
