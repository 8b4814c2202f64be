/* The linear layer's AVX2 kernels for the blocks generation streams most (Q4_0, Q4_1, Q8_0,
 * Q4_K, F16), written with intrinsics where GCC's vectorisation of the elem/ decoders falls short
 * (the nibble split and the byte widening). Internal: cpu/cpu_linear.c calls them when the
 * CPU has AVX2 and FMA.
 *
 * fg_lin_x86_decode writes fg_dequant_block's floats: the same IEEE operations per element
 * (integer code converted exactly, times d, plus m, never fused), so the exact mode may use it.
 * fg_lin_x86_gemv is the fast mode's fused row-times-tokens product (fused multiply-adds,
 * vector partial sums): within rounding of the exact sum, not equal to it. */
#include "cpu/cpu_linear_x86.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <cpuid.h>

#include "forgia/elem/quant_common.h"
#include "forgia/elem/quant_k.h"

#define FG_LX_DEC __attribute__((target("avx2,f16c"), always_inline)) static inline
#define FG_LX_FMA __attribute__((target("avx2,fma,f16c")))

/* 16 codes (bytes) widened to two vectors of 8 floats. */
FG_LX_DEC void fg_lx_u8x16(__m128i q, __m256 *a, __m256 *b) {
  *a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q));
  *b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q, 8)));
}

FG_LX_DEC void fg_lx_i8x16(__m128i q, __m256 *a, __m256 *b) {
  *a = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
  *b = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)));
}

/* One block's 32 values in w[0..3] (elements 0-7, 8-15, 16-23, 24-31), from its codes at qs
 * and its scales, converted by F16C. F16C gives fg_ld_f16's value for every non-NaN half and
 * quiets a signalling NaN where fg_ld_f16 keeps it, but every element is a product with d
 * (then plus m), and x86 arithmetic returns a NaN operand quieted either way: the same bits
 * as the elem decoders (tests/cpu/test_linear.cpp checks scales at f16's edges). */
FG_LX_DEC void fg_lx_q4_0(const uint8_t *qs, float dd, __m256 w[4]) {
  const __m256 d = _mm256_set1_ps(dd);
  const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)qs), m = _mm_set1_epi8(15), e = _mm_set1_epi8(8);
  /* (code - 8) as a signed byte, then widened: the elem decoder's int (q & 15) - 8. */
  fg_lx_i8x16(_mm_sub_epi8(_mm_and_si128(q, m), e), &w[0], &w[1]);
  fg_lx_i8x16(_mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m), e), &w[2], &w[3]);
  for (int k = 0; k < 4; k++) w[k] = _mm256_mul_ps(w[k], d);
}

FG_LX_DEC void fg_lx_q4_1(const uint8_t *qs, float dd, float mm, __m256 w[4]) {
  const __m256 d = _mm256_set1_ps(dd), mn = _mm256_set1_ps(mm);
  const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)qs), m = _mm_set1_epi8(15);
  fg_lx_u8x16(_mm_and_si128(q, m), &w[0], &w[1]);
  fg_lx_u8x16(_mm_and_si128(_mm_srli_epi16(q, 4), m), &w[2], &w[3]);
  for (int k = 0; k < 4; k++) w[k] = _mm256_add_ps(_mm256_mul_ps(w[k], d), mn);
}

FG_LX_DEC void fg_lx_q8_0(const uint8_t *qs, float dd, __m256 w[4]) {
  const __m256 d = _mm256_set1_ps(dd);
  fg_lx_i8x16(_mm_loadu_si128((const __m128i *)(const void *)qs), &w[0], &w[1]);
  fg_lx_i8x16(_mm_loadu_si128((const __m128i *)(const void *)(qs + 16)), &w[2], &w[3]);
  for (int k = 0; k < 4; k++) w[k] = _mm256_mul_ps(w[k], d);
}

/* Q4_K, 144 bytes per 256: sub-block j (0..7) of the block at b, 32 values d * sc_j * code -
 * dmin * m_j as fg_dequant_q4_K forms them (the low nibbles of the 32 code bytes of pair j / 2
 * for even j, the high for odd). */
FG_LX_DEC void fg_lx_q4_K_sub(const uint8_t *b, int j, __m256 w[4]) {
  int sc, mi;
  fg_k4_scale_min(b + 4, j, &sc, &mi);
  const __m256 d = _mm256_set1_ps(_cvtsh_ss(fg_bytes_ld_le16(b)) * (float)sc),
               m = _mm256_set1_ps(_cvtsh_ss(fg_bytes_ld_le16(b + 2)) * (float)mi);
  const __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 + 32 * (j / 2))),
                hi = _mm_loadu_si128((const __m128i *)(const void *)(b + 32 + 32 * (j / 2))), f = _mm_set1_epi8(15);
  const int sh = (j & 1) * 4;
  fg_lx_u8x16(_mm_and_si128(_mm_srli_epi16(lo, sh), f), &w[0], &w[1]);
  fg_lx_u8x16(_mm_and_si128(_mm_srli_epi16(hi, sh), f), &w[2], &w[3]);
  for (int k = 0; k < 4; k++) w[k] = _mm256_sub_ps(_mm256_mul_ps(d, w[k]), m);
}

/* Q5_0, 22 bytes: d, qh (bit j: the 5th bit of element j), qs[16]; elements
 * ((nibble | 16 * bit) - 16) * d as fg_dequant_q5_0 forms them. The bits of qh become bytes 0
 * or 16 by a byte shuffle (byte j of the 16 takes qh's byte j / 8) and a per-byte bit test. */
FG_LX_DEC __m128i fg_lx_q5_bits(uint32_t qh, int half) {
  const __m128i pick = half ? _mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3)
                            : _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, (char)128, 1, 2, 4, 8, 16, 32, 64, (char)128);
  const __m128i v = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)qh), pick);
  return _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(v, bit), bit), _mm_set1_epi8(16));
}

FG_LX_DEC void fg_lx_q5_0(const uint8_t *b, float dd, __m256 w[4]) {
  const __m256 d = _mm256_set1_ps(dd);
  const uint32_t qh = fg_bytes_ld_le32(b + 2);
  const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(b + 6)), f = _mm_set1_epi8(15), e = _mm_set1_epi8(16);
  fg_lx_i8x16(_mm_sub_epi8(_mm_or_si128(_mm_and_si128(q, f), fg_lx_q5_bits(qh, 0)), e), &w[0], &w[1]);
  fg_lx_i8x16(_mm_sub_epi8(_mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 4), f), fg_lx_q5_bits(qh, 1)), e), &w[2], &w[3]);
  for (int k = 0; k < 4; k++) w[k] = _mm256_mul_ps(w[k], d);
}

/* Q6_K, 210 bytes per 256: 32 values j = 0..7 are fg_dequant_q6_K's sub-blocks 2j and 2j + 1,
 * (d * scale) * (code - 32) with the code's low 4 bits from ql and high 2 from qh. 16-bit
 * shifts bring the wanted bits to the bottom of each byte; the masks drop what the shift
 * brought over from the neighbouring byte. */
FG_LX_DEC void fg_lx_q6_K_sub(const uint8_t *b, int j, __m256 w[4]) {
  const int h = j >> 2, s = j & 3, lsh = (s >> 1) * 4, hsh = 2 * s;
  const uint8_t *ql = b + 64 * h + 32 * (s & 1), *qh = b + 128 + 32 * h;
  const int8_t *sc = (const int8_t *)(b + 192);
  const float d = _cvtsh_ss(fg_bytes_ld_le16(b + 208));
  const __m128i f = _mm_set1_epi8(15), t = _mm_set1_epi8(3), e = _mm_set1_epi8(32);
  for (int half = 0; half < 2; half++) {
    const __m128i l = _mm_loadu_si128((const __m128i *)(const void *)(ql + 16 * half)),
                  hi = _mm_loadu_si128((const __m128i *)(const void *)(qh + 16 * half));
    const __m128i v = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(l, lsh), f),
                                   _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hi, hsh), t), 4));
    const __m256 dl = _mm256_set1_ps(d * (float)sc[2 * j + half]);
    fg_lx_i8x16(_mm_sub_epi8(v, e), &w[2 * half], &w[2 * half + 1]);
    w[2 * half] = _mm256_mul_ps(dl, w[2 * half]);
    w[2 * half + 1] = _mm256_mul_ps(dl, w[2 * half + 1]);
  }
}

/* The blocks with their scales: E by the elem conversion, F by F16C. */
#define FG_LX_F16C(p) _cvtsh_ss(fg_bytes_ld_le16(p))
#define FG_LX_F_q4_0(b, w) fg_lx_q4_0((b) + 2, FG_LX_F16C(b), w)
#define FG_LX_F_q4_1(b, w) fg_lx_q4_1((b) + 4, FG_LX_F16C(b), FG_LX_F16C((b) + 2), w)
#define FG_LX_F_q8_0(b, w) fg_lx_q8_0((b) + 2, FG_LX_F16C(b), w)

/* 32 values at a time: sub-block i of a row (G(row, i, w)). */
#define FG_LX_G_q4_0(row, i, w) FG_LX_F_q4_0((row) + (i) * 18, w)
#define FG_LX_G_q4_1(row, i, w) FG_LX_F_q4_1((row) + (i) * 20, w)
#define FG_LX_G_q8_0(row, i, w) FG_LX_F_q8_0((row) + (i) * 34, w)
#define FG_LX_G_q4_K(row, i, w) fg_lx_q4_K_sub((row) + ((i) >> 3) * 144, (int)((i) & 7), w)
#define FG_LX_G_q5_0(row, i, w) fg_lx_q5_0((row) + (i) * 22, FG_LX_F16C((row) + (i) * 22), w)
#define FG_LX_G_q6_K(row, i, w) fg_lx_q6_K_sub((row) + ((i) >> 3) * 210, (int)((i) & 7), w)

#define FG_LX_DECODE_ROW(G, NSUB)                                                          \
  for (size_t i = 0; i < (NSUB); i++) {                                                    \
    __m256 w[4];                                                                           \
    G(p, i, w);                                                                            \
    for (int k = 0; k < 4; k++) _mm256_storeu_ps(out + 32 * i + 8 * (size_t)k, w[k]);     \
  }                                                                                        \
  return true

__attribute__((target("avx2,f16c"))) bool fg_lin_x86_decode(fg_dtype t, const uint8_t *p, size_t nb, float *out) {
  switch (t) {
    case FG_Q4_0: FG_LX_DECODE_ROW(FG_LX_G_q4_0, nb);
    case FG_Q4_1: FG_LX_DECODE_ROW(FG_LX_G_q4_1, nb);
    case FG_Q8_0: FG_LX_DECODE_ROW(FG_LX_G_q8_0, nb);
    case FG_Q4_K: FG_LX_DECODE_ROW(FG_LX_G_q4_K, nb * 8);
    case FG_Q5_0: FG_LX_DECODE_ROW(FG_LX_G_q5_0, nb);
    case FG_Q6_K: FG_LX_DECODE_ROW(FG_LX_G_q6_K, nb * 8);
    default: return false;
  }
}

/* src rows (rows <= 8, ld floats apart) x kc columns into dst[p][r] (ld_dst floats a row):
 * whole 8 x 8 tiles through registers, the rest one by one. */
__attribute__((target("avx2"))) void fg_lin_x86_transpose8(const float *src, size_t ld, size_t rows, size_t kc,
                                                           float *dst, size_t ld_dst) {
  size_t p = 0;
  if (rows == 8)
    for (; p + 8 <= kc; p += 8) {
      __m256 r[8], t[8];
      for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (size_t)i * ld + p);
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
      }
      for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
      }
      for (int i = 0; i < 4; i++) {
        t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
        t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
      }
      for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (p + (size_t)i) * ld_dst, t[i]);
    }
  for (; p < kc; p++)
    for (size_t i = 0; i < rows; i++) dst[p * ld_dst + i] = src[i * ld + p];
}

/* F16: 32 values by the F16C conversion (the fast mode only: it quiets signalling NaNs). */
__attribute__((target("avx2,f16c"), always_inline)) static inline void fg_lx_f16(const uint8_t *b, __m256 w[4]) {
  for (int k = 0; k < 4; k++) w[k] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(b + 16 * k)));
}
#define FG_LX_G_f16(row, i, w) fg_lx_f16((row) + (i) * 64, w)

FG_LX_FMA static inline float fg_lx_hsum(__m256 v) {
  float l[8], s = 0.0f;
  memcpy(l, &v, sizeof l);
  for (int i = 0; i < 8; i++) s += l[i];
  return s;
}

/* NT tokens of one row: each token keeps four partial sums (one per vector of the block),
 * so the fused multiply-adds of a block are independent. */
#define FG_LX_GEMV(NAME, G, NT)                                                                                 \
  FG_LX_FMA static void NAME(const uint8_t *row, size_t nb, const float *x, size_t ldx, float *out) {           \
    __m256 acc[NT][4];                                                                                          \
    for (int t = 0; t < NT; t++)                                                                                \
      for (int k = 0; k < 4; k++) acc[t][k] = _mm256_setzero_ps();                                              \
    for (size_t i = 0; i < nb; i++) {                                                                           \
      __m256 w[4];                                                                                              \
      G(row, i, w);                                                                                             \
      for (int t = 0; t < NT; t++)                                                                              \
        for (int k = 0; k < 4; k++)                                                                             \
          acc[t][k] = _mm256_fmadd_ps(w[k], _mm256_loadu_ps(x + (size_t)t * ldx + 32 * i + 8 * (size_t)k), acc[t][k]); \
    }                                                                                                           \
    for (int t = 0; t < NT; t++)                                                                                \
      out[t] = fg_lx_hsum(_mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3]))); \
  }

/* Two tokens at a time at most: 8 accumulators, the block's 4 vectors and the loads fit the
 * 16 vector registers (4 tokens spilled: 0.6x the rate per token). */
#define FG_LX_GEMV_TYPE(T)                          \
  FG_LX_GEMV(fg_lx_gemv1_##T, FG_LX_G_##T, 1)       \
  FG_LX_GEMV(fg_lx_gemv2_##T, FG_LX_G_##T, 2)       \
  static void fg_lx_gemv_##T(const uint8_t *row, size_t nb, const float *x, size_t ldx, size_t nt, float *out) { \
    for (; nt >= 2; nt -= 2, x += 2 * ldx, out += 2) fg_lx_gemv2_##T(row, nb, x, ldx, out);                     \
    if (nt == 1) fg_lx_gemv1_##T(row, nb, x, ldx, out);                                                          \
  }

FG_LX_GEMV_TYPE(q4_0)
FG_LX_GEMV_TYPE(q4_1)
FG_LX_GEMV_TYPE(q8_0)
FG_LX_GEMV_TYPE(q4_K)
FG_LX_GEMV_TYPE(q5_0)
FG_LX_GEMV_TYPE(q6_K)
FG_LX_GEMV_TYPE(f16)

bool fg_lin_x86_gemv(fg_dtype t, const uint8_t *row, size_t n_in, const float *x, size_t ldx, size_t nt, float *out) {
  switch (t) {
    case FG_Q4_0: fg_lx_gemv_q4_0(row, n_in / 32, x, ldx, nt, out); return true;
    case FG_Q4_1: fg_lx_gemv_q4_1(row, n_in / 32, x, ldx, nt, out); return true;
    case FG_Q8_0: fg_lx_gemv_q8_0(row, n_in / 32, x, ldx, nt, out); return true;
    case FG_Q4_K: fg_lx_gemv_q4_K(row, n_in / 32, x, ldx, nt, out); return true;
    case FG_Q5_0: fg_lx_gemv_q5_0(row, n_in / 32, x, ldx, nt, out); return true;
    case FG_Q6_K: fg_lx_gemv_q6_K(row, n_in / 32, x, ldx, nt, out); return true;
    case FG_F16:
      if (n_in % 32) return false;
      fg_lx_gemv_f16(row, n_in / 32, x, ldx, nt, out);
      return true;
    default: return false;
  }
}

bool fg_lin_x86_usable(void) {
  static _Atomic int have = -1; /* a fact about the CPU: one value per process */
  if (have < 0) {
    __builtin_cpu_init();
    /* F16C from CPUID leaf 1 (ECX bit 29): older clang's __builtin_cpu_supports has no "f16c". */
    unsigned a = 0, b = 0, c = 0, d = 0;
    bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
    have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  }
  return have == 1;
}

#else
bool fg_lin_x86_usable(void) { return false; }
void fg_lin_x86_transpose8(const float *src, size_t ld, size_t rows, size_t kc, float *dst, size_t ld_dst) {
  (void)src, (void)ld, (void)rows, (void)kc, (void)dst, (void)ld_dst;
}
bool fg_lin_x86_decode(fg_dtype t, const uint8_t *p, size_t nb, float *out) {
  (void)t, (void)p, (void)nb, (void)out;
  return false;
}
bool fg_lin_x86_gemv(fg_dtype t, const uint8_t *row, size_t n_in, const float *x, size_t ldx, size_t nt, float *out) {
  (void)t, (void)row, (void)n_in, (void)x, (void)ldx, (void)nt, (void)out;
  return false;
}
#endif
