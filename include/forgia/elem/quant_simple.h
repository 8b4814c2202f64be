/* Per-block decoders of ggml's 32-element families (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1) and of
 * Q1_0 / Q2_0. Each reads one packed block and writes its elements to y in order.
 * The products follow ggml's dequantizers operation by operation (d times the integer code,
 * then + m), so with -ffp-contract=off / --fmad=false every backend gets ggml's floats. */
#ifndef FORGIA_ELEM_QUANT_SIMPLE_H
#define FORGIA_ELEM_QUANT_SIMPLE_H

#include "forgia/elem/quant_common.h"

/* Q4_0, 18 bytes: d fp16, qs[16]; byte j = element j (low nibble), j+16 (high). */
static inline FG_HD void fg_dequant_q4_0(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 2;
  for (int j = 0; j < 16; j++) {
    y[j] = (float)((qs[j] & 0x0f) - 8) * d;
    y[j + 16] = (float)((qs[j] >> 4) - 8) * d;
  }
}

/* Q4_1, 20 bytes: d fp16, m fp16, qs[16]. */
static inline FG_HD void fg_dequant_q4_1(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b), m = fg_ld_f16(b + 2);
  const uint8_t *qs = b + 4;
  for (int j = 0; j < 16; j++) {
    y[j] = (float)(qs[j] & 0x0f) * d + m;
    y[j + 16] = (float)(qs[j] >> 4) * d + m;
  }
}

/* The 5th bits of a Q5_0 / Q5_1 block as 0 or 16 (element j has bit j of qh), 4 at a time: qh
 * shifted by 4g for all four, then tested against the constant masks 1, 2, 4, 8, so that the
 * four are one vector operation (a shift by j per element would be a per-lane variable shift,
 * which SSE2 lacks). The decoders then run one plain loop over the 16 bytes. */
static inline FG_HD void fg_q5_high(uint32_t qh, int *h) {
  for (int g = 0; g < 8; g++) {
    const uint32_t a = qh >> (4 * g);
    for (int k = 0; k < 4; k++) h[4 * g + k] = (a & (1u << k)) ? 16 : 0;
  }
}

/* Q5_0, 22 bytes: d fp16, qh u32 (bit j = 5th bit of element j), qs[16]. */
static inline FG_HD void fg_dequant_q5_0(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 6;
  int h[32];
  fg_q5_high(fg_bytes_ld_le32(b + 2), h);
  for (int j = 0; j < 16; j++) {
    y[j] = (float)(((qs[j] & 0x0f) | h[j]) - 16) * d;
    y[j + 16] = (float)(((qs[j] >> 4) | h[j + 16]) - 16) * d;
  }
}

/* Q5_1, 24 bytes: d fp16, m fp16, qh u32, qs[16]. */
static inline FG_HD void fg_dequant_q5_1(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b), m = fg_ld_f16(b + 2);
  const uint8_t *qs = b + 8;
  int h[32];
  fg_q5_high(fg_bytes_ld_le32(b + 4), h);
  for (int j = 0; j < 16; j++) {
    y[j] = (float)((qs[j] & 0x0f) | h[j]) * d + m;
    y[j + 16] = (float)((qs[j] >> 4) | h[j + 16]) * d + m;
  }
}

/* Q8_0, 34 bytes: d fp16, qs[32] int8. */
static inline FG_HD void fg_dequant_q8_0(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q8_1, 36 bytes: d fp16, s fp16 (d * sum of codes, unused here), qs[32] int8.
 * ggml registers no dequantizer for Q8_1; q*d is what its layout means. */
static inline FG_HD void fg_dequant_q8_1(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[4 + j] * d;
}

/* Q1_0, 18 bytes per 128: d fp16, qs[16]; bit j%8 of qs[j/8] set means +d, clear -d.
 * The elements are d itself, not products, so a signalling-NaN scale would come through as
 * it is; ggml's portable fp16 conversion ends in an f32 multiply, which returns it quiet, so set
 * the quiet bit (by bits, so CPU and CUDA agree). Any other d is unchanged. */
static inline FG_HD void fg_dequant_q1_0(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  uint32_t du = fg_f32_bits(fg_ld_f16(b));
  if ((du & 0x7fffffffu) > 0x7f800000u) du |= 0x00400000u;
  const float d = fg_bits_f32(du);
  const uint8_t *qs = b + 2;
  /* bit ? d : -d as a sign-bit flip (what negation is), without a branch per random bit */
  const uint32_t db = fg_f32_bits(d);
  for (int j = 0; j < 128; j++) y[j] = fg_bits_f32(db ^ ((~(uint32_t)(qs[j >> 3] >> (j & 7)) & 1u) << 31));
}

/* Q2_0, 18 bytes per 64: d fp16, qs[16]; element j is bits 2(j%4).. of qs[j/4], value (q-1)d.
 * Written per byte with its four constant shifts, so that the loop vectorises over bytes and the
 * four results are interleaved into place (a shift by 2(j%4) per element would be a per-lane
 * variable shift, which SSE2 lacks). */
static inline FG_HD void fg_dequant_q2_0(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 2;
  for (int m = 0; m < 16; m++) {
    const int q = qs[m];
    y[4 * m] = (float)((q & 3) - 1) * d;
    y[4 * m + 1] = (float)(((q >> 2) & 3) - 1) * d;
    y[4 * m + 2] = (float)(((q >> 4) & 3) - 1) * d;
    y[4 * m + 3] = (float)((q >> 6) - 1) * d;
  }
}

#endif
