/* Per-block encoders behind fg_quant_encode_row. Each reads one block of finite floats
 * (the caller has checked; it also refuses the block afterwards when a stored f16 field came
 * out non-finite, see quant.c) and writes one packed block, following ggml's reference quantizer
 * (quantize_row_*_ref without importance matrix) operation by operation in f32, so that the
 * bytes match ggml built with -ffp-contract=off (what this project compiles with).
 *
 * Why no FMA emulation: gguf-py's numpy reference (gguf 0.19.0, numpy 2) computes Q4_0 and
 * Q5_0's `x*id + 8.5` as two float32 operations (id and the products are float32 arrays), i.e.
 * the uncontracted form. That is also ggml's form under -ffp-contract=off, so one code path
 * matches both; the parity test in tests/interop proves it byte for byte. */
#ifndef FORGIA_FORMATS_QUANT_INTERNAL_H
#define FORGIA_FORMATS_QUANT_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "forgia/elem/bytes.h"
#include "forgia/elem/half.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*fg_qblock_enc)(const float *x, uint8_t *y);

/* Float to int32 as x86's cvttss2si: truncate toward zero; NaN and out-of-range give
 * INT32_MIN. ggml's (int8_t)/(uint8_t)/lroundf casts compile to this on x86-64, so the
 * degenerate cases (id = 1/d overflowing for subnormal blocks) keep ggml's bytes. */
static inline int32_t fg_cvtt_i32(float f) {
  if (!(f >= -2147483648.0f && f < 2147483648.0f)) return INT32_MIN;
  return (int32_t)f;
}

/* roundf (half away from zero) without the libm call, which base x86-64 cannot inline:
 * below 2^23 the truncation t and the remainder v - t are exact, so comparing the remainder
 * with 0.5 rounds exactly as roundf; larger magnitudes, Inf and NaN are already integral or
 * pass through unchanged, as roundf returns them. */
static inline float fg_round_away(float v) {
  if (!(fabsf(v) < 8388608.0f)) return v;
  float t = (float)(int32_t)v;
  const float r = v - t;
  if (r >= 0.5f) t += 1.0f;
  else if (r <= -0.5f) t -= 1.0f;
  return copysignf(t, v);
}

/* ggml's nearest_int: add 1.5 * 2^23 and read the mantissa bits; round half to even for
 * |f| <= 4194303, deterministic garbage beyond (kept, for parity). */
static inline int fg_nearest_int(float f) {
  float v = f + 12582912.0f;
  int32_t i = (int32_t)fg_f32_bits(v);
  return (i & 0x007fffff) - 0x00400000;
}

/* Inputs are finite (checked by the caller): for non-negative floats the bit patterns order
 * like the values, so an integer max, which vectorises, gives fmaxf's result exactly. */
static inline float fg_absmax(const float *x, int n) {
  uint32_t m = 0;
  for (int j = 0; j < n; j++) {
    const uint32_t u = fg_f32_bits(x[j]) & 0x7fffffffu;
    m = u > m ? u : m;
  }
  return fg_bits_f32(m);
}

/* The signed value of largest magnitude, first one on ties (strict <), starting from 0: the
 * integer absmax, then the first index holding it (a min reduction); both passes vectorise. */
static inline float fg_signed_absmax(const float *x, int n) {
  const uint32_t m = fg_f32_bits(fg_absmax(x, n));
  if (m == 0) return 0.0f;
  int first = n;
  for (int j = 0; j < n; j++) {
    const int k = (fg_f32_bits(x[j]) & 0x7fffffffu) == m ? j : n;
    first = k < first ? k : first;
  }
  return x[first];
}

/* roundf then the int8 cast, for |v| < 2^23 and without branches so the block loop
 * vectorises: truncate, then step away from zero when the exact remainder is at least one
 * half. Blocks whose scale overflowed (id infinite) take the general path instead. */
static inline uint8_t fg_round_small_u8(float v) {
  const int32_t t = (int32_t)v;
  const float r = v - (float)t;
  return (uint8_t)(t + (r >= 0.5f) - (r <= -0.5f));
}

/* quant_simple.c */
void fg_qenc_q4_0(const float *x, uint8_t *y);
void fg_qenc_q4_1(const float *x, uint8_t *y);
void fg_qenc_q5_0(const float *x, uint8_t *y);
void fg_qenc_q5_1(const float *x, uint8_t *y);
void fg_qenc_q8_0(const float *x, uint8_t *y);
void fg_qenc_q8_1(const float *x, uint8_t *y);
void fg_qenc_q1_0(const float *x, uint8_t *y);
void fg_qenc_q2_0(const float *x, uint8_t *y);
/* quant_kquants.c */
void fg_qenc_q2_K(const float *x, uint8_t *y);
void fg_qenc_q3_K(const float *x, uint8_t *y);
void fg_qenc_q4_K(const float *x, uint8_t *y);
void fg_qenc_q5_K(const float *x, uint8_t *y);
void fg_qenc_q6_K(const float *x, uint8_t *y);
void fg_qenc_q8_K(const float *x, uint8_t *y);
/* quant_ternary_fp4.c */
void fg_qenc_tq1_0(const float *x, uint8_t *y);
void fg_qenc_tq2_0(const float *x, uint8_t *y);
void fg_qenc_mxfp4(const float *x, uint8_t *y);
void fg_qenc_nvfp4(const float *x, uint8_t *y);
/* quant_iq.c */
void fg_qenc_iq4_nl(const float *x, uint8_t *y);
void fg_qenc_iq4_xs(const float *x, uint8_t *y);

#ifdef __cplusplus
}
#endif
#endif
