/* Export PTQTP mode: rewrite a GGUF model with its eligible matrices replaced by K ternary
 * planes (forgia/ptqtp.h), streamed one tensor at a time (`forgia export --ptqtp[=K]`; the
 * PTQTP mode of Fucina's tools/export_gguf.zig).
 *
 *   fg_export_ptqtp_options o = fg_export_ptqtp_options_default();   // K = 2, free fit
 *   fg_export_ptqtp_plan *p;
 *   fg_export_ptqtp_plan_create(src, &o, &p);      // src: fg_ckpt_open of a GGUF model
 *   fg_export_ptqtp_run(p, "model-ptqtp2.gguf", NULL, NULL, &summary);
 *   fg_export_ptqtp_plan_free(p);
 *
 * Eligible (quantized) tensors, as the reference decides:
 *   - 2 dims, or 3 dims with "_exps" in the name (an expert stack [in, out, n_expert]);
 *   - the name ends with ".weight" and holds no "norm";
 *   - ne[0] (the contract dim) is a multiple of 256, the plane block;
 *   - stored as f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K or q6_K (block types
 *     are dequantized first; ternary and other types are kept);
 *   - names: by default the embeddings ("token_embd" in the name) and the output head (the
 *     tensor "output.weight") stay in their precision; a non-empty include list replaces
 *     that rule (only names containing one of its substrings quantize); a name containing
 *     one of the exclude substrings never quantizes.
 * An eligible tensor NAME becomes K TQ2_0 tensors NAME.ptqtp0 .. NAME.ptqtp{K-1} with its
 * dims, at its position; plane k's block (row r, group g) holds that group's plane-k trits
 * and scale. An expert stack solves each expert's [out, in] matrix on its own and keeps
 * the 3-D shape, plane-major (all experts of plane 0, then plane 1, ...). Every other
 * tensor and all metadata are copied byte for byte (split.* keys dropped: the output is one
 * file). When any tensor is quantized the output carries fucina.ptqtp.version = u32 1 and,
 * for a tied fit, fucina.ptqtp.tie_scales = u32 1 (set in place when the source has them).
 *
 * Memory: one source tensor's f32 values plus its planes (and an 8 MiB read piece), never
 * the model; source pages are released behind the cursor. An expert stack holds one
 * expert's f32 values and planes 1..K-1 of the whole stack (plane 0 streams out expert by
 * expert), the reference's one exception to tensor-at-a-time residency. The plan reports
 * that bound per tensor and the run the largest hold it made. */
#ifndef FORGIA_EXPORT_PTQTP_H
#define FORGIA_EXPORT_PTQTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/ckpt.h"
#include "forgia/dtype.h"
#include "forgia/ptqtp.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_PTQTP_VERSION_KEY "fucina.ptqtp.version"
#define FG_PTQTP_TIE_KEY "fucina.ptqtp.tie_scales"
#define FG_PTQTP_FORMAT_VERSION 1u

typedef struct fg_export_ptqtp_options {
  fg_ptqtp_options solver;         /* planes (K), tie_scales, threads, solver constants */
  const char *const *include;      /* n_include substrings (borrowed for the plan's life) */
  size_t n_include;
  const char *const *exclude;
  size_t n_exclude;
} fg_export_ptqtp_options;

/* The solver's defaults (K = 2, untied) and no filters. */
FG_API fg_export_ptqtp_options fg_export_ptqtp_options_default(void);

/* Why a tensor is kept, or FG_PTQTP_WHY_QUANTIZE. */
typedef enum fg_export_ptqtp_why {
  FG_PTQTP_WHY_QUANTIZE = 0,
  FG_PTQTP_WHY_SHAPE = 1,        /* not 2-D, nor a 3-D "_exps" stack, or empty */
  FG_PTQTP_WHY_NOT_WEIGHT = 2,   /* name does not end with ".weight" */
  FG_PTQTP_WHY_NORM = 3,         /* "norm" in the name */
  FG_PTQTP_WHY_ROW = 4,          /* ne[0] not a multiple of 256 */
  FG_PTQTP_WHY_SOURCE = 5,       /* a type the reference does not decode, or already ternary */
  FG_PTQTP_WHY_DEFAULT = 6,      /* embeddings / output head under the default name policy */
  FG_PTQTP_WHY_NOT_INCLUDED = 7, /* matches no include substring */
  FG_PTQTP_WHY_EXCLUDED = 8,     /* matches an exclude substring */
} fg_export_ptqtp_why;

/* "quantize", "not a matrix", ... */
FG_API const char *fg_export_ptqtp_why_name(fg_export_ptqtp_why w);

typedef struct fg_export_ptqtp_tensor {
  const char *name;            /* borrowed from the source */
  int ndim;
  uint64_t ne[4];              /* GGUF order */
  fg_dtype src_dtype;
  fg_export_ptqtp_why why;
  uint64_t experts;            /* 1, or ne[2] for a quantized stack */
  uint64_t rows, cols;         /* per expert: ne[1], ne[0] */
  uint64_t src_bytes;
  uint64_t dst_bytes;          /* all K planes, or src_bytes when kept */
  uint64_t workset_bytes;      /* heap held while it is written (0 when kept: a copy) */
} fg_export_ptqtp_tensor;

typedef struct fg_export_ptqtp_plan fg_export_ptqtp_plan;

/* Plans the export of src (a GGUF model, split or not; FG_ERR_UNSUPPORTED for a safetensors
 * checkpoint: the name policy is GGUF's). Checks the options (fg_ptqtp_options_check), and
 * fails naming the tensor when a plane name would pass GGUF's 63 bytes (FG_ERR_BAD_STRING:
 * exclude it) or a plane name is already a tensor of src (FG_ERR_DUPLICATE). The plan
 * borrows src and opt's strings. */
FG_API fg_status fg_export_ptqtp_plan_create(const fg_ckpt *src, const fg_export_ptqtp_options *opt,
                                             fg_export_ptqtp_plan **out);
FG_API void fg_export_ptqtp_plan_free(fg_export_ptqtp_plan *p); /* NULL-safe */

FG_API size_t fg_export_ptqtp_plan_count(const fg_export_ptqtp_plan *p);
FG_API const fg_export_ptqtp_tensor *fg_export_ptqtp_plan_tensor(const fg_export_ptqtp_plan *p, size_t i);
FG_API int fg_export_ptqtp_plan_planes(const fg_export_ptqtp_plan *p);

typedef struct fg_export_ptqtp_totals {
  size_t tensors, quantized, stacks, plane_tensors, kept, kept_stacks;
  uint64_t src_bytes, dst_bytes;              /* whole model, without padding */
  uint64_t quant_src_bytes, quant_dst_bytes;  /* the quantized tensors only */
  uint64_t peak_workset_bytes;                /* largest per-tensor working set */
} fg_export_ptqtp_totals;

FG_API void fg_export_ptqtp_plan_totals(const fg_export_ptqtp_plan *p, fg_export_ptqtp_totals *t);

/* Called after every tensor written, from the calling thread. stats is the tensor's solver
 * diagnostics (NULL for a kept tensor); for an expert stack the sums run over every expert
 * and rel_frob_err is the mean of the experts' errors, max_rel_err their largest (for a
 * matrix, its error). Returning false cancels the run (FG_ERR_STATE, no file). */
typedef struct fg_export_ptqtp_progress {
  size_t index, count;                   /* tensor index, number of tensors */
  const fg_export_ptqtp_tensor *tensor;
  const fg_ptqtp_stats *stats;
  double max_rel_err;
  double seconds;                        /* spent on this tensor */
  uint64_t bytes_done, bytes_total;      /* output tensor bytes */
} fg_export_ptqtp_progress;
typedef bool (*fg_export_ptqtp_progress_fn)(const fg_export_ptqtp_progress *p, void *user);

typedef struct fg_export_ptqtp_summary {
  fg_export_ptqtp_totals totals;
  uint64_t peak_workset_bytes;  /* largest heap hold the run made */
  uint64_t peak_rss_bytes;      /* the process's peak resident set at the end (getrusage) */
  uint64_t groups, unconverged_groups;
  double max_rel_err;           /* over every quantized tensor (and expert) */
} fg_export_ptqtp_summary;

/* Writes the output to out_path (rules, temporary file and rename as fg_export_run: see
 * fg_export_check_output; out_path must not be an input). progress and summary may be NULL.
 * On failure the destination is untouched and no temporary file remains. */
FG_API fg_status fg_export_ptqtp_run(const fg_export_ptqtp_plan *p, const char *out_path,
                                     fg_export_ptqtp_progress_fn progress, void *user,
                                     fg_export_ptqtp_summary *summary);

#ifdef __cplusplus
}
#endif
#endif
