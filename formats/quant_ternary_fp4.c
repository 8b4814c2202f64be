/* Encoders of the ternary types (TQ1_0, TQ2_0) and the FP4 types (MXFP4, NVFP4), after ggml's
 * quantize_row_{tq1_0,tq2_0,mxfp4,nvfp4}_ref. */
#include <math.h>

#include "formats/quant_internal.h"
#include "forgia/elem/quant_fp4.h"

static float fg_absmax_n(const float *x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; j++) amax = fmaxf(amax, fabsf(x[j]));
  return amax;
}

/* lroundf(x * id) + 1 as ggml's ternary encoders compute it: round half away from zero, then
 * take the low bits. A non-finite product (id overflowing for a subnormal block) converts to
 * INT_MIN as on x86, whose low byte + 1 is code 1 (zero); numpy's reference does the same. */
static inline uint8_t fg_trit(float v) {
  return (uint8_t)((uint32_t)fg_cvtt_i32(fg_round_away(v)) + 1u);
}

/* Base-3 digits d[0..k-1] (d[0] most significant) into one byte, then ceil(v * 256 / 243). */
static uint8_t fg_pack_trits(const uint8_t *d, int k, int pad) {
  uint8_t q = 0;
  for (int n = 0; n < k; n++) q = (uint8_t)(q * 3 + d[n]);
  if (pad) q = (uint8_t)(q * 3);
  return (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
}

void fg_qenc_tq1_0(const float *x, uint8_t *y) {
  const float d = fg_absmax_n(x, 256);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t t[256], dig[5];
  for (int j = 0; j < 256; j++) t[j] = fg_trit(x[j] * id);
  for (int m = 0; m < 32; m++) {
    for (int n = 0; n < 5; n++) dig[n] = t[m + 32 * n];
    y[m] = fg_pack_trits(dig, 5, 0);
  }
  for (int m = 0; m < 16; m++) {
    for (int n = 0; n < 5; n++) dig[n] = t[160 + m + 16 * n];
    y[32 + m] = fg_pack_trits(dig, 5, 0);
  }
  for (int j = 0; j < 4; j++) {
    for (int n = 0; n < 4; n++) dig[n] = t[240 + j + 4 * n];
    y[48 + j] = fg_pack_trits(dig, 4, 1);
  }
  fg_st_le16(y + 52, fg_f32_to_f16(d));
}

void fg_qenc_tq2_0(const float *x, uint8_t *y) {
  const float d = fg_absmax_n(x, 256);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int h = 0; h < 2; h++) {
    for (int m = 0; m < 32; m++) {
      uint8_t q = 0;
      for (int n = 0; n < 4; n++) q = (uint8_t)(q + ((fg_trit(x[128 * h + m + 32 * n] * id) & 3) << (2 * n)));
      y[32 * h + m] = q;
    }
  }
  fg_st_le16(y + 64, fg_f32_to_f16(d));
}

/* Index of the table entry nearest to x at scale e: |table[i]*e - x|, first minimum wins. */
static int fg_best_fp4(float x, float e) {
  int best = 0;
  float best_err = fabsf(fg_e2m1x2_value(0) * e - x);
  for (int i = 1; i < 16; i++) {
    const float err = fabsf(fg_e2m1x2_value(i) * e - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

/* MXFP4: the shared exponent is floor(log2(amax)) - 2 + 127 (E2M1's largest value is 6 =
 * 1.5 * 2^2), cast to uint8 as ggml does; log2f is the host libm's, like ggml's. */
void fg_qenc_mxfp4(const float *x, uint8_t *y) {
  const float amax = fg_absmax_n(x, 32);
  const uint8_t e = amax > 0.0f ? (uint8_t)(uint32_t)fg_cvtt_i32(floorf(log2f(amax)) - 2 + 127) : 0;
  const float d = fg_e8m0_to_f32_half(e);
  y[0] = e;
  for (int j = 0; j < 16; j++)
    y[1 + j] = (uint8_t)(fg_best_fp4(x[j], d) | (fg_best_fp4(x[j + 16], d) << 4));
}

/* f32 -> unsigned E4M3 (bias 7), as ggml_fp32_to_ue4m3: clamp to [0, 448]; subnormal range by
 * x * 512 rounded half up; normal range keeps 3 mantissa bits rounded half up on the 4th;
 * exponent overflow saturates to 0x7E (448). */
static uint8_t fg_f32_to_ue4m3(float x) {
  if (!(x > 0.0f)) return 0;
  if (x > 448.0f) x = 448.0f;
  const uint32_t bits = fg_f32_bits(x);
  const int e = (int)((bits >> 23) & 0xff) - 127 + 7;
  if (e <= 0) {
    int m = (int)(x * 512.0f + 0.5f);
    if (m > 7) m = 7;
    return (uint8_t)(m >= 1 ? m : 0);
  }
  if (e >= 15) return 0x7e;
  int m = (int)((bits >> 20) & 7) + (int)((bits >> 19) & 1);
  int ee = e;
  if (m > 7) {
    m = 0;
    ee++;
  }
  if (ee >= 15) return 0x7e;
  return (uint8_t)((ee << 3) | m);
}

/* NVFP4: per 16-element sub-block, scale = UE4M3(amax / 6) and codes against its decoded
 * (halved) value, with MXFP4's nearest-entry search. */
void fg_qenc_nvfp4(const float *x, uint8_t *y) {
  for (int s = 0; s < 4; s++) {
    const float *xs = x + 16 * s;
    const uint8_t ue = fg_f32_to_ue4m3(fg_absmax_n(xs, 16) / 6.0f);
    const float d = fg_ue4m3_to_f32_half(ue);
    y[s] = ue;
    for (int j = 0; j < 8; j++)
      y[4 + 8 * s + j] = (uint8_t)(fg_best_fp4(xs[j], d) | (fg_best_fp4(xs[j + 8], d) << 4));
  }
}
