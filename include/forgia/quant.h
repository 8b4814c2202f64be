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
 *   Callers add the tensor name with fg_fail_prefix.
 * - a type this build cannot encode/decode gives FG_ERR_UNSUPPORTED.
 * The multi-row forms run OpenMP over rows and give identical bytes for any thread count.
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

#ifdef __cplusplus
}
#endif
#endif
