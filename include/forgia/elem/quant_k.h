/* Per-block decoders of the k-quants (256-element super-blocks): Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K.
 * Layouts in shared/reference/gguf-and-quant.md section 2.2. Each sub-block scale is formed
 * first (d * sc, dmin * m), then multiplied by the code, as ggml's dequantizers do. */
#ifndef FORGIA_ELEM_QUANT_K_H
#define FORGIA_ELEM_QUANT_K_H

#include "forgia/elem/quant_common.h"

/* Q2_K, 84 bytes: scales[16] (lo = scale, hi = min), qs[64], d fp16, dmin fp16. */
static inline FG_HD void fg_dequant_q2_K(const uint8_t *b, float *y) {
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
static inline FG_HD void fg_dequant_q3_K(const uint8_t *b, float *y) {
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

/* Q4_K, 144 bytes: d fp16, dmin fp16, scales[12], qs[128]. */
static inline FG_HD void fg_dequant_q4_K(const uint8_t *b, float *y) {
  const float d = fg_ld_f16(b), dmin = fg_ld_f16(b + 2);
  const uint8_t *scales = b + 4, *qs = b + 16;
  for (int j = 0; j < 8; j++) {
    int sc, m;
    fg_k4_scale_min(scales, j, &sc, &m);
    const float d1 = d * (float)sc, m1 = dmin * (float)m;
    const uint8_t *q = qs + 32 * (j >> 1);
    const int shift = (j & 1) * 4;
    for (int l = 0; l < 32; l++) y[32 * j + l] = d1 * (float)((q[l] >> shift) & 15) - m1;
  }
}

/* Q5_K, 176 bytes: d fp16, dmin fp16, scales[12], qh[32], qs[128]. */
static inline FG_HD void fg_dequant_q5_K(const uint8_t *b, float *y) {
  const float d = fg_ld_f16(b), dmin = fg_ld_f16(b + 2);
  const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + 48;
  for (int j = 0; j < 8; j++) {
    int sc, m;
    fg_k4_scale_min(scales, j, &sc, &m);
    const float d1 = d * (float)sc, m1 = dmin * (float)m;
    const uint8_t *q = qs + 32 * (j >> 1);
    const int shift = (j & 1) * 4;
    for (int l = 0; l < 32; l++) {
      const int v = ((q[l] >> shift) & 15) | (((qh[l] >> j) & 1) << 4);
      y[32 * j + l] = d1 * (float)v - m1;
    }
  }
}

/* Q6_K, 210 bytes: ql[128], qh[64], scales[16] int8, d fp16. */
static inline FG_HD void fg_dequant_q6_K(const uint8_t *b, float *y) {
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
static inline FG_HD void fg_dequant_q8_K(const uint8_t *b, float *y) {
  const float d = fg_bits_f32(fg_ld_le32(b));
  for (int j = 0; j < 256; j++) y[j] = d * (float)(int8_t)b[4 + j];
}

#endif
