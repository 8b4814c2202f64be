/* The model's weights one by one (forgia/lm_weights.h): lookups over the bound tensors, and
 * the private copies that make them writable. */
#include "forgia/lm_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/lm_internal.h"

static const char *const kind_names[FG_LM_W_COUNT] = {
    "token_embd", "output_norm", "output", "attn_norm", "attn_q",    "attn_k",   "attn_v",
    "attn_output", "attn_q.bias", "attn_k.bias", "attn_v.bias", "attn_q_norm", "attn_k_norm",
    "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm"};

const char *fg_lm_weight_kind_name(fg_lm_weight which) {
  return (int)which >= 0 && which < FG_LM_W_COUNT ? kind_names[which] : NULL;
}

/* The bound weight of (layer, which); NULL outside the model. */
static fg_lm_w *slot(const fg_lm *lm, size_t layer, fg_lm_weight which) {
  fg_lm *m = (fg_lm *)lm;
  switch (which) {
  case FG_LM_W_TOK_EMBD: return &m->tok_embd;
  case FG_LM_W_OUT_NORM: return &m->out_norm;
  case FG_LM_W_OUTPUT: return lm->cfg.tied_output ? NULL : &m->output;
  default: break;
  }
  if ((int)which < FG_LM_W_FIRST_LAYER || which >= FG_LM_W_COUNT || layer >= lm->cfg.n_layer) return NULL;
  fg_lm_layer *L = &m->layers[layer];
  fg_lm_w *by_kind[] = {&L->attn_norm, &L->wq, &L->wk, &L->wv, &L->wo, &L->bq, &L->bk, &L->bv, &L->q_norm,
                        &L->k_norm, &L->post_attn_norm, &L->ffn_norm, &L->w_gate, &L->w_up, &L->w_down,
                        &L->post_ffn_norm};
  return by_kind[which - FG_LM_W_FIRST_LAYER];
}

bool fg_lm_weight_find(const fg_lm *lm, size_t layer, fg_lm_weight which, fg_lm_weight_info *out) {
  const fg_lm_w *w = lm ? slot(lm, layer, which) : NULL;
  if (!w || !w->data || !out) return false;
  const bool wide = which < FG_LM_W_FIRST_LAYER;
  snprintf(out->name, sizeof out->name, fg_lm_weight_fmt(lm, (int)which), wide ? (size_t)0 : layer);
  out->dtype = w->dtype;
  out->rows = w->rows;
  out->cols = w->cols;
  out->data = (void *)w->data;
  return true;
}

/* Weight i of the enumeration: the model-wide ones, then each layer's kinds in order. */
#define PER_LAYER ((size_t)(FG_LM_W_COUNT - FG_LM_W_FIRST_LAYER))
static void unpack(size_t i, size_t *layer, fg_lm_weight *k) {
  *layer = i < FG_LM_W_FIRST_LAYER ? 0 : (i - FG_LM_W_FIRST_LAYER) / PER_LAYER;
  *k = i < FG_LM_W_FIRST_LAYER ? (fg_lm_weight)i : (fg_lm_weight)(FG_LM_W_FIRST_LAYER + (i - FG_LM_W_FIRST_LAYER) % PER_LAYER);
}

fg_status fg_lm_weights_own(fg_lm *lm) {
  if (!lm) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_weights_own: NULL model");
  if (lm->own_w) return FG_OK;
  const size_t L = lm->cfg.n_layer;
  const size_t max = FG_LM_W_FIRST_LAYER + L * PER_LAYER;
  /* every check before any copy: a refusal leaves the model as it was */
  fg_lm_weight_info wi;
  for (size_t i = 0; i < max; i++) {
    size_t l;
    fg_lm_weight k;
    unpack(i, &l, &k);
    if (fg_lm_weight_find(lm, l, k, &wi) && wi.dtype != FG_F32 && wi.dtype != FG_F16 && wi.dtype != FG_BF16)
      return fg_fail(FG_ERR_QUANTIZED_BASE, "%s: tensor %s is %s; training every weight needs f32, f16 or bf16 "
                     "weights (forgia export --dtype f32 makes such a copy)", lm->path, wi.name,
                     fg_dtype_name(wi.dtype));
  }
  void **own = calloc(max, sizeof *own);
  if (!own) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", lm->path);
  /* new pointers first, swapped in only once every copy has been made */
  fg_status st = FG_OK;
  size_t n = 0;
  for (size_t i = 0; i < max && !st; i++) {
    size_t l;
    fg_lm_weight k;
    unpack(i, &l, &k);
    if (!fg_lm_weight_find(lm, l, k, &wi)) continue;
    const size_t bytes = wi.rows * wi.cols * fg_dtype_info(wi.dtype)->block_bytes;
    st = fg_device_mem_alloc(lm->dev, bytes ? bytes : 1, &own[i]);
    if (!st) st = fg_device_copy(lm->dev, own[i], wi.data, bytes, FG_COPY_D2D);
    n = i + 1;
  }
  if (st) {
    for (size_t i = 0; i < n; i++) fg_device_mem_free(lm->dev, own[i]);
    free(own);
    return fg_fail_prefix(st, "%s: copying the weights: ", lm->path);
  }
  for (size_t i = 0; i < max; i++) {
    if (!own[i]) continue;
    size_t l;
    fg_lm_weight k;
    unpack(i, &l, &k);
    slot(lm, l, k)->data = own[i];
  }
  /* a tied output reads the embedding through its own copy of the binding */
  if (lm->cfg.tied_output) lm->output = lm->tok_embd;
  lm->own_w = own;
  lm->n_own_w = max;
  return FG_OK;
}
