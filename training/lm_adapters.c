/* LoRA adapters on a language model (forgia/lm_adapters.h): a table of fg_lora by (layer,
 * projection), bound to fg_lm_grad's hooks for training and to the model's projection hook
 * for inference. */
#include "forgia/lm_adapters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/rng.h"

struct fg_lm_adapters {
  fg_lm *lm;
  size_t n_layer;
  fg_lora **by;            /* n_layer x FG_LM_PROJ_COUNT, NULL where none */
  fg_lora_slot *slots;     /* the adapters in (layer, target) order */
  size_t n;
  const uint64_t *dropout; /* the pass's dropout seed, during fg_lm_adapters_grad */
  bool attached;
};

/* in and out of projection t of this model. */
static void proj_shape(const fg_lm_config *c, int t, uint64_t *in, uint64_t *out) {
  const uint64_t E = c->n_embd, Q = c->n_head * c->head_dim, KV = c->n_kv_head * c->head_dim, F = c->n_ff;
  const uint64_t shapes[FG_LM_PROJ_COUNT][2] = {{E, Q}, {E, KV}, {E, KV}, {Q, E}, {E, F}, {E, F}, {F, E}};
  *in = shapes[t][0];
  *out = shapes[t][1];
}

void fg_lm_adapters_free(fg_lm_adapters *a) {
  if (!a) return;
  if (a->attached) fg_lm_set_proj_hook(a->lm, NULL, NULL);
  for (size_t i = 0; a->by && i < a->n_layer * FG_LM_PROJ_COUNT; i++) fg_lora_free(a->by[i]);
  free(a->by);
  free(a->slots);
  free(a);
}

fg_status fg_lm_adapters_create(fg_lm *lm, const fg_lm_adapters_config *c, fg_lm_adapters **out) {
  if (!lm || !c || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_adapters_create: NULL argument");
  if (!c->targets || (c->targets & ~FG_LM_ADAPTERS_ALL))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_adapters_create: targets 0x%x, expected a nonempty set of the bits 0x7f "
                   "(q, k, v, o, gate, up, down)", (unsigned)c->targets);
  const fg_lm_config *cf = fg_lm_get_config(lm);
  fg_lm_adapters *a = calloc(1, sizeof *a);
  if (a) {
    a->lm = lm;
    a->n_layer = cf->n_layer;
    a->by = calloc(cf->n_layer * FG_LM_PROJ_COUNT, sizeof *a->by);
    a->slots = calloc(cf->n_layer * FG_LM_PROJ_COUNT, sizeof *a->slots);
  }
  if (!a || !a->by || !a->slots) {
    fg_lm_adapters_free(a);
    return fg_fail(FG_ERR_NOMEM, "fg_lm_adapters_create: out of memory");
  }
  fg_status st = FG_OK;
  for (size_t l = 0; l < cf->n_layer && !st; l++)
    for (int t = 0; t < FG_LM_PROJ_COUNT && !st; t++) {
      if (!(c->targets & (1u << t))) continue;
      uint64_t in = 0, o = 0;
      proj_shape(cf, t, &in, &o);
      fg_lora **slot = &a->by[l * FG_LM_PROJ_COUNT + (size_t)t];
      st = fg_lora_create(fg_lm_device(lm), in, o, &c->lora, fg_rng_at(c->seed, l * FG_LM_PROJ_COUNT + (size_t)t), slot);
      if (st) {
        fg_fail_prefix(st, "fg_lm_adapters_create: layer %zu, %s: ", l, fg_lora_target_name((fg_lora_target)t));
        break;
      }
      (*slot)->gemm = c->mode;
      a->slots[a->n++] = (fg_lora_slot){.layer = (uint32_t)l, .target = (fg_lora_target)t, .lora = *slot};
    }
  if (st) {
    fg_lm_adapters_free(a);
    return st;
  }
  *out = a;
  return FG_OK;
}

size_t fg_lm_adapters_slots(const fg_lm_adapters *a, const fg_lora_slot **slots) {
  if (slots) *slots = a ? a->slots : NULL;
  return a ? a->n : 0;
}

fg_status fg_lm_adapters_register(fg_lm_adapters *a, fg_optim *o) {
  if (!a || !o) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_adapters_register: NULL argument");
  fg_status st = FG_OK;
  for (size_t i = 0; i < a->n && !st; i++) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "layers.%u.%s", (unsigned)a->slots[i].layer, fg_lora_target_name(a->slots[i].target));
    st = fg_lora_register(a->slots[i].lora, o, prefix);
  }
  return st;
}

fg_status fg_lm_adapters_save(const fg_lm_adapters *a, const char *path) {
  if (!a || !path) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_adapters_save: NULL argument");
  return fg_lora_save(path, a->slots, a->n);
}

fg_status fg_lm_adapters_load(fg_lm_adapters *a, const char *path) {
  if (!a || !path) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_adapters_load: NULL argument");
  return fg_lora_load(path, a->slots, a->n);
}

static const fg_lora *find(const fg_lm_adapters *a, size_t layer, fg_lm_proj which) {
  return layer < a->n_layer ? a->by[layer * FG_LM_PROJ_COUNT + (size_t)which] : NULL;
}

static fg_status hook_forward(void *user, size_t layer, fg_lm_proj which, const float *x, size_t n_tok, size_t in,
                              size_t out, float *y, fg_stream *s) {
  (void)in, (void)out;
  const fg_lm_adapters *a = user;
  const fg_lora *l = find(a, layer, which);
  if (!l) return FG_OK;
  uint64_t seed = 0;
  if (a->dropout) seed = fg_rng_at(*a->dropout, layer * FG_LM_PROJ_COUNT + (size_t)which);
  return fg_lora_forward(l, NULL, x, n_tok, a->dropout ? &seed : NULL, y, s);
}

static fg_status hook_backward(void *user, size_t layer, fg_lm_proj which, const float *x, size_t n_tok, size_t in,
                               size_t out, const float *dy, float *dx, fg_stream *s) {
  (void)in, (void)out;
  fg_lm_adapters *a = user;
  fg_lora *l = (fg_lora *)find(a, layer, which);
  if (!l) return FG_OK;
  uint64_t seed = 0;
  if (a->dropout) seed = fg_rng_at(*a->dropout, layer * FG_LM_PROJ_COUNT + (size_t)which);
  return fg_lora_backward(l, NULL, x, n_tok, a->dropout ? &seed : NULL, dy, dx, s);
}

void fg_lm_adapters_attach(fg_lm_adapters *a, bool on) {
  if (!a) return;
  a->dropout = NULL;
  fg_lm_set_proj_hook(a->lm, on ? hook_forward : NULL, on ? a : NULL);
  a->attached = on;
}

fg_status fg_lm_adapters_grad(fg_lm_adapters *a, const fg_lm_train_batch *b, float loss_scale,
                              const uint64_t *dropout_seed, double *nll_sum, size_t *n_pred) {
  if (!a) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_adapters_grad: NULL adapters");
  const fg_lm_grad_hooks h = {.forward = hook_forward, .backward = hook_backward, .user = a};
  a->dropout = dropout_seed;
  fg_status st = fg_lm_grad(a->lm, b, loss_scale, &h, nll_sum, n_pred);
  a->dropout = NULL;
  return st;
}
