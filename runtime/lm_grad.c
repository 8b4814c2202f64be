/* fg_lm_grad (forgia/lm_grad.h): the loss of a batch of training sequences and its gradient,
 * sent through the caller's projection hooks.
 *
 *   forward:   xs[0] = embed(ids);  xs[l + 1] = layer_l(xs[l]), keys and values into a cache
 *   loss:      per target t (predicted by row t - 1): logits = norm(xs[L][t - 1]) Wout, nll;
 *              dx = d(loss_scale * sum nll) / d xs[L], chunked so the logits stay bounded
 *   backward:  per layer from the last: re-run layer_l from xs[l] (internals into one
 *              layer's scratch, the cache left as the forward wrote it), then its blocks in
 *              reverse, dx becoming the gradient of xs[l]
 *
 * The residual stream's gradient is summed in one order: the MLP branch's input gradient is
 * added to dx, then the attention branch's. Every product of a gradient with a projection
 * goes through fg_linear_backward_x over the weight as stored, then the hook. */
#include <stdlib.h>
#include <string.h>

#include "forgia/attention.h"
#include "forgia/embed.h"
#include "forgia/gemm.h"
#include "forgia/linear.h"
#include "forgia/lm_grad.h"
#include "forgia/rmsnorm.h"
#include "forgia/rope.h"
#include "forgia/softmax.h"
#include "runtime/lm_internal.h"

/* Logits (and their gradient) per chunk: 2 x 64 MiB whatever the vocabulary. */
#define FG_LM_GRAD_LOGIT_BYTES ((size_t)64 << 20)

typedef struct g_ws {
  fg_lm *lm;
  fg_lm_cache *c;
  const fg_lm_grad_hooks *hk;
  fg_stream *s;
  size_t n;           /* tokens of the batch */
  int32_t *seq_h;     /* host: each token's sequence and position */
  size_t *pos_h;
  fg_op_args *list;   /* n x n_kv_head arguments for the cache writes and gathers */
  float *xs;          /* (n_layer + 1) x n x n_embd: each layer's input, then the last output */
  /* one layer's recomputed internals */
  float *h, *rs1, *q, *q2, *rq, *k, *k2, *rk, *v, *o, *lse, *t, *tn, *rpa, *x1, *h2, *rs2, *g, *u, *a, *t3, *t3n, *rpf;
  /* gradients; dwn: one norm's weight gradient before it is added to the caller's */
  float *dwn, *dx, *dh, *dt, *tmp, *dob, *dq, *dq0, *dk, *dk0, *dv, *dkc, *dvc, *da, *dg, *du;
  /* the internals' allocations: one layer's (recomputed), or every layer's (kept) */
  bool keep;
  size_t n_int;
  struct { float **p; float *base; size_t count; } in[24];
} g_ws;

/* Points the internals at layer l's set (kept) or at the one set (recomputed). */
static void g_select(g_ws *w, size_t l) {
  for (size_t i = 0; i < w->n_int; i++) *w->in[i].p = w->in[i].base + (w->keep ? l : 0) * w->in[i].count;
}

void fg_lm_grad_set_keep_bytes(fg_lm *lm, size_t bytes) {
  if (lm) lm->grad_keep_bytes = bytes;
}

size_t fg_lm_train_batch_targets(const fg_lm_train_batch *b) {
  if (!b || !b->len) return 0;
  size_t n = 0, t0 = 0;
  for (size_t i = 0; i < b->n_seq; t0 += b->len[i++])
    for (size_t j = 1; j < b->len[i]; j++) n += !b->predict || b->predict[t0 + j];
  return n;
}

static fg_status g_check(const fg_lm *lm, const fg_lm_train_batch *b, size_t *n_tok, size_t *max_len) {
  const char *what = "fg_lm_grad";
  if (!b->n_seq || !b->len || !b->ids) return fg_fail(FG_ERR_INVALID_ARG, "%s: empty batch or NULL ids/len", what);
  size_t n = 0, mx = 0;
  for (size_t i = 0; i < b->n_seq; i++) {
    if (!b->len[i]) return fg_fail(FG_ERR_INVALID_ARG, "%s: sequence %zu is empty", what, i);
    if (b->len[i] > ((size_t)1 << 24))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: sequence %zu has %zu tokens, at most 16777216", what, i, b->len[i]);
    if (b->predict && b->predict[n])
      return fg_fail(FG_ERR_INVALID_ARG, "%s: token %zu, the first of sequence %zu, is marked as a target (nothing "
                     "precedes it)", what, n, i);
    n += b->len[i];
    if (b->len[i] > mx) mx = b->len[i];
  }
  for (size_t t = 0; t < n; t++)
    if (b->ids[t] < 0 || (size_t)b->ids[t] >= lm->cfg.n_vocab)
      return fg_fail(FG_ERR_RANGE, "%s: token %zu has id %d, outside the vocabulary of %zu", what, t, (int)b->ids[t],
                     lm->cfg.n_vocab);
  if (!fg_lm_train_batch_targets(b)) return fg_fail(FG_ERR_INVALID_ARG, "%s: the batch has no target token", what);
  *n_tok = n;
  *max_len = mx;
  return FG_OK;
}

static void g_free(g_ws *w) {
  fg_device *dev = w->lm->dev;
  float *p[] = {w->xs, w->dwn, w->dx, w->dh, w->dt, w->tmp, w->dob, w->dq, w->dq0, w->dk, w->dk0, w->dv, w->dkc, w->dvc,
                w->da, w->dg, w->du};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) fg_device_mem_free(dev, p[i]);
  for (size_t i = 0; i < w->n_int; i++) fg_device_mem_free(dev, w->in[i].base);
  fg_lm_cache_free(w->c);
  free(w->seq_h);
  free(w->pos_h);
  free(w->list);
}

static fg_status g_alloc(g_ws *w) {
  const fg_lm_config *c = &w->lm->cfg;
  const size_t n = w->n, E = c->n_embd, Q = c->n_head * c->head_dim, KV = c->n_kv_head * c->head_dim, F = c->n_ff;
  const size_t H = c->n_head, KH = c->n_kv_head, cache = w->c->per_tensor;
  struct { float **p; size_t count; } in[] = {
      {&w->h, n * E}, {&w->rs1, n}, {&w->q, n * Q}, {&w->q2, n * Q}, {&w->rq, n * H}, {&w->k, n * KV},
      {&w->k2, n * KV}, {&w->rk, n * KH}, {&w->v, n * KV}, {&w->o, n * Q}, {&w->lse, n * H}, {&w->t, n * E},
      {&w->tn, n * E}, {&w->rpa, n}, {&w->x1, n * E}, {&w->h2, n * E}, {&w->rs2, n}, {&w->g, n * F},
      {&w->u, n * F}, {&w->a, n * F}, {&w->t3, n * E}, {&w->t3n, n * E}, {&w->rpf, n}};
  /* Every layer's internals are kept when they fit the model's budget: the backward then
   * skips the second forward pass. The arithmetic is the same either way. */
  size_t per_layer = 0;
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) per_layer += in[i].count * sizeof(float);
  w->keep = per_layer <= w->lm->grad_keep_bytes / (c->n_layer ? c->n_layer : 1);
  w->n_int = sizeof in / sizeof in[0];
  const size_t sets = w->keep ? c->n_layer : 1;
  for (size_t i = 0; i < w->n_int; i++) {
    w->in[i].p = in[i].p;
    w->in[i].count = in[i].count;
    fg_status st = fg_device_mem_alloc(w->lm->dev, (in[i].count ? in[i].count * sets : 1) * sizeof(float),
                                       (void **)&w->in[i].base);
    if (st) return st;
  }
  struct { float **p; size_t count; } want[] = {
      {&w->xs, (c->n_layer + 1) * n * E}, {&w->dwn, E > c->head_dim ? E : c->head_dim}, {&w->dx, n * E}, {&w->dh, n * E}, {&w->dt, n * E}, {&w->tmp, n * E},
      {&w->dob, n * Q}, {&w->dq, n * Q}, {&w->dq0, n * Q}, {&w->dk, n * KV}, {&w->dk0, n * KV}, {&w->dv, n * KV},
      {&w->dkc, cache}, {&w->dvc, cache}, {&w->da, n * F}, {&w->dg, n * F}, {&w->du, n * F}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    fg_status st = fg_device_mem_alloc(w->lm->dev, (want[i].count ? want[i].count : 1) * sizeof(float),
                                       (void **)want[i].p);
    if (st) return st;
  }
  return FG_OK;
}

static fg_status g_norm(g_ws *w, const float *x, size_t rows, const fg_lm_w *nw, float *y, float *rstd) {
  const fg_lm_config *c = &w->lm->cfg;
  return fg_rmsnorm_forward(w->lm->dev, x, FG_F32, nw->data, nw->dtype, rows, nw->cols, c->norm_eps, c->norm_offset,
                            y, rstd, w->s);
}

/* The caller's gradient buffer of a weight, NULL when it stays frozen. */
static float *g_wgrad(const g_ws *w, size_t l, fg_lm_weight which) {
  return w->hk && w->hk->weight_grad ? w->hk->weight_grad(w->hk->user, l, which) : NULL;
}

/* acc += d (count floats), one f32 add each. */
static fg_status g_add(g_ws *w, float *acc, const float *d, size_t count) {
  fg_op_params p = {.f = {1.0f}};
  fg_op_args a = {.ptr = {acc, (void *)d}, .dtype = {FG_F32, FG_F32}, .n = count};
  return fg_op_run(w->lm->dev, FG_OP_AXPY, &p, &a, 1, w->s);
}

/* dx = the input gradient of norm `which` of layer l; its weight's gradient is added to the
 * caller's buffer when it has one. */
static fg_status g_norm_back(g_ws *w, size_t l, fg_lm_weight which, const float *x, size_t rows, const fg_lm_w *nw,
                             const float *rstd, const float *dy, float *dx) {
  float *gw = g_wgrad(w, l, which);
  fg_status st = fg_rmsnorm_backward(w->lm->dev, x, FG_F32, nw->data, nw->dtype, rows, nw->cols,
                                     w->lm->cfg.norm_offset, rstd, dy, dx, gw ? w->dwn : NULL, w->s);
  return !st && gw ? g_add(w, gw, w->dwn, nw->cols) : st;
}

/* The weight's gradient dW += dy^T x (n_out x n_in) and the bias's, the rows of dy summed. */
static fg_status g_weight_back(g_ws *w, float *gw, float *gb, const float *x, size_t rows, size_t n_in, size_t n_out,
                               const float *dy) {
  fg_status st = FG_OK;
  if (gw)
    st = fg_gemm(w->lm->dev, w->lm->mode, true, false, n_out, n_in, rows, 1.0f, dy, FG_F32, n_out, x, FG_F32, n_in,
                 1.0f, gw, n_in, w->s);
  if (!st && gb)
    st = fg_gemm(w->lm->dev, w->lm->mode, true, false, n_out, 1, rows, 1.0f, dy, FG_F32, n_out, w->lm->act.ones,
                 FG_F32, 1, 1.0f, gb, 1, w->s);
  return st;
}

static fg_status g_proj(g_ws *w, size_t l, fg_lm_proj which, const float *x, const fg_lm_w *W, const fg_lm_w *b,
                        float *y) {
  fg_status st = fg_lm_linear_bias(w->lm, x, w->n, W, b, y, w->s);
  if (!st && w->hk && w->hk->forward) st = w->hk->forward(w->hk->user, l, which, x, w->n, W->cols, W->rows, y, w->s);
  return st;
}

/* dx (=|+=) dy W, then the hook's share. */
static fg_status g_proj_back(g_ws *w, size_t l, fg_lm_proj which, const float *x, const fg_lm_w *W, const float *dy,
                             float *dx, bool accumulate) {
  fg_status st = fg_linear_backward_x(w->lm->dev, w->lm->mode, dy, w->n, W->rows, W->data, W->dtype, W->cols, dx,
                                      accumulate, w->s);
  static const fg_lm_weight kind[FG_LM_PROJ_COUNT] = {FG_LM_W_Q, FG_LM_W_K, FG_LM_W_V, FG_LM_W_O, FG_LM_W_GATE,
                                                      FG_LM_W_UP, FG_LM_W_DOWN};
  const bool biased = which <= FG_LM_PROJ_V && w->lm->layers[l].bq.data;
  if (!st)
    st = g_weight_back(w, g_wgrad(w, l, kind[which]), biased ? g_wgrad(w, l, (fg_lm_weight)(FG_LM_W_Q_BIAS + which)) : NULL,
                       x, w->n, W->cols, W->rows, dy);
  if (!st && w->hk && w->hk->backward)
    st = w->hk->backward(w->hk->user, l, which, x, w->n, W->cols, W->rows, dy, dx, w->s);
  return st;
}

/* y = x + r (a copy, then one f32 add per element, as the forward's residual). */
static fg_status g_residual(g_ws *w, float *y, const float *x, const float *r, size_t count) {
  fg_status st = FG_OK;
  if (y != x) st = fg_device_copy_async(w->lm->dev, y, x, count * sizeof(float), FG_COPY_D2D, w->s);
  fg_op_params p = {.f = {1.0f}};
  fg_op_args a = {.ptr = {y, (void *)r}, .dtype = {FG_F32, FG_F32}, .n = count};
  return st ? st : fg_op_run(w->lm->dev, FG_OP_AXPY, &p, &a, 1, w->s);
}

/* dst (n x n_kv_head x head_dim) = the batch tokens' rows of a cache-layout gradient. */
static fg_status g_gather(g_ws *w, float *dst, const float *cache) {
  const fg_lm_config *c = &w->lm->cfg;
  const size_t hd = c->head_dim, nkv = c->n_kv_head;
  fg_status st = fg_device_memset(w->lm->dev, dst, 0, w->n * nkv * hd * sizeof(float));
  for (size_t t = 0; t < w->n; t++)
    for (size_t h = 0; h < nkv; h++) {
      fg_op_args *a = &w->list[t * nkv + h];
      memset(a, 0, sizeof *a);
      a->ptr[0] = dst + (t * nkv + h) * hd;
      a->ptr[1] = (void *)(cache + (((size_t)w->seq_h[t] * nkv + h) * w->c->n_ctx + w->pos_h[t]) * hd);
      a->dtype[0] = a->dtype[1] = FG_F32;
      a->n = hd;
    }
  fg_op_params p = {.f = {1.0f}};
  return st ? st : fg_op_run(w->lm->dev, FG_OP_AXPY, &p, w->list, w->n * nkv, w->s);
}

static fg_attention_args g_attn_args(g_ws *w, size_t l, const float *q) {
  const fg_lm_config *cf = &w->lm->cfg;
  const fg_lm_layer *L = &w->lm->layers[l];
  return (fg_attention_args){.n_tok = w->n, .n_head = cf->n_head, .n_kv_head = cf->n_kv_head,
                             .head_dim = cf->head_dim, .n_seq = w->c->n_seq, .n_ctx = w->c->n_ctx, .q = q,
                             .k = w->c->kv + (2 * l) * w->c->per_tensor,
                             .v = w->c->kv + (2 * l + 1) * w->c->per_tensor, .seq = w->lm->act.seq,
                             .pos = w->lm->act.pos, .window = L->windowed ? cf->sliding_window : 0,
                             .scale = cf->attn_scale, .out = w->o, .lse = w->lse};
}

static fg_status g_rope(g_ws *w, size_t l, float *x, size_t heads, bool inverse) {
  const fg_lm_config *cf = &w->lm->cfg;
  const float *table = w->lm->layers[l].windowed ? w->lm->rope_local : w->lm->rope_global;
  return fg_rope_apply(w->lm->dev, x, w->n, heads, cf->head_dim, cf->rope_dims, cf->rope_layout, w->lm->act.pos, table,
                       w->lm->rope_pos, inverse, w->s);
}

/* Layer l from xs[l]: the internals into the scratch; first: also the keys and values into
 * the cache and the output into xs[l + 1]. The query the attention read stays in q (or q2). */
static fg_status g_layer_fwd(g_ws *w, size_t l, bool first, float **q_used) {
  g_select(w, l);
  fg_lm *lm = w->lm;
  const fg_lm_config *cf = &lm->cfg;
  const fg_lm_layer *L = &lm->layers[l];
  const size_t n = w->n, E = cf->n_embd;
  const float *x = w->xs + l * n * E;
  fg_status st;
  if ((st = g_norm(w, x, n, &L->attn_norm, w->h, w->rs1)) || (st = g_proj(w, l, FG_LM_PROJ_Q, w->h, &L->wq, &L->bq, w->q)) ||
      (st = g_proj(w, l, FG_LM_PROJ_K, w->h, &L->wk, &L->bk, w->k)) ||
      (st = g_proj(w, l, FG_LM_PROJ_V, w->h, &L->wv, &L->bv, w->v)))
    return st;
  float *q = w->q, *k = w->k;
  if (cf->qk_norm) {
    if ((st = g_norm(w, w->q, n * cf->n_head, &L->q_norm, w->q2, w->rq)) ||
        (st = g_norm(w, w->k, n * cf->n_kv_head, &L->k_norm, w->k2, w->rk)))
      return st;
    q = w->q2;
    k = w->k2;
  }
  if ((st = g_rope(w, l, q, cf->n_head, false)) || (st = g_rope(w, l, k, cf->n_kv_head, false))) return st;
  if (first) {
    float *kc = w->c->kv + (2 * l) * w->c->per_tensor, *vc = w->c->kv + (2 * l + 1) * w->c->per_tensor;
    if ((st = fg_lm_cache_put(lm, w->c, kc, k, n, w->seq_h, w->pos_h, w->list, w->s)) ||
        (st = fg_lm_cache_put(lm, w->c, vc, w->v, n, w->seq_h, w->pos_h, w->list, w->s)))
      return st;
  }
  *q_used = q;
  const fg_attention_args at = g_attn_args(w, l, q);
  if ((st = fg_attention_forward(lm->dev, &at, w->s)) || (st = g_proj(w, l, FG_LM_PROJ_O, w->o, &L->wo, NULL, w->t)))
    return st;
  const float *res = w->t;
  if (cf->post_norms) {
    if ((st = g_norm(w, w->t, n, &L->post_attn_norm, w->tn, w->rpa))) return st;
    res = w->tn;
  }
  const fg_op_kind glu = cf->glu == FG_LM_SWIGLU ? FG_OP_SWIGLU : FG_OP_GEGLU;
  fg_op_params gp = {0};
  fg_op_args ga = {.ptr = {w->a, w->g, w->u}, .dtype = {FG_F32, FG_F32, FG_F32}, .n = n * cf->n_ff};
  if ((st = g_residual(w, w->x1, x, res, n * E)) || (st = g_norm(w, w->x1, n, &L->ffn_norm, w->h2, w->rs2)) ||
      (st = g_proj(w, l, FG_LM_PROJ_GATE, w->h2, &L->w_gate, NULL, w->g)) ||
      (st = g_proj(w, l, FG_LM_PROJ_UP, w->h2, &L->w_up, NULL, w->u)) || (st = fg_op_run(lm->dev, glu, &gp, &ga, 1, w->s)) ||
      (st = g_proj(w, l, FG_LM_PROJ_DOWN, w->a, &L->w_down, NULL, w->t3)))
    return st;
  res = w->t3;
  if (cf->post_norms) {
    if ((st = g_norm(w, w->t3, n, &L->post_ffn_norm, w->t3n, w->rpf))) return st;
    res = w->t3n;
  }
  return first ? g_residual(w, w->xs + (l + 1) * n * E, w->x1, res, n * E) : FG_OK;
}

/* w->dx: the gradient of xs[l + 1] in, of xs[l] out. */
static fg_status g_layer_bwd(g_ws *w, size_t l) {
  fg_lm *lm = w->lm;
  const fg_lm_config *cf = &lm->cfg;
  const fg_lm_layer *L = &lm->layers[l];
  const size_t n = w->n, E = cf->n_embd;
  const float *x = w->xs + l * n * E;
  float *q = NULL;
  fg_status st = FG_OK;
  if (w->keep) {
    g_select(w, l);
    q = cf->qk_norm ? w->q2 : w->q;
  } else {
    st = g_layer_fwd(w, l, false, &q);
  }
  if (st) return st;
  /* the MLP branch */
  const float *d3 = w->dx;
  if (cf->post_norms) {
    if ((st = g_norm_back(w, l, FG_LM_W_POST_FFN_NORM, w->t3, n, &L->post_ffn_norm, w->rpf, w->dx, w->dt))) return st;
    d3 = w->dt;
  }
  const fg_op_kind glu = cf->glu == FG_LM_SWIGLU ? FG_OP_SWIGLU_BACKWARD : FG_OP_GEGLU_BACKWARD;
  fg_op_params gp = {0};
  fg_op_args ga = {.ptr = {w->dg, w->du, w->da, w->g, w->u}, .dtype = {FG_F32, FG_F32, FG_F32, FG_F32, FG_F32},
                   .n = n * cf->n_ff};
  if ((st = g_proj_back(w, l, FG_LM_PROJ_DOWN, w->a, &L->w_down, d3, w->da, false)) ||
      (st = fg_op_run(lm->dev, glu, &gp, &ga, 1, w->s)) ||
      (st = g_proj_back(w, l, FG_LM_PROJ_GATE, w->h2, &L->w_gate, w->dg, w->dh, false)) ||
      (st = g_proj_back(w, l, FG_LM_PROJ_UP, w->h2, &L->w_up, w->du, w->dh, true)) ||
      (st = g_norm_back(w, l, FG_LM_W_FFN_NORM, w->x1, n, &L->ffn_norm, w->rs2, w->dh, w->tmp)) ||
      (st = g_residual(w, w->dx, w->dx, w->tmp, n * E)))
    return st;
  /* the attention branch */
  const float *d1 = w->dx;
  if (cf->post_norms) {
    if ((st = g_norm_back(w, l, FG_LM_W_POST_ATTN_NORM, w->t, n, &L->post_attn_norm, w->rpa, w->dx, w->dt))) return st;
    d1 = w->dt;
  }
  if ((st = g_proj_back(w, l, FG_LM_PROJ_O, w->o, &L->wo, d1, w->dob, false))) return st;
  const fg_attention_args at = g_attn_args(w, l, q);
  const fg_attention_grads ag = {.dout = w->dob, .dq = w->dq, .dk = w->dkc, .dv = w->dvc};
  if ((st = fg_attention_backward(lm->dev, &at, &ag, w->s)) || (st = g_gather(w, w->dk, w->dkc)) ||
      (st = g_gather(w, w->dv, w->dvc)) || (st = g_rope(w, l, w->dq, cf->n_head, true)) ||
      (st = g_rope(w, l, w->dk, cf->n_kv_head, true)))
    return st;
  const float *dq = w->dq, *dk = w->dk;
  if (cf->qk_norm) {
    if ((st = g_norm_back(w, l, FG_LM_W_Q_NORM, w->q, n * cf->n_head, &L->q_norm, w->rq, w->dq, w->dq0)) ||
        (st = g_norm_back(w, l, FG_LM_W_K_NORM, w->k, n * cf->n_kv_head, &L->k_norm, w->rk, w->dk, w->dk0)))
      return st;
    dq = w->dq0;
    dk = w->dk0;
  }
  if ((st = g_proj_back(w, l, FG_LM_PROJ_Q, w->h, &L->wq, dq, w->dh, false)) ||
      (st = g_proj_back(w, l, FG_LM_PROJ_K, w->h, &L->wk, dk, w->dh, true)) ||
      (st = g_proj_back(w, l, FG_LM_PROJ_V, w->h, &L->wv, w->dv, w->dh, true)) ||
      (st = g_norm_back(w, l, FG_LM_W_ATTN_NORM, x, n, &L->attn_norm, w->rs1, w->dh, w->tmp)))
    return st;
  return g_residual(w, w->dx, w->dx, w->tmp, n * E);
}

/* The loss over the targets and dx = its gradient with respect to xs[n_layer] (rows that
 * predict nothing get zeros), in chunks of rows. */
static fg_status g_head(g_ws *w, const fg_lm_train_batch *b, float scale, double *nll_sum, size_t *n_pred) {
  fg_lm *lm = w->lm;
  const fg_lm_config *cf = &lm->cfg;
  const size_t E = cf->n_embd, V = cf->n_vocab, n = w->n;
  size_t P = 0;
  size_t *rows = malloc(n * sizeof *rows);
  int32_t *tg_h = malloc(n * sizeof *tg_h);
  double *nll_h = malloc(n * sizeof *nll_h);
  fg_status st = (!rows || !tg_h || !nll_h) ? fg_fail(FG_ERR_NOMEM, "fg_lm_grad: out of memory") : FG_OK;
  for (size_t i = 0, t0 = 0; !st && i < b->n_seq; t0 += b->len[i++])
    for (size_t j = 1; j < b->len[i]; j++)
      if (!b->predict || b->predict[t0 + j]) {
        rows[P] = t0 + j - 1;
        tg_h[P++] = b->ids[t0 + j];
      }
  size_t C = FG_LM_GRAD_LOGIT_BYTES / (V * sizeof(float));
  if (!C) C = 1;
  if (C > P) C = P;
  float *sel = NULL, *hs = NULL, *rso = NULL, *logits = NULL, *dlog = NULL, *dhs = NULL, *dsel = NULL;
  int32_t *tg = NULL;
  double *nll = NULL;
  struct { void **p; size_t bytes; } want[] = {
      {(void **)&sel, C * E * 4}, {(void **)&hs, C * E * 4}, {(void **)&rso, C * 4}, {(void **)&logits, C * V * 4},
      {(void **)&dlog, C * V * 4}, {(void **)&dhs, C * E * 4}, {(void **)&dsel, C * E * 4},
      {(void **)&tg, C * sizeof(int32_t)}, {(void **)&nll, C * sizeof(double)}};
  for (size_t i = 0; i < sizeof want / sizeof want[0] && !st; i++) st = fg_device_mem_alloc(lm->dev, want[i].bytes, want[i].p);
  if (!st) st = fg_device_memset(lm->dev, w->dx, 0, n * E * sizeof(float));
  const float *xl = w->xs + cf->n_layer * n * E;
  float *gout = g_wgrad(w, 0, cf->tied_output ? FG_LM_W_TOK_EMBD : FG_LM_W_OUTPUT);
  double sum = 0.0;
  for (size_t r0 = 0; r0 < P && !st; r0 += C) {
    const size_t m = P - r0 < C ? P - r0 : C;
    for (size_t i = 0; i < m && !st; i++)
      st = fg_device_copy_async(lm->dev, sel + i * E, xl + rows[r0 + i] * E, E * sizeof(float), FG_COPY_D2D, w->s);
    if (!st) st = fg_device_copy_async(lm->dev, tg, tg_h + r0, m * sizeof(int32_t), FG_COPY_H2D, w->s);
    if (!st) st = g_norm(w, sel, m, &lm->out_norm, hs, rso);
    if (!st) st = fg_linear(lm->dev, lm->mode, hs, m, E, lm->output.data, lm->output.dtype, V, logits, false, w->s);
    if (!st) st = fg_softmax_nll(lm->dev, logits, m, V, tg, nll, w->s);
    if (!st) st = fg_device_copy_async(lm->dev, nll_h + r0, nll, m * sizeof(double), FG_COPY_D2H, w->s);
    if (!st) st = fg_softmax_nll_backward(lm->dev, logits, m, V, tg, scale, dlog, w->s);
    if (!st) st = fg_linear_backward_x(lm->dev, lm->mode, dlog, m, V, lm->output.data, lm->output.dtype, E, dhs, false, w->s);
    if (!st) st = g_weight_back(w, gout, NULL, hs, m, E, V, dlog);
    if (!st) st = g_norm_back(w, 0, FG_LM_W_OUT_NORM, sel, m, &lm->out_norm, rso, dhs, dsel);
    for (size_t i = 0; i < m && !st; i++)
      st = fg_device_copy_async(lm->dev, w->dx + rows[r0 + i] * E, dsel + i * E, E * sizeof(float), FG_COPY_D2D, w->s);
    /* the buffers are reused by the next chunk: wait for this one */
    if (!st) st = fg_stream_sync(w->s);
  }
  for (size_t i = 0; i < P && !st; i++) sum += nll_h[i];
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) fg_device_mem_free(lm->dev, *want[i].p);
  free(rows);
  free(tg_h);
  free(nll_h);
  if (!st) {
    *nll_sum = sum;
    *n_pred = P;
  }
  return st;
}

fg_status fg_lm_grad(fg_lm *lm, const fg_lm_train_batch *b, float loss_scale, const fg_lm_grad_hooks *hooks,
                     double *nll_sum, size_t *n_pred) {
  if (!lm || !b || !nll_sum || !n_pred) return fg_fail(FG_ERR_INVALID_ARG, "fg_lm_grad: NULL argument");
  size_t n = 0, max_len = 0;
  fg_status st = g_check(lm, b, &n, &max_len);
  if (st) return st;
  g_ws w;
  memset(&w, 0, sizeof w);
  w.lm = lm;
  w.hk = hooks;
  w.n = n;
  w.s = fg_device_stream(lm->dev);
  const fg_lm_config *cf = &lm->cfg;
  w.seq_h = malloc(n * sizeof *w.seq_h);
  w.pos_h = malloc(n * sizeof *w.pos_h);
  w.list = malloc(n * cf->n_kv_head * sizeof *w.list);
  int32_t *pos32 = malloc(n * sizeof *pos32);
  if (!w.seq_h || !w.pos_h || !w.list || !pos32) st = fg_fail(FG_ERR_NOMEM, "fg_lm_grad: out of memory");
  for (size_t i = 0, t = 0; !st && i < b->n_seq; i++)
    for (size_t j = 0; j < b->len[i]; j++, t++) {
      w.seq_h[t] = (int32_t)i;
      w.pos_h[t] = j;
      pos32[t] = (int32_t)j;
    }
  if (!st) st = fg_lm_cache_create(lm, b->n_seq, max_len, &w.c);
  if (!st) st = g_alloc(&w);
  if (!st) st = fg_lm_act_reserve(lm, n, 1);
  fg_lm_act *a = &lm->act;
  if (!st) st = fg_device_copy(lm->dev, a->ids, b->ids, n * sizeof(int32_t), FG_COPY_H2D);
  if (!st) st = fg_device_copy(lm->dev, a->pos, pos32, n * sizeof(int32_t), FG_COPY_H2D);
  if (!st) st = fg_device_copy(lm->dev, a->seq, w.seq_h, n * sizeof(int32_t), FG_COPY_H2D);
  if (!st) st = fg_embed_rows(lm->dev, lm->tok_embd.data, lm->tok_embd.dtype, cf->n_vocab, cf->n_embd, a->ids, n,
                              cf->embd_scale, w.xs, w.s);
  float *q = NULL;
  for (size_t l = 0; l < cf->n_layer && !st; l++) st = g_layer_fwd(&w, l, true, &q);
  if (!st) st = g_head(&w, b, loss_scale, nll_sum, n_pred);
  for (size_t l = cf->n_layer; l-- > 0 && !st;) st = g_layer_bwd(&w, l);
  float *gemb = st ? NULL : g_wgrad(&w, 0, FG_LM_W_TOK_EMBD);
  if (gemb) st = fg_embed_backward(lm->dev, w.dx, a->ids, n, cf->n_vocab, cf->n_embd, cf->embd_scale, gemb, w.s);
  fg_status ss = fg_stream_sync(w.s);
  if (!st) st = ss;
  g_free(&w);
  free(pos32);
  return st;
}
