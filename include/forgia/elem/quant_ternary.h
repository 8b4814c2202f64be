/* Per-block decoders of the ternary types TQ1_0 and TQ2_0 (value (q - 1) * d, q in 0..2).
 * The layouts are ggml's block_tq1_0 and block_tq2_0 (stated at each decoder below); TQ2_0 is
 * also Fucina's packed ternary format (ES genomes, PTQTP planes). */
#ifndef FORGIA_ELEM_QUANT_TERNARY_H
#define FORGIA_ELEM_QUANT_TERNARY_H

#include "forgia/elem/quant_common.h"

/* Value (trit - 1) * d of trit n (0 = most significant) of a TQ1_0 byte stored as
 * ceil(v * 256 / 243), given p3 = 3^n: multiplying by 3^n modulo 256 rotates trit n to the top,
 * and (t * 3) >> 8 reads it. p3 is the same for a whole run of bytes, so the loops below are
 * one 16-bit multiply per element in vector lanes, not n dependent multiplies nor a table
 * lookup (which x86-64's baseline SSE2 cannot do in a vector). */
static inline FG_HD float fg_tq1_value(uint8_t byte, uint8_t p3, float d) {
  const uint8_t t = (uint8_t)(byte * p3);
  const int16_t trit = (int16_t)((uint16_t)(t * 3) >> 8);
  return (float)(trit - 1) * d;
}

/* TQ1_0, 54 bytes: qs[48], qh[4], d fp16 (last). */
static inline FG_HD void fg_dequant_tq1_0(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const uint8_t *qs = b, *qh = b + 48;
  const float d = fg_ld_f16(b + 52);
  const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  for (int n = 0; n < 5; n++)
    for (int m = 0; m < 32; m++) y[32 * n + m] = fg_tq1_value(qs[m], pow3[n], d);
  for (int n = 0; n < 5; n++)
    for (int m = 0; m < 16; m++) y[160 + 16 * n + m] = fg_tq1_value(qs[32 + m], pow3[n], d);
  for (int n = 0; n < 4; n++)
    for (int j = 0; j < 4; j++) y[240 + 4 * n + j] = fg_tq1_value(qh[j], pow3[n], d);
}

/* TQ2_0, 66 bytes: qs[64], d fp16 (last); byte m of half h holds 128h + m + 32n in bits 2n. */
static inline FG_HD void fg_dequant_tq2_0(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b + 64);
  for (int h = 0; h < 2; h++)
    for (int n = 0; n < 4; n++)
      for (int m = 0; m < 32; m++) y[128 * h + 32 * n + m] = (float)(((b[32 * h + m] >> (2 * n)) & 3) - 1) * d;
}

#endif
