/* The k-quants' last steps, shared by the plain (quant_kquants.c) and the weighted
 * (quant_weighted_kquants.c) encoders: the codes re-quantized against the stored scales, and
 * codes and scales packed into ggml's block layouts. static inline, so that each loop is
 * compiled in its caller with the constant sizes, as it was written there. */
#ifndef FORGIA_FORMATS_QUANT_KQUANTS_PACK_H
#define FORGIA_FORMATS_QUANT_KQUANTS_PACK_H

#include <stdint.h>
#include <string.h>

#include "formats/quant_internal.h"

/* Before a short loop that GCC vectorises at -O2: at -O3 it would unroll it completely first
 * and then vectorise only pieces of the straight-line code, several times slower. */
#define FG_KQ_KEEP_LOOP _Pragma("GCC unroll 1")

/* Codes 0..nmax of (x + dm) / d, for n elements. */
static inline void fg_kq_requant_asym(const float *x, int n, float d, float dm, int nmax, uint8_t *L) {
  FG_KQ_KEEP_LOOP
  for (int i = 0; i < n; i++) L[i] = (uint8_t)fg_clampi(fg_nearest_int((x[i] + dm) / d), 0, nmax);
}

/* Codes -nmax..nmax-1 of x / d stored + nmax, for n elements. */
static inline void fg_kq_requant_sym(const float *x, int n, float d, int nmax, int8_t *L) {
  FG_KQ_KEEP_LOOP
  for (int i = 0; i < n; i++) L[i] = (int8_t)(fg_clampi(fg_nearest_int(x[i] / d), -nmax, nmax - 1) + nmax);
}

/* 16 bytes at a time for the code packings (SSE2-native as a GCC vector). */
typedef uint8_t fg_kqb __attribute__((vector_size(16)));

static inline fg_kqb fg_kqb_load(const uint8_t *p) {
  fg_kqb v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Q2_K / Q3_K low-2-bit packing of 256 codes: byte l of half c holds elements 128c + l + 32s
 * at bits 2s. */
static inline void fg_kq_pack_2bit(const uint8_t *L, uint8_t *qs) {
  for (int j = 0; j < 256; j += 128)
    for (int l = 0; l < 32; l += 16) {
      const fg_kqb v = fg_kqb_load(L + j + l) | (fg_kqb_load(L + j + l + 32) << 2) |
                       (fg_kqb_load(L + j + l + 64) << 4) | (fg_kqb_load(L + j + l + 96) << 6);
      memcpy(qs + j / 4 + l, &v, sizeof v);
    }
}

/* Q3_K's 256 codes 0..7: those above 3 set bit j >> 5 of hmask[j & 31] and drop by 4 into Lu
 * (branch-free, 16 at a time). */
static inline void fg_kq_q3_split(const int8_t *L, uint8_t *hmask, uint8_t *Lu) {
  for (int m = 0; m < 32; m += 16) {
    fg_kqb h = {0};
    for (int k = 0; k < 8; k++) {
      const fg_kqb v = fg_kqb_load((const uint8_t *)L + 32 * k + m), hi = (fg_kqb)(v > 3);
      h |= hi & (uint8_t)(1u << k);
      const fg_kqb lo = v - (hi & 4);
      memcpy(Lu + 32 * k + m, &lo, sizeof lo);
    }
    memcpy(hmask + m, &h, sizeof h);
  }
}

/* Q3_K's 16 sub-block scale codes 0..63 into its 12 scale bytes: low nibbles, then the high
 * 2 bits of scale j at bits 2 (j / 4) of byte 8 + j % 4. */
static inline void fg_kq_pack_q3_scales(const int8_t *ls, uint8_t *sc) {
  memset(sc, 0, 12);
  for (int j = 0; j < 16; j++) {
    const int l = ls[j];
    if (j < 8) sc[j] = (uint8_t)(l & 0xF);
    else sc[j - 8] |= (uint8_t)((l & 0xF) << 4);
    sc[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
  }
}

/* Q4_K / Q5_K's 8 scale and 8 min codes 0..63 into their 12 bytes (fg_k4_scale_min reads
 * them back). */
static inline void fg_kq_pack_scale_min(const uint8_t *ls, const uint8_t *lm, uint8_t *sc) {
  for (int j = 0; j < 8; j++) {
    if (j < 4) {
      sc[j] = ls[j];
      sc[j + 4] = lm[j];
    } else {
      sc[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      sc[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
      sc[j] |= (uint8_t)((lm[j] >> 4) << 6);
    }
  }
}

/* Q4_K's 256 codes 0..15: byte l of each 32 holds elements 64c + l and 64c + 32 + l. */
static inline void fg_kq_pack_q4(const uint8_t *L, uint8_t *qs) {
  for (int j = 0; j < 256; j += 64)
    for (int l = 0; l < 32; l++) qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
}

/* Q5_K's 256 codes 0..31: the low nibbles as Q4_K's, bit 4 of elements 64c + j and
 * 64c + 32 + j at bits 2c and 2c + 1 of qh[j]. */
static inline void fg_kq_pack_q5(const uint8_t *L, uint8_t *qh, uint8_t *ql) {
  memset(qh, 0, 32);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < 256; n += 64) {
    for (int j = 0; j < 32; j++) {
      int l1 = L[n + j], l2 = L[n + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[n / 2 + j] = (uint8_t)(l1 | (l2 << 4));
    }
    m1 = (uint8_t)(m1 << 2);
    m2 = (uint8_t)(m2 << 2);
  }
}

/* Q6_K's 256 codes 0..63: low nibbles in ql (64 bytes per half), the high 2 bits in qh. */
static inline void fg_kq_pack_q6(const int8_t *L, uint8_t *ql, uint8_t *qh) {
  for (int j = 0; j < 256; j += 128) {
    for (int l = 0; l < 32; l++) {
      const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
      ql[l] = (uint8_t)(q1 | (q3 << 4));
      ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
      qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                        ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

/* Q6_K's 16 int8 sub-block scales against max_scale (the signed one of largest magnitude,
 * not below GROUP_MAX_EPS) and its f16 super-block scale at y + 208, which it returns. */
static inline uint16_t fg_kq_q6_scales(const float *sc, float max_scale, uint8_t *y) {
  const float iscale = -128.f / max_scale;
  const uint16_t d16 = fg_f32_to_f16(1 / iscale);
  fg_bytes_st_le16(y + 208, d16);
  int8_t *scales = (int8_t *)(y + 192);
  for (int ib = 0; ib < 16; ib++) {
    const int v = fg_nearest_int(iscale * sc[ib]);
    scales[ib] = (int8_t)(v < 127 ? v : 127);
  }
  return d16;
}

#endif
