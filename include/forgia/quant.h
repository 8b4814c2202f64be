/* Row codecs for ggml block types: f32 -> TYPE (encode) and TYPE -> f32 (decode).
 *
 * Encoders produce the same bytes as ggml's reference quantizers (quantize_row_*_ref, no
 * importance matrix); decoders produce the same floats as ggml's dequantizers. The per-block
 * decoders live in include/forgia/elem/quant_*.h (FG_HD) so that CUDA kernels share them.
 *
 * Contracts, for every function below:
 * - n (elements per row) must be a whole number of the type's blocks: FG_ERR_BAD_ROW.
 * - the byte slice must be exactly the row's size (fg_dtype_nbytes(t, n)), times nrows for the
 *   multi-row forms: FG_ERR_BAD_ROW naming expected and found sizes.
 * - a NaN or Inf in a block encoder's input is refused with FG_ERR_NONFINITE naming the element
 *   index (within the row, and the row for the multi-row form); nothing useful is left in dst.
 *   f32, f16 and bf16 carry NaN and Inf, so their encoders convert them like any value.
 * - a finite block that the type cannot hold is refused with FG_ERR_RANGE naming the row, the
 *   block, its elements and its largest value: one whose f16 scale, min or (Q8_1) sum would
 *   round beyond 65504, which ggml stores as Inf (the block then decodes to NaN), exactly where
 *   ggml's field overflows; a Q2_K..Q6_K or IQ4 block reaching 2^32 (their fitting searches
 *   overflow f32 there and can leave a finite but meaningless block; none of these types holds
 *   more than 2^28); a Q8_K block at FLT_MAX (its f32 scale x 127 overflows). The bound depends
 *   on the block; for a block of one value x (every element, or x then zeros) the block is
 *   refused from |x| =
 *     Q4_0 524160      Q5_0 1048320     Q8_0 8321040      Q3_K 8386560.5   Q6_K 268369936
 *     Q4_1, Q5_1: 65520 (the min); positive x then zeros 982800 / 2031120
 *     Q8_1 2047.5 every element (the sum), 65520 x then zeros
 *     Q2_K 2948400.25 positive, 982800 negative (the min)
 *     Q4_K, Q5_K: 4127760 negative (the min); positive 57789152..61916404 (Q4_K) and
 *       125560568..127960568 (Q5_K), where the fitted scale (x/14 or x/15, x/30 or x/31) decides
 *     IQ4_NL 7403760.5, IQ4_XS 236920336 (x then zeros)
 *     TQ1_0, TQ2_0, Q2_0: 65520; Q1_0 65520 every element, 8386560 x then zeros
 *   MXFP4 (an exponent) and NVFP4 (an E4M3 scale that saturates at 448, as ggml's: values
 *   beyond 2688 clip) take every finite value. When a row has both, the problem that comes
 *   first in row-major order is reported. Callers add the tensor name with fg_fail_prefix.
 * - a type this build cannot encode/decode gives FG_ERR_UNSUPPORTED.
 * The multi-row forms run OpenMP over rows and give identical bytes for any thread count.
 * A decode whose output is larger than the last-level cache and all in memory already
 * (faulted in) writes it with non-temporal stores on x86-64 for the types whose decoders
 * outrun memory (q8_0, q8_1, q8_K, q4_0, q4_1, q4_K, q5_K, tq1_0, tq2_0, q2_0): the same
 * floats, 1.3-2x faster there, and not left in the cache, which could not hold them.
 *
 * Thread safety: the codecs keep no state; every function may be called from many threads
 * at once (each multi-row call runs its own OpenMP team from the calling thread). */
#ifndef FORGIA_QUANT_H
#define FORGIA_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when fg_quant_encode_row accepts t / fg_quant_decode_row accepts t. */
FG_API bool fg_quant_can_encode(fg_dtype t);
FG_API bool fg_quant_can_decode(fg_dtype t);

/* One row of n elements. src (n floats) and dst (dst_bytes) are borrowed. */
FG_API fg_status fg_quant_encode_row(fg_dtype t, const float *src, int64_t n, void *dst, size_t dst_bytes);
FG_API fg_status fg_quant_decode_row(fg_dtype t, const void *src, size_t src_bytes, float *dst, int64_t n);

/* nrows contiguous rows of n elements each: src is nrows*n floats, dst is nrows row-sizes of
 * bytes (and the reverse for decode). */
FG_API fg_status fg_quant_encode_rows(fg_dtype t, const float *src, int64_t nrows, int64_t n,
                               void *dst, size_t dst_bytes);
FG_API fg_status fg_quant_decode_rows(fg_dtype t, const void *src, size_t src_bytes,
                               float *dst, int64_t nrows, int64_t n);

/* Row gather without decoding: dst row i is a byte copy of src row rows[i], for a matrix of
 * nrows rows of n elements stored as t (any valid dtype; a block type's row is its blocks,
 * so the rows stay quantized and no value is expanded: how a fused q|gate projection is
 * split). src_bytes must be nrows row-sizes and dst_bytes nidx row-sizes (FG_ERR_BAD_ROW
 * naming expected and found); n must be a whole number of t's blocks (FG_ERR_BAD_ROW naming
 * n and the block); an index outside [0, nrows) is FG_ERR_RANGE naming its position and
 * value, found before anything is written. Indices may repeat and come in any order. src
 * and dst must not overlap. */
FG_API fg_status fg_quant_gather_rows(fg_dtype t, const void *src, size_t src_bytes, int64_t nrows, int64_t n,
                                      const int64_t *rows, int64_t nidx, void *dst, size_t dst_bytes);

#ifdef __cplusplus
}
#endif
#endif
