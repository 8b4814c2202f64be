/* Encoders of the 32-element families and of Q1_0 / Q2_0 (ggml quantize_row_*_ref).
 * Rounding differs by type on purpose, as in ggml: Q4/Q5 add an offset and truncate, Q8 and
 * Q2_0 use roundf (half away from zero). Scales are computed in f32; codes use id = 1/d of the
 * unrounded d, and only the stored d is rounded to fp16. */
#include <math.h>

#include "formats/quant_internal.h"

/* Low byte of ggml's (int8_t)/(uint8_t) cast of a float. */
static inline uint8_t fg_cast_u8(float f) {
  return (uint8_t)(uint32_t)fg_cvtt_i32(f);
}

/* The signed value of largest magnitude, first one on ties (strict <), starting from 0. */
static float fg_signed_absmax(const float *x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; j++) {
    if (amax < fabsf(x[j])) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  return max;
}

/* Inputs are finite (checked by the caller): for non-negative floats the bit patterns order
 * like the values, so an integer max, which vectorises, gives fmaxf's result exactly. */
static float fg_absmax(const float *x, int n) {
  uint32_t m = 0;
  for (int j = 0; j < n; j++) {
    const uint32_t u = fg_f32_bits(x[j]) & 0x7fffffffu;
    m = u > m ? u : m;
  }
  return fg_bits_f32(m);
}

/* roundf then the int8 cast, for |v| < 2^23 and without branches so the block loop
 * vectorises: truncate, then step away from zero when the exact remainder is at least one
 * half. Blocks whose scale overflowed (id infinite) take the general path instead. */
static inline uint8_t fg_round_small_u8(float v) {
  const int32_t t = (int32_t)v;
  const float r = v - (float)t;
  return (uint8_t)(t + (r >= 0.5f) - (r <= -0.5f));
}

void fg_qenc_q4_0(const float *x, uint8_t *y) {
  const float d = fg_signed_absmax(x, 32) / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  fg_st_le16(y, fg_f32_to_f16(d));
  for (int j = 0; j < 16; j++) {
    uint8_t a = fg_cast_u8(x[j] * id + 8.5f), b = fg_cast_u8(x[j + 16] * id + 8.5f);
    a = (int8_t)a > 15 ? 15 : a; /* MIN(15, (int8_t)v): codes are non-negative here */
    b = (int8_t)b > 15 ? 15 : b;
    y[2 + j] = (uint8_t)(a | (b << 4));
  }
}

static void fg_minmax(const float *x, int n, float *mn, float *mx) {
  float lo = 3.40282347e+38f, hi = -3.40282347e+38f;
  for (int j = 0; j < n; j++) {
    if (x[j] < lo) lo = x[j];
    if (x[j] > hi) hi = x[j];
  }
  *mn = lo;
  *mx = hi;
}

void fg_qenc_q4_1(const float *x, uint8_t *y) {
  float min, max;
  fg_minmax(x, 32, &min, &max);
  const float d = (max - min) / 15;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  fg_st_le16(y, fg_f32_to_f16(d));
  fg_st_le16(y + 2, fg_f32_to_f16(min));
  for (int j = 0; j < 16; j++) {
    uint8_t a = fg_cast_u8((x[j] - min) * id + 0.5f), b = fg_cast_u8((x[j + 16] - min) * id + 0.5f);
    a = (int8_t)a > 15 ? 15 : a;
    b = (int8_t)b > 15 ? 15 : b;
    y[4 + j] = (uint8_t)(a | (b << 4));
  }
}

/* Shared tail of Q5_0 / Q5_1: low nibbles into qs, bit 4 into the LE u32 qh. */
static void fg_pack_q5(const uint8_t *q, uint8_t *qh_out, uint8_t *qs) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; j++) {
    qs[j] = (uint8_t)((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
    qh |= ((uint32_t)(q[j] & 0x10u) >> 4) << j;
    qh |= ((uint32_t)(q[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  fg_st_le32(qh_out, qh);
}

void fg_qenc_q5_0(const float *x, uint8_t *y) {
  const float d = fg_signed_absmax(x, 32) / -16;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t q[32];
  for (int j = 0; j < 32; j++) {
    uint8_t v = fg_cast_u8(x[j] * id + 16.5f);
    q[j] = (int8_t)v > 31 ? 31 : v;
  }
  fg_st_le16(y, fg_f32_to_f16(d));
  fg_pack_q5(q, y + 2, y + 6);
}

void fg_qenc_q5_1(const float *x, uint8_t *y) {
  float min, max;
  fg_minmax(x, 32, &min, &max);
  const float d = (max - min) / 31;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t q[32];
  for (int j = 0; j < 32; j++) q[j] = fg_cast_u8((x[j] - min) * id + 0.5f); /* no clamp in ggml */
  fg_st_le16(y, fg_f32_to_f16(d));
  fg_st_le16(y + 2, fg_f32_to_f16(min));
  fg_pack_q5(q, y + 4, y + 8);
}

void fg_qenc_q8_0(const float *x, uint8_t *y) {
  const float d = fg_absmax(x, 32) / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  fg_st_le16(y, fg_f32_to_f16(d));
  if (id < INFINITY) {
    for (int j = 0; j < 32; j++) y[2 + j] = fg_round_small_u8(x[j] * id);
  } else {
    for (int j = 0; j < 32; j++) y[2 + j] = fg_cast_u8(fg_round_away(x[j] * id));
  }
}

void fg_qenc_q8_1(const float *x, uint8_t *y) {
  const float d = fg_absmax(x, 32) / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int sum = 0;
  if (id < INFINITY) {
    for (int j = 0; j < 32; j++) y[4 + j] = fg_round_small_u8(x[j] * id);
  } else {
    for (int j = 0; j < 32; j++) y[4 + j] = fg_cast_u8(fg_round_away(x[j] * id));
  }
  for (int j = 0; j < 32; j++) sum += (int8_t)y[4 + j];
  fg_st_le16(y, fg_f32_to_f16(d));
  fg_st_le16(y + 2, fg_f32_to_f16((float)sum * d));
}

/* Q1_0: d is the mean magnitude (sum in index order, then / 128); the bit is the sign. */
void fg_qenc_q1_0(const float *x, uint8_t *y) {
  float sum = 0.0f;
  for (int j = 0; j < 128; j++) sum += fabsf(x[j]);
  fg_st_le16(y, fg_f32_to_f16(sum / 128));
  memset(y + 2, 0, 16);
  for (int j = 0; j < 128; j++)
    if (x[j] >= 0.0f) y[2 + (j >> 3)] |= (uint8_t)(1u << (j & 7));
}

/* Q2_0: d is the absmax itself, codes round(x/d) + 1 in 0..2 (3 is never produced). */
void fg_qenc_q2_0(const float *x, uint8_t *y) {
  const float d = fg_absmax(x, 64);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  fg_st_le16(y, fg_f32_to_f16(d));
  memset(y + 2, 0, 16);
  for (int j = 0; j < 64; j++) {
    int32_t q = fg_cvtt_i32(fg_round_away(x[j] * id));
    q = q == INT32_MIN ? 0 : q + 1;
    q = q < 0 ? 0 : q > 3 ? 3 : q;
    y[2 + (j >> 2)] |= (uint8_t)(q << (2 * (j & 3)));
  }
}
