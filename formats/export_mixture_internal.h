/* llama-quantize's mixtures (Q4_K_M, IQ4_XS, ...): the per-tensor type rules of llama.cpp's
 * quantizer, as facts of its behaviour (src/llama-quant.cpp of the llama.cpp vendored in
 * llama-cpp-python 0.3.36), written here as one decision function over a small model
 * description. The rules depend on the order in which llama.cpp visits tensors (counters
 * of attn_v and ffn_down tensors seen so far), so the caller visits them in that order
 * (fg_mix_order_less). */
#ifndef FORGIA_FORMATS_EXPORT_MIXTURE_INTERNAL_H
#define FORGIA_FORMATS_EXPORT_MIXTURE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "forgia/dtype.h"
#include "forgia/export.h"
#include "forgia/gguf.h"

/* llama_ftype codes that the rules test. */
enum {
  FG_FT_F32 = 0, FG_FT_F16 = 1, FG_FT_Q4_0 = 2, FG_FT_Q4_1 = 3, FG_FT_Q8_0 = 7, FG_FT_Q5_0 = 8,
  FG_FT_Q5_1 = 9, FG_FT_Q2_K = 10, FG_FT_Q3_K_S = 11, FG_FT_Q3_K_M = 12, FG_FT_Q3_K_L = 13,
  FG_FT_Q4_K_S = 14, FG_FT_Q4_K_M = 15, FG_FT_Q5_K_S = 16, FG_FT_Q5_K_M = 17, FG_FT_Q6_K = 18,
  FG_FT_IQ2_XXS = 19, FG_FT_IQ2_XS = 20, FG_FT_Q2_K_S = 21, FG_FT_IQ3_XS = 22, FG_FT_IQ3_XXS = 23,
  FG_FT_IQ1_S = 24, FG_FT_IQ4_NL = 25, FG_FT_IQ3_S = 26, FG_FT_IQ3_M = 27, FG_FT_IQ2_S = 28,
  FG_FT_IQ2_M = 29, FG_FT_IQ4_XS = 30, FG_FT_IQ1_M = 31, FG_FT_BF16 = 32, FG_FT_TQ1_0 = 36,
  FG_FT_TQ2_0 = 37, FG_FT_MXFP4_MOE = 38, FG_FT_Q1_0 = 40, FG_FT_Q2_0 = 41,
};

/* What the rules read of the model (llama.cpp's hparams, from the GGUF metadata). */
typedef struct fg_mix_model {
  char arch[64];          /* general.architecture */
  uint32_t n_layer;       /* <arch>.block_count */
  uint32_t n_head, n_head_kv; /* layer 0's counts (a per-layer array gives its first) */
  uint32_t n_expert;      /* <arch>.expert_count, 0 when absent */
  bool is_70b;            /* llama.cpp's LLM_TYPE_70B for this arch and layer count */
} fg_mix_model;

/* Reads the model description from a GGUF source. A missing general.architecture or
 * block_count is FG_ERR_NOT_FOUND naming the file and the key (llama-quantize cannot load
 * such a file either). */
fg_status fg_mix_model_from_gguf(const fg_gguf_file *g, fg_mix_model *m);

/* Tensor categories, by name as llama.cpp forms them. */
typedef enum fg_mix_cat {
  FG_MIX_OTHER = 0, FG_MIX_OUTPUT, FG_MIX_TOKEN_EMBD, FG_MIX_QKV, FG_MIX_KV_B, FG_MIX_V, FG_MIX_K,
  FG_MIX_Q, FG_MIX_ATTN_OUT, FG_MIX_FFN_UP, FG_MIX_FFN_GATE, FG_MIX_FFN_DOWN,
} fg_mix_cat;

fg_mix_cat fg_mix_category(const char *name);

/* The counters llama.cpp keeps while it visits the tensors in order. */
typedef struct fg_mix_state {
  const fg_mix_model *m;
  uint32_t ftype;
  bool has_imatrix, tied; /* tied: no tensor is named output.weight */
  bool output_set;        /* --output-tensor-type given: a tied token_embd takes it too */
  fg_dtype output_type;
  int n_attention_wv, i_attention_wv;
  int n_ffn, i_ffn_down, i_ffn_gate, i_ffn_up;
} fg_mix_state;

/* The mixture named by ftype: its default type, and llama-quantize's name for it. */
typedef struct fg_mix_info {
  const char *name;
  uint32_t ftype;
  fg_dtype dtype;
} fg_mix_info;
const fg_mix_info *fg_mix_find(const char *name); /* case-insensitive; NULL when none */
const fg_mix_info *fg_mix_by_ftype(uint32_t ftype);

/* llama.cpp's tensor_allows_quantization: n_dims counts dims up to the last one above 1. */
bool fg_mix_allows(const fg_mix_model *m, const char *name, int n_dims, bool quantize_output);

/* The type the mixture's rules choose for an allowed tensor of default type def (before
 * overrides and the row fallback), advancing the counters as llama.cpp does; *rule gets a
 * short static note when a rule other than the default fired. FG_ERR_BAD_SHAPE when an
 * expert model's tensor names no layer in [0, n_layer). */
fg_status fg_mix_rule_type(fg_mix_state *s, const char *name, fg_mix_cat cat, uint64_t ne0, uint64_t ne2,
                           fg_dtype def, fg_dtype *out, const char **rule);

/* llama.cpp's fallback for a row length (ne0) that is not a whole number of t's blocks:
 * q4_K -> q5_0, q6_K -> q8_0, ..., and f16 when the fallback's block does not divide it
 * either; *out is t itself when ne0 fits. A block above 32 elements without a fallback
 * (q1_0, nvfp4) is FG_ERR_UNSUPPORTED naming the tensor, as llama.cpp stops there too. */
fg_status fg_mix_fallback(const char *name, fg_dtype t, uint64_t ne0, fg_dtype *out);

/* llama.cpp's tensor_requires_imatrix. */
bool fg_mix_requires_imatrix(const char *name, fg_dtype t, uint32_t ftype);

/* llama.cpp's visiting order (llama_model_loader's weight_name_comparer): the layer of
 * "blk.N." (names without one count as -1) first, then the names byte-wise. */
int fg_mix_layer_of(const char *name);
bool fg_mix_order_less(const char *a, const char *b);

#endif
