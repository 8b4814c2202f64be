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

/* E8M0 exponent byte to 2^(e-128), i.e. half the E8M0 value; e < 2 are f32 subnormals. */
static inline FG_HD float fg_e8m0_to_f32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : ((uint32_t)(e - 1) << 23);
  return fg_bits_f32(bits);
}

/* Unsigned E4M3 (bias 7) to f32, times 0.5; codes 0 and 0x7F decode to 0. Built from bits:
 * exponent 0 gives m * 2^-9 * 0.5 = m * 2^-10, else (8 + m) * 2^(e-11). */
static inline FG_HD float fg_ue4m3_to_f32_half(uint8_t x) {
  if (x == 0 || x == 0x7f) return 0.0f;
  const int e = (x >> 3) & 15, m = x & 7;
  if (e == 0) return (float)m * fg_bits_f32(0x3a800000u);               /* 2^-10 */
  return (float)(8 + m) * fg_bits_f32((uint32_t)(e - 11 + 127) << 23); /* exact */
}

/* MXFP4, 17 bytes: e (E8M0), qs[16]; byte j = element j (low nibble), j+16 (high). */
static inline FG_HD void fg_dequant_mxfp4(const uint8_t *b, float *y) {
  const float d = fg_e8m0_to_f32_half(b[0]);
  for (int j = 0; j < 16; j++) {
    y[j] = fg_e2m1x2_value(b[1 + j] & 15) * d;
    y[j + 16] = fg_e2m1x2_value(b[1 + j] >> 4) * d;
  }
}

/* NVFP4, 36 bytes per 64: d[4] (UE4M3 per 16), qs[32]; sub-block s uses qs[8s..8s+7], byte j
 * holds sub-element j (low nibble) and j+8 (high). */
static inline FG_HD void fg_dequant_nvfp4(const uint8_t *b, float *y) {
  for (int s = 0; s < 4; s++) {
    const float d = fg_ue4m3_to_f32_half(b[s]);
    const uint8_t *qs = b + 4 + 8 * s;
    for (int j = 0; j < 8; j++) {
      y[16 * s + j] = d * fg_e2m1x2_value(qs[j] & 15);
      y[16 * s + j + 8] = d * fg_e2m1x2_value(qs[j] >> 4);
    }
  }
}

#endif
