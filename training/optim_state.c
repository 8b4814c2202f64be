/* Optimizer state through Fucina's frames (forgia/optim_frame.h): save writes the frame
 * Fucina's saveState writes for the same state; load matches records by name, validates the
 * whole frame and stages every buffer before the first byte of live state changes. */
#include <stdlib.h>
#include <string.h>

#include "forgia/optim_frame.h"
#include "training/optim_kind.h"

static fg_oframe_dtype fg_optim_wire(fg_dtype d) { return d == FG_BF16 ? FG_OFRAME_DTYPE_BF16 : FG_OFRAME_DTYPE_F32; }

/* The frame header this optimizer writes (and a loaded frame must match): its descriptor's. */
static void fg_optim_header(const fg_optim *o, fg_oframe *f) {
  const fg_optim_kind_ops *k = fg_optim_kind_ops_of(o->c.kind);
  memset(f, 0, sizeof *f);
  f->kind = k->d.frame_kind;
  if (k->header) k->header(&o->c, f);
}

void fg_optim_slot_dims(const fg_tensor *t, uint64_t *rows, uint64_t *cols) {
  *rows = t->ndim ? t->shape[0] : 1;
  *cols = 1;
  for (int i = 1; i < t->ndim; i++) *cols *= t->shape[i];
}

/* State buffer b of slot sl (the kind's state[b]): its device memory and dtype; NULL (and
 * f32) for a buffer the config does not keep (SGD without momentum). */
static void *fg_slot_buf(const fg_optim *o, const fg_optim_slot *sl, int b, fg_dtype *dt) {
  const fg_optim_kind_desc *d = &fg_optim_kind_ops_of(o->c.kind)->d;
  *dt = (size_t)b < d->n_state ? fg_optim_state_dtype(&o->c, &d->state[b]) : FG_F32;
  return b == 0 ? sl->m : sl->v;
}

static void fg_frame_list_free(fg_oframe_slot *slots, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(slots[i].bufs[0].data);
    free(slots[i].bufs[1].data);
    free(slots[i].master);
  }
  free(slots);
}

void fg_optim_state_clear(fg_oframe *f) {
  if (!f) return;
  fg_frame_list_free(f->slots, f->n_slots);
  fg_frame_list_free(f->fallback, f->n_fallback);
  if (f->embedded) {
    fg_optim_state_clear(f->embedded);
    free(f->embedded);
  }
  for (size_t i = 0; i < f->n_members; i++) fg_optim_state_clear(&f->members[i]);
  free(f->members);
  memset(f, 0, sizeof *f);
}

fg_status fg_optim_state_download(fg_device *dev, const void *src, fg_dtype dt, size_t n, uint8_t **out) {
  const size_t bytes = n * (dt == FG_BF16 ? 2 : 4);
  *out = NULL;
  if (!bytes || !src) return FG_OK;
  *out = malloc(bytes);
  if (!*out) return fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
  return fg_device_copy(dev, *out, src, bytes, FG_COPY_D2H);
}

fg_status fg_optim_state_fill(fg_optim *o, fg_oframe *f) {
  const fg_optim_kind_ops *k = fg_optim_kind_ops_of(o->c.kind);
  if (k->state_fill) return k->state_fill(o, f);
  fg_optim_header(o, f);
  f->n_slots = o->n;
  f->slots = calloc(o->n ? o->n : 1, sizeof *f->slots);
  if (!f->slots) return fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
  fg_status s = FG_OK;
  const int nb = fg_optim_frame_bufs_per_slot(f->kind);
  for (size_t i = 0; i < o->n && s == FG_OK; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    fg_oframe_slot *r = &f->slots[i];
    r->name = sl->name;
    r->name_len = strlen(sl->name);
    fg_optim_slot_dims(sl->t, &r->rows, &r->cols);
    r->step = sl->step;
    for (int b = 0; b < nb && s == FG_OK; b++) {
      fg_dtype dt;
      void *src = fg_slot_buf(o, sl, b, &dt);
      r->bufs[b].dtype = fg_optim_wire(dt);
      r->bufs[b].count = src ? sl->t->numel : 0;
      s = fg_optim_state_download(o->dev, src, dt, (size_t)r->bufs[b].count, &r->bufs[b].data);
    }
    if (s == FG_OK && sl->master) {
      r->has_master = true;
      s = fg_optim_state_download(o->dev, sl->master, FG_F32, (size_t)sl->t->numel, &r->master);
    }
  }
  if (s == FG_OK && o->fallback) { /* an embedded optimizer (Muon's AdamW): its whole frame follows */
    f->embedded = calloc(1, sizeof *f->embedded);
    s = f->embedded ? fg_optim_state_fill(o->fallback, f->embedded) : fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
  }
  return s;
}

fg_status fg_optim_save_state(fg_optim *o, uint8_t **out, size_t *out_len) {
  if (!o || !out || !out_len) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_save_state: NULL argument");
  *out = NULL;
  *out_len = 0;
  fg_oframe f;
  memset(&f, 0, sizeof f);
  fg_status s = fg_optim_state_fill(o, &f);
  if (s == FG_OK) s = fg_optim_frame_serialize(&f, out, out_len);
  fg_optim_state_clear(&f);
  return s;
}

/* What o expects of the records of its main slot list, into ex (o->n entries). */
static void fg_optim_expect(const fg_optim *o, fg_oframe_expect *ex) {
  for (size_t i = 0; i < o->n; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    ex[i].name = sl->name;
    ex[i].name_len = strlen(sl->name);
    fg_optim_slot_dims(sl->t, &ex[i].rows, &ex[i].cols);
    for (int b = 0; b < 2; b++) {
      fg_dtype dt;
      fg_slot_buf(o, sl, b, &dt);
      ex[i].dtypes[b] = fg_optim_wire(dt);
    }
    ex[i].is16 = sl->master != NULL;
  }
}

/* Checks f against o; on success map[i] is the record of slot i (map: o->n entries). */
static fg_status fg_optim_state_map(fg_optim *o, const fg_oframe *f, size_t *map) {
  fg_oframe want;
  fg_optim_header(o, &want);
  fg_status s = fg_optim_frame_check_header(f, &want);
  if (s) return s;
  fg_oframe_expect *ex = calloc(o->n ? o->n : 1, sizeof *ex);
  if (!ex) return fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
  fg_optim_expect(o, ex);
  s = fg_optim_frame_match(f, false, ex, o->n, map);
  free(ex);
  return s;
}

fg_status fg_optim_state_check(fg_optim *o, const fg_oframe *f) {
  const fg_optim_kind_ops *k = fg_optim_kind_ops_of(o->c.kind);
  if (k->state_check) return k->state_check(o, f);
  size_t *map = calloc(o->n ? o->n : 1, sizeof *map);
  if (!map) return fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
  fg_status s = fg_optim_state_map(o, f, map);
  free(map);
  if (s == FG_OK && o->fallback) { /* Muon is whole only with its fallback */
    s = f->embedded ? fg_optim_state_check(o->fallback, f->embedded)
                    : fg_fail(FG_ERR_FRAME_MISSING_ENTRY, "%s frame without its AdamW fallback frame", k->d.name);
    if (s) s = fg_fail_prefix(s, "%s fallback: ", k->d.name);
  }
  return s;
}

fg_status fg_optim_state_commit(fg_optim *o, const fg_oframe *f) {
  const fg_optim_kind_ops *k = fg_optim_kind_ops_of(o->c.kind);
  if (k->state_commit) return k->state_commit(o, f);
  size_t *map = calloc(o->n ? o->n : 1, sizeof *map);
  if (!map) return fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
  fg_status s = fg_optim_state_map(o, f, map);
  /* Device copies of validated bytes cannot fail for a reason the frame caused; a device
   * failure here is reported as it is. */
  const int nb = fg_optim_frame_bufs_per_slot(f->kind);
  const bool step = fg_optim_frame_describe(f->kind)->step; /* Muon's records carry no step */
  for (size_t i = 0; i < o->n && s == FG_OK; i++) {
    fg_optim_slot *sl = &o->slots[i];
    const fg_oframe_slot *r = &f->slots[map[i]];
    for (int b = 0; b < nb && s == FG_OK; b++) {
      fg_dtype dt;
      void *dst = fg_slot_buf(o, sl, b, &dt);
      const size_t bytes = (size_t)r->bufs[b].count * (dt == FG_BF16 ? 2 : 4);
      if (dst && bytes) s = fg_device_copy(o->dev, dst, r->bufs[b].data, bytes, FG_COPY_H2D);
    }
    if (s == FG_OK && sl->master) {
      s = r->has_master ? fg_device_copy(o->dev, sl->master, r->master, (size_t)sl->t->numel * 4, FG_COPY_H2D)
                        : fg_convert(o->dev, sl->master, FG_F32, sl->t->data, sl->t->dtype, (size_t)sl->t->numel, NULL);
    }
    if (s == FG_OK && step) sl->step = r->step;
  }
  free(map);
  if (s == FG_OK && o->fallback) s = fg_optim_state_commit(o->fallback, f->embedded);
  return s;
}

fg_status fg_optim_load_state(fg_optim *o, const uint8_t *data, size_t len) {
  if (!o || (len && !data)) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_load_state: NULL argument");
  const char *k = fg_optim_kind_name(o->c.kind);
  fg_oframe *f = NULL;
  fg_status s = fg_optim_frame_parse(data, len, &f);
  if (s == FG_OK) s = fg_optim_state_check(o, f);
  if (s == FG_OK) s = fg_optim_state_commit(o, f);
  fg_optim_frame_free(f);
  return s ? fg_fail_prefix(s, "%s state: ", k) : FG_OK;
}
