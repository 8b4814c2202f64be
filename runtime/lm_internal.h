/* The language-model runtime's private state (runtime/, forgia/lm.h). */
#ifndef FORGIA_RUNTIME_LM_INTERNAL_H
#define FORGIA_RUNTIME_LM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/lm.h"
#include "forgia/ops.h"

/* Where the checkpoint came from: GGUF names and conventions (llama.cpp's converter permutes
 * Llama's Q/K rows for the pairwise RoPE and stores Gemma's norms as 1 + w) or Hugging Face's. */
typedef enum fg_lm_source { FG_LM_SRC_GGUF = 0, FG_LM_SRC_HF = 1 } fg_lm_source;

/* A weight as the forward pass uses it: device pointer, dtype, rows x cols (row-major). */
typedef struct fg_lm_w {
  const void *data;
  fg_dtype dtype;
  size_t rows, cols;
} fg_lm_w;

typedef struct fg_lm_layer {
  fg_lm_w attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, post_attn_norm;
  fg_lm_w ffn_norm, w_gate, w_up, w_down, post_ffn_norm;
  bool windowed;      /* sliding-window layer */
} fg_lm_layer;

/* Activation buffers for batches of up to cap tokens (device memory, grown on demand). */
typedef struct fg_lm_act {
  size_t cap, logits_cap;
  float *x, *h, *q, *q2, *k, *k2, *v, *o, *t, *g, *u, *a;
  float *sel;           /* the rows whose logits are wanted, when not all */
  float *logits;
  int32_t *ids, *pos, *seq;
  float *ones;          /* cap ones: bias rows through a rank-1 product */
} fg_lm_act;

/* An architecture: the blocks it uses and how its names read (runtime/lm_arch.c). */
typedef struct fg_lm_arch_desc {
  const char *name;
  fg_lm_arch arch;
  fg_lm_glu glu;
  bool qk_norm, post_norms, attn_bias, gemma_norms, embd_scale_sqrt;
  fg_rope_layout gguf_rope, hf_rope;
} fg_lm_arch_desc;

const fg_lm_arch_desc *fg_lm_arch_find(const char *name, size_t len);

struct fg_lm {
  fg_lm_config cfg;
  char arch_name[16];
  fg_lm_source source;
  fg_device *dev;
  fg_gemm_mode mode;
  fg_model *weights;
  fg_tokenizer *tok;
  fg_lm_w tok_embd, out_norm, output;
  fg_lm_layer *layers;
  float *rope_global, *rope_local;   /* device tables of rope_pos positions */
  size_t rope_pos;
  float *rope_factors;               /* host copy of rope_freqs (Llama 3), NULL if none */
  fg_lm_act act;
  uint8_t *layer_windowed;           /* config.json layer_types (1: sliding), NULL: by sliding_period */
  fg_lm_proj_hook hook;
  void *hook_user;
  size_t grad_keep_bytes;            /* fg_lm_grad keeps every layer's internals within this */
  void **owned;                      /* device copies the model made (widened biases) */
  void **own_w;                      /* fg_lm_weights_own's copies, NULL until then */
  size_t n_own_w;
  size_t n_owned;
  char path[4096];
};

struct fg_lm_cache {
  fg_lm *lm;
  size_t n_seq, n_ctx;
  size_t *len;       /* positions filled, per sequence */
  float *kv;         /* one allocation: per layer K then V, each n_seq x n_kv_head x n_ctx x head_dim */
  size_t per_tensor; /* floats of one layer's K (or V) */
};

/* Reads the hyperparameters and binds the tensors (runtime/lm_config.c, lm_bind.c). */
fg_status fg_lm_read_config_gguf(fg_lm *lm, const char *path);
fg_status fg_lm_read_config_hf(fg_lm *lm, const char *dir);
fg_status fg_lm_bind(fg_lm *lm);
/* The name format (one %zu: the layer) of weight kind `which` of forgia/lm_weights.h. */
const char *fg_lm_weight_fmt(const fg_lm *lm, int which);
/* (Re)builds the RoPE tables for n positions. */
fg_status fg_lm_rope_tables(fg_lm *lm, size_t n);
/* Grows the activation buffers to cap tokens and logits rows. */
fg_status fg_lm_act_reserve(fg_lm *lm, size_t cap, size_t logits_rows);
void fg_lm_act_free(fg_lm *lm);
/* y = x W^T (+ b) in the model's mode: a projection without its hook (runtime/lm_forward.c). */
fg_status fg_lm_linear_bias(fg_lm *lm, const float *x, size_t n, const fg_lm_w *w, const fg_lm_w *b, float *y,
                            fg_stream *s);
/* Adds n tokens' rows of src (n x n_kv_head x head_dim) onto their zeroed slots of one cache
 * tensor base (sequence seq[t] or 0, position pos[t]); list holds n x n_kv_head op arguments. */
fg_status fg_lm_cache_put(fg_lm *lm, fg_lm_cache *c, float *base, const float *src, size_t n, const int32_t *seq,
                          const size_t *pos, fg_op_args *list, fg_stream *s);

#endif
