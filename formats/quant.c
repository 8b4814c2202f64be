/* Row codecs: contracts (sizes, finiteness), dispatch by dtype, and the OpenMP loops.
 * The loops run over the flat block index of all rows; every block is encoded or decoded on
 * its own, so the bytes do not depend on the thread count or the schedule. */
#include "forgia/quant.h"

#include <math.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>

#include "formats/quant_internal.h"
#include "formats/quant_stream.h"
#include "forgia/elem/quant_decode.h"

static const fg_qblock_enc fg_enc_tab[FG_GGML_TYPE_COUNT] = {
  [FG_Q4_0] = fg_qenc_q4_0, [FG_Q4_1] = fg_qenc_q4_1, [FG_Q5_0] = fg_qenc_q5_0,
  [FG_Q5_1] = fg_qenc_q5_1, [FG_Q8_0] = fg_qenc_q8_0, [FG_Q8_1] = fg_qenc_q8_1,
  [FG_Q2_K] = fg_qenc_q2_K, [FG_Q3_K] = fg_qenc_q3_K, [FG_Q4_K] = fg_qenc_q4_K,
  [FG_Q5_K] = fg_qenc_q5_K, [FG_Q6_K] = fg_qenc_q6_K, [FG_Q8_K] = fg_qenc_q8_K,
  [FG_TQ1_0] = fg_qenc_tq1_0, [FG_TQ2_0] = fg_qenc_tq2_0, [FG_IQ4_NL] = fg_qenc_iq4_nl,
  [FG_IQ4_XS] = fg_qenc_iq4_xs, [FG_MXFP4] = fg_qenc_mxfp4, [FG_NVFP4] = fg_qenc_nvfp4,
  [FG_Q1_0] = fg_qenc_q1_0, [FG_Q2_0] = fg_qenc_q2_0,
};

static bool fg_is_scalar(fg_dtype t) { return t == FG_F32 || t == FG_F16 || t == FG_BF16; }

bool fg_quant_can_encode(fg_dtype t) {
  return fg_is_scalar(t) || ((int)t >= 0 && t < FG_GGML_TYPE_COUNT && fg_enc_tab[t] != NULL);
}

/* The decodable block types, each with its decoder inlined into its own loop over a range of
 * blocks: one switch per call rather than an indirect call per block, so the compiler sees
 * the block size and can vectorise the decoder across the block. */
/* The decodable block types as (dtype, name, elements, bytes). Those of the second list are
 * built for AVX2 too (see FG_DEC_CLONES): each measured faster so, on one core into 1 MiB of
 * output (q5_K 1.45x, tq1_0 1.5x, nvfp4 1.56x, iq4_nl 1.24x, q5_1 1.13x, q4_K 1.1x); the first
 * list's are not (gcc's AVX2 code for q4_0 ran at a quarter of its SSE2 code's speed). */
#define FG_DEC_TYPES_BASE(X)                                                                             \
  X(FG_Q4_0, q4_0, 32, 18) X(FG_Q4_1, q4_1, 32, 20) X(FG_Q8_0, q8_0, 32, 34) X(FG_Q8_1, q8_1, 32, 36)      \
  X(FG_Q2_K, q2_K, 256, 84) X(FG_Q3_K, q3_K, 256, 110) X(FG_Q6_K, q6_K, 256, 210)                         \
  X(FG_Q8_K, q8_K, 256, 292) X(FG_TQ2_0, tq2_0, 256, 66) X(FG_MXFP4, mxfp4, 32, 17)                       \
  X(FG_Q1_0, q1_0, 128, 18) X(FG_Q2_0, q2_0, 64, 18)                                                      \
  X(FG_IQ2_XXS, iq2_xxs, 256, 66) X(FG_IQ2_XS, iq2_xs, 256, 74) X(FG_IQ2_S, iq2_s, 256, 82)               \
  X(FG_IQ3_XXS, iq3_xxs, 256, 98) X(FG_IQ3_S, iq3_s, 256, 110)
#define FG_DEC_TYPES_WIDE(X)                                                                             \
  X(FG_Q5_0, q5_0, 32, 22) X(FG_Q5_1, q5_1, 32, 24) X(FG_Q4_K, q4_K, 256, 144) X(FG_Q5_K, q5_K, 256, 176) \
  X(FG_TQ1_0, tq1_0, 256, 54) X(FG_IQ4_NL, iq4_nl, 32, 18) X(FG_IQ4_XS, iq4_xs, 256, 136)                 \
  X(FG_NVFP4, nvfp4, 64, 36)
/* and those with row decoders of their own (quant_iq1_rows.c) */
#define FG_DEC_TYPES_ROWS(X) X(FG_IQ1_S, iq1_s, 256, 50) X(FG_IQ1_M, iq1_m, 256, 56)
#define FG_DEC_TYPES(X) FG_DEC_TYPES_BASE(X) FG_DEC_TYPES_WIDE(X) FG_DEC_TYPES_ROWS(X)

bool fg_quant_can_decode(fg_dtype t) {
  switch (t) {
#define FG_DEC_CASE(T, NAME, BE, BB) case T:
    FG_DEC_TYPES(FG_DEC_CASE)
#undef FG_DEC_CASE
    return true;
    default:
      return fg_is_scalar(t);
  }
}

/* Work below this many elements stays on the calling thread (a parallel region costs more). */
#define FG_QUANT_PAR_MIN_ELEMS 16384

/* Whether n elements are worth a parallel region: enough of them, and more than one thread to
 * share them (a region of one thread still costs its setup, 2-3% of a 1 MiB decode). */
static bool fg_quant_par(int64_t n) { return n >= FG_QUANT_PAR_MIN_ELEMS && omp_get_max_threads() > 1; }

/* Validates type, shape and slice size; *nblocks gets the total block count. */
static fg_status fg_quant_check(fg_dtype t, bool encode, const void *fp, const void *bp,
                                int64_t nrows, int64_t n, size_t bytes, int64_t *nblocks) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  const char *verb = encode ? "encode" : "decode";
  if (!tr) return fg_fail(FG_ERR_BAD_DTYPE, "quant %s: invalid dtype %d", verb, (int)t);
  if (encode ? !fg_quant_can_encode(t) : !fg_quant_can_decode(t)) {
    if (encode && (t == FG_IQ2_XXS || t == FG_IQ2_XS || t == FG_IQ2_S || t == FG_IQ3_XXS ||
                   t == FG_IQ3_S || t == FG_IQ1_S || t == FG_IQ1_M))
      return fg_fail(FG_ERR_UNSUPPORTED, "quant encode: %s is decode-only here "
                     "(ggml's quantizer for it searches its grid and, for some, needs an importance matrix)",
                     tr->name);
    return fg_fail(FG_ERR_UNSUPPORTED, "quant %s: %s is not a ggml float or block type", verb, tr->name);
  }
  if (n < 0 || nrows < 0)
    return fg_fail(FG_ERR_INVALID_ARG, "quant %s %s: negative row length %lld or row count %lld",
                   verb, tr->name, (long long)n, (long long)nrows);
  if (n % tr->block_elems != 0)
    return fg_fail(FG_ERR_BAD_ROW, "quant %s %s: row length %lld is not a multiple of the %u-element block",
                   verb, tr->name, (long long)n, tr->block_elems);
  uint64_t row_bytes = (uint64_t)(n / tr->block_elems) * tr->block_bytes;
  if (nrows != 0 && row_bytes > UINT64_MAX / (uint64_t)nrows)
    return fg_fail(FG_ERR_OVERFLOW, "quant %s %s: %lld rows of %lld elements overflow", verb, tr->name,
                   (long long)nrows, (long long)n);
  const uint64_t want = row_bytes * (uint64_t)nrows;
  if ((uint64_t)bytes != want)
    return fg_fail(FG_ERR_BAD_ROW, "quant %s %s: byte slice is %zu bytes, expected %llu "
                   "(%lld rows x %lld elements = %llu bytes per row)", verb, tr->name, bytes,
                   (unsigned long long)want, (long long)nrows, (long long)n, (unsigned long long)row_bytes);
  if (want != 0 && (fp == NULL || bp == NULL))
    return fg_fail(FG_ERR_INVALID_ARG, "quant %s %s: NULL buffer", verb, tr->name);
  *nblocks = (n / tr->block_elems) * nrows;
  return FG_OK;
}

/* Not inlined into the dispatch: each loop is compiled on its own, with its restrict
 * pointers (inlined into the switch, gcc left q4_0's loop at a quarter of its speed). */
#if defined(__GNUC__)
#define FG_DEC_NOINLINE __attribute__((noinline))
#else
#define FG_DEC_NOINLINE
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FG_DEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FG_DEC_CLONES
#endif
/* The scalar types' loops, one per direction and type, each on [lo, hi) of the elements.
 * On a little-endian host with gcc or clang the 16-bit values are loaded and stored whole
 * (an unaligned, aliasing type): the byte-by-byte form vectorised into extra shuffles (bf16
 * encode 0.86x of ggml's loop). */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
typedef uint16_t fg_u16_any __attribute__((may_alias, aligned(1)));
#define FG_ST16(p, i, v) (((fg_u16_any *)(void *)(p))[i] = (v))
#define FG_LD16(p, i) (((const fg_u16_any *)(const void *)(p))[i])
#else
#define FG_ST16(p, i, v) fg_bytes_st_le16((p) + 2 * (i), (v))
#define FG_LD16(p, i) fg_bytes_ld_le16((p) + 2 * (i))
#endif
/* Each on [lo, hi) of the elements, from in to out (f32 to 16-bit for the encoders). */
typedef void (*fg_scalar_loop)(const void *in, void *out, int64_t lo, int64_t hi);
static FG_DEC_CLONES FG_DEC_NOINLINE void fg_enc_f16(const void *in, void *out, int64_t lo, int64_t hi) {
  const float *FG_RESTRICT x = in;
  uint8_t *FG_RESTRICT y = out;
  for (int64_t i = lo; i < hi; i++) FG_ST16(y, i, fg_f32_to_f16(x[i]));
}
static FG_DEC_CLONES FG_DEC_NOINLINE void fg_enc_bf16(const void *in, void *out, int64_t lo, int64_t hi) {
  const float *FG_RESTRICT x = in;
  uint8_t *FG_RESTRICT y = out;
  for (int64_t i = lo; i < hi; i++) FG_ST16(y, i, fg_f32_to_bf16(x[i]));
}
static FG_DEC_CLONES FG_DEC_NOINLINE void fg_dec_f16(const void *in, void *out, int64_t lo, int64_t hi) {
  const uint8_t *FG_RESTRICT b = in;
  float *FG_RESTRICT y = out;
  for (int64_t i = lo; i < hi; i++) y[i] = fg_f16_to_f32(FG_LD16(b, i)); /* the vectorising form */
}
static FG_DEC_CLONES FG_DEC_NOINLINE void fg_dec_bf16(const void *in, void *out, int64_t lo, int64_t hi) {
  const uint8_t *FG_RESTRICT b = in;
  float *FG_RESTRICT y = out;
  for (int64_t i = lo; i < hi; i++) y[i] = fg_bf16_to_f32(FG_LD16(b, i));
}

/* n elements of a scalar type, either way: f32 is a copy; f16 and bf16 on one thread without
 * a region (the loop inside an outlined region body compiled slower: bf16 encode was 0.87x
 * of ggml's), else a contiguous share per thread. */
static void fg_scalar_rows(fg_dtype t, bool encode, const void *in, void *out, int64_t n) {
  if (t == FG_F32) {
    memcpy(out, in, (size_t)n * 4);
    return;
  }
  const fg_scalar_loop fn = encode ? (t == FG_F16 ? fg_enc_f16 : fg_enc_bf16) : (t == FG_F16 ? fg_dec_f16 : fg_dec_bf16);
  if (!fg_quant_par(n)) {
    fn(in, out, 0, n);
    return;
  }
#pragma omp parallel
  {
    const int64_t k = omp_get_thread_num(), nt = omp_get_num_threads();
    fn(in, out, n * k / nt, n * (k + 1) / nt);
  }
}

/* A finite input whose half field rounds beyond f16's largest value, 65504, would be stored
 * as Inf (ggml does so, and the block decodes to NaN), so such a block is refused. The types
 * without a half field: Q8_K's scale is f32 (checked on its own: see below), MXFP4's is an
 * E8M0 exponent (every finite input has one) and NVFP4's an unsigned E4M3 that saturates at
 * 448, as ggml's does; IQ1_M's f16 is spread over its scale words (quant_weighted.c). */
const fg_half_fields fg_quant_halves[FG_GGML_TYPE_COUNT] = {
  [FG_Q4_0] = {1, {0}},      [FG_Q4_1] = {2, {0, 2}},   [FG_Q5_0] = {1, {0}},      [FG_Q5_1] = {2, {0, 2}},
  [FG_Q8_0] = {1, {0}},      [FG_Q8_1] = {2, {0, 2}},   [FG_Q2_K] = {2, {80, 82}}, [FG_Q3_K] = {1, {108}},
  [FG_Q4_K] = {2, {0, 2}},   [FG_Q5_K] = {2, {0, 2}},   [FG_Q6_K] = {1, {208}},    [FG_TQ1_0] = {1, {52}},
  [FG_TQ2_0] = {1, {64}},    [FG_IQ4_NL] = {1, {0}},    [FG_IQ4_XS] = {1, {0}},    [FG_Q1_0] = {1, {0}},
  [FG_Q2_0] = {1, {0}},      [FG_IQ2_XXS] = {1, {0}},   [FG_IQ2_XS] = {1, {0}},    [FG_IQ2_S] = {1, {0}},
  [FG_IQ3_XXS] = {1, {0}},   [FG_IQ3_S] = {1, {0}},     [FG_IQ1_S] = {1, {0}},
};

/* The fitting searches of the k-quants and IQ4 square and cube the inputs in f32; past 2^32
 * those sums overflow and a block can come out with a finite but meaningless scale (an
 * all-zero Q6_K block, say). No block of these types holds a magnitude above 2^28 (Q6_K's
 * 65504 * 128 * 32), so a block reaching 2^32 is refused before it is encoded. */
#define FG_QUANT_SEARCH_LIMIT_BITS 0x4f800000u /* 2^32 */

static bool fg_has_search(fg_dtype t) {
  return t == FG_Q2_K || t == FG_Q3_K || t == FG_Q4_K || t == FG_Q5_K || t == FG_Q6_K || t == FG_IQ4_NL ||
         t == FG_IQ4_XS;
}

/* Index of the first non-finite value of x[0..n), or -1. */
static int64_t fg_first_nonfinite(const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if ((fg_f32_bits(x[i]) & 0x7f800000u) == 0x7f800000u) return i;
  return -1;
}

/* One block: encodes it and returns 0, or returns 1 (a non-finite input) or 2 (a block the
 * type cannot hold) leaving y as it is. be and search are constants at each call site (see
 * FG_ENC_LOOP) so that the scan unrolls into one reduction (two for the search types); the
 * magnitudes, below 2^31, compare as signed ints (SSE2's pcmpgtd), so it vectorises on any
 * x86-64. The half fields are checked on their high bytes (exponent bits 0x7c), which the
 * encoder has just stored byte by byte: a wider load would wait for the stores to retire. Two
 * bytes are read whether the type has one field, two or none (mask 0: never Inf). */
static inline int fg_encode_block(fg_qblock_enc enc, const float *x, uint8_t *y, int64_t be, bool search,
                                  unsigned hi0, unsigned hi1, uint8_t mask, bool q8k) {
  int32_t nonfinite = 0, big = 0;
  for (int64_t j = 0; j < be; j++) {
    const int32_t u = (int32_t)(fg_f32_bits(x[j]) & 0x7fffffffu);
    nonfinite |= u >= 0x7f800000;
    if (search) big |= u >= (int32_t)FG_QUANT_SEARCH_LIMIT_BITS;
  }
  if (nonfinite) return 1;
  if (big) return 2;
  enc(x, y);
  if (((y[hi0] & mask) == 0x7c) | ((y[hi1] & mask) == 0x7c)) return 2;
  /* Q8_K's f32 scale times the block's largest code (127) overflows for |x| near FLT_MAX */
  if (q8k && !(fabsf(fg_bits_f32(fg_bytes_ld_le32(y))) * 127.0f < INFINITY)) return 2;
  return 0;
}

static fg_status fg_encode_refused(fg_dtype t, const fg_dtype_traits *tr, const float *src, int64_t nrows, int64_t n,
                                   int64_t bad, int64_t range_block) {
  const int64_t be = tr->block_elems;
  char row[48] = "";
  if (bad != INT64_MAX && (range_block == INT64_MAX || bad < range_block * be)) {
    const float v = src[bad];
    if (nrows > 1) snprintf(row, sizeof row, "row %lld, ", (long long)(bad / n));
    return fg_fail(FG_ERR_NONFINITE, "quant encode %s: non-finite value %s at %selement %lld", tr->name,
                   isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"), row, (long long)(bad % n));
  }
  const float *x = src + range_block * be;
  int64_t at = 0;
  for (int64_t j = 1; j < be; j++)
    if ((fg_f32_bits(x[j]) & 0x7fffffffu) > (fg_f32_bits(x[at]) & 0x7fffffffu)) at = j;
  const int64_t first = range_block * be % n, r = range_block * be / n;
  if (nrows > 1) snprintf(row, sizeof row, "row %lld, ", (long long)r);
  const char *field = fg_quant_halves[t].n < 2 ? "scale" : t == FG_Q8_1 ? "scale or sum" : "scale or min";
  char tail[128];
  if (t == FG_Q8_K)
    snprintf(tail, sizeof tail, "makes its f32 scale x 127 overflow (the block would decode to Inf)");
  else
    snprintf(tail, sizeof tail, "needs an f16 %s beyond 65504 (ggml would store Inf, which decodes to NaN)", field);
  return fg_fail(FG_ERR_RANGE, "quant encode %s: %sblock %lld (elements %lld..%lld): largest magnitude %.9g at element %lld %s",
                 tr->name, row, (long long)(first / be), (long long)first, (long long)(first + be - 1),
                 (double)x[at], (long long)(first + at), tail);
}

fg_status fg_quant_encode_rows(fg_dtype t, const float *src, int64_t nrows, int64_t n,
                               void *dst, size_t dst_bytes) {
  int64_t nb;
  fg_status st = fg_quant_check(t, true, src, dst, nrows, n, dst_bytes, &nb);
  if (st != FG_OK) return st;
  if (nb == 0) return FG_OK;
  uint8_t *y = (uint8_t *)dst;
  if (fg_is_scalar(t)) {
    fg_scalar_rows(t, true, src, y, nb);
    return FG_OK;
  }
  const fg_dtype_traits *tr = fg_dtype_info(t);
  const int64_t be = tr->block_elems, bb = tr->block_bytes;
  const fg_qblock_enc enc = fg_enc_tab[t];
  const fg_half_fields h = fg_quant_halves[t];
  const unsigned hi0 = h.n ? h.off[0] + 1u : 0, hi1 = h.n > 1 ? h.off[1] + 1u : hi0;
  const uint8_t mask = h.n ? 0x7cu : 0;
  const bool q8k = t == FG_Q8_K, search = fg_has_search(t), par = fg_quant_par(nb * be);
  int64_t bad = INT64_MAX;   /* smallest flat index of a non-finite input */
  int64_t range = INT64_MAX; /* smallest block the type cannot hold */
  int64_t i;
#define FG_ENC_LOOP(BE, SEARCH)                                                                     \
  _Pragma("omp parallel for schedule(static) if (par)")                                             \
  for (i = 0; i < nb; i++) {                                                                        \
    const int r = fg_encode_block(enc, src + i * (BE), y + i * bb, (BE), (SEARCH), hi0, hi1, mask, q8k); \
    if (r == 1) {                                                                                   \
      const int64_t k = fg_first_nonfinite(src + i * (BE), (BE));                                   \
      _Pragma("omp critical(fg_quant_bad)")                                                         \
      if (i * (BE) + k < bad) bad = i * (BE) + k;                                                   \
    } else if (r == 2) {                                                                            \
      _Pragma("omp critical(fg_quant_bad)")                                                         \
      if (i < range) range = i;                                                                     \
    }                                                                                               \
  }
  if (search && be == 256) {
    FG_ENC_LOOP(256, true)
  } else if (search) {
    FG_ENC_LOOP(be, true)
  } else if (be == 32) {
    FG_ENC_LOOP(32, false)
  } else if (be == 256) {
    FG_ENC_LOOP(256, false)
  } else {
    FG_ENC_LOOP(be, false)
  }
#undef FG_ENC_LOOP
  if (bad != INT64_MAX || range != INT64_MAX) return fg_encode_refused(t, tr, src, nrows, n, bad, range);
  return FG_OK;
}

/* The decode loops, one function per type. On x86-64 with gcc those of FG_DEC_TYPES_WIDE are
 * built twice, for AVX2 and for the baseline, and the loader picks one by the CPU (an ifunc):
 * the same IEEE operations element by element (no contraction), so the same floats, with
 * twice the lanes where a decoder is not bound by stores. */
#define FG_DEC_FN(ATTR, NAME, BE, BB)                                                       \
  static ATTR FG_DEC_NOINLINE void fg_dec_rows_##NAME(const uint8_t *FG_RESTRICT b, float *FG_RESTRICT y, \
                                      int64_t nb) {                                       \
    for (int64_t i = 0; i < nb; i++) fg_dequant_##NAME(b + i * (BB), y + i * (BE));      \
  }
#define FG_DEC_FN_BASE(T, NAME, BE, BB) FG_DEC_FN(, NAME, BE, BB)
#define FG_DEC_FN_WIDE(T, NAME, BE, BB) FG_DEC_FN(FG_DEC_CLONES, NAME, BE, BB)
FG_DEC_TYPES_BASE(FG_DEC_FN_BASE)
FG_DEC_TYPES_WIDE(FG_DEC_FN_WIDE)
#undef FG_DEC_FN_WIDE
#undef FG_DEC_FN_BASE
#undef FG_DEC_FN

/* nb blocks of t from b into y, on the calling thread. */
static void fg_dec_blocks(fg_dtype t, const uint8_t *b, float *y, int64_t nb) {
#if FG_QUANT_X86
  /* Q8_K's peels by y's address, in whole floats */
  if ((t == FG_Q8_0 || (t == FG_Q8_K && !((uintptr_t)y & 3))) && fg_quant_rows_avx2()) {
    if (t == FG_Q8_0) fg_dec_rows_q8_0_avx2(b, y, nb);
    else fg_dec_rows_q8_K_avx2(b, y, nb);
    return;
  }
#endif
  switch (t) {
#define FG_DEC_CASE(T, NAME, BE, BB) \
  case T:                            \
    fg_dec_rows_##NAME(b, y, nb);    \
    break;
    FG_DEC_TYPES(FG_DEC_CASE)
#undef FG_DEC_CASE
    default:
      break;
  }
}

/* Decoding into memory that the caches will not hold anyway: each chunk of blocks is decoded
 * into an L1-sized buffer, then written out with non-temporal stores (fg_stream_floats), so
 * the output costs one write to memory instead of a read for ownership and a write. The same
 * floats. It pays for the decoders that outrun plain stores to memory, and only for output
 * beyond the caches: measured on this project's 2-core VM (Xeon, 2 MiB L2 per core), floats
 * per second streamed / plain, 1 thread into 64 MiB that no cache held: q8_0 1.77x, q8_K
 * 1.96x, tq1_0 1.63x, q4_K 1.48x, q4_0 1.45x, q5_K 1.34x, q2_0 1.25x; 2 threads into 64 MiB: q8_0 1.61x, q4_0
 * 1.35x, q4_K 1.34x; but q6_K 0.84x, q5_0 0.87x, q3_K 0.81x, nvfp4 0.87x, q2_K 1.02x (their
 * own arithmetic is the bound, and the extra pass through L1 costs). Output that the caches
 * hold is slower streamed (see fg_llc_bytes), and so is output into pages not yet faulted in
 * (see fg_resident). */
#define FG_QUANT_STREAM_CHUNK 4096 /* floats: 16 KiB */
/* Whether every page of [p, p+bytes) is in memory. Streaming pays only there: a fresh page
 * is zeroed by the kernel through the cache at its first touch, and non-temporal stores then
 * write it a second time (1 thread into 64 MiB of new memory: 0.7x of plain stores). */
static bool fg_resident(const void *p, size_t bytes) {
#if FG_QUANT_X86
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)p & ~(page - 1);
  const uintptr_t hi = (uintptr_t)p + bytes;
  unsigned char vec[4096];
  while (lo < hi) {
    size_t n = (size_t)((hi - lo + page - 1) / page);
    if (n > sizeof vec) n = sizeof vec;
    if (mincore((void *)lo, n * page, vec) != 0) return false;
    for (size_t i = 0; i < n; i++)
      if (!(vec[i] & 1)) return false;
    lo += n * page;
  }
  return true;
#else
  (void)p, (void)bytes;
  return false;
#endif
}

/* The last-level cache's size: plain stores into an output smaller than it may find their
 * lines there (repeated decodes into one 8 MiB buffer ran 1.2-1.9x faster with plain stores
 * than streamed, on this VM's 260 MB L3); a larger one cycles through it, and every line is
 * read from memory before it is overwritten. 32 MiB when the system does not say. */
static uint64_t fg_llc_bytes(void) {
  static _Atomic uint64_t llc; /* a fact about the machine: one value per process */
  uint64_t v = llc;
  if (v == 0) {
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    v = l3 > 0 ? (uint64_t)l3 : l2 > 0 ? (uint64_t)l2 : (uint64_t)32 << 20;
    llc = v;
  }
  return v;
}

bool fg_quant_stream_worth(uint64_t out_bytes) { return out_bytes >= fg_llc_bytes(); }
static bool fg_stream_pays(fg_dtype t) {
  switch (t) {
    case FG_Q8_0: case FG_Q8_1: case FG_Q8_K: case FG_Q4_0: case FG_Q4_1: case FG_Q4_K: case FG_Q5_K:
    case FG_TQ1_0: case FG_TQ2_0: case FG_Q2_0:
      return true;
    default:
      return false;
  }
}
static void fg_dec_blocks_out(fg_dtype t, const uint8_t *b, float *y, int64_t nb, int64_t be, int64_t bb,
                              bool stream) {
#if FG_QUANT_X86
  if (stream) {
    _Alignas(64) float tmp[FG_QUANT_STREAM_CHUNK];
    const int64_t per = FG_QUANT_STREAM_CHUNK / be;
    for (int64_t i = 0; i < nb; i += per) {
      const int64_t k = nb - i < per ? nb - i : per;
      fg_dec_blocks(t, b + i * bb, tmp, k);
      fg_stream_floats(y + i * be, tmp, k * be);
    }
    fg_stream_fence();
    return;
  }
#else
  (void)be, (void)bb, (void)stream;
#endif
  fg_dec_blocks(t, b, y, nb);
}

static fg_status fg_decode(fg_dtype t, const void *src, size_t src_bytes, float *dst, int64_t nrows, int64_t n,
                           int stream) {
  int64_t nb;
  fg_status st = fg_quant_check(t, false, dst, src, nrows, n, src_bytes, &nb);
  if (st != FG_OK) return st;
  if (nb == 0) return FG_OK;
  const uint8_t *b = (const uint8_t *)src;
  if (fg_is_scalar(t)) {
    fg_scalar_rows(t, false, b, dst, nb);
    return FG_OK;
  }
  const fg_dtype_traits *tr = fg_dtype_info(t);
  const int64_t be = tr->block_elems, bb = tr->block_bytes;
  /* One thread: no region (a region of one costs its setup, and gcc compiles its outlined
   * body a few percent slower). More: each thread one contiguous share, as schedule(static). */
  const bool par = fg_quant_par(nb * be);
  /* stream = -1: when the output is beyond what the caches hold, and its pages are in
   * memory already */
  const uint64_t out = (uint64_t)(nb * be) * 4;
  const bool strm = fg_stream_pays(t) && (stream > 0 || (fg_quant_stream_worth(out) && fg_resident(dst, (size_t)out)));
  if (!par) {
    fg_dec_blocks_out(t, b, dst, nb, be, bb, strm);
    return FG_OK;
  }
#pragma omp parallel
  {
    const int64_t k = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = nb * k / nt, hi = nb * (k + 1) / nt;
    fg_dec_blocks_out(t, b + lo * bb, dst + lo * be, hi - lo, be, bb, strm);
  }
  return FG_OK;
}

fg_status fg_quant_decode_rows(fg_dtype t, const void *src, size_t src_bytes, float *dst, int64_t nrows, int64_t n) {
  return fg_decode(t, src, src_bytes, dst, nrows, n, -1);
}

fg_status fg_quant_decode_streaming(fg_dtype t, const void *src, size_t src_bytes, float *dst, int64_t n) {
  return fg_decode(t, src, src_bytes, dst, 1, n, 1);
}

fg_status fg_quant_encode_row(fg_dtype t, const float *src, int64_t n, void *dst, size_t dst_bytes) {
  return fg_quant_encode_rows(t, src, 1, n, dst, dst_bytes);
}

fg_status fg_quant_decode_row(fg_dtype t, const void *src, size_t src_bytes, float *dst, int64_t n) {
  return fg_quant_decode_rows(t, src, src_bytes, dst, 1, n);
}
