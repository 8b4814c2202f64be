/* One APOLLO step, Fucina's Apollo.step: every main slot with a gradient (projection
 * regenerated when its chunk step / gap changed, R by the GEMM, the low-rank moments, the
 * channel scaling, U, the norm-growth limiter, the scaled-SGD step with decay after it), then
 * the legacy-HF AdamW fallback, one launch per group of slots with the same step count. The
 * only host round trip is the projection's scalar gaussian (libm on the host, forgia/rng.h),
 * once per update_proj_gap steps of a slot. The GEMM runs in the device's mode: with
 * FG_GEMM_EXACT every bit is Fucina's (scalar backend), with the fast mode R differs from it
 * only by the GEMM's rounding. */
#include <math.h>
#include <string.h>

#include "forgia/apollo.h"
#include "forgia/gemm.h"
#include "forgia/reduce.h"
#include "forgia/rng.h"
#include "training/optim_apollo_internal.h"
#include "training/optim_kind.h"

static fg_status fg_apollo_main_step(fg_optim *o, size_t i, fg_stream *s) {
  const fg_optim_config *c = &o->c;
  struct fg_apollo_state *a = o->apollo;
  fg_optim_slot *sl = &o->slots[i];
  fg_apollo_main *m = &a->mains[i];
  const size_t rows = m->rows, cols = m->cols, rank = (size_t)c->rank, n = rows * cols;
  fg_status st = FG_OK;
  const uint64_t chunk = sl->step / c->update_proj_gap;
  if (m->proj_chunk != chunk) {
    fg_rng_spec r;
    memset(&r, 0, sizeof r);
    r.kind = FG_RNG_GAUSS;
    r.seed = m->seed + chunk * 0x9E3779B97F4A7C15ull;
    r.scale = 1.0f / sqrtf((float)c->rank);
    st = fg_rng_fill(o->dev, &r, m->proj, FG_F32, rank * (m->tall ? cols : rows), s);
    if (st) return st;
    m->proj_chunk = chunk;
  }
  if (m->tall) /* R = G P^T: (rows x cols) (cols x rank) */
    st = fg_gemm(o->dev, FG_GEMM_DEFAULT, false, true, rows, rank, cols, 1.0f, sl->t->grad, FG_F32, cols, m->proj,
                 FG_F32, cols, 0.0f, a->r, rank, s);
  else /* R = P^T G: (rank x rows) (rows x cols) */
    st = fg_gemm(o->dev, FG_GEMM_DEFAULT, true, false, rank, cols, rows, 1.0f, m->proj, FG_F32, rank, sl->t->grad,
                 FG_F32, cols, 0.0f, a->r, cols, s);
  if (st) return st;
  const uint64_t t = sl->step + 1;
  fg_op_params p;
  fg_apollo_pack_moment(c, t, 0.0f, &p);
  fg_op_args g;
  memset(&g, 0, sizeof g);
  g.n = m->len_c;
  g.ptr[0] = sl->m, g.ptr[1] = sl->v, g.ptr[2] = a->r;
  g.dtype[0] = g.dtype[1] = g.dtype[2] = FG_F32;
  st = fg_op_run(o->dev, FG_OP_APOLLO_MOMENT, &p, &g, 1, s);
  const fg_apollo_layout layout = c->scale_type == FG_APOLLO_TENSOR ? FG_APOLLO_LAYOUT_WHOLE : m->tall ? FG_APOLLO_LAYOUT_TALL : FG_APOLLO_LAYOUT_WIDE;
  if (st == FG_OK)
    st = fg_apollo_scaling(o->dev, layout, rows, cols, rank, sl->m, sl->v, a->r, c->eps, m->scaling, s);
  const float sqrt_scale = sqrtf(c->apollo_scale);
  const bool scaled = c->apollo_scale != 1.0f;
  if (st == FG_OK)
    st = fg_apollo_build(o->dev, layout, rows, cols, sl->t->grad, m->scaling,
                         c->scale_front && scaled ? sqrt_scale : 1.0f, a->u, s);
  fg_apollo_pack_apply(c, t, 0.0f, &p);
  if (!c->disable_norm_growth_limiter) {
    if (st == FG_OK) st = fg_reduce_array(o->dev, FG_REDUCE_SUMSQ, a->u, FG_F32, n, &a->scalars[0], s);
    if (st == FG_OK) st = fg_apollo_limit(o->dev, &a->scalars[0], m->prev_norm, &a->scalars[1], s);
    p.dscalar = &a->scalars[1];
  }
  if (st) return st;
  memset(&g, 0, sizeof g);
  g.n = n;
  g.ptr[0] = sl->master ? (void *)sl->master : sl->t->data;
  g.dtype[0] = sl->master ? FG_F32 : sl->t->dtype;
  g.ptr[1] = a->u;
  g.dtype[1] = FG_F32;
  if (sl->master) {
    g.ptr[4] = sl->t->data;
    g.dtype[4] = sl->t->dtype;
  }
  st = fg_op_run(o->dev, sl->master ? FG_OP_APOLLO_APPLY_MASTER : FG_OP_APOLLO_APPLY, &p, &g, 1, s);
  if (st == FG_OK) sl->step = t;
  return st;
}

/* The fallback slots with a gradient whose next count is t and whose masterness is master,
 * in one launch. */
static fg_status fg_apollo_fallback_launch(fg_optim *o, uint64_t t, bool master, fg_stream *s) {
  const fg_optim_config *c = &o->c;
  struct fg_apollo_state *a = o->apollo;
  size_t k = 0;
  for (size_t i = 0; i < a->nfb; i++) {
    const fg_optim_slot *sl = &a->fb[i];
    if (!sl->t->grad || sl->step + 1 != t || (sl->master != NULL) != master) continue;
    fg_op_args *g = &o->args[k++];
    memset(g, 0, sizeof *g);
    g->n = (size_t)sl->t->numel;
    g->ptr[0] = master ? (void *)sl->master : sl->t->data;
    g->dtype[0] = master ? FG_F32 : sl->t->dtype;
    g->ptr[1] = sl->t->grad, g->ptr[2] = sl->m, g->ptr[3] = sl->v;
    g->dtype[1] = g->dtype[2] = g->dtype[3] = FG_F32;
    if (master) {
      g->ptr[4] = sl->t->data;
      g->dtype[4] = sl->t->dtype;
    }
  }
  if (!k) return FG_OK;
  fg_op_params p;
  fg_apollo_pack_fallback(c, t, 0.0f, &p);
  return fg_op_run(o->dev, master ? FG_OP_APOLLO_HF_ADAMW_MASTER : FG_OP_APOLLO_HF_ADAMW, &p, o->args, k, s);
}

fg_status fg_apollo_step(fg_optim *o, fg_stream *s) {
  struct fg_apollo_state *a = o->apollo;
  const char *k = fg_optim_kind_name(o->c.kind);
  for (size_t i = 0; i < o->n; i++) {
    if (!o->slots[i].t->grad) continue;
    fg_status st = fg_apollo_main_step(o, i, s);
    if (st) return fg_fail_prefix(st, "%s step, '%s': ", k, o->slots[i].name);
  }
  /* The distinct next counts of the fallback, in first-seen order. */
  for (size_t i = 0; i < a->nfb; i++) {
    const fg_optim_slot *sl = &a->fb[i];
    if (!sl->t->grad) continue;
    const uint64_t t = sl->step + 1;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++) seen = a->fb[j].t->grad && a->fb[j].step + 1 == t;
    if (seen) continue;
    fg_status st = fg_apollo_fallback_launch(o, t, false, s);
    if (st == FG_OK) st = fg_apollo_fallback_launch(o, t, true, s);
    if (st) return fg_fail_prefix(st, "%s step (fallback): ", k);
  }
  for (size_t i = 0; i < a->nfb; i++)
    if (a->fb[i].t->grad) a->fb[i].step++;
  return FG_OK;
}
