/* Encoders of the ternary types (TQ1_0, TQ2_0) and the FP4 types (MXFP4, NVFP4), after ggml's
 * quantize_row_{tq1_0,tq2_0,mxfp4,nvfp4}_ref. */
#include <math.h>

#include "formats/quant_internal.h"
#include "forgia/elem/quant_fp4.h"

/* lroundf(x * id) + 1 as ggml's ternary encoders compute it: round half away from zero, then
 * take the low bits. A non-finite product (id overflowing for a subnormal block) converts to
 * INT_MIN as on x86, whose low byte + 1 is code 1 (zero); numpy's reference does the same. */
static inline uint8_t fg_trit(float v) {
  return (uint8_t)((uint32_t)fg_cvtt_i32(fg_round_away(v)) + 1u);
}

/* The trit codes of a block: with id finite, |x * id| stays near 1 and the branch-free
 * rounding applies (the low byte is what fg_trit keeps); otherwise fg_trit itself. */
static void fg_trits(const float *x, float id, uint8_t *t, int n) {
  if (id < INFINITY) {
    for (int j = 0; j < n; j++) t[j] = (uint8_t)(fg_round_small_u8(x[j] * id) + 1u);
  } else {
    for (int j = 0; j < n; j++) t[j] = fg_trit(x[j] * id);
  }
}

/* Five base-3 digits (a most significant) into one byte, wrapping as ggml's uint8 arithmetic
 * does, then ceil(q * 256 / 243) in 16 bits. */
static inline uint8_t fg_pack_trits5(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t e) {
  const uint8_t q = (uint8_t)(a * 81 + b * 27 + c * 9 + d * 3 + e);
  return (uint8_t)((uint16_t)(q * 256 + (243 - 1)) / 243);
}

void fg_qenc_tq1_0(const float *restrict x, uint8_t *restrict y) {
  const float d = fg_absmax(x, 256);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t t[256];
  fg_trits(x, id, t, 256);
  for (int m = 0; m < 32; m++) y[m] = fg_pack_trits5(t[m], t[m + 32], t[m + 64], t[m + 96], t[m + 128]);
  for (int m = 0; m < 16; m++)
    y[32 + m] = fg_pack_trits5(t[160 + m], t[176 + m], t[192 + m], t[208 + m], t[224 + m]);
  for (int j = 0; j < 4; j++) /* four digits and a zero pad */
    y[48 + j] = fg_pack_trits5(t[240 + j], t[244 + j], t[248 + j], t[252 + j], 0);
  fg_bytes_st_le16(y + 52, fg_f32_to_f16(d));
}

void fg_qenc_tq2_0(const float *restrict x, uint8_t *restrict y) {
  const float d = fg_absmax(x, 256);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t t[256];
  fg_trits(x, id, t, 256);
  for (int h = 0; h < 2; h++) {
    const uint8_t *th = t + 128 * h;
    for (int m = 0; m < 32; m++)
      y[32 * h + m] = (uint8_t)((th[m] & 3) | ((th[m + 32] & 3) << 2) | ((th[m + 64] & 3) << 4) |
                                ((th[m + 96] & 3) << 6));
  }
  fg_bytes_st_le16(y + 64, fg_f32_to_f16(d));
}

/* Index of the table entry nearest to x at scale e: |table[i]*e - x|, first minimum wins, for
 * n <= 32 elements at once. The negative entries (codes 9..15) mirror the positive ones and the
 * error is symmetric in rounding, so:
 *  - x >= 0: a negative code's error is never below its positive twin's, which comes first;
 *  - x < 0: a positive code k >= 1 has error fl(k*e + |x|) >= |x|, code 0's error, never less;
 *  - code 8 (value 0) ties with code 0.
 * Hence the answer is the first minimum over codes 0..7 for |x|, plus 8 when x < 0 and the code
 * is not 0. The search runs over the elements for each code, so it vectorises. */
#if defined(__GNUC__)
__attribute__((always_inline)) /* n a constant: GCC -O2 then vectorises the element loop */
#endif
static inline void fg_best_fp4_n(const float *restrict x, float e, int n, uint8_t *restrict q) {
  float v[8];
  for (int i = 0; i < 8; i++) v[i] = fg_e2m1x2_value(i) * e;
  for (int j = 0; j < n; j++) {
    /* the errors are non-negative and not NaN, so their bits order like their values */
    const float a = fabsf(x[j]);
    int32_t best_err = (int32_t)fg_f32_bits(fabsf(v[0] - a)), best = 0;
    _Pragma("GCC unroll 8") for (int i = 1; i < 8; i++) {
      const int32_t err = (int32_t)(fg_f32_bits(v[i] - a) & 0x7fffffffu);
      const int32_t lt = -(int32_t)(err < best_err);
      best_err = (err & lt) | (best_err & ~lt);
      best = (i & lt) | (best & ~lt);
    }
    q[j] = (uint8_t)(best | (x[j] < 0.0f && best != 0 ? 8 : 0));
  }
}

/* MXFP4: the shared exponent is floor(log2(amax)) - 2 + 127 (E2M1's largest value is 6 =
 * 1.5 * 2^2), cast to uint8 as ggml does; log2f is the host libm's, like ggml's. */
void fg_qenc_mxfp4(const float *restrict x, uint8_t *restrict y) {
  const float amax = fg_absmax(x, 32);
  /* A normal amax whose mantissa is at least 2^-9 away from both powers of two has log2f
   * hundreds of ulps inside (E, E + 1): floor gives its exponent E without the libm call.
   * The rest (powers of two and their neighbours, subnormals, 0) ask log2f as before. */
  const uint32_t ab = fg_f32_bits(amax), mant = ab & 0x7fffffu, ex = ab >> 23;
  uint8_t e;
  if (ex != 0 && mant >= 0x4000u && mant <= 0x7fc000u) e = (uint8_t)(ex - 127 - 2 + 127);
  else e = amax > 0.0f ? (uint8_t)(uint32_t)fg_cvtt_i32(floorf(log2f(amax)) - 2 + 127) : 0;
  const float d = fg_e8m0_to_f32_half(e);
  uint8_t q[32];
  y[0] = e;
  fg_best_fp4_n(x, d, 32, q);
  for (int j = 0; j < 16; j++) y[1 + j] = (uint8_t)(q[j] | (q[j + 16] << 4));
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
void fg_qenc_nvfp4(const float *restrict x, uint8_t *restrict y) {
  for (int s = 0; s < 4; s++) {
    const float *xs = x + 16 * s;
    const uint8_t ue = fg_f32_to_ue4m3(fg_absmax(xs, 16) / 6.0f);
    const float d = fg_ue4m3_to_f32_half(ue);
    uint8_t q[16];
    y[s] = ue;
    fg_best_fp4_n(xs, d, 16, q);
    for (int j = 0; j < 8; j++) y[4 + 8 * s + j] = (uint8_t)(q[j] | (q[j + 8] << 4));
  }
}
