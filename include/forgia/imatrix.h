/* Importance matrices: the files llama.cpp's llama-imatrix writes, read as llama-quantize
 * reads them, giving per-column weights for the weighted encoders (forgia/quant_weighted.h).
 *
 * Two forms, told apart by the first four bytes:
 * - GGUF ("GGUF" magic, the current llama-imatrix output): per entry NAME, an F32 tensor
 *   NAME.in_sum2 of ne = [n_per_row, n_experts] (sums of squared activations) and an F32
 *   tensor NAME.counts of ne = [1, n_experts] (how many activations each expert saw); keys
 *   imatrix.datasets (array of strings), imatrix.chunk_count and imatrix.chunk_size (UINT32).
 *   Weight i of expert e = in_sum2[e][i] / (float)lround(counts[e]), or 1 for every column of
 *   an expert whose rounded count is not positive (an expert no token reached).
 * - legacy .dat (older llama-imatrix, --output-format dat), little-endian:
 *     i32 n_entries (>= 1); per entry: i32 name_len, name bytes, i32 ncall, i32 nval (>= 1),
 *     f32 values[nval]; then optionally i32 chunk_count, i32 dataset_len, dataset bytes.
 *   The stored values are (sum / count) * ncall; weight i = values[i] / (float)ncall when
 *   ncall > 0, else values[i]. The expert count is not stored: nval = n_experts * n_per_row.
 *
 * What a file must satisfy (llama-quantize's checks, plus the ones it leaves to asserts or
 * crashes), each failure naming the file, the entry and the byte offset:
 *   FG_ERR_TRUNCATED   the legacy file ends inside a field or an entry's values
 *   FG_ERR_RANGE       n_entries < 1 (no data), a name length or nval below 1, a GGUF
 *                      count that does not round into int64, trailing bytes after the legacy
 *                      dataset name
 *   FG_ERR_NOT_FOUND   a GGUF file without the imatrix.* keys ("missing imatrix metadata")
 *   FG_ERR_TYPE        imatrix.chunk_count/chunk_size not UINT32, imatrix.datasets not an
 *                      array of strings
 *   FG_ERR_BAD_SHAPE   NAME.in_sum2 without NAME.counts or the reverse, a counts tensor of
 *                      no elements or whose element count does not divide in_sum2's
 *   FG_ERR_BAD_DTYPE   an in_sum2 or counts tensor that is not F32
 *   FG_ERR_DUPLICATE   a legacy entry name that appears twice
 *   FG_ERR_NONFINITE   a NaN or Inf in a weight (after the division), or in a GGUF count
 *   and the GGUF container errors of forgia/gguf.h. Other GGUF tensors are ignored, as
 *   llama.cpp ignores them.
 *
 * Thread safety: an opened matrix is immutable; every getter may run on many threads. */
#ifndef FORGIA_IMATRIX_H
#define FORGIA_IMATRIX_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_imatrix fg_imatrix;

typedef enum fg_imatrix_format {
  FG_IMATRIX_GGUF = 0,
  FG_IMATRIX_LEGACY = 1,
} fg_imatrix_format;

/* One entry, borrowed from the matrix (valid until fg_imatrix_close). */
typedef struct fg_imatrix_entry {
  const char *name;      /* the weight tensor's name, e.g. "blk.0.attn_q.weight" */
  const float *weights;  /* n_values floats: expert e's weights start at e * (n_values / n_counts) */
  int64_t n_values;
  int64_t n_counts;      /* GGUF: the experts (1 for a dense tensor); legacy: always 1 */
} fg_imatrix_entry;

/* Reads a file (either form). The weights are computed at open. */
FG_API fg_status fg_imatrix_open(const char *path, fg_imatrix **out);
/* The same from caller-owned bytes (copied as needed); label names them in messages. */
FG_API fg_status fg_imatrix_open_bytes(const void *data, size_t len, const char *label, fg_imatrix **out);
FG_API void fg_imatrix_close(fg_imatrix *m); /* NULL-safe */

FG_API fg_imatrix_format fg_imatrix_format_of(const fg_imatrix *m);
/* Entries in name order (byte-wise), as llama.cpp's std::map holds them. */
FG_API size_t fg_imatrix_count(const fg_imatrix *m);
FG_API fg_status fg_imatrix_entry_at(const fg_imatrix *m, size_t i, fg_imatrix_entry *out);
/* The entry stored under exactly this name: FG_ERR_NOT_FOUND when there is none. */
FG_API fg_status fg_imatrix_get(const fg_imatrix *m, const char *name, fg_imatrix_entry *out);

/* The weights for one tensor to quantize, as llama-quantize picks them: the entry under the
 * tensor's name, which must hold n_per_row * n_experts values (n_experts 1 for a dense
 * matrix; for a 3-D expert tensor ne[2]). *weights receives n_per_row * n_experts floats:
 * expert e's rows take weights + e * n_per_row. FG_ERR_NOT_FOUND when the matrix has no
 * entry for the tensor (llama-quantize then quantizes without weights, or stops for a type
 * that needs them); FG_ERR_BAD_SHAPE naming both sizes when the entry has another size
 * (llama-quantize stops there too, except for token_embd.weight, which it quantizes without
 * weights: the caller decides). */
FG_API fg_status fg_imatrix_weights_for(const fg_imatrix *m, const char *tensor_name, int64_t n_per_row,
                                        int64_t n_experts, const float **weights);

/* Metadata: the datasets the matrix was computed on (GGUF: imatrix.datasets; legacy: the
 * trailing dataset name, when present), the chunk count (GGUF imatrix.chunk_count, legacy
 * trailer; 0 when absent) and the chunk size (GGUF imatrix.chunk_size; legacy 0). */
FG_API size_t fg_imatrix_dataset_count(const fg_imatrix *m);
FG_API const char *fg_imatrix_dataset(const fg_imatrix *m, size_t i); /* NULL past the end */
FG_API int64_t fg_imatrix_chunk_count(const fg_imatrix *m);
FG_API int64_t fg_imatrix_chunk_size(const fg_imatrix *m);

#ifdef __cplusplus
}
#endif
#endif
