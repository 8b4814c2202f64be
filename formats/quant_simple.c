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

/* Q4_0 / Q4_1 codes MIN(15, (int)((x - min) * id + off)) where every value is in [0, 17)
 * (so truncation is the conversion, and the clamp can come first, at 15.5), element j in the
 * low nibble of byte j and j + 16 in the high one. Q4_0 passes min = 0: x - 0 is x. */
static inline void fg_qv_nibbles(const float *restrict x, float min, float id, float off, uint8_t *restrict qs) {
  const fg_qvf z = {0, 0, 0, 0}, top = z + 15.5f;
  fg_qvi p[4];
  for (int k = 0; k < 4; k++) {
    const fg_qvf a = FG_QV_MIN((fg_qv_load(x + 4 * k) - min) * id + off, top);
    const fg_qvf b = FG_QV_MIN((fg_qv_load(x + 16 + 4 * k) - min) * id + off, top);
    p[k] = __builtin_convertvector(a, fg_qvi) | (__builtin_convertvector(b, fg_qvi) << 4);
  }
  fg_qv_store_bytes16(p, qs);
}

void fg_qenc_q4_0(const float *restrict x, uint8_t *restrict y) {
  const float d = fg_signed_absmax(x, 32) / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  fg_bytes_st_le16(y, fg_f32_to_f16(d));
  if (fabsf(id) < INFINITY) { /* 0 <= x * id + 8.5 <= 16.5: plain conversions */
    fg_qv_nibbles(x, 0.0f, id, 8.5f, y + 2);
    return;
  }
  for (int j = 0; j < 16; j++) {
    uint8_t a = fg_cast_u8(x[j] * id + 8.5f), b = fg_cast_u8(x[j + 16] * id + 8.5f);
    a = (int8_t)a > 15 ? 15 : a; /* MIN(15, (int8_t)v): codes are non-negative here */
    b = (int8_t)b > 15 ? 15 : b;
    y[2 + j] = (uint8_t)(a | (b << 4));
  }
}

/* The first zero of x[0..n) (there is one): what the strict-< scans keep when the extremum is
 * zero, whatever the order of the lanes found its value. */
static float fg_first_zero(const float *x, int n) {
  for (int j = 0; j < n; j++)
    if (x[j] == 0.0f) return x[j];
  return 0.0f;
}

/* min and max as ggml's strict-< scans from +-FLT_MAX find them (finite inputs, n a multiple
 * of 4): four lanes of minps / maxps, exact in any order but for the sign of a zero
 * extremum, which is then the first zero, as in the scans. */
static void fg_minmax(const float *x, int n, float *mn, float *mx) {
  fg_qvf lo = fg_qv_load(x), hi = lo;
  for (int j = 4; j < n; j += 4) {
    const fg_qvf v = fg_qv_load(x + j);
    lo = FG_QV_MIN(v, lo);
    hi = FG_QV_MAX(v, hi);
  }
  float a = lo[0], b = hi[0];
  for (int k = 1; k < 4; k++) {
    a = lo[k] < a ? lo[k] : a;
    b = hi[k] > b ? hi[k] : b;
  }
  if (a == 0.0f) a = fg_first_zero(x, n);
  if (b == 0.0f) b = fg_first_zero(x, n);
  *mn = a;
  *mx = b;
}

void fg_qenc_q4_1(const float *restrict x, uint8_t *restrict y) {
  float min, max;
  fg_minmax(x, 32, &min, &max);
  const float d = (max - min) / 15;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  fg_bytes_st_le16(y, fg_f32_to_f16(d));
  fg_bytes_st_le16(y + 2, fg_f32_to_f16(min));
  if (d < INFINITY && id < INFINITY) { /* 0 <= (x - min) * id <= 15: plain conversions */
    fg_qv_nibbles(x, min, id, 0.5f, y + 4);
    return;
  }
  for (int j = 0; j < 16; j++) {
    uint8_t a = fg_cast_u8((x[j] - min) * id + 0.5f), b = fg_cast_u8((x[j + 16] - min) * id + 0.5f);
    a = (int8_t)a > 15 ? 15 : a;
    b = (int8_t)b > 15 ? 15 : b;
    y[4 + j] = (uint8_t)(a | (b << 4));
  }
}

void fg_qenc_q5_0(const float *restrict x, uint8_t *restrict y) {
  const float d = fg_signed_absmax(x, 32) / -16;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t q[32];
  if (fabsf(id) < INFINITY) { /* |x * id| <= 16: plain conversions (codes 0..32) */
    for (int j = 0; j < 32; j++) {
      const int32_t v = (int32_t)(x[j] * id + 16.5f);
      q[j] = (uint8_t)(v < 31 ? v : 31);
    }
  } else {
    for (int j = 0; j < 32; j++) {
      uint8_t v = fg_cast_u8(x[j] * id + 16.5f);
      q[j] = (int8_t)v > 31 ? 31 : v;
    }
  }
  fg_bytes_st_le16(y, fg_f32_to_f16(d));
  fg_pack_q5(q, y + 2, y + 6);
}

void fg_qenc_q5_1(const float *restrict x, uint8_t *restrict y) {
  float min, max;
  fg_minmax(x, 32, &min, &max);
  const float d = (max - min) / 31;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t q[32];
  if (d < INFINITY && id < INFINITY) { /* 0 <= (x - min) * id <= 31: plain conversions */
    for (int j = 0; j < 32; j++) q[j] = (uint8_t)(int32_t)((x[j] - min) * id + 0.5f);
  } else {
    for (int j = 0; j < 32; j++) q[j] = fg_cast_u8((x[j] - min) * id + 0.5f); /* no clamp in ggml */
  }
  fg_bytes_st_le16(y, fg_f32_to_f16(d));
  fg_bytes_st_le16(y + 2, fg_f32_to_f16(min));
  fg_pack_q5(q, y + 4, y + 8);
}

void fg_qenc_q8_0(const float *restrict x, uint8_t *restrict y) {
  const float d = fg_absmax(x, 32) / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  fg_bytes_st_le16(y, fg_f32_to_f16(d));
  if (id < INFINITY) {
    for (int j = 0; j < 32; j++) y[2 + j] = fg_round_small_u8(x[j] * id);
  } else {
    for (int j = 0; j < 32; j++) y[2 + j] = fg_cast_u8(fg_round_away(x[j] * id));
  }
}

void fg_qenc_q8_1(const float *restrict x, uint8_t *restrict y) {
  const float d = fg_absmax(x, 32) / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int sum = 0;
  if (id < INFINITY) {
    for (int j = 0; j < 32; j++) y[4 + j] = fg_round_small_u8(x[j] * id);
  } else {
    for (int j = 0; j < 32; j++) y[4 + j] = fg_cast_u8(fg_round_away(x[j] * id));
  }
  for (int j = 0; j < 32; j++) sum += (int8_t)y[4 + j];
  fg_bytes_st_le16(y, fg_f32_to_f16(d));
  fg_bytes_st_le16(y + 2, fg_f32_to_f16((float)sum * d));
}

/* Q1_0: d is the mean magnitude (sum in index order, then / 128); the bit is x >= 0 (so -0
 * sets it), gathered eight at a time. */
void fg_qenc_q1_0(const float *restrict x, uint8_t *restrict y) {
  float sum = 0.0f;
  for (int j = 0; j < 128; j++) sum += fabsf(x[j]);
  fg_bytes_st_le16(y, fg_f32_to_f16(sum / 128));
  uint8_t h[128];
  for (int j = 0; j < 128; j++) h[j] = (uint8_t)(x[j] >= 0.0f);
  for (int i = 0; i < 16; i++) y[2 + i] = fg_gather_bits8(h + 8 * i);
}

/* Q2_0: d is the absmax itself, codes round(x/d) + 1 in 0..2 (3 is never produced). With id
 * finite, |x * id| stays near 1 and the branch-free rounding applies; a block whose id
 * overflowed takes the general path. */
void fg_qenc_q2_0(const float *restrict x, uint8_t *restrict y) {
  const float d = fg_absmax(x, 64);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  fg_bytes_st_le16(y, fg_f32_to_f16(d));
  uint8_t q[64];
  if (id < INFINITY) {
    for (int j = 0; j < 64; j++) {
      const uint8_t v = (uint8_t)(fg_round_small_u8(x[j] * id) + 1u);
      q[j] = v > 3 ? 3 : v; /* v is 0..2 here */
    }
  } else {
    for (int j = 0; j < 64; j++) {
      int32_t v = fg_cvtt_i32(fg_round_away(x[j] * id));
      v = v == INT32_MIN ? 0 : v + 1;
      q[j] = (uint8_t)(v < 0 ? 0 : v > 3 ? 3 : v);
    }
  }
  for (int k = 0; k < 16; k++)
    y[2 + k] = (uint8_t)(q[4 * k] | (q[4 * k + 1] << 2) | (q[4 * k + 2] << 4) | (q[4 * k + 3] << 6));
}
