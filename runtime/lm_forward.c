/* The forward pass: one batch of tokens through every layer, the keys and values appended to
 * the cache, logits for the rows asked for. Every block is a kernel family or an op of the
 * device layer; the architecture only switches blocks on and off (runtime/lm_arch.c).
 *
 *   x = embed(ids) * embd_scale
 *   per layer:  h = norm(x);  q, k, v = h W (+ b);  [q, k = head norms];  rope(q, k)
 *               cache <- k, v;  o = attention(q, cache);  t = o Wo;  [t = norm(t)];  x = x + t
 *               h = norm(x);  a = glu(h Wgate, h Wup);  t = a Wdown;  [t = norm(t)];  x = x + t
 *   logits = norm(x[rows]) Wout
 *
 * Activations are f32 buffers sized for the largest batch seen (lm->act), kept between calls
 * so a token-by-token generation allocates nothing. All work is queued on the device's own
 * stream and waited for once at the end. */
#include <stdlib.h>
#include <string.h>

#include "forgia/attention.h"
#include "forgia/embed.h"
#include "forgia/linear.h"
#include "forgia/ops.h"
#include "forgia/rmsnorm.h"
#include "runtime/lm_internal.h"

void fg_lm_act_free(fg_lm *lm) {
  fg_lm_act *a = &lm->act;
  void *p[] = {a->x, a->h, a->q, a->q2, a->k, a->k2, a->v, a->o, a->t, a->g, a->u, a->a, a->sel, a->logits, a->ids, a->pos, a->seq, a->ones};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) fg_device_mem_free(lm->dev, p[i]);
  memset(a, 0, sizeof *a);
}

static fg_status fg_lm_alloc(fg_lm *lm, size_t floats, void **out) {
  return fg_device_mem_alloc(lm->dev, (floats ? floats : 1) * sizeof(float), out);
}

fg_status fg_lm_act_reserve(fg_lm *lm, size_t cap, size_t logits_rows) {
  fg_lm_act *a = &lm->act;
  const fg_lm_config *c = &lm->cfg;
  fg_status st = FG_OK;
  if (cap > a->cap) {
    fg_lm_act_free(lm); /* logits too: reallocated below */
    const size_t E = c->n_embd, Q = c->n_head * c->head_dim, KV = c->n_kv_head * c->head_dim, F = c->n_ff;
    struct { void **p; size_t n; } want[] = {
        {(void **)&a->x, cap * E},   {(void **)&a->h, cap * E},    {(void **)&a->q, cap * Q},
        {(void **)&a->q2, cap * Q},  {(void **)&a->k, cap * KV},   {(void **)&a->k2, cap * KV},
        {(void **)&a->v, cap * KV},  {(void **)&a->o, cap * Q},    {(void **)&a->t, cap * E},
        {(void **)&a->g, cap * F},   {(void **)&a->u, cap * F},    {(void **)&a->a, cap * F},
        {(void **)&a->sel, cap * E}, {(void **)&a->ids, cap},      {(void **)&a->pos, cap},
        {(void **)&a->seq, cap},     {(void **)&a->ones, cap}};
    for (size_t i = 0; i < sizeof want / sizeof want[0] && !st; i++) st = fg_lm_alloc(lm, want[i].n, want[i].p);
    if (!st) {
      float *ones = malloc(cap * sizeof(float));
      if (!ones) st = fg_fail(FG_ERR_NOMEM, "fg_lm_forward: out of memory");
      for (size_t i = 0; ones && i < cap; i++) ones[i] = 1.0f;
      if (!st) st = fg_device_copy(lm->dev, a->ones, ones, cap * sizeof(float), FG_COPY_H2D);
      free(ones);
    }
    if (st) {
      fg_lm_act_free(lm);
      return st;
    }
    a->cap = cap;
  }
  if (logits_rows > a->logits_cap) {
    fg_device_mem_free(lm->dev, a->logits);
    a->logits = NULL;
    a->logits_cap = 0;
    const size_t n = logits_rows * c->n_vocab;
    if (n / c->n_vocab != logits_rows) return fg_fail(FG_ERR_OVERFLOW, "fg_lm_forward: logits overflow");
    st = fg_lm_alloc(lm, n, (void **)&a->logits);
    if (st) return st;
    a->logits_cap = logits_rows;
  }
  return FG_OK;
}

void fg_lm_set_proj_hook(fg_lm *lm, fg_lm_proj_hook fn, void *user) {
  if (!lm) return;
  lm->hook = fn;
  lm->hook_user = fn ? user : NULL;
}

/* y = x W^T (+ b). */
fg_status fg_lm_linear_bias(fg_lm *lm, const float *x, size_t n, const fg_lm_w *w, const fg_lm_w *b, float *y,
                            fg_stream *s) {
  fg_status st = fg_linear(lm->dev, lm->mode, x, n, w->cols, w->data, w->dtype, w->rows, y, false, s);
  /* The bias as a rank-1 product ones (n x 1) * b (1 x rows), added to y: exact mode's
   * 0 + 1 * b_j = b_j, then y + b_j, the same bits on every device. */
  if (!st && b && b->data)
    st = fg_gemm(lm->dev, FG_GEMM_EXACT, false, false, n, w->rows, 1, 1.0f, lm->act.ones, FG_F32, 1, b->data, b->dtype,
                 w->rows, 1.0f, y, w->rows, s);
  return st;
}

/* y = x W^T (+ b), then the hook (layer l's projection `which`). */
static fg_status fg_lm_project(fg_lm *lm, size_t l, fg_lm_proj which, const float *x, size_t n, const fg_lm_w *w,
                            const fg_lm_w *b, float *y, fg_stream *s) {
  fg_status st = fg_lm_linear_bias(lm, x, n, w, b, y, s);
  if (!st && lm->hook) st = lm->hook(lm->hook_user, l, which, x, n, w->cols, w->rows, y, s);
  return st;
}

static fg_status fg_lm_norm(fg_lm *lm, const float *x, size_t rows, const fg_lm_w *w, float *y, fg_stream *s) {
  return fg_rmsnorm_forward(lm->dev, x, FG_F32, w->data, w->dtype, rows, w->cols, lm->cfg.norm_eps, lm->cfg.norm_offset,
                            y, NULL, s);
}

/* x = x + t (one f32 add per element: 1 * t is t exactly). */
static fg_status fg_lm_add(fg_lm *lm, float *x, const float *t, size_t n, fg_stream *s) {
  fg_op_params p = {.f = {1.0f}};
  fg_op_args a = {.ptr = {x, (void *)t}, .dtype = {FG_F32, FG_F32}, .n = n};
  return fg_op_run(lm->dev, FG_OP_AXPY, &p, &a, 1, s);
}

/* Appends the batch's keys or values to the cache: one row of head_dim per (token, kv head),
 * added onto the zeroed slots in one op-layer call. */
fg_status fg_lm_cache_put(fg_lm *lm, fg_lm_cache *c, float *base, const float *src, size_t n, const int32_t *seq,
                          const size_t *pos, fg_op_args *list, fg_stream *s) {
  const fg_lm_config *cf = &lm->cfg;
  const size_t hd = cf->head_dim, nkv = cf->n_kv_head;
  for (size_t t = 0; t < n; t++)
    for (size_t h = 0; h < nkv; h++) {
      const size_t sq = seq ? (size_t)seq[t] : 0;
      fg_op_args *a = &list[t * nkv + h];
      memset(a, 0, sizeof *a);
      a->ptr[0] = base + ((sq * nkv + h) * c->n_ctx + pos[t]) * hd;
      a->ptr[1] = (void *)(src + (t * nkv + h) * hd);
      a->dtype[0] = a->dtype[1] = FG_F32;
      a->n = hd;
    }
  fg_op_params p = {.f = {1.0f}};
  return fg_op_run(lm->dev, FG_OP_AXPY, &p, list, n * nkv, s);
}

static fg_status fg_lm_glu_run(fg_lm *lm, float *out, const float *gate, const float *up, size_t n, fg_stream *s) {
  fg_op_params p = {0};
  fg_op_args a = {.ptr = {out, (void *)gate, (void *)up}, .dtype = {FG_F32, FG_F32, FG_F32}, .n = n};
  return fg_op_run(lm->dev, lm->cfg.glu == FG_LM_SWIGLU ? FG_OP_SWIGLU : FG_OP_GEGLU, &p, &a, 1, s);
}

static fg_status fg_lm_layer_fwd(fg_lm *lm, fg_lm_cache *c, size_t l, size_t n, const int32_t *seq_h,
                                 const size_t *pos_h, fg_op_args *list, fg_stream *s) {
  const fg_lm_config *cf = &lm->cfg;
  const fg_lm_layer *L = &lm->layers[l];
  fg_lm_act *a = &lm->act;
  const size_t E = cf->n_embd, hd = cf->head_dim;
  float *q = a->q, *k = a->k;
  fg_status st;
  if ((st = fg_lm_norm(lm, a->x, n, &L->attn_norm, a->h, s)) || (st = fg_lm_project(lm, l, FG_LM_PROJ_Q, a->h, n, &L->wq, &L->bq, q, s)) ||
      (st = fg_lm_project(lm, l, FG_LM_PROJ_K, a->h, n, &L->wk, &L->bk, k, s)) || (st = fg_lm_project(lm, l, FG_LM_PROJ_V, a->h, n, &L->wv, &L->bv, a->v, s)))
    return st;
  if (cf->qk_norm) {
    if ((st = fg_lm_norm(lm, q, n * cf->n_head, &L->q_norm, a->q2, s)) ||
        (st = fg_lm_norm(lm, k, n * cf->n_kv_head, &L->k_norm, a->k2, s)))
      return st;
    q = a->q2;
    k = a->k2;
  }
  const float *table = L->windowed ? lm->rope_local : lm->rope_global;
  if ((st = fg_rope_apply(lm->dev, q, n, cf->n_head, hd, cf->rope_dims, cf->rope_layout, a->pos, table, lm->rope_pos,
                          false, s)) ||
      (st = fg_rope_apply(lm->dev, k, n, cf->n_kv_head, hd, cf->rope_dims, cf->rope_layout, a->pos, table, lm->rope_pos,
                          false, s)))
    return st;
  float *kc = c->kv + (2 * l) * c->per_tensor, *vc = c->kv + (2 * l + 1) * c->per_tensor;
  if ((st = fg_lm_cache_put(lm, c, kc, k, n, seq_h, pos_h, list, s)) ||
      (st = fg_lm_cache_put(lm, c, vc, a->v, n, seq_h, pos_h, list, s)))
    return st;
  const fg_attention_args at = {.n_tok = n, .n_head = cf->n_head, .n_kv_head = cf->n_kv_head, .head_dim = hd,
                                .n_seq = c->n_seq, .n_ctx = c->n_ctx, .q = q, .k = kc, .v = vc,
                                .seq = seq_h ? a->seq : NULL, .pos = a->pos,
                                .window = L->windowed ? cf->sliding_window : 0, .scale = cf->attn_scale, .out = a->o};
  if ((st = fg_attention_forward(lm->dev, &at, s)) || (st = fg_lm_project(lm, l, FG_LM_PROJ_O, a->o, n, &L->wo, NULL, a->t, s))) return st;
  const float *res = a->t;
  if (cf->post_norms) {
    if ((st = fg_lm_norm(lm, a->t, n, &L->post_attn_norm, a->h, s))) return st;
    res = a->h;
  }
  if ((st = fg_lm_add(lm, a->x, res, n * E, s)) || (st = fg_lm_norm(lm, a->x, n, &L->ffn_norm, a->h, s)) ||
      (st = fg_lm_project(lm, l, FG_LM_PROJ_GATE, a->h, n, &L->w_gate, NULL, a->g, s)) || (st = fg_lm_project(lm, l, FG_LM_PROJ_UP, a->h, n, &L->w_up, NULL, a->u, s)) ||
      (st = fg_lm_glu_run(lm, a->a, a->g, a->u, n * cf->n_ff, s)) || (st = fg_lm_project(lm, l, FG_LM_PROJ_DOWN, a->a, n, &L->w_down, NULL, a->t, s)))
    return st;
  res = a->t;
  if (cf->post_norms) {
    if ((st = fg_lm_norm(lm, a->t, n, &L->post_ffn_norm, a->h, s))) return st;
    res = a->h;
  }
  return fg_lm_add(lm, a->x, res, n * E, s);
}

/* Zeroes the slots a failed batch may have written, so the cache stays as it was. */
static void fg_lm_cache_unwrite(fg_lm_cache *c, const size_t *old_len, const size_t *new_len) {
  const fg_lm_config *cf = &c->lm->cfg;
  for (size_t sq = 0; sq < c->n_seq; sq++) {
    if (new_len[sq] == old_len[sq]) continue;
    for (size_t t = 0; t < 2 * cf->n_layer; t++)
      for (size_t h = 0; h < cf->n_kv_head; h++)
        fg_device_memset(c->lm->dev, c->kv + t * c->per_tensor + ((sq * cf->n_kv_head + h) * c->n_ctx + old_len[sq]) * cf->head_dim,
                         0, (new_len[sq] - old_len[sq]) * cf->head_dim * sizeof(float));
  }
}

fg_status fg_lm_forward(fg_lm *lm, fg_lm_cache *c, const fg_lm_batch *b, const float **logits, size_t *n_out) {
  const char *what = "fg_lm_forward";
  if (!lm || !c || !b || !logits || !n_out) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL argument", what);
  if (c->lm != lm) return fg_fail(FG_ERR_INVALID_ARG, "%s: the cache belongs to another model", what);
  const size_t n = b->n_tok;
  if (!n) return fg_fail(FG_ERR_INVALID_ARG, "%s: empty batch", what);
  if (!b->ids) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL ids", what);
  const fg_lm_config *cf = &lm->cfg;
  size_t *pos = malloc(n * sizeof *pos);
  int32_t *pos32 = malloc(n * sizeof *pos32);
  size_t *len = malloc(2 * c->n_seq * sizeof *len);
  fg_op_args *list = malloc(n * cf->n_kv_head * sizeof *list);
  fg_status st = (!pos || !pos32 || !len || !list) ? fg_fail(FG_ERR_NOMEM, "%s: out of memory", what) : FG_OK;
  size_t n_rows = 0;
  if (!st) {
    memcpy(len, c->len, c->n_seq * sizeof *len);
    memcpy(len + c->n_seq, c->len, c->n_seq * sizeof *len);
    for (size_t t = 0; t < n && !st; t++) {
      const int32_t id = b->ids[t], sq = b->seq ? b->seq[t] : 0;
      if (id < 0 || (size_t)id >= cf->n_vocab)
        st = fg_fail(FG_ERR_RANGE, "%s: token %zu has id %d, outside the vocabulary of %zu", what, t, (int)id, cf->n_vocab);
      else if (sq < 0 || (size_t)sq >= c->n_seq)
        st = fg_fail(FG_ERR_RANGE, "%s: token %zu is in sequence %d, the cache holds %zu", what, t, (int)sq, c->n_seq);
      else if (len[c->n_seq + (size_t)sq] >= c->n_ctx)
        st = fg_fail(FG_ERR_RANGE, "%s: sequence %d is full (%zu positions)", what, (int)sq, c->n_ctx);
      else {
        pos[t] = len[c->n_seq + (size_t)sq]++;
        pos32[t] = (int32_t)pos[t];
      }
      if (!b->logits_rows || b->logits_rows[t]) n_rows++;
    }
  }
  if (!st && !n_rows) st = fg_fail(FG_ERR_INVALID_ARG, "%s: no row asks for logits", what);
  if (!st) st = fg_lm_act_reserve(lm, n, n_rows);
  fg_stream *s = fg_device_stream(lm->dev);
  fg_lm_act *a = &lm->act;
  if (!st) st = fg_device_copy(lm->dev, a->ids, b->ids, n * sizeof(int32_t), FG_COPY_H2D);
  if (!st) st = fg_device_copy(lm->dev, a->pos, pos32, n * sizeof(int32_t), FG_COPY_H2D);
  if (!st && b->seq) st = fg_device_copy(lm->dev, a->seq, b->seq, n * sizeof(int32_t), FG_COPY_H2D);
  bool wrote = false;
  if (!st) st = fg_embed_rows(lm->dev, lm->tok_embd.data, lm->tok_embd.dtype, cf->n_vocab, cf->n_embd, a->ids, n,
                              cf->embd_scale, a->x, s);
  for (size_t l = 0; l < cf->n_layer && !st; l++) {
    wrote = true;
    st = fg_lm_layer_fwd(lm, c, l, n, b->seq, pos, list, s);
  }
  const float *rows = a->x;
  if (!st && n_rows < n) {
    size_t r = 0;
    for (size_t t = 0; t < n && !st; t++)
      if (b->logits_rows[t])
        st = fg_device_copy_async(lm->dev, a->sel + (r++) * cf->n_embd, a->x + t * cf->n_embd, cf->n_embd * sizeof(float),
                                  FG_COPY_D2D, s);
    rows = a->sel;
  }
  if (!st) st = fg_lm_norm(lm, rows, n_rows, &lm->out_norm, a->h, s);
  if (!st) st = fg_linear(lm->dev, lm->mode, a->h, n_rows, cf->n_embd, lm->output.data, lm->output.dtype, cf->n_vocab,
                          a->logits, false, s);
  fg_status ss = fg_stream_sync(s);
  if (!st) st = ss;
  if (!st) {
    memcpy(c->len, len + c->n_seq, c->n_seq * sizeof *len);
    *logits = a->logits;
    *n_out = n_rows;
  } else if (wrote) {
    fg_lm_cache_unwrite(c, len, len + c->n_seq);
  }
  free(pos);
  free(pos32);
  free(len);
  free(list);
  return st;
}
