/* Per-block decoders of the k-quants (256-element super-blocks): Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K.
 * Layouts: ggml's block_q*_K structs (ggml-common.h). Each sub-block scale is formed
 * first (d * sc, dmin * m), then multiplied by the code, as ggml's dequantizers do. */
#ifndef FORGIA_ELEM_QUANT_K_H
#define FORGIA_ELEM_QUANT_K_H

#include "forgia/elem/quant_common.h"

/* Q2_K, 84 bytes: scales[16] (lo = scale, hi = min), qs[64], d fp16, dmin fp16. */
static inline FG_HD void fg_dequant_q2_K(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const uint8_t *sc = b;
  const float d = fg_ld_f16(b + 80), dmin = fg_ld_f16(b + 82);
  for (int k = 0; k < 16; k++) { /* sub-block k: elements 16k.., half k/8, shift 2*((k/2)%4) */
    const uint8_t *q = b + 16 + 32 * (k >> 3) + 16 * (k & 1);
    const int shift = 2 * ((k >> 1) & 3);
    const float dl = d * (float)(sc[k] & 15), ml = dmin * (float)(sc[k] >> 4);
    for (int l = 0; l < 16; l++) y[16 * k + l] = dl * (float)((q[l] >> shift) & 3) - ml;
  }
}

/* 6-bit scale j (0..15) of Q3_K, biased by 32. */
static inline FG_HD int fg_q3_K_scale(const uint8_t *scales, int j) {
  int lo = j < 8 ? (scales[j] & 15) : (scales[j - 8] >> 4);
  int hi = (scales[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
  return (lo | (hi << 4)) - 32;
}

/* Q3_K, 110 bytes: hmask[32], qs[64], scales[12], d fp16. */
static inline FG_HD void fg_dequant_q3_K(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const uint8_t *hmask = b, *scales = b + 96;
  const float d = fg_ld_f16(b + 108);
  for (int k = 0; k < 16; k++) { /* sub-block k: elements 16k..; high bit plane k/2 */
    const uint8_t *q = b + 32 + 32 * (k >> 3) + 16 * (k & 1);
    const uint8_t *hm = hmask + 16 * (k & 1);
    const int shift = 2 * ((k >> 1) & 3), plane = k >> 1;
    const float dl = d * (float)fg_q3_K_scale(scales, k);
    for (int l = 0; l < 16; l++) {
      const int lo = (q[l] >> shift) & 3;
      y[16 * k + l] = dl * (float)(lo - (((hm[l] >> plane) & 1) ? 0 : 4));
    }
  }
}

/* Scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K. */
static inline FG_HD void fg_k4_scale_min(const uint8_t *q, int j, int *sc, int *m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

/* Q4_K, 144 bytes: d fp16, dmin fp16, scales[12], qs[128]. Sub-blocks 2p and 2p+1 are the low
 * and high nibbles of the same 32 bytes: each pair is one pass over them, with its two scales
 * formed just before it (constant j once the pair loop unrolls). Measured on one core, 1 MiB
 * of output: 8% faster than all 8 scales formed first and two passes per pair. */
static inline FG_HD void fg_dequant_q4_K(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b), dmin = fg_ld_f16(b + 2);
  const uint8_t *scales = b + 4, *qs = b + 16;
  for (int p = 0; p < 4; p++) {
    int sc, m;
    fg_k4_scale_min(scales, 2 * p, &sc, &m);
    const float d1 = d * (float)sc, m1 = dmin * (float)m;
    fg_k4_scale_min(scales, 2 * p + 1, &sc, &m);
    const float d2 = d * (float)sc, m2 = dmin * (float)m;
    const uint8_t *q = qs + 32 * p;
    float *o = y + 64 * p;
    for (int l = 0; l < 32; l++) {
      const uint8_t v = q[l];
      o[l] = d1 * (float)(v & 15) - m1;
      o[32 + l] = d2 * (float)(v >> 4) - m2;
    }
  }
}

/* Q5_K, 176 bytes: d fp16, dmin fp16, scales[12], qh[32], qs[128]; bit j of qh[l] is the 5th bit
 * of element l of sub-block j. Paired as Q4_K (scales formed per pair), the qh bits at constant
 * positions 2p and 2p+1. */
static inline FG_HD void fg_dequant_q5_K(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b), dmin = fg_ld_f16(b + 2);
  const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + 48;
  for (int p = 0; p < 4; p++) {
    int sc, m;
    fg_k4_scale_min(scales, 2 * p, &sc, &m);
    const float d1 = d * (float)sc, m1 = dmin * (float)m;
    fg_k4_scale_min(scales, 2 * p + 1, &sc, &m);
    const float d2 = d * (float)sc, m2 = dmin * (float)m;
    const uint8_t *q = qs + 32 * p;
    float *o = y + 64 * p;
    const uint8_t u1 = (uint8_t)(1u << (2 * p)), u2 = (uint8_t)(2u << (2 * p));
    /* two passes here, not one: the fifth bits make one pass slower (measured) */
    for (int l = 0; l < 32; l++) o[l] = d1 * (float)((q[l] & 15) + ((qh[l] & u1) ? 16 : 0)) - m1;
    for (int l = 0; l < 32; l++) o[32 + l] = d2 * (float)((q[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
  }
}

/* Q6_K, 210 bytes: ql[128], qh[64], scales[16] int8, d fp16. */
static inline FG_HD void fg_dequant_q6_K(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const int8_t *scales = (const int8_t *)(b + 192);
  const float d = fg_ld_f16(b + 208);
  for (int k = 0; k < 16; k++) { /* sub-block k: half h = k/8, quarter s = (k/2)%4 */
    const int h = k >> 3, s = (k >> 1) & 3, off = 16 * (k & 1);
    const uint8_t *ql = b + 64 * h + 32 * (s & 1) + off, *qh = b + 128 + 32 * h + off;
    const int lshift = (s >> 1) * 4, hshift = 2 * s;
    const float dl = d * (float)scales[k];
    for (int l = 0; l < 16; l++) {
      const int v = ((ql[l] >> lshift) & 15) | (((qh[l] >> hshift) & 3) << 4);
      y[16 * k + l] = dl * (float)(v - 32);
    }
  }
}

/* Q8_K, 292 bytes: d f32, qs[256] int8, bsums[16] int16 (redundant sums, not read). */
static inline FG_HD void fg_dequant_q8_K(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_bits_f32(fg_bytes_ld_le32(b));
  for (int j = 0; j < 256; j++) y[j] = d * (float)(int8_t)b[4 + j];
}

#endif
