/* Attention's fronts (forgia/attention.h): one validation for every backend, then the
 * attention and attention_bwd kernel families (device/family_table.h). */
#include <math.h>
#include <stdint.h>

#include "device/backend.h"
#include "device/overlap.h"
#include "forgia/attention.h"
#include "forgia/elem/attention.h"
#include "forgia/elem/attention_bwd.h"

/* a * b into *r, false on overflow. */
static bool fg_at_mul(size_t a, size_t b, size_t *r) {
  if (a && b > SIZE_MAX / a) return false;
  *r = a * b;
  return true;
}

/* The checks the forward and the backward share: shape, sizes, scale. Fills the cache's,
 * q's and lse's element counts. */
static fg_status fg_at_geometry(const fg_attention_args *a, const char *what, size_t *cache_n, size_t *q_n,
                                size_t *heads_n) {
  if (!a->n_head || !a->n_kv_head || a->n_head % a->n_kv_head)
    return fg_fail(FG_ERR_INVALID_ARG,
                   "%s: n_head %zu, n_kv_head %zu: expected n_head a positive multiple of n_kv_head", what, a->n_head,
                   a->n_kv_head);
  if (!a->head_dim || !a->n_seq || !a->n_ctx)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: head_dim %zu, n_seq %zu, n_ctx %zu: all must be positive", what,
                   a->head_dim, a->n_seq, a->n_ctx);
  size_t cache = 0, qn = 0, heads = 0;
  if (!fg_at_mul(a->n_seq, a->n_kv_head, &cache) || !fg_at_mul(cache, a->n_ctx, &cache) ||
      !fg_at_mul(cache, a->head_dim, &cache) || cache > SIZE_MAX / 4)
    return fg_fail(FG_ERR_OVERFLOW, "%s: a cache of %zu x %zu x %zu x %zu floats overflows", what, a->n_seq,
                   a->n_kv_head, a->n_ctx, a->head_dim);
  if (!fg_at_mul(a->n_tok, a->n_head, &heads) || !fg_at_mul(heads, a->head_dim, &qn) || qn > SIZE_MAX / 4)
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu tokens x %zu heads x %zu floats overflow", what, a->n_tok, a->n_head,
                   a->head_dim);
  if (a->n_ctx > (size_t)INT32_MAX + 1 || a->n_seq > (size_t)INT32_MAX + 1)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: n_seq %zu, n_ctx %zu: positions and sequence ids are int32", what, a->n_seq,
                   a->n_ctx);
  if (!isfinite(a->scale)) return fg_fail(FG_ERR_INVALID_ARG, "%s: scale %g is not finite", what, (double)a->scale);
  *cache_n = cache, *q_n = qn, *heads_n = heads;
  return FG_OK;
}

fg_status fg_attention_forward(fg_device *dev, const fg_attention_args *a, fg_stream *s) {
  const char *what = "fg_attention_forward";
  if (!a) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL args", what);
  size_t cache = 0, qn = 0, heads = 0;
  const fg_status st = fg_at_geometry(a, what, &cache, &qn, &heads);
  if (st) return st;
  if (!a->n_tok) return dev ? FG_OK : fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  const char *names[] = {"q", "k", "v", "pos", "out"};
  const void *ptrs[] = {a->q, a->k, a->v, a->pos, a->out};
  for (int i = 0; i < 5; i++)
    if (!ptrs[i]) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, names[i]);
  const char *in_names[] = {"q", "k", "v", "pos", "seq"};
  const void *in[] = {a->q, a->k, a->v, a->pos, a->seq};
  const size_t inb[] = {qn * 4, cache * 4, cache * 4, a->n_tok * 4, a->n_tok * 4};
  for (int i = 0; i < 5; i++) {
    if (fg_bytes_overlap(a->out, qn * 4, in[i], inb[i]))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: out overlaps %s", what, in_names[i]);
    if (fg_bytes_overlap(a->lse, heads * 4, in[i], inb[i]))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: lse overlaps %s", what, in_names[i]);
  }
  if (fg_bytes_overlap(a->out, qn * 4, a->lse, heads * 4))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: out overlaps lse", what);
  const fg_attention_call c = {.n_tok = a->n_tok, .n_head = a->n_head, .n_kv_head = a->n_kv_head,
                               .head_dim = a->head_dim, .n_seq = a->n_seq, .n_ctx = a->n_ctx, .window = a->window,
                               .q = a->q, .k = a->k, .v = a->v, .seq = a->seq, .pos = a->pos, .scale = a->scale,
                               .out = a->out, .lse = a->lse};
  return fg_family_attention(dev, &c, s, what);
}

fg_status fg_attention_backward(fg_device *dev, const fg_attention_args *a, const fg_attention_grads *g,
                                fg_stream *s) {
  const char *what = "fg_attention_backward";
  if (!a) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL args", what);
  if (!g) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL grads", what);
  size_t cache = 0, qn = 0, heads = 0;
  const fg_status st = fg_at_geometry(a, what, &cache, &qn, &heads);
  if (st) return st;
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  /* dk and dv are written whole even without tokens (+0 everywhere), so they are always
   * needed; the rest only when there are tokens to read. */
  const char *names[] = {"dk", "dv", "q", "k", "v", "pos", "out", "lse", "dout", "dq"};
  const void *ptrs[] = {g->dk, g->dv, a->q, a->k, a->v, a->pos, a->out, a->lse, g->dout, g->dq};
  for (int i = 0; i < (a->n_tok ? 10 : 2); i++)
    if (!ptrs[i]) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, names[i]);
  const char *out_names[] = {"dq", "dk", "dv"};
  float *outs[] = {g->dq, g->dk, g->dv};
  const size_t outb[] = {a->n_tok ? qn * 4 : 0, cache * 4, cache * 4};
  const char *in_names[] = {"q", "k", "v", "pos", "seq", "out", "lse", "dout"};
  const void *in[] = {a->q, a->k, a->v, a->pos, a->seq, a->out, a->lse, g->dout};
  const size_t inb[] = {qn * 4, cache * 4, cache * 4, a->n_tok * 4, a->n_tok * 4, qn * 4, heads * 4, qn * 4};
  for (int o = 0; o < 3; o++) {
    for (int i = 0; i < 8; i++)
      if (fg_bytes_overlap(outs[o], outb[o], in[i], inb[i]))
        return fg_fail(FG_ERR_INVALID_ARG, "%s: %s overlaps %s", what, out_names[o], in_names[i]);
    for (int p = o + 1; p < 3; p++)
      if (fg_bytes_overlap(outs[o], outb[o], outs[p], outb[p]))
        return fg_fail(FG_ERR_INVALID_ARG, "%s: %s overlaps %s", what, out_names[o], out_names[p]);
  }
  const fg_attention_bwd_call c = {
      .f = {.n_tok = a->n_tok, .n_head = a->n_head, .n_kv_head = a->n_kv_head, .head_dim = a->head_dim,
            .n_seq = a->n_seq, .n_ctx = a->n_ctx, .window = a->window, .q = a->q, .k = a->k, .v = a->v,
            .seq = a->seq, .pos = a->pos, .scale = a->scale, .out = a->out, .lse = a->lse},
      .dout = g->dout, .dq = g->dq, .dk = g->dk, .dv = g->dv};
  return fg_family_attention_bwd(dev, &c, s, what);
}
