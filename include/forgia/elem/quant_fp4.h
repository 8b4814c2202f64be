/* Per-block decoders of the FP4 (E2M1) types MXFP4 and NVFP4. The code table holds the E2M1
 * values doubled, so the block scales are decoded at half their value, as ggml does. */
#ifndef FORGIA_ELEM_QUANT_FP4_H
#define FORGIA_ELEM_QUANT_FP4_H

#include "forgia/elem/quant_common.h"

/* Doubled E2M1 value of code q: 0 1 2 3 4 6 8 12 for q = 0..7 and their negatives for 8..15
 * (code 8 is 0). Computed rather than looked up so that device code needs no table: exponent
 * field e = (q >> 1) & 3, mantissa bit m; e == 0 gives m, else (2 + m) << (e - 1). Written
 * without branches: random sign bits would otherwise mispredict on every other element. */
static inline FG_HD float fg_e2m1x2_value(int q) {
  const int e = (q >> 1) & 3, m = q & 1, nz = e != 0;
  const int v = (m + 2 * nz) << (e - nz);
  return (float)(v - 2 * ((q >> 3) & 1) * v);
}

/* fg_e2m1x2_value(q) built as f32 bits from the code's fields with constant shifts, masks and
 * adds only, so that loops over nibbles vectorise (SSE2 has neither per-lane variable shifts
 * nor table lookups) and scalar code has no branch: exponent field e and mantissa bit m give
 * 2^e (1 + m/2) for e > 0, and 1 for e == 0, m == 1; magnitude code 0 is +0 whatever the sign
 * bit, as ggml's int8 table has it. */
static inline FG_HD float fg_e2m1x2_f32(uint32_t q) {
  const uint32_t c = q & 7u, e = c >> 1;
  const uint32_t e_nz = (e | (e >> 1)) & 1u, c_nz = e_nz | (c & 1u);
  const uint32_t bits = ((e + 127u) << 23) | ((c & e_nz & 1u) << 22) | ((q & 8u) << 28);
  return fg_bits_f32(bits & (0u - c_nz));
}

/* E8M0 exponent byte to 2^(e-128), i.e. half the E8M0 value; e < 2 are f32 subnormals. */
static inline FG_HD float fg_e8m0_to_f32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : ((uint32_t)(e - 1) << 23);
  return fg_bits_f32(bits);
}

/* Unsigned E4M3 (bias 7) to f32, times 0.5; codes 0 and 0x7F decode to 0. Built from bits:
 * exponent 0 gives m * 2^-9 * 0.5 = m * 2^-10, else (8 + m) * 2^(e-11), which is the f32
 * with exponent e - 8 and mantissa m << 20. Selects rather than branches: a block's four
 * scales are random to a branch predictor. */
static inline FG_HD float fg_ue4m3_to_f32_half(uint8_t x) {
  const uint32_t e = (x >> 3) & 15u, m = x & 7u;
  const uint32_t normal = ((e + 119u) << 23) | (m << 20);
  const uint32_t bits = e == 0 ? fg_f32_bits((float)m * fg_bits_f32(0x3a800000u)) : normal; /* 2^-10 */
  return fg_bits_f32(x == 0x7f ? 0u : bits);
}

/* MXFP4, 17 bytes: e (E8M0), qs[16]; byte j = element j (low nibble), j+16 (high). */
static inline FG_HD void fg_dequant_mxfp4(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_e8m0_to_f32_half(b[0]);
  for (int j = 0; j < 16; j++) {
    y[j] = fg_e2m1x2_f32(b[1 + j] & 15u) * d;
    y[j + 16] = fg_e2m1x2_f32((uint32_t)b[1 + j] >> 4) * d;
  }
}

/* NVFP4, 36 bytes per 64: d[4] (UE4M3 per 16), qs[32]; sub-block s uses qs[8s..8s+7], byte j
 * holds sub-element j (low nibble) and j+8 (high). */
static inline FG_HD void fg_dequant_nvfp4(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  /* the 64 code values first, low nibbles then high (one loop over the 32 bytes, which
   * vectorises as MXFP4's does), then each sub-block's 16 times its scale */
  float v[64];
  for (int k = 0; k < 32; k++) {
    v[k] = fg_e2m1x2_f32(b[4 + k] & 15u);
    v[32 + k] = fg_e2m1x2_f32((uint32_t)b[4 + k] >> 4);
  }
  for (int s = 0; s < 4; s++) {
    const float d = fg_ue4m3_to_f32_half(b[s]);
    for (int j = 0; j < 8; j++) {
      y[16 * s + j] = d * v[8 * s + j];
      y[16 * s + 8 + j] = d * v[32 + 8 * s + j];
    }
  }
}

#endif
