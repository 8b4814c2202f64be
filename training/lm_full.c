/* Full fine-tuning (forgia/lm_full.h): the model's weights as tensors with gradients, routed
 * to fg_lm_grad through its weight-gradient hook. */
#include "forgia/lm_full.h"

#include <stdlib.h>
#include <string.h>

struct fg_lm_full {
  fg_lm *lm;
  size_t n_layer;
  fg_tensor **params;   /* the trainable weights, in order */
  fg_lm_weight *kinds;
  size_t *slot;         /* each parameter's index in grad_of */
  size_t n;
  float **grad_of;      /* (FG_LM_W_FIRST_LAYER + n_layer x per-layer kinds): gradient or NULL */
  bool muon;
};

#define PER_LAYER ((size_t)(FG_LM_W_COUNT - FG_LM_W_FIRST_LAYER))

static size_t index_of(size_t layer, fg_lm_weight k) {
  return k < FG_LM_W_FIRST_LAYER ? (size_t)k : FG_LM_W_FIRST_LAYER + layer * PER_LAYER + (size_t)(k - FG_LM_W_FIRST_LAYER);
}

void fg_lm_full_free(fg_lm_full *f) {
  if (!f) return;
  for (size_t i = 0; f->params && i < f->n; i++) fg_tensor_free(f->params[i]);
  free(f->params);
  free(f->kinds);
  free(f->slot);
  free(f->grad_of);
  free(f);
}

static fg_status add_param(fg_lm_full *f, size_t layer, fg_lm_weight k, const fg_lm_weight_info *wi) {
  const uint64_t shape[2] = {wi->rows, wi->cols};
  const int vec = k == FG_LM_W_TOK_EMBD || k == FG_LM_W_OUTPUT ? 0 : wi->rows == 1;
  fg_tensor *t = NULL;
  fg_status st = fg_tensor_wrap(fg_lm_device(f->lm), wi->name, wi->dtype, vec ? 1 : 2, vec ? shape + 1 : shape,
                                wi->data, &t);
  if (st) return st;
  f->slot[f->n] = index_of(layer, k);
  f->params[f->n] = t;
  f->kinds[f->n++] = k;
  return FG_OK;
}

/* The gradients, allocated on first need (evolution strategies never ask for them). */
static fg_status grads(fg_lm_full *f) {
  for (size_t i = 0; i < f->n; i++) {
    fg_status st = fg_tensor_grad_alloc(f->params[i]);
    if (st) return st;
    f->grad_of[f->slot[i]] = f->params[i]->grad;
  }
  return FG_OK;
}

fg_status fg_lm_full_create(fg_lm *lm, uint32_t frozen, fg_lm_full **out) {
  if (!lm || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_full_create: NULL argument");
  const size_t L = fg_lm_get_config(lm)->n_layer, slots = FG_LM_W_FIRST_LAYER + L * PER_LAYER;
  fg_status st = fg_lm_weights_own(lm);
  if (st) return st;
  fg_lm_full *f = calloc(1, sizeof *f);
  if (f) {
    f->lm = lm;
    f->n_layer = L;
    f->params = calloc(slots, sizeof *f->params);
    f->kinds = calloc(slots, sizeof *f->kinds);
    f->grad_of = calloc(slots, sizeof *f->grad_of);
    f->slot = calloc(slots, sizeof *f->slot);
  }
  if (!f || !f->params || !f->kinds || !f->grad_of || !f->slot) {
    fg_lm_full_free(f);
    return fg_fail(FG_ERR_NOMEM, "fg_lm_full_create: out of memory");
  }
  fg_lm_weight_info wi;
  for (size_t i = 0; i < slots && !st; i++) {
    const size_t layer = i < FG_LM_W_FIRST_LAYER ? 0 : (i - FG_LM_W_FIRST_LAYER) / PER_LAYER;
    const fg_lm_weight k =
        i < FG_LM_W_FIRST_LAYER ? (fg_lm_weight)i : (fg_lm_weight)(FG_LM_W_FIRST_LAYER + (i - FG_LM_W_FIRST_LAYER) % PER_LAYER);
    if (!(frozen & FG_LM_FULL_FREEZE(k)) && fg_lm_weight_find(lm, layer, k, &wi)) st = add_param(f, layer, k, &wi);
  }
  if (!st && !f->n) st = fg_fail(FG_ERR_INVALID_ARG, "fg_lm_full_create: every weight is frozen; nothing to train");
  if (st) {
    fg_lm_full_free(f);
    return st;
  }
  *out = f;
  return FG_OK;
}

size_t fg_lm_full_params(const fg_lm_full *f, fg_tensor *const **params, const fg_lm_weight **kinds) {
  if (!f) return 0;
  if (params) *params = f->params;
  if (kinds) *kinds = f->kinds;
  return f->n;
}

fg_status fg_lm_full_register(fg_lm_full *f, fg_optim *matrices, fg_optim *vectors) {
  if (!f || !matrices) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_full_register: NULL argument");
  if (!vectors) vectors = matrices;
  fg_status st = grads(f);
  for (size_t i = 0; i < f->n && !st; i++) {
    fg_tensor *t = f->params[i];
    const bool head = f->kinds[i] == FG_LM_W_TOK_EMBD || f->kinds[i] == FG_LM_W_OUTPUT;
    if (t->ndim == 1) st = fg_optim_add(vectors, t, t->name);
    /* Muon orthogonalizes hidden matrices; the embedding and the head take its AdamW */
    else if (head && fg_optim_kind_of(matrices) == FG_OPTIM_MUON) st = fg_optim_add_fallback(matrices, t, t->name);
    else st = fg_optim_add(matrices, t, t->name);
  }
  return st;
}

static float *weight_grad(void *user, size_t layer, fg_lm_weight which) {
  const fg_lm_full *f = user;
  if (which < FG_LM_W_FIRST_LAYER) return f->grad_of[which];
  return layer < f->n_layer ? f->grad_of[index_of(layer, which)] : NULL;
}

fg_status fg_lm_full_grad(fg_lm_full *f, const fg_lm_train_batch *b, float loss_scale, double *nll_sum,
                          size_t *n_pred) {
  if (!f) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_full_grad: NULL argument");
  const fg_lm_grad_hooks h = {.weight_grad = weight_grad, .user = f};
  fg_status st = grads(f);
  return st ? st : fg_lm_grad(f->lm, b, loss_scale, &h, nll_sum, n_pred);
}
