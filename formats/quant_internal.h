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
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "forgia/elem/bytes.h"
#include "forgia/elem/half.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*fg_qblock_enc)(const float *x, uint8_t *y);

/* quant.c: where each block type keeps its f16 fields (n of them, byte offsets in the block):
 * the scales and mins, Q8_1's sum; n 0 for a type without one. The plain and the weighted
 * encoders refuse a block whose field came out Inf. Indexed by fg_dtype. */
typedef struct fg_half_fields {
  uint8_t n;
  uint8_t off[2];
} fg_half_fields;
extern const fg_half_fields fg_quant_halves[];

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

static inline int fg_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ggml's nearest_int: add 1.5 * 2^23 and read the mantissa bits; round half to even for
 * |f| <= 4194303, deterministic garbage beyond (kept, for parity). */
static inline int fg_nearest_int(float f) {
  float v = f + 12582912.0f;
  int32_t i = (int32_t)fg_f32_bits(v);
  return (i & 0x007fffff) - 0x00400000;
}

/* Four floats at a time in GCC/Clang vector types (element-wise IEEE operations, so each lane
 * computes exactly what the scalar code computes; base x86-64 runs them as SSE2). Wider GCC
 * vectors are scalarised there (compares, selects), so the block loops use these. */
typedef float fg_qvf __attribute__((vector_size(16)));
typedef int32_t fg_qvi __attribute__((vector_size(16)));

/* m ? a : b per lane (m all ones or all zeros), and |v|. */
#define FG_QV_SEL(m, a, b) ((fg_qvf)(((m) & (fg_qvi)(a)) | (~(m) & (fg_qvi)(b))))
#define FG_QV_ABS(v) ((fg_qvf)((fg_qvi)(v) & 0x7fffffff))
/* a < b ? a : b and a > b ? a : b per lane, which is what minps / maxps compute (the second
 * operand on ties and NaN); GCC does not find them in the selects. any: a lane is set. */
#if defined(__SSE2__)
#include <emmintrin.h>
#define FG_QV_MIN(a, b) ((fg_qvf)_mm_min_ps((__m128)(a), (__m128)(b)))
#define FG_QV_MAX(a, b) ((fg_qvf)_mm_max_ps((__m128)(a), (__m128)(b)))
static inline int fg_qv_any(fg_qvi m) { return _mm_movemask_ps((__m128)m) != 0; }
#else
#define FG_QV_MIN(a, b) FG_QV_SEL((a) < (b), (a), (b))
#define FG_QV_MAX(a, b) FG_QV_SEL((a) > (b), (a), (b))
static inline int fg_qv_any(fg_qvi m) { return (m[0] | m[1] | m[2] | m[3]) != 0; }
#endif

/* Sixteen codes 0..255 in four int32 vectors to sixteen bytes (SSE2's saturating packs). */
static inline void fg_qv_store_bytes16(const fg_qvi *v, uint8_t *out) {
#if defined(__SSE2__)
  const __m128i lo = _mm_packs_epi32((__m128i)v[0], (__m128i)v[1]), hi = _mm_packs_epi32((__m128i)v[2], (__m128i)v[3]);
  _mm_storeu_si128((__m128i *)out, _mm_packus_epi16(lo, hi));
#else
  for (int k = 0; k < 16; k++) out[k] = (uint8_t)v[k / 4][k % 4];
#endif
}

static inline fg_qvf fg_qv_load(const float *p) {
  fg_qvf v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Inputs are finite (checked by the caller), n a multiple of 4: the largest magnitude, four
 * lanes of maxps (exact in any order). */
static inline float fg_absmax(const float *x, int n) {
  fg_qvf m = {0, 0, 0, 0};
  for (int j = 0; j < n; j += 4) m = FG_QV_MAX(FG_QV_ABS(fg_qv_load(x + j)), m);
  float r = m[0];
  for (int k = 1; k < 4; k++) r = m[k] > r ? m[k] : r;
  return r;
}

/* The signed value of largest magnitude, first one on ties (strict <), starting from 0: the
 * absmax, then the first element whose magnitude equals it. */
static inline float fg_signed_absmax(const float *x, int n) {
  const float m = fg_absmax(x, n);
  if (m == 0.0f) return 0.0f;
  const fg_qvf mv = {m, m, m, m};
  for (int j = 0;; j += 4) {
    const fg_qvi eq = FG_QV_ABS(fg_qv_load(x + j)) == mv;
    if (fg_qv_any(eq))
      for (int k = 0;; k++)
        if (eq[k]) return x[j + k];
  }
}

/* The start of ggml's make_qkx* fits of n values with weights w: min (at most 0) and max of
 * x, the sum of w and of w * x, in index order. */
static inline void fg_qkx_range(int n, const float *x, const float *w, float *min, float *max, float *sum_w,
                                float *sum_x) {
  float lo = x[0], hi = x[0], sw = w[0], sx = sw * x[0];
  for (int i = 1; i < n; i++) {
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
    sw += w[i];
    sx += w[i] * x[i];
  }
  *min = lo > 0 ? 0 : lo;
  *max = hi;
  *sum_w = sw;
  *sum_x = sx;
}

/* roundf then the int8 cast, for |v| < 2^23 and without branches so the block loop
 * vectorises: truncate, then step away from zero when the exact remainder is at least one
 * half. Blocks whose scale overflowed (id infinite) take the general path instead. */
static inline uint8_t fg_round_small_u8(float v) {
  const int32_t t = (int32_t)v;
  const float r = v - (float)t;
  return (uint8_t)(t + (r >= 0.5f) - (r <= -0.5f));
}

/* Eight bytes holding 0 or 1 each (byte i counts as bits 8i..8i+7) to one byte, bit i from
 * byte i: the multiply moves every byte's bit to bit 56 + i, without carries. */
static inline uint8_t fg_gather_bits8(const uint8_t *h) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)h[i] << (8 * i);
  return (uint8_t)((v * 0x0102040810204080ull) >> 56);
}

/* The tail of Q5_0 / Q5_1 (plain and weighted): 32 codes 0..31, low nibbles into qs, bit 4
 * into the LE u32 qh. */
static inline void fg_pack_q5(const uint8_t *q, uint8_t *qh_out, uint8_t *qs) {
  uint8_t h[32];
  for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
  for (int j = 0; j < 32; j++) h[j] = (uint8_t)((q[j] >> 4) & 1);
  for (int i = 0; i < 4; i++) qh_out[i] = fg_gather_bits8(h + 8 * i);
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
/* The IQ4 steps that the weighted encoders (quant_weighted_iq4.c) share, as ggml's
 * quantize_row_iq4_nl_impl writes them for a super-block of one (NL) or 8 (XS) sub-blocks
 * of 32. fg_iq4_fit: the scale of one sub-block (0 when its largest magnitude is below
 * 1e-15) from the weights w, the best of -max/-127 and 15 trial inverse scales (ntry 7).
 * fg_iq4_nl_store: an IQ4_NL block of x at scale d. fg_iq4_xs_store: an IQ4_XS block of x
 * from its 8 sub-block scales. */
float fg_iq4_fit(const float *xb, const float *w);
void fg_iq4_nl_store(const float *x, float d, uint8_t *y);
void fg_iq4_xs_store(const float *x, const float *scales, uint8_t *y);

/* quant_rows_x86.c (x86-64 with gcc or clang): Q8_0's and Q8_K's AVX2 row decoders, the same
 * floats as the block loops (fg_quant_rows_avx2 says whether this CPU may run them), and the
 * non-temporal stores of streaming decodes. */
#if defined(__x86_64__) && defined(__GNUC__)
#define FG_QUANT_X86 1
bool fg_quant_rows_avx2(void);
void fg_dec_rows_q8_0_avx2(const uint8_t *b, float *y, int64_t nb);
void fg_dec_rows_q8_K_avx2(const uint8_t *b, float *y, int64_t nb); /* y 4-byte aligned */
void fg_stream_floats(float *y, const float *t, int64_t n);
void fg_stream_fence(void);
#else
#define FG_QUANT_X86 0
#endif

/* quant_iq1_rows.c: nb blocks of IQ1_S / IQ1_M decoded into y (the host's row decoders). */
void fg_dec_rows_iq1_s(const uint8_t *b, float *y, int64_t nb);
void fg_dec_rows_iq1_m(const uint8_t *b, float *y, int64_t nb);

#ifdef __cplusplus
}
#endif
#endif
