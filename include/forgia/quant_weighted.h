/* Row encoders with an importance matrix: f32 -> TYPE with per-column weights, the bytes of
 * ggml's quantize_<type>(src, dst, nrows, n, quant_weights) (ggml_quantize_chunk given the
 * same weights), as llama-quantize writes them with --imatrix. The weights of a tensor come
 * from forgia/imatrix.h (fg_imatrix_weights_for); for an expert tensor each expert's rows
 * take that expert's slice, so call once per expert.
 *
 * Which types use the weights (ggml's quantizers, checked one by one):
 *   q4_0 q4_1 q5_0 q5_1, q2_K q3_K q4_K q5_K q6_K, iq4_nl iq4_xs: a different search when
 *     weights are given; without weights they give fg_quant_encode_rows' bytes.
 *   iq2_xxs iq2_xs iq2_s iq3_xxs iq3_s iq1_s iq1_m (the grid i-quants, which
 *     fg_quant_encode_rows does not encode): weighted searches over their grids; iq2_xxs,
 *     iq2_xs and iq1_s need weights, the others also run without (ggml's weights x^2, or for
 *     iq2_s sigma2/4 + x^2). Their search tables are built once per process on first use.
 *   q8_0, tq1_0, tq2_0, mxfp4, nvfp4, q1_0, q2_0 ignore the weights (ggml runs the reference
 *     quantizer); here too, so fg_quant_encode_rows' bytes come back whatever the weights.
 *   f32, f16, bf16 carry no weights either.
 * fg_quant_encode_rows_weighted accepts exactly the types fg_quant_can_encode_weighted names.
 *
 * Contracts: those of fg_quant_encode_rows (forgia/quant.h: FG_ERR_BAD_ROW for sizes,
 * FG_ERR_NONFINITE naming the row and element, FG_ERR_RANGE for a block whose f16 field would
 * round to Inf (IQ1_M's scale spread over its scale words included) or whose magnitude reaches
 * 2^32; and, for the grid i-quants, a block whose search finds no candidate because its
 * weighted distances overflow f32, where ggml aborts), plus: weights is n
 * floats, the same for every row of the call; a NaN, Inf or negative weight is refused
 * (FG_ERR_NONFINITE / FG_ERR_RANGE naming its column) before anything is written. Rows are
 * encoded independently (OpenMP over rows): the bytes do not depend on the thread count.
 * Callers add the tensor name with fg_fail_prefix. */
#ifndef FORGIA_QUANT_WEIGHTED_H
#define FORGIA_QUANT_WEIGHTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True for the types ggml cannot quantize without an importance matrix
 * (ggml_quantize_requires_imatrix: iq2_xxs, iq2_xs, iq1_s). */
FG_API bool fg_quant_needs_weights(fg_dtype t);
/* True for the types llama-quantize refuses to write without one (its
 * tensor_requires_imatrix, type part: iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs; it
 * exempts token_embd and output tensors, and also requires one for q2_K in a Q2_K_S mixture). */
FG_API bool fg_quant_llama_requires_imatrix(fg_dtype t);
/* True when the bytes of fg_quant_encode_rows_weighted depend on the weights. */
FG_API bool fg_quant_uses_weights(fg_dtype t);
/* True when fg_quant_encode_rows_weighted accepts t (with weights; without them as well
 * unless fg_quant_needs_weights(t)). */
FG_API bool fg_quant_can_encode_weighted(fg_dtype t);

/* nrows contiguous rows of n elements: src is nrows*n floats, dst nrows row-sizes of bytes,
 * weights n floats or NULL (then the unweighted bytes of fg_quant_encode_rows; a type that
 * needs weights is FG_ERR_INVALID_ARG saying so). All borrowed. */
FG_API fg_status fg_quant_encode_rows_weighted(fg_dtype t, const float *src, int64_t nrows, int64_t n,
                                               const float *weights, void *dst, size_t dst_bytes);

#ifdef __cplusplus
}
#endif
#endif
