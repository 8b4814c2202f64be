/* Binds the loaded tensors to the blocks of the forward pass by the names each source uses
 * (llama.cpp's GGUF names, Hugging Face's), checking every shape against the
 * hyperparameters so the kernels never see a tensor smaller than they index. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/elem/half.h"
#include "runtime/lm_internal.h"

typedef struct fg_lm_names {
  const char *embd, *out_norm, *output;
  const char *attn_norm, *wq, *wk, *wv, *wo, *bq, *bk, *bv, *q_norm, *k_norm, *post_attn_norm;
  const char *ffn_norm, *gate, *up, *down, *post_ffn_norm;
} fg_lm_names;

static const fg_lm_names fg_lm_gguf_names = {
    "token_embd.weight", "output_norm.weight", "output.weight", "blk.%zu.attn_norm.weight",
    "blk.%zu.attn_q.weight", "blk.%zu.attn_k.weight", "blk.%zu.attn_v.weight", "blk.%zu.attn_output.weight",
    "blk.%zu.attn_q.bias", "blk.%zu.attn_k.bias", "blk.%zu.attn_v.bias", "blk.%zu.attn_q_norm.weight",
    "blk.%zu.attn_k_norm.weight", "blk.%zu.post_attention_norm.weight", "blk.%zu.ffn_norm.weight",
    "blk.%zu.ffn_gate.weight", "blk.%zu.ffn_up.weight", "blk.%zu.ffn_down.weight", "blk.%zu.post_ffw_norm.weight",
};

/* Hugging Face's post_attention_layernorm is the norm before the MLP in Llama and Qwen, and the
 * norm after attention in Gemma 3 (whose pre-MLP norm is pre_feedforward_layernorm). */
static const fg_lm_names fg_lm_hf_names = {
    "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", "model.layers.%zu.input_layernorm.weight",
    "model.layers.%zu.self_attn.q_proj.weight", "model.layers.%zu.self_attn.k_proj.weight",
    "model.layers.%zu.self_attn.v_proj.weight", "model.layers.%zu.self_attn.o_proj.weight",
    "model.layers.%zu.self_attn.q_proj.bias", "model.layers.%zu.self_attn.k_proj.bias",
    "model.layers.%zu.self_attn.v_proj.bias", "model.layers.%zu.self_attn.q_norm.weight",
    "model.layers.%zu.self_attn.k_norm.weight", "model.layers.%zu.post_attention_layernorm.weight",
    "model.layers.%zu.post_attention_layernorm.weight", "model.layers.%zu.mlp.gate_proj.weight",
    "model.layers.%zu.mlp.up_proj.weight", "model.layers.%zu.mlp.down_proj.weight",
    "model.layers.%zu.post_feedforward_layernorm.weight",
};

static fg_status fg_lm_get(fg_lm *lm, const char *fmt, size_t layer, size_t rows, size_t cols, bool required,
                           fg_lm_w *out) {
  char name[160];
  snprintf(name, sizeof name, fmt, layer);
  const fg_model_tensor *t = fg_model_find(lm->weights, name);
  if (!t) {
    if (!required) return FG_OK;
    return fg_fail(FG_ERR_NOT_FOUND, "%s: tensor %s is missing (%s needs it)", lm->path, name, lm->cfg.arch_name);
  }
  const bool vec = rows == 1;
  const bool ok = vec ? (t->ndim == 1 && t->shape[0] == cols)
                      : (t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols);
  if (!ok) {
    char got[96] = "";
    size_t off = 0;
    for (int d = 0; d < t->ndim && off < sizeof got - 24; d++)
      off += (size_t)snprintf(got + off, sizeof got - off, "%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
    if (vec)
      return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor %s has shape [%s], expected [%zu]", lm->path, name, got, cols);
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor %s has shape [%s], expected [%zu, %zu]", lm->path, name, got, rows, cols);
  }
  const fg_dtype_traits *tr = fg_dtype_info(t->dtype);
  if (!tr || (!tr->is_quant && t->dtype != FG_F32 && t->dtype != FG_F16 && t->dtype != FG_BF16) ||
      (vec && tr->is_quant))
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor %s has dtype %s, expected f32, f16, bf16%s", lm->path, name,
                   tr ? tr->name : "(invalid)", vec ? "" : " or a ggml block type");
  *out = (fg_lm_w){.data = t->data, .dtype = t->dtype, .rows = rows, .cols = cols};
  return FG_OK;
}

/* Biases enter the projections as a rank-1 product (fg_gemm), which takes f32 or bf16:
 * widen anything else to an f32 copy the model owns. */
static fg_status fg_lm_bias_f32(fg_lm *lm, fg_lm_w *b) {
  if (!b->data || b->dtype == FG_F32 || b->dtype == FG_BF16) return FG_OK;
  const size_t n = b->cols;
  uint16_t *h = malloc(n * 2);
  float *f = malloc(n * 4);
  void *d = NULL;
  fg_status st = (!h || !f) ? fg_fail(FG_ERR_NOMEM, "%s: out of memory widening a bias", lm->path) : FG_OK;
  if (!st) st = fg_device_copy(lm->dev, h, b->data, n * 2, FG_COPY_D2H);
  if (!st) {
    for (size_t i = 0; i < n; i++) f[i] = fg_f16_to_f32(h[i]);
    st = fg_device_mem_alloc(lm->dev, n * 4, &d);
  }
  if (!st) st = fg_device_copy(lm->dev, d, f, n * 4, FG_COPY_H2D);
  free(h);
  free(f);
  if (st) {
    fg_device_mem_free(lm->dev, d);
    return st;
  }
  b->data = d;
  b->dtype = FG_F32;
  lm->owned[lm->n_owned++] = d;
  return FG_OK;
}

fg_status fg_lm_bind(fg_lm *lm) {
  fg_lm_config *c = &lm->cfg;
  const fg_lm_names *nm = lm->source == FG_LM_SRC_GGUF ? &fg_lm_gguf_names : &fg_lm_hf_names;
  const fg_model_tensor *emb = fg_model_find(lm->weights, nm->embd);
  if (!emb || emb->ndim != 2)
    return fg_fail(FG_ERR_NOT_FOUND, "%s: tensor %s (the token embedding, 2-D) is missing", lm->path, nm->embd);
  if (!c->n_vocab) c->n_vocab = (size_t)emb->shape[0];
  const size_t E = c->n_embd, HD = c->head_dim, Q = c->n_head * HD, KV = c->n_kv_head * HD;
  fg_status st;
  if ((st = fg_lm_get(lm, nm->embd, 0, c->n_vocab, E, true, &lm->tok_embd)) ||
      (st = fg_lm_get(lm, nm->out_norm, 0, 1, E, true, &lm->out_norm)) ||
      (st = fg_lm_get(lm, nm->output, 0, c->n_vocab, E, false, &lm->output)))
    return st;
  c->tied_output = lm->output.data == NULL;
  if (c->tied_output) lm->output = lm->tok_embd;
  lm->layers = calloc(c->n_layer, sizeof *lm->layers);
  lm->owned = calloc(3 * c->n_layer + 1, sizeof *lm->owned);
  if (!lm->layers || !lm->owned) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", lm->path);
  for (size_t l = 0; l < c->n_layer; l++) {
    fg_lm_layer *L = &lm->layers[l];
    if ((st = fg_lm_get(lm, nm->attn_norm, l, 1, E, true, &L->attn_norm)) ||
        (st = fg_lm_get(lm, nm->wq, l, Q, E, true, &L->wq)) || (st = fg_lm_get(lm, nm->wk, l, KV, E, true, &L->wk)) ||
        (st = fg_lm_get(lm, nm->wv, l, KV, E, true, &L->wv)) || (st = fg_lm_get(lm, nm->wo, l, E, Q, true, &L->wo)) ||
        (st = fg_lm_get(lm, nm->gate, l, c->n_ff, E, true, &L->w_gate)) ||
        (st = fg_lm_get(lm, nm->up, l, c->n_ff, E, true, &L->w_up)) ||
        (st = fg_lm_get(lm, nm->down, l, E, c->n_ff, true, &L->w_down)))
      return st;
    if (c->attn_bias &&
        ((st = fg_lm_get(lm, nm->bq, l, 1, Q, lm->source == FG_LM_SRC_GGUF, &L->bq)) ||
         (st = fg_lm_get(lm, nm->bk, l, 1, KV, lm->source == FG_LM_SRC_GGUF, &L->bk)) ||
         (st = fg_lm_get(lm, nm->bv, l, 1, KV, lm->source == FG_LM_SRC_GGUF, &L->bv)) || (st = fg_lm_bias_f32(lm, &L->bq)) ||
         (st = fg_lm_bias_f32(lm, &L->bk)) || (st = fg_lm_bias_f32(lm, &L->bv))))
      return st;
    if (c->qk_norm && ((st = fg_lm_get(lm, nm->q_norm, l, 1, HD, true, &L->q_norm)) ||
                       (st = fg_lm_get(lm, nm->k_norm, l, 1, HD, true, &L->k_norm))))
      return st;
    if (c->post_norms) {
      const char *pre_ffn = lm->source == FG_LM_SRC_HF ? "model.layers.%zu.pre_feedforward_layernorm.weight" : nm->ffn_norm;
      if ((st = fg_lm_get(lm, nm->post_attn_norm, l, 1, E, true, &L->post_attn_norm)) ||
          (st = fg_lm_get(lm, pre_ffn, l, 1, E, true, &L->ffn_norm)) ||
          (st = fg_lm_get(lm, nm->post_ffn_norm, l, 1, E, true, &L->post_ffn_norm)))
        return st;
    } else if ((st = fg_lm_get(lm, nm->ffn_norm, l, 1, E, true, &L->ffn_norm))) {
      return st;
    }
    L->windowed = c->sliding_window > 0 && (lm->layer_windowed ? lm->layer_windowed[l] != 0
                                                               : !(c->sliding_period && (l + 1) % c->sliding_period == 0));
  }
  /* Llama 3's per-frequency RoPE divisors (GGUF rope_freqs). */
  const fg_model_tensor *rf = lm->source == FG_LM_SRC_GGUF ? fg_model_find(lm->weights, "rope_freqs.weight") : NULL;
  if (rf) {
    if (rf->ndim != 1 || rf->shape[0] != c->rope_dims / 2 || rf->dtype != FG_F32)
      return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor rope_freqs.weight must be f32 [%zu]", lm->path, c->rope_dims / 2);
    lm->rope_factors = malloc(c->rope_dims / 2 * sizeof(float));
    if (!lm->rope_factors) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", lm->path);
    if ((st = fg_device_copy(lm->dev, lm->rope_factors, rf->data, c->rope_dims / 2 * sizeof(float), FG_COPY_D2H)))
      return st;
  }
  return FG_OK;
}

/* The name format of weight kind `which` (forgia/lm_weights.h order) in the model's source. */
const char *fg_lm_weight_fmt(const fg_lm *lm, int which) {
  const fg_lm_names *nm = lm->source == FG_LM_SRC_GGUF ? &fg_lm_gguf_names : &fg_lm_hf_names;
  const char *const by_kind[] = {nm->embd,   nm->out_norm, nm->output,         nm->attn_norm, nm->wq,
                                 nm->wk,     nm->wv,       nm->wo,             nm->bq,        nm->bk,
                                 nm->bv,     nm->q_norm,   nm->k_norm,         nm->post_attn_norm,
                                 lm->source == FG_LM_SRC_HF && lm->cfg.post_norms
                                     ? "model.layers.%zu.pre_feedforward_layernorm.weight"
                                     : nm->ffn_norm,
                                 nm->gate,   nm->up,       nm->down,           nm->post_ffn_norm};
  return which >= 0 && (size_t)which < sizeof by_kind / sizeof by_kind[0] ? by_kind[which] : NULL;
}
