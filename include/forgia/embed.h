/* Embedding lookup: rows of a token-embedding table, in any dtype a checkpoint stores it
 * (f32, f16, bf16 or a ggml block type), gathered and widened to f32 on the device. The
 * table stays as stored (a Q8_0 table keeps its Q8_0 bytes); each gathered row is decoded
 * by the block decoders of forgia/elem/quant_decode.h, the same bits ggml's dequantization
 * gives and the same on every backend. */
#ifndef FORGIA_EMBED_H
#define FORGIA_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[t][c] = row ids[t] of table, element c, times scale (one f32 multiply; scale 1 gives
 * the decoded value itself), for t < n_ids, c < n_cols. table is n_rows x n_cols in dtype
 * (n_cols a multiple of the dtype's block size), ids n_ids int32: all device memory of dev.
 * An id outside [0, n_rows) gives a row of canonical NaN (0x7fc00000), never a read outside
 * the table. scale finite. n_ids == 0 does nothing. */
FG_API fg_status fg_embed_rows(fg_device *dev, const void *table, fg_dtype dtype, size_t n_rows, size_t n_cols,
                               const int32_t *ids, size_t n_ids, float scale, float *out, fg_stream *s);

/* The gradient of fg_embed_rows into an f32 table gradient (n_rows x n_cols), added to what
 * it holds: for t = 0 .. n_ids - 1 in order, dtable[ids[t]][c] = dtable[ids[t]][c] +
 * f32(scale * dy[t][c]), each operation rounded to f32. Tokens with an id outside
 * [0, n_rows) add nothing. The same bits on every backend and for any thread count. dy
 * (n_ids x n_cols f32), ids and dtable are device memory of dev; dtable must not overlap dy
 * or ids. scale finite. n_ids == 0 does nothing. */
FG_API fg_status fg_embed_backward(fg_device *dev, const float *dy, const int32_t *ids, size_t n_ids, size_t n_rows,
                                   size_t n_cols, float scale, float *dtable, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
