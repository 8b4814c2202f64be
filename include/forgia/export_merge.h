/* Export merge mode: fold LoRA adapters into the dense weights of a GGUF model and write
 * it again (`forgia export --adapters DIR_OR_FILE --alpha F`; the merge mode of Fucina's
 * tools/export_gguf.zig), or put trained weights in place of the model's (`--weights`).
 *
 *   fg_export_merge_options o = {.adapters = "run/step-1000", .alpha = 16.0f};
 *   fg_export_merge *m;
 *   fg_export_merge_create(src, &o, &m);             // src: fg_ckpt_open of the base GGUF
 *   fg_export_merge_run(m, "merged.gguf", NULL, NULL);
 *   fg_export_merge_free(m);
 *
 * Adapters: a safetensors file, or a checkpoint directory holding adapters.safetensors
 * (forgia/ckpt_dir.h), with f32 tensors layers.<i>.<t>.lora_a [r, in] and .lora_b [out, r],
 * t one of q k v o gate up down, merged into blk.<i>.attn_q / attn_k / attn_v / attn_output /
 * ffn_gate / ffn_up / ffn_down .weight, a GGUF matrix [out, in] (ne = {in, out}) of type f32,
 * f16 or bf16: w' = w + scale * B A with scale = f32(alpha) / f32(r), element by element as
 * fg_lora_merge_host computes it, stored in the base's type (rounded once).
 * Refused at open, naming the tensor: a half without its other half, a name outside the
 * schema, a base absent from the model, shapes that disagree, a non-f32 adapter
 * (FG_ERR_INVALID_ARG / FG_ERR_NOT_FOUND / FG_ERR_BAD_SHAPE / FG_ERR_TYPE), an empty adapter set
 * (FG_ERR_NOT_FOUND), a block-quantized base (FG_ERR_QUANTIZED_BASE: merge into an f32/f16/bf16
 * model, then quantize the merged file in a second run), a non-finite alpha
 * (FG_ERR_NONFINITE), a source that is not GGUF (FG_ERR_UNSUPPORTED).
 *
 * Every other tensor and all metadata are copied byte for byte (split.* keys dropped, as
 * fg_export_run does). Streaming: one adapter's A and B plus a chunk of rows (chunk_bytes
 * of f32) at a time; output rules as fg_export_run's (fg_export_check_output, temporary file
 * and rename, progress may cancel).
 *
 * Thread safety: an opened merge is immutable; runs writing different paths may overlap. */
#ifndef FORGIA_EXPORT_MERGE_H
#define FORGIA_EXPORT_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/ckpt.h"
#include "forgia/dtype.h"
#include "forgia/export.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows of a merge on the host: out[o, i] = base[o, i] + scale * sum_r b[o, r] a[r, i] for the
 * nrows rows of base (f32, f16 or bf16, `in` elements each) and of b (`rank` each), a being A
 * [rank, in]. The sum runs in ascending r, each step rounded (the exact GEMM's order,
 * elem/gemm_exact.h); the add is the op layer's LoRA add (elem/op_lora.h), widening a 16-bit
 * base and rounding the result once. out may alias base. */
FG_API fg_status fg_lora_merge_host(fg_dtype dtype, const void *base, void *out, uint64_t nrows, uint64_t in,
                                    uint32_t rank, const float *a, const float *b, float scale);

typedef struct fg_export_merge_options {
  const char *adapters;  /* a safetensors file or a directory holding adapters.safetensors */
  float alpha;           /* the training-time alpha (the file stores A and B, not alpha) */
  uint64_t chunk_bytes;  /* f32 rows per step; 0: 64 MiB (at least one row) */
  /* Weights mode (`forgia export --weights`): `adapters` names trained weights instead (a
   * safetensors file, or a directory holding model.safetensors: forgia finetune --full's
   * checkpoint), each under a name of the model's, with its shape and any of f32, f16 or bf16;
   * they replace the model's tensors, rounded once to the model's dtype (a quantized or
   * non-float model tensor: FG_ERR_QUANTIZED_BASE / FG_ERR_TYPE), and alpha is unused. A name
   * the model lacks, a shape that differs, an adapter tensor or an empty file is refused. */
  bool weights;
} fg_export_merge_options;

typedef struct fg_export_merge fg_export_merge;

/* Reads the adapters' header and checks every rule above against src (GGUF). The merge
 * borrows src: free it before closing src. */
FG_API fg_status fg_export_merge_create(const fg_ckpt *src, const fg_export_merge_options *o, fg_export_merge **out);
FG_API void fg_export_merge_free(fg_export_merge *m); /* NULL-safe */

/* The adapters found (one per base tensor), and the base tensor and rank of adapter i. */
FG_API size_t fg_export_merge_count(const fg_export_merge *m);
FG_API const char *fg_export_merge_base(const fg_export_merge *m, size_t i, uint32_t *rank); /* NULL past the end */
/* The adapters file read (a directory resolved to its adapters.safetensors). */
FG_API const char *fg_export_merge_path(const fg_export_merge *m);

/* Writes the merged model to out_path; progress as fg_export_run's (tensor->action is
 * FG_EXPORT_ACTION_CONVERT for a merged tensor, COPY for the rest). */
FG_API fg_status fg_export_merge_run(const fg_export_merge *m, const char *out_path, fg_export_progress_fn progress,
                                     void *user);

#ifdef __cplusplus
}
#endif
#endif
