/* Language models: a decoder-only transformer checkpoint (a GGUF file or a Hugging Face
 * folder) opened onto a device, its forward pass over batches of token sequences with a
 * key/value cache, and logits left on the device.
 *
 * Architectures: llama (SmolLM2, TinyLlama, Llama 3.x, Mistral), qwen2, qwen3 and gemma3,
 * each a small description (forgia_runtime's arch table) over the same blocks: embedding
 * gather, RMSNorm, Q/K/V projections, optional Q/K norms, RoPE, causal attention with GQA and
 * an optional sliding window, output projection, a gated MLP (SwiGLU or GeGLU), residuals,
 * final norm and the output projection (tied to the embedding or not).
 *
 * Weights stay in the dtype the file stores (f32, f16, bf16 or a ggml block type, decoded
 * tile by tile into the projections: forgia/linear.h), loaded by the streaming loader
 * (forgia/load.h). The mode decides the projections' arithmetic: FG_GEMM_EXACT gives the
 * same bits on every device and thread count (every other kernel always does), FG_GEMM_FAST
 * uses BLAS/cuBLAS. */
#ifndef FORGIA_LM_H
#define FORGIA_LM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/gemm.h"
#include "forgia/load.h"
#include "forgia/rope.h"
#include "forgia/status.h"
#include "forgia/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_lm_arch {
  FG_LM_LLAMA = 0,
  FG_LM_QWEN2 = 1,
  FG_LM_QWEN3 = 2,
  FG_LM_GEMMA3 = 3,
} fg_lm_arch;

typedef enum fg_lm_glu {
  FG_LM_SWIGLU = 0,     /* silu(gate) * up */
  FG_LM_GEGLU_TANH = 1, /* gelu_tanh(gate) * up */
} fg_lm_glu;

/* Hyperparameters, as read from the GGUF keys or config.json. */
typedef struct fg_lm_config {
  fg_lm_arch arch;
  const char *arch_name;      /* "llama", "qwen2", "qwen3", "gemma3" */
  size_t n_layer, n_embd, n_ff, n_head, n_kv_head, head_dim, n_vocab;
  size_t n_ctx_train;         /* the context the model was trained for */
  float norm_eps;
  float norm_offset;          /* RMSNorm weight offset: 1 for Gemma (it stores w - 1), else 0 */
  size_t rope_dims;           /* rotated dims per head */
  fg_rope_layout rope_layout;
  double rope_base;           /* global layers */
  double rope_base_local;     /* sliding-window layers (Gemma 3: 10000); rope_base elsewhere */
  double rope_freq_scale;     /* linear scaling: 1 / factor */
  size_t sliding_window;      /* 0: none */
  size_t sliding_period;      /* layer l is global when (l + 1) % period == 0; 0: all layers windowed
                                 when sliding_window > 0 */
  float attn_scale;           /* multiplies q.k */
  float embd_scale;           /* multiplies the embedding rows (Gemma: sqrt(n_embd) in f32) */
  bool qk_norm;               /* RMSNorm over each head of q and k (Qwen 3, Gemma 3) */
  bool post_norms;            /* RMSNorm after attention and after the MLP, before the residual (Gemma 3) */
  bool attn_bias;             /* q/k/v projection biases (Qwen 2) */
  bool tied_output;           /* the output projection is the embedding table */
  fg_lm_glu glu;
} fg_lm_config;

typedef struct fg_lm_options {
  fg_gemm_mode mode;          /* the projections' mode; FG_GEMM_DEFAULT: the device's */
  int threads;                /* host threads (CPU device and loading); 0: OpenMP default */
  fg_load_progress_fn progress;
  void *progress_user;
} fg_lm_options;

typedef struct fg_lm fg_lm;

/* Opens path (a GGUF file, a split set's first part, or a Hugging Face folder with
 * config.json and safetensors) onto dev. o may be NULL (defaults). Unknown architectures,
 * missing tensors and shapes that disagree with the hyperparameters fail with a message
 * naming the file and the tensor or key. On failure *out is untouched. */
FG_API fg_status fg_lm_open(const char *path, fg_device *dev, const fg_lm_options *o, fg_lm **out);
FG_API void fg_lm_free(fg_lm *lm); /* NULL-safe; free caches first */

FG_API const fg_lm_config *fg_lm_get_config(const fg_lm *lm);
FG_API fg_device *fg_lm_device(const fg_lm *lm);
/* The checkpoint's tokenizer (owned by lm), or NULL when the checkpoint has none. */
FG_API const fg_tokenizer *fg_lm_tokenizer(const fg_lm *lm);
/* Bytes of the weights on the device (quantized tensors at their stored size). */
FG_API uint64_t fg_lm_weight_bytes(const fg_lm *lm);

/* The projections of a block, in the order (and with the names) of LoRA's targets. */
typedef enum fg_lm_proj {
  FG_LM_PROJ_Q = 0, FG_LM_PROJ_K = 1, FG_LM_PROJ_V = 2, FG_LM_PROJ_O = 3,
  FG_LM_PROJ_GATE = 4, FG_LM_PROJ_UP = 5, FG_LM_PROJ_DOWN = 6,
  FG_LM_PROJ_COUNT = 7
} fg_lm_proj;

/* Called after each projection y = x W^T (+ b) of every layer, on the forward pass's stream:
 * x (n_tok x in) and y (n_tok x out) are f32 device memory the hook may read, and y it may
 * add to (LoRA adapters applied without merging: training/'s fg_lora_forward with w NULL).
 * A hook that fails fails the forward pass. NULL removes it. */
typedef fg_status (*fg_lm_proj_hook)(void *user, size_t layer, fg_lm_proj which, const float *x, size_t n_tok,
                                     size_t in, size_t out, float *y, fg_stream *s);
FG_API void fg_lm_set_proj_hook(fg_lm *lm, fg_lm_proj_hook fn, void *user);

/* A key/value cache for n_seq sequences of up to n_ctx positions each (f32 keys and values
 * per layer, on lm's device). Positions of a sequence fill in order from 0. */
typedef struct fg_lm_cache fg_lm_cache;
FG_API fg_status fg_lm_cache_create(fg_lm *lm, size_t n_seq, size_t n_ctx, fg_lm_cache **out);
FG_API void fg_lm_cache_free(fg_lm_cache *c); /* NULL-safe */
/* Positions of sequence seq that hold keys and values (the next position to feed). */
FG_API size_t fg_lm_cache_len(const fg_lm_cache *c, size_t seq);
/* Positions each sequence can hold (n_ctx of fg_lm_cache_create). */
FG_API size_t fg_lm_cache_ctx(const fg_lm_cache *c);
/* Forgets positions >= n of sequence seq (n <= its length): a later batch refills them. */
FG_API fg_status fg_lm_cache_truncate(fg_lm_cache *c, size_t seq, size_t n);

/* One forward step. Host arrays of n_tok entries: ids (token ids), seq (sequence of each
 * token; NULL: all 0). Each token takes the next position of its sequence, in batch order,
 * so a sequence's tokens in a batch are consecutive positions after what the cache holds.
 * logits_rows (NULL: every token) marks with nonzero the tokens whose logits are wanted;
 * *logits then points to n_out x n_vocab f32 in device memory owned by lm, valid until the
 * next forward or fg_lm_free, the rows in batch order. On failure nothing in the cache
 * changes. */
typedef struct fg_lm_batch {
  size_t n_tok;
  const int32_t *ids;
  const int32_t *seq;
  const uint8_t *logits_rows;
} fg_lm_batch;
FG_API fg_status fg_lm_forward(fg_lm *lm, fg_lm_cache *c, const fg_lm_batch *b, const float **logits, size_t *n_out);

/* Negative log-likelihoods of ids[1..n-1] given the ids before them, in one causal pass
 * over a fresh sequence (batched by `chunk` tokens, 0: 512): nll[i] = -log softmax(logits
 * after ids[0..i])[ids[i + 1]] in f64, i < n - 1. n >= 2 and n <= the cache's n_ctx is
 * not required: a cache of n positions is made for the call. */
FG_API fg_status fg_lm_nll(fg_lm *lm, const int32_t *ids, size_t n, size_t chunk, double *nll);

#ifdef __cplusplus
}
#endif
#endif
