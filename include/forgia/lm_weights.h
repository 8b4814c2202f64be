/* The weights of a language model of forgia/lm.h, one by one: what each is called in the
 * file the model came from, its dtype and shape, and where it lives on the device. Full
 * fine-tuning (forgia/lm_full.h) and evolution strategies over every weight work through this:
 * fg_lm_weights_own gives the model its own writable copy of every weight (a CPU model
 * otherwise reads them straight from the read-only file mapping), after which whatever is
 * written to a weight's data is what the next forward pass uses.
 *
 *   fg_lm_weight_info wi;
 *   for (size_t l = 0; l < cfg->n_layer; l++)
 *     for (int w = FG_LM_W_FIRST_LAYER; w < FG_LM_W_COUNT; w++)
 *       if (fg_lm_weight_find(lm, l, (fg_lm_weight)w, &wi)) ... wi.name, wi.dtype, wi.rows x wi.cols */
#ifndef FORGIA_LM_WEIGHTS_H
#define FORGIA_LM_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/api.h"
#include "forgia/dtype.h"
#include "forgia/lm.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model-wide weights first (their layer argument is ignored), then each layer's. */
typedef enum fg_lm_weight {
  FG_LM_W_TOK_EMBD = 0,   /* n_vocab x n_embd */
  FG_LM_W_OUT_NORM,       /* n_embd */
  FG_LM_W_OUTPUT,         /* n_vocab x n_embd; absent when tied to the embedding */
  FG_LM_W_ATTN_NORM,      /* n_embd */
  FG_LM_W_Q,              /* n_head * head_dim x n_embd */
  FG_LM_W_K,              /* n_kv_head * head_dim x n_embd */
  FG_LM_W_V,
  FG_LM_W_O,              /* n_embd x n_head * head_dim */
  FG_LM_W_Q_BIAS,         /* Qwen 2 */
  FG_LM_W_K_BIAS,
  FG_LM_W_V_BIAS,
  FG_LM_W_Q_NORM,         /* head_dim: Qwen 3, Gemma 3 */
  FG_LM_W_K_NORM,
  FG_LM_W_POST_ATTN_NORM, /* n_embd: Gemma 3 */
  FG_LM_W_FFN_NORM,       /* n_embd */
  FG_LM_W_GATE,           /* n_ff x n_embd */
  FG_LM_W_UP,
  FG_LM_W_DOWN,           /* n_embd x n_ff */
  FG_LM_W_POST_FFN_NORM,  /* n_embd: Gemma 3 */
  FG_LM_W_COUNT
} fg_lm_weight;

#define FG_LM_W_FIRST_LAYER FG_LM_W_ATTN_NORM

typedef struct fg_lm_weight_info {
  char name[160];         /* the tensor's name in the model's file ("blk.0.attn_q.weight") */
  fg_dtype dtype;         /* as the forward pass reads it (a Qwen 2 f16 bias is widened to f32) */
  size_t rows, cols;      /* row-major; a vector is 1 x cols */
  void *data;             /* device memory of the model's device; write only after fg_lm_weights_own */
} fg_lm_weight_info;

/* The short name of a weight kind ("attn_q"), for messages and filters; NULL outside the enum. */
FG_API const char *fg_lm_weight_kind_name(fg_lm_weight which);

/* Weight `which` of `layer`: false when the model has none (no biases, no Q/K norms, an
 * output tied to the embedding, a layer past the last) and *out is then untouched. */
FG_API bool fg_lm_weight_find(const fg_lm *lm, size_t layer, fg_lm_weight which, fg_lm_weight_info *out);

/* Copies every weight into device memory the model owns, so that writing it changes the
 * model and nothing else. Every weight must be f32, f16 or bf16: a block-quantized one fails
 * with FG_ERR_QUANTIZED_BASE naming the tensor (export the model with --dtype f32 first), and
 * then nothing has changed. Calling it again does nothing. */
FG_API fg_status fg_lm_weights_own(fg_lm *lm);

#ifdef __cplusplus
}
#endif

#endif
