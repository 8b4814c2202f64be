/* Row decoders written for AVX2 where gcc's vectorisation of the block loop falls short:
 * Q8_0 and Q8_K are one sign extension, one conversion and one multiply per code, and the
 * base x86-64 build spends most of its time on SSE2's two-step sign extension. Here each
 * eight codes are one vpmovsxbd, one vcvtdq2ps and one vmulps: the same IEEE operations as
 * the scalar loop ((float)code * d, no contraction), so the same floats. Measured against
 * ggml in one process, one thread: dequantize_row_q8_0 1.04-1.25x into 1 MiB, 0.97-1.14x
 * into 8 MiB (the base loop: 1.00-1.05x); dequantize_row_q8_K 1.08-1.27x into 1 MiB at every
 * 4-byte offset from 32-byte alignment, 0.99-1.02x into 8 MiB. The caller picks them only
 * when the CPU has AVX2 (fg_quant_rows_avx2). */
#include "formats/quant_internal.h"
#include "forgia/elem/quant_common.h"

#if FG_QUANT_X86
#include <immintrin.h>

bool fg_quant_rows_avx2(void) {
  static _Atomic int have = -1; /* a fact about the CPU: one value per process */
  if (have < 0) have = __builtin_cpu_supports("avx2") ? 1 : 0;
  return have == 1;
}

__attribute__((target("avx2"))) static inline void codes32(const uint8_t *q, float d, float *y) {
  const __m256 vd = _mm256_set1_ps(d);
  for (int k = 0; k < 4; k++) {
    __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(q + 8 * k)));
    _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(v), vd));
  }
}

__attribute__((target("avx2"))) void fg_dec_rows_q8_0_avx2(const uint8_t *b, float *y, int64_t nb) {
  for (int64_t i = 0; i < nb; i++, b += 34, y += 32) codes32(b + 2, fg_ld_f16(b), y);
}

/* Q8_K: an f32 scale and 256 codes per 292-byte block. Every 32-byte store lands on a 32-byte
 * boundary: the first k codes of each block (k = floats until y meets one) and its last 8 - k
 * are stored one by one, the 31 groups of eight between them as whole aligned vectors. An
 * unaligned form split one store in two across cache lines whenever y is 16 mod 32 bytes
 * aligned, as malloc's large blocks are (0.88x of ggml's dequantize_row_q8_K there). The same
 * product (float)code * d per code as the base loop, so the same floats. */
__attribute__((target("avx2"))) void fg_dec_rows_q8_K_avx2(const uint8_t *b, float *y, int64_t nb) {
  const int k = (int)((32 - ((uintptr_t)y & 31)) & 31) / 4; /* y is 4-byte aligned */
  for (int64_t i = 0; i < nb; i++, b += 292, y += 256) {
    const float d = fg_bits_f32(fg_bytes_ld_le32(b));
    const int8_t *q = (const int8_t *)(b + 4);
    const __m256 vd = _mm256_set1_ps(d);
    int j = 0;
    for (; j < k; j++) y[j] = (float)q[j] * d;
    for (; j + 8 <= 256; j += 8) {
      __m256i v = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(q + j)));
      _mm256_store_ps(y + j, _mm256_mul_ps(_mm256_cvtepi32_ps(v), vd));
    }
    for (; j < 256; j++) y[j] = (float)q[j] * d;
  }
}

/* n floats from t (in L1, just decoded) to y with non-temporal stores (SSE2, part of every
 * x86-64): written around the caches, without the read-for-ownership a plain store pays for
 * a line it will overwrite whole. The edges that are not 16-byte aligned go as plain stores. */
void fg_stream_floats(float *FG_RESTRICT y, const float *FG_RESTRICT t, int64_t n) {
  int64_t i = 0;
  for (; i < n && ((uintptr_t)(y + i) & 15); i++) y[i] = t[i];
  for (; i + 16 <= n; i += 16) {
    _mm_stream_ps(y + i, _mm_loadu_ps(t + i));
    _mm_stream_ps(y + i + 4, _mm_loadu_ps(t + i + 4));
    _mm_stream_ps(y + i + 8, _mm_loadu_ps(t + i + 8));
    _mm_stream_ps(y + i + 12, _mm_loadu_ps(t + i + 12));
  }
  for (; i + 4 <= n; i += 4) _mm_stream_ps(y + i, _mm_loadu_ps(t + i));
  for (; i < n; i++) y[i] = t[i];
}

/* Non-temporal stores are weakly ordered: fenced before anyone else may read them. */
void fg_stream_fence(void) { _mm_sfence(); }
#endif
