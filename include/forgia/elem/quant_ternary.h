/* Per-block decoders of the ternary types TQ1_0 and TQ2_0 (value (q - 1) * d, q in 0..2).
 * Layouts in shared/reference/gguf-and-quant.md section 2.1 and fucina-formats-and-rng.md 8.1. */
#ifndef FORGIA_ELEM_QUANT_TERNARY_H
#define FORGIA_ELEM_QUANT_TERNARY_H

#include "forgia/elem/quant_common.h"

/* Trit n (0 = most significant) of a TQ1_0 byte stored as ceil(v * 256 / 243): multiplying by
 * 3^n modulo 256 rotates trit n to the top, and (t * 3) >> 8 reads it. */
static inline FG_HD int fg_tq1_trit(uint8_t byte, int n) {
  uint8_t t = byte;
  for (int i = 0; i < n; i++) t = (uint8_t)(t * 3u);
  return (int)(((uint16_t)t * 3u) >> 8);
}

/* TQ1_0, 54 bytes: qs[48], qh[4], d fp16 (last). */
static inline FG_HD void fg_dequant_tq1_0(const uint8_t *b, float *y) {
  const uint8_t *qs = b, *qh = b + 48;
  const float d = fg_ld_f16(b + 52);
  for (int n = 0; n < 5; n++)
    for (int m = 0; m < 32; m++) y[32 * n + m] = (float)(fg_tq1_trit(qs[m], n) - 1) * d;
  for (int n = 0; n < 5; n++)
    for (int m = 0; m < 16; m++) y[160 + 16 * n + m] = (float)(fg_tq1_trit(qs[32 + m], n) - 1) * d;
  for (int n = 0; n < 4; n++)
    for (int j = 0; j < 4; j++) y[240 + 4 * n + j] = (float)(fg_tq1_trit(qh[j], n) - 1) * d;
}

/* TQ2_0, 66 bytes: qs[64], d fp16 (last); byte m of half h holds 128h + m + 32n in bits 2n. */
static inline FG_HD void fg_dequant_tq2_0(const uint8_t *b, float *y) {
  const float d = fg_ld_f16(b + 64);
  for (int h = 0; h < 2; h++)
    for (int n = 0; n < 4; n++)
      for (int m = 0; m < 32; m++) y[128 * h + 32 * n + m] = (float)(((b[32 * h + m] >> (2 * n)) & 3) - 1) * d;
}

#endif
