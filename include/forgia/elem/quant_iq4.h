/* Per-block decoders of the non-linear 4-bit types IQ4_NL and IQ4_XS: each nibble indexes a
 * 16-entry int8 table (ggml's kvalues_iq4nl; block layouts as ggml's block_iq4_nl and
 * block_iq4_xs). */
#ifndef FORGIA_ELEM_QUANT_IQ4_H
#define FORGIA_ELEM_QUANT_IQ4_H

#include "forgia/elem/quant_common.h"

static inline FG_HD int fg_iq4nl_value(int q) {
  const int8_t v[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  return v[q & 15];
}

/* IQ4_NL, 18 bytes: d fp16, qs[16]; byte j = element j (low nibble), j+16 (high). */
static inline FG_HD void fg_dequant_iq4_nl(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint8_t *qs = b + 2;
  for (int j = 0; j < 16; j++) {
    y[j] = d * (float)fg_iq4nl_value(qs[j] & 15);
    y[j + 16] = d * (float)fg_iq4nl_value(qs[j] >> 4);
  }
}

/* IQ4_XS, 136 bytes: d fp16, scales_h u16, scales_l[4], qs[128]; sub-block j (32 elements) has
 * the 6-bit scale (nibble j of scales_l) | (bits 2j.. of scales_h) << 4, biased by 32. */
static inline FG_HD void fg_dequant_iq4_xs(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y) {
  const float d = fg_ld_f16(b);
  const uint16_t sh = fg_bytes_ld_le16(b + 2);
  const uint8_t *sl = b + 4, *qs = b + 8;
  for (int j = 0; j < 8; j++) {
    const int ls = ((sl[j >> 1] >> (4 * (j & 1))) & 15) | (((sh >> (2 * j)) & 3) << 4);
    const float dl = d * (float)(ls - 32);
    const uint8_t *q = qs + 16 * j;
    for (int i = 0; i < 16; i++) {
      y[32 * j + i] = dl * (float)fg_iq4nl_value(q[i] & 15);
      y[32 * j + i + 16] = dl * (float)fg_iq4nl_value(q[i] >> 4);
    }
  }
}

#endif
