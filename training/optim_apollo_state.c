/* APOLLO's state through Fucina's FZP3/FZP5 frame (forgia/optim_frame.h): the header config,
 * the main slots (step, seed, prev_norm, the low-rank m and v) and the fallback's (step, m,
 * v), each list matched by name in its own name space. On load the stored seed wins, the
 * limiter's norm is taken as stored, and the projection regenerates on the next step. */
#include <stdlib.h>
#include <string.h>

#include "training/optim_apollo_internal.h"
#include "training/optim_kind.h"

/* The header this optimizer writes (and a loaded frame must match): its descriptor's. */
static void fg_apollo_header(const fg_optim *o, fg_oframe *f) {
  const fg_optim_kind_ops *k = fg_optim_kind_ops_of(o->c.kind);
  memset(f, 0, sizeof *f);
  f->kind = k->d.frame_kind;
  k->header(&o->c, f);
}

/* One record of slot sl (len values per moment). */
static fg_status fg_apollo_fill_slot(fg_optim *o, const fg_optim_slot *sl, size_t len, fg_oframe_slot *r) {
  r->name = sl->name;
  r->name_len = strlen(sl->name);
  fg_optim_slot_dims(sl->t, &r->rows, &r->cols);
  r->step = sl->step;
  fg_status s = FG_OK;
  for (int b = 0; b < 2 && s == FG_OK; b++) {
    r->bufs[b].dtype = FG_OFRAME_DTYPE_F32;
    r->bufs[b].count = len;
    s = fg_optim_state_download(o->dev, b ? sl->v : sl->m, FG_F32, len, &r->bufs[b].data);
  }
  if (s == FG_OK && sl->master) {
    r->has_master = true;
    s = fg_optim_state_download(o->dev, sl->master, FG_F32, (size_t)sl->t->numel, &r->master);
  }
  return s;
}

fg_status fg_apollo_state_fill(fg_optim *o, fg_oframe *f) {
  const struct fg_apollo_state *a = o->apollo;
  fg_apollo_header(o, f);
  f->slots = calloc(o->n ? o->n : 1, sizeof *f->slots);
  f->fallback = calloc(a->nfb ? a->nfb : 1, sizeof *f->fallback);
  if (!f->slots || !f->fallback) return fg_fail(FG_ERR_NOMEM, "apollo state: out of memory");
  f->n_slots = o->n;
  f->n_fallback = a->nfb;
  fg_status s = FG_OK;
  for (size_t i = 0; i < o->n && s == FG_OK; i++) {
    fg_oframe_slot *r = &f->slots[i];
    r->seed = a->mains[i].seed;
    s = fg_device_copy(o->dev, &r->prev_norm_bits, a->mains[i].prev_norm, 4, FG_COPY_D2H);
    if (s == FG_OK) s = fg_apollo_fill_slot(o, &o->slots[i], a->mains[i].len_c, r);
  }
  for (size_t i = 0; i < a->nfb && s == FG_OK; i++)
    s = fg_apollo_fill_slot(o, &a->fb[i], (size_t)a->fb[i].t->numel, &f->fallback[i]);
  return s;
}

static void fg_apollo_expect(const fg_optim_slot *sl, fg_oframe_expect *e) {
  e->name = sl->name;
  e->name_len = strlen(sl->name);
  fg_optim_slot_dims(sl->t, &e->rows, &e->cols);
  e->dtypes[0] = e->dtypes[1] = FG_OFRAME_DTYPE_F32;
  e->is16 = sl->master != NULL;
}

/* Checks f against o; on success map (o->n entries) and fmap (nfb entries) give each slot's
 * record. */
static fg_status fg_apollo_map(fg_optim *o, const fg_oframe *f, size_t *map, size_t *fmap) {
  const struct fg_apollo_state *a = o->apollo;
  fg_oframe want;
  fg_apollo_header(o, &want);
  fg_status s = fg_optim_frame_check_header(f, &want);
  if (s) return s;
  const size_t n = o->n > a->nfb ? o->n : a->nfb;
  fg_oframe_expect *ex = calloc(n ? n : 1, sizeof *ex);
  if (!ex) return fg_fail(FG_ERR_NOMEM, "apollo state: out of memory");
  for (size_t i = 0; i < o->n; i++) fg_apollo_expect(&o->slots[i], &ex[i]);
  s = fg_optim_frame_match(f, false, ex, o->n, map);
  if (s == FG_OK) {
    for (size_t i = 0; i < a->nfb; i++) fg_apollo_expect(&a->fb[i], &ex[i]);
    s = fg_optim_frame_match(f, true, ex, a->nfb, fmap);
    if (s) s = fg_fail_prefix(s, "fallback: ");
  }
  free(ex);
  return s;
}

static fg_status fg_apollo_maps(fg_optim *o, size_t **map, size_t **fmap) {
  *map = calloc(o->n ? o->n : 1, sizeof **map);
  *fmap = calloc(o->apollo->nfb ? o->apollo->nfb : 1, sizeof **fmap);
  if (*map && *fmap) return FG_OK;
  free(*map);
  free(*fmap);
  return fg_fail(FG_ERR_NOMEM, "apollo state: out of memory");
}

fg_status fg_apollo_state_check(fg_optim *o, const fg_oframe *f) {
  size_t *map, *fmap;
  fg_status s = fg_apollo_maps(o, &map, &fmap);
  if (s) return s;
  s = fg_apollo_map(o, f, map, fmap);
  free(map);
  free(fmap);
  return s;
}

static fg_status fg_apollo_commit_slot(fg_optim *o, fg_optim_slot *sl, const fg_oframe_slot *r) {
  fg_status s = FG_OK;
  for (int b = 0; b < 2 && s == FG_OK; b++)
    if (r->bufs[b].count)
      s = fg_device_copy(o->dev, b ? sl->v : sl->m, r->bufs[b].data, (size_t)r->bufs[b].count * 4, FG_COPY_H2D);
  if (s == FG_OK && sl->master)
    s = r->has_master ? fg_device_copy(o->dev, sl->master, r->master, (size_t)sl->t->numel * 4, FG_COPY_H2D)
                      : fg_convert(o->dev, sl->master, FG_F32, sl->t->data, sl->t->dtype, (size_t)sl->t->numel, NULL);
  if (s == FG_OK) sl->step = r->step;
  return s;
}

fg_status fg_apollo_state_commit(fg_optim *o, const fg_oframe *f) {
  struct fg_apollo_state *a = o->apollo;
  size_t *map, *fmap;
  fg_status s = fg_apollo_maps(o, &map, &fmap);
  if (s) return s;
  s = fg_apollo_map(o, f, map, fmap);
  /* Device copies of validated bytes cannot fail for a reason the frame caused; a device
   * failure here is reported as it is. */
  for (size_t i = 0; i < o->n && s == FG_OK; i++) {
    const fg_oframe_slot *r = &f->slots[map[i]];
    fg_apollo_main *m = &a->mains[i];
    s = fg_device_copy(o->dev, m->prev_norm, &r->prev_norm_bits, 4, FG_COPY_H2D);
    if (s == FG_OK) s = fg_apollo_commit_slot(o, &o->slots[i], r);
    if (s == FG_OK) {
      m->seed = r->seed;
      m->proj_chunk = UINT64_MAX;
    }
  }
  for (size_t i = 0; i < a->nfb && s == FG_OK; i++) s = fg_apollo_commit_slot(o, &a->fb[i], &f->fallback[fmap[i]]);
  free(map);
  free(fmap);
  return s;
}
