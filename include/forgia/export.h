/* Export: re-emit a GGUF model or a safetensors checkpoint as one GGUF file, optionally
 * transcoding its matrix weights to another element type.
 *
 * Two steps. fg_export_plan_create decides, for every tensor, the type it will have in the
 * output (and why), without reading tensor data; fg_export_run then streams the tensors
 * through the GGUF writer one at a time, so memory stays bounded by a working buffer
 * (one chunk of output, options.chunk_bytes of f32 rows at most, plus a 256 KiB piece per
 * thread), not by the model. The threads (OpenMP's) each read, decode and encode their own
 * pieces of a chunk while the calling thread writes; the bytes do not depend on their number.
 *
 * Two kinds of target:
 *   - A single type, named as ggml names it ("q4_K", "q8_0", "f16": "pure"). Policy:
 *     only matrix weights transcode: 2 or more dims, name ending ".weight", no "norm" in
 *     the name; every other tensor keeps its type and bytes.
 *   - A llama-quantize mixture ("Q4_K_M", "IQ4_XS", "Q8_0", ...: fg_export_target_parse).
 *     The tensors llama.cpp quantizes, in the types llama.cpp's quantizer chooses for the
 *     model's architecture (its per-tensor rules for attn_v, attn_k, attn_q, attn_output,
 *     ffn_down/gate/up, token_embd, output, expert stacks, the "more bits" layers and the
 *     layer-count, GQA and expert-count conditions), from the GGUF metadata
 *     general.architecture, <arch>.block_count, .attention.head_count(_kv), .expert_count.
 *     The output lists the tensors in llama.cpp's order (layer, then name) and, for the
 *     same source and options, has the same bytes as llama-quantize's file. options.pure
 *     gives every such tensor the mixture's default type (llama-quantize's --pure). A
 *     mixture needs a GGUF source (FG_ERR_UNSUPPORTED otherwise).
 * For both kinds:
 *   - A row length (ne[0]) that is not a whole number of the target's blocks takes
 *     llama.cpp's fallback type (q4_K -> q5_0, q5_K -> q5_1, q6_K -> q8_0, q2_K/q3_K/tq*
 *     -> q4_0, i-quants -> iq4_nl), and f16 when that does not divide it either
 *     (FG_EXPORT_WHY_FALLBACK, the type first chosen in .wanted). q1_0 and nvfp4 have no
 *     fallback: a mixture fails naming the tensor, as llama-quantize does, and a single
 *     type leaves the tensor as it is (FG_EXPORT_WHY_ROW).
 *   - options.output_type / token_embd_type / tensor_types override the choice for
 *     output.weight, token_embd.weight (and per_layer_token_embd.weight) and tensors whose
 *     name a pattern finds (PCRE2, the first pattern that matches), as llama-quantize's
 *     --output-tensor-type, --token-embedding-type and --tensor-type do (FG_EXPORT_WHY_OVERRIDE).
 *   - A tensor already of the chosen type is copied byte for byte.
 *   - A source already in a ggml block type refuses a block-type target unless
 *     options.allow_requantize: that would requantize quantized values (FG_ERR_UNSUPPORTED
 *     naming the tensor). A float target (f32/f16/bf16) dequantizes it.
 *   - Tensors named "*_exps.weight" (MoE expert stacks) follow options.experts when it is
 *     set; that target may requantize a quantized source (decode to f32, encode again).
 *   - Integer and f64 tensors keep their type.
 *   - A chosen type this build cannot encode, or one that llama.cpp quantizes only with an
 *     importance matrix (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq1_s, iq1_m, and Q2_K_S's q2_K)
 *     when none is given, is planned and shown, and fg_export_plan_ready / fg_export_run
 *     refuse it naming the tensor.
 * Metadata: a GGUF source's KVs are copied byte-verbatim in file order, except the split.*
 * keys (the output is one file). A single-type target sets general.file_type (UINT32) to
 * the llama.cpp file-type code (in place when present), and when any tensor ends up in a
 * block type general.quantization_version (UINT32 2) is added if absent. A mixture does
 * what llama-quantize does: general.quantization_version (2) and general.file_type (the
 * mixture's code) are removed and appended, in that order, after the copied keys. A safetensors source contributes its config.json under "safetensors.config." and
 * the first shard's __metadata__ under "safetensors.metadata."; tensor names are kept and
 * row-major shapes become GGUF ne (reversed). Keys and strings are copied byte for byte (NUL
 * bytes included in values; a key holding a NUL is FG_ERR_BAD_STRING naming the file and the
 * entry, since C readers of GGUF such as ggml's gguf_find_key stop at it and would see "a\0b"
 * and "a\0c" as one key), config.json numbers take the wire type that holds them exactly (integers
 * up to 2^64-1: INT32, INT64 or UINT64; floats beyond f32's range: FLOAT64); a number no
 * GGUF type holds (FG_ERR_RANGE) or two members that flatten to one key ({"a":{"b":1},
 * "a.b":2}: FG_ERR_DUPLICATE) fail the export, naming them (formats/export_meta.c).
 *
 * Thread safety: a plan is immutable once created; its getters may be called from many
 * threads. fg_export_run reads the plan and its checkpoint without changing them and calls
 * progress on the calling thread; runs writing different out_paths may run concurrently. */
#ifndef FORGIA_EXPORT_H
#define FORGIA_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/ckpt.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- targets --------------------------------------------------------------------------- */

typedef enum fg_export_mode {
  FG_EXPORT_MODE_UNSET = 0,    /* global: same as VERBATIM; experts: follow the global target */
  FG_EXPORT_MODE_VERBATIM = 1, /* keep the stored type */
  FG_EXPORT_MODE_DTYPE = 2,    /* transcode eligible tensors to .dtype */
  FG_EXPORT_MODE_MIXTURE = 3,  /* llama-quantize's mixture .ftype, whose default type is .dtype */
} fg_export_mode;

typedef struct fg_export_target {
  fg_export_mode mode;
  fg_dtype dtype;        /* with FG_EXPORT_MODE_DTYPE, and the mixture's default type */
  uint32_t ftype;        /* with FG_EXPORT_MODE_MIXTURE: llama.cpp's file type (15 = Q4_K_M) */
} fg_export_target;

/* "verbatim"; a ggml type name as ggml spells it, which is a single type: f32 f16 bf16 q8_0
 * q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K tq1_0 tq2_0 iq4_nl iq4_xs mxfp4 nvfp4 q1_0
 * q2_0; otherwise a llama-quantize mixture name, ASCII case-insensitive as llama-quantize
 * takes it: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q1_0 Q2_0 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L
 * Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4_MOE IQ2_XXS IQ2_XS IQ2_S
 * IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M IQ1_S IQ1_M, and its aliases Q3_K, Q4_K, Q5_K (the _M
 * mixtures) and MXFP4; failing both, a single type named in another case ("Q4_k" is the
 * Q4_K_M mixture, "Q8_1" is unknown). A single type without a llama.cpp file-type code or
 * encoder in this build is FG_ERR_UNSUPPORTED; a mixture is accepted even when some of its
 * types cannot be encoded here (the plan shows them; see fg_export_plan_ready). Where the
 * case of a name matters here ("q4_K" single, "q4_k" mixture), fg_export_target_parse_as
 * below gives the CLI's two case-blind rules. */
FG_API fg_status fg_export_target_parse(const char *name, fg_export_target *out);

/* The two spellings the CLI takes (forgia help export), neither depending on letter case:
 *   FG_EXPORT_SPELLING_DTYPE (--dtype, as Fucina's export): "verbatim"; a single type's name
 *     above in any case ("q4_k", "Q4_K", "q4_K") is that single type; any other
 *     llama-quantize name ("Q4_K_M", "IQ2_XS", "MXFP4_MOE", ...) is the mixture.
 *   FG_EXPORT_SPELLING_LLAMA (the positional TYPE, as llama-quantize): llama-quantize's
 *     table in any case, with its aliases (Q3_K, Q4_K, Q5_K are the _M mixtures, MXFP4 is
 *     MXFP4_MOE, so "Q8_0" and "f16" are mixtures too), its file-type codes ("15") and COPY
 *     (= "verbatim"); a single type outside that table ("nvfp4") is FG_ERR_UNSUPPORTED, the
 *     message naming the --dtype spelling. */
typedef enum fg_export_spelling {
  FG_EXPORT_SPELLING_DTYPE = 1,
  FG_EXPORT_SPELLING_LLAMA = 2,
} fg_export_spelling;
FG_API fg_status fg_export_target_parse_as(const char *name, fg_export_spelling how, fg_export_target *out);

/* llama-quantize's name of a mixture code ("Q4_K_M" for 15); NULL when none. */
FG_API const char *fg_export_mixture_name(uint32_t ftype);

/* llama.cpp's general.file_type for a uniform export to t (uniform K-quants report the _S
 * variants; q2_K reports MOSTLY_Q2_K, mxfp4 MOSTLY_MXFP4_MOE). FG_ERR_UNSUPPORTED when t
 * has none. */
FG_API fg_status fg_export_file_type(fg_dtype t, uint32_t *code);

/* What fg_export_run writes (fg_export_options.format). */
typedef enum fg_export_format {
  FG_EXPORT_FORMAT_GGUF = 0,        /* one GGUF file (or its parts, with keep_split) */
  /* Safetensors: the tensors under their source names (a GGUF's own names), shapes row-major
   * (GGUF's ne reversed), in the upstream writer's order (formats/safetensors_write.c).
   * Dense types only: every tensor must end up f32, f16, bf16, f64 or an integer type, so
   * a block-quantized source needs a float target (f32/f16/bf16: it is dequantized, the
   * values those of fg_dequantize) and the target itself must be a float type or verbatim
   * (a mixture or block target is FG_ERR_UNSUPPORTED at planning, as is a tensor that would
   * stay a block type, named). __metadata__: "format": "pt" (what transformers asks for),
   * then a safetensors source's first-shard __metadata__ (entries holding a NUL byte are
   * FG_ERR_BAD_STRING), or a GGUF source's scalar keys as strings (integers and bools in
   * decimal / 0 1, floats printed exactly: %.9g for FLOAT32, %.17g for FLOAT64); arrays
   * (the tokenizer's among them) and strings that are not UTF-8 or hold a NUL are dropped.
   * With shard_bytes 0, out_path is the file. Otherwise out_path is a folder (absent or
   * empty): the tensors, greedily in plan order, go into shards of at most shard_bytes of
   * tensor data (a larger tensor alone in its own), named model-0000i-of-0000N.safetensors
   * beside model.safetensors.index.json (metadata.total_size, weight_map; transformers'
   * layout), or model.safetensors alone when one shard holds them all, plus a safetensors
   * source's config.json byte for byte. The folder is written under a temporary name beside
   * it and renamed into place at the end: it appears whole or not at all. */
  FG_EXPORT_FORMAT_SAFETENSORS = 1,
} fg_export_format;

/* One --tensor-type override: tensors whose name the PCRE2 pattern finds take dtype. */
typedef struct fg_export_tensor_rule {
  const char *pattern;       /* borrowed for the plan's creation only */
  fg_dtype dtype;
} fg_export_tensor_rule;

typedef struct fg_export_options {
  fg_export_target dtype;    /* global target; zero (UNSET) keeps everything */
  fg_export_target experts;  /* *_exps.weight tensors; UNSET follows dtype */
  uint64_t chunk_bytes;      /* rows per step, as bytes of f32; 0: 64 MiB. At least one row. */
  /* llama-quantize's options; they apply to both kinds of target. */
  bool pure;                 /* mixture: no per-tensor rules, the default type everywhere */
  bool allow_requantize;     /* a quantized source may be decoded and encoded again */
  bool leave_output;         /* mixture: output.weight keeps its type */
  fg_export_target output_type;     /* FG_EXPORT_MODE_DTYPE: output.weight's type */
  fg_export_target token_embd_type; /* FG_EXPORT_MODE_DTYPE: token_embd.weight's type */
  const fg_export_tensor_rule *tensor_types; /* n_tensor_types overrides, borrowed for creation */
  size_t n_tensor_types;
  /* An importance matrix (forgia/imatrix.h), borrowed until the plan is freed: every encoder
   * that takes weights gets the tensor's entry (ggml's bytes for the same matrix), and the
   * mixture rules see that one is given, as llama-quantize's do. A tensor without an entry
   * is encoded without weights; an entry of the wrong size is FG_ERR_BAD_SHAPE naming the
   * tensor, except for token_embd.weight, encoded without (llama-quantize does the same).
   * A mixture's output records the matrix as llama-quantize does: quantize.imatrix.file
   * (imatrix_label, at most 127 bytes), .dataset (its first), .entries_count and
   * .chunks_count (when above 0), appended after general.file_type. */
  const struct fg_imatrix *imatrix;
  const char *imatrix_label;  /* the file as the user named it; NULL: "imatrix" */
  /* llama-quantize's --keep-split: one output file per source part, named
   * "<out_path without .gguf>-%05d-of-%05d.gguf", each tensor in its source part, the first
   * part carrying the metadata and every part split.no / split.count / split.tensors.count
   * (when there are two or more); tensors in source order (part, then offset), which is also
   * the order a mixture's rules visit them in, as in llama-quantize. GGUF sources only. */
  bool keep_split;
  /* Threads that decode and encode (the bytes do not depend on their number); 0: OpenMP's
   * default (omp_get_max_threads). */
  int threads;
  fg_export_format format;    /* GGUF unless set; see fg_export_format */
  uint64_t shard_bytes;       /* FG_EXPORT_FORMAT_SAFETENSORS: 0 one file, else a sharded folder */
} fg_export_options;

/* ---- plan ------------------------------------------------------------------------------ */

typedef enum fg_export_action {
  FG_EXPORT_ACTION_COPY = 0,    /* bytes copied unchanged */
  FG_EXPORT_ACTION_CONVERT = 1, /* float source encoded to the target */
  FG_EXPORT_ACTION_DEQUANT = 2, /* block source decoded to a float target */
  FG_EXPORT_ACTION_REQUANT = 3, /* block expert source decoded and encoded again */
} fg_export_action;

/* Why a tensor is copied (FG_EXPORT_ACTION_COPY) or, for the others, FG_EXPORT_WHY_TARGET. */
typedef enum fg_export_why {
  FG_EXPORT_WHY_TARGET = 0,     /* a target applies */
  FG_EXPORT_WHY_VERBATIM = 1,   /* no target for this tensor */
  FG_EXPORT_WHY_NOT_MATRIX = 2, /* fewer than 2 dims */
  FG_EXPORT_WHY_NOT_WEIGHT = 3, /* name does not end with ".weight" */
  FG_EXPORT_WHY_NORM = 4,       /* "norm" in the name */
  FG_EXPORT_WHY_SAME = 5,       /* already the target type */
  FG_EXPORT_WHY_ROW = 6,        /* ne[0] not whole blocks of a single type without a fallback (q1_0, nvfp4) */
  FG_EXPORT_WHY_SOURCE = 7,     /* integer or f64 source */
  FG_EXPORT_WHY_KEPT = 8,       /* mixture: llama.cpp does not quantize this tensor */
  FG_EXPORT_WHY_RULE = 9,       /* mixture: a per-tensor rule chose the type (see .rule) */
  FG_EXPORT_WHY_FALLBACK = 10,  /* rows are not whole blocks of .wanted: llama.cpp's fallback */
  FG_EXPORT_WHY_OVERRIDE = 11,  /* output_type, token_embd_type, tensor_types or experts */
} fg_export_why;

/* Short words for messages: "copy", "convert", ... / "verbatim", "1-D", "norm", ... */
FG_API const char *fg_export_action_name(fg_export_action a);
FG_API const char *fg_export_why_name(fg_export_why w);

typedef struct fg_export_tensor {
  const char *name;          /* borrowed from the source, NUL-terminated */
  int ndim;                  /* 1..4 */
  uint64_t ne[4];            /* GGUF order, innermost first; past ndim 1 */
  uint64_t shape[4];         /* row-major, outermost first; past ndim 0 */
  fg_dtype src_dtype, dst_dtype;
  uint64_t src_bytes, dst_bytes;
  fg_export_action action;
  fg_export_why why;
  bool expert;               /* name ends with "_exps.weight" */
  size_t src_index;          /* position in the checkpoint (fg_ckpt_tensor_at) */
  fg_dtype wanted;           /* the type chosen before the row fallback (= dst_dtype without one) */
  const char *rule;          /* FG_EXPORT_WHY_RULE: what the rule says (static); else NULL */
  bool needs_imatrix;        /* llama.cpp quantizes dst_dtype here only with an importance matrix */
  const float *weights;      /* the importance-matrix weights the encoder takes (ne[0] per expert,
                                borrowed from options.imatrix), or NULL */
} fg_export_tensor;

typedef struct fg_export_plan fg_export_plan;

/* Plans the export of an opened checkpoint (fg_ckpt_open: GGUF, split GGUF, safetensors
 * file, index or folder). The plan borrows src: free the plan before closing it. Fails,
 * with no plan, when a tensor cannot be a GGUF tensor: a name not of 1..63 bytes or holding
 * a NUL (FG_ERR_BAD_STRING), a dtype without a ggml type (FG_ERR_UNSUPPORTED), more than 4
 * dims (FG_ERR_BAD_SHAPE), each naming the tensor (a 0-dim scalar becomes ne = {1}); and on
 * a refused chain requantization, or an expert tensor whose quantized type this build
 * cannot decode (FG_ERR_UNSUPPORTED). */
FG_API fg_status fg_export_plan_create(const fg_ckpt *src, const fg_export_options *opt,
                                       fg_export_plan **out);
FG_API void fg_export_plan_free(fg_export_plan *p); /* NULL-safe */

FG_API size_t fg_export_plan_count(const fg_export_plan *p);
/* Tensor i in output order: the source's, or llama.cpp's for a mixture. NULL past the end. */
FG_API const fg_export_tensor *fg_export_plan_tensor(const fg_export_plan *p, size_t i);
/* Whether fg_export_run can write the plan: FG_ERR_UNSUPPORTED naming the first tensor whose
 * type this build cannot encode (with its weights, when it has some), or that needs an
 * importance matrix and has no entry in one; FG_OK otherwise. */
FG_API fg_status fg_export_plan_ready(const fg_export_plan *p);
/* Tensors whose rows took llama.cpp's fallback type. */
FG_API size_t fg_export_plan_fallbacks(const fg_export_plan *p);
/* Output files: 1, or with keep_split the source's part count. fg_export_plan_output_path
 * writes part i's path (0-based) for out_path into buf (FG_ERR_RANGE when cap is short). */
FG_API size_t fg_export_plan_outputs(const fg_export_plan *p);
FG_API fg_status fg_export_plan_output_path(const fg_export_plan *p, const char *out_path, size_t i, char *buf,
                                            size_t cap);
/* Sums of tensor bytes (without padding) before and after. */
FG_API void fg_export_plan_totals(const fg_export_plan *p, uint64_t *src_bytes, uint64_t *dst_bytes);
/* Tensors that change type. */
FG_API size_t fg_export_plan_changed(const fg_export_plan *p);
/* True (and the code) when the output sets general.file_type. */
FG_API bool fg_export_plan_file_type(const fg_export_plan *p, uint32_t *code);

/* ---- run ------------------------------------------------------------------------------- */

typedef struct fg_export_progress {
  size_t tensors_done, tensors_total;
  uint64_t bytes_done, bytes_total;   /* output tensor bytes */
  const fg_export_tensor *tensor;     /* the tensor being written */
} fg_export_progress;

/* Called after every chunk written (at most options.chunk_bytes of f32 work apart) and after
 * every tensor, from the calling thread. Returning false cancels the run (FG_ERR_STATE, the
 * temporary file removed, the destination as it was). */
typedef bool (*fg_export_progress_fn)(const fg_export_progress *p, void *user);

/* Whether out_path may receive an export of src, checked without creating anything; call it
 * right after opening the checkpoint, before planning (fg_export_run calls it again first).
 *   - out_path must name a file: absent, a regular file (replaced, its mode kept) or a
 *     symbolic link to one (the file it names is replaced, the link stays). A device (such
 *     as /dev/null), FIFO, socket, directory or dangling link is FG_ERR_INVALID_ARG.
 *   - Its directory must exist, be a directory and be writable (FG_ERR_IO otherwise).
 *   - It must not be an input, compared by identity (st_dev, st_ino) after resolving
 *     symbolic links: a GGUF file or any split part, a safetensors file, any shard, the
 *     index file, or the config.json read beside them; and when src was opened from a folder
 *     (a Hugging Face checkpoint) it must not lie anywhere inside that folder. Either is
 *     FG_ERR_INVALID_ARG with a message naming out_path and the input.
 * src may be NULL: then only the first two points are checked. */
FG_API fg_status fg_export_check_output(const fg_ckpt *src, const char *out_path);
/* The same for a sharded safetensors folder (fg_export_format): dir absent (its parent an
 * existing, writable folder) or an empty folder (FG_ERR_INVALID_ARG when it holds anything
 * or is not a folder), and neither an input nor inside an input folder. */
FG_API fg_status fg_export_check_output_folder(const fg_ckpt *src, const char *dir);

/* Writes the planned output to out_path (temporary file + rename, see
 * fg_export_check_output for what out_path may be; it is checked before any work). One
 * chunk of one tensor is decoded/encoded at a time and source pages are released behind
 * the cursor. On any failure (non-finite values in a tensor to encode, I/O, cancellation)
 * the destination is left untouched and no temporary file remains. progress may be NULL.
 *
 * Cancelling on SIGINT/SIGTERM: forgia installs no signal handler. Install one that sets a
 * volatile sig_atomic_t flag, return false from progress when it is set (and/or set the
 * thread's hook, forgia/cancel.h, which every file write asks at least every 64 MiB); the
 * run returns FG_ERR_STATE within one chunk, its temporary file already removed, and the
 * program may exit (130/143 by convention). A process killed outright leaves the temporary
 * file ".<name>.<hash>.fgtmp.<pid>.<n>" beside out_path; the next write to out_path removes
 * it. */
FG_API fg_status fg_export_run(const fg_export_plan *p, const char *out_path,
                        fg_export_progress_fn progress, void *user);

#ifdef __cplusplus
}
#endif
#endif
