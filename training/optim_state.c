/* Optimizer state through Fucina's frames (forgia/optim_frame.h): save writes the frame
 * Fucina's saveState writes for the same state; load matches records by name, validates the
 * whole frame and stages every buffer before the first byte of live state changes. */
#include <stdlib.h>
#include <string.h>

#include "forgia/optim_frame.h"
#include "training/optim_internal.h"

static fg_oframe_kind fg_optim_frame_kind(fg_optim_kind k) {
  return k == FG_OPTIM_ADAMW ? FG_OFRAME_KIND_ADAMW : k == FG_OPTIM_ADAM ? FG_OFRAME_KIND_ADAM : FG_OFRAME_KIND_SGD;
}

static fg_oframe_dtype fg_optim_wire(fg_dtype d) { return d == FG_BF16 ? FG_OFRAME_DTYPE_BF16 : FG_OFRAME_DTYPE_F32; }

static uint32_t fg_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* The frame header this optimizer writes (and a loaded frame must match). */
static void fg_optim_header(const fg_optim *o, fg_oframe *f) {
  memset(f, 0, sizeof *f);
  f->kind = fg_optim_frame_kind(o->c.kind);
  if (o->c.kind == FG_OPTIM_SGD) {
    f->sgd.momentum_bits = fg_bits(o->c.momentum);
    f->sgd.dampening_bits = fg_bits(o->c.dampening);
    f->sgd.nesterov = o->c.nesterov;
  }
}

/* Fucina's matrix view: rows = dim 0, cols = the product of the rest. */
static void fg_slot_dims(const fg_tensor *t, uint64_t *rows, uint64_t *cols) {
  *rows = t->ndim ? t->shape[0] : 1;
  *cols = 1;
  for (int i = 1; i < t->ndim; i++) *cols *= t->shape[i];
}

/* Buffer b of slot sl: its device memory and dtype, or NULL for SGD without momentum. */
static void *fg_slot_buf(const fg_optim *o, const fg_optim_slot *sl, int b, fg_dtype *dt) {
  *dt = b == 0 ? o->c.state_dtype : o->c.second_moment_dtype;
  if (o->c.kind == FG_OPTIM_SGD && o->c.momentum == 0.0f) *dt = FG_F32;
  return b == 0 ? sl->m : sl->v;
}

static void fg_frame_slots_free(fg_oframe *f) {
  for (size_t i = 0; i < f->n_slots; i++) {
    free(f->slots[i].bufs[0].data);
    free(f->slots[i].bufs[1].data);
    free(f->slots[i].master);
  }
  free(f->slots);
}

fg_status fg_optim_save_state(fg_optim *o, uint8_t **out, size_t *out_len) {
  if (!o || !out || !out_len) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_save_state: NULL argument");
  *out = NULL;
  *out_len = 0;
  fg_oframe f;
  fg_optim_header(o, &f);
  f.n_slots = o->n;
  f.slots = calloc(o->n ? o->n : 1, sizeof *f.slots);
  fg_status s = f.slots ? FG_OK : fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
  const int nb = fg_optim_frame_bufs_per_slot(f.kind);
  for (size_t i = 0; i < o->n && s == FG_OK; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    fg_oframe_slot *r = &f.slots[i];
    r->name = sl->name;
    r->name_len = strlen(sl->name);
    fg_slot_dims(sl->t, &r->rows, &r->cols);
    r->step = sl->step;
    for (int b = 0; b < nb && s == FG_OK; b++) {
      fg_dtype dt;
      void *src = fg_slot_buf(o, sl, b, &dt);
      r->bufs[b].dtype = fg_optim_wire(dt);
      r->bufs[b].count = src ? sl->t->numel : 0;
      const size_t bytes = (size_t)r->bufs[b].count * (dt == FG_BF16 ? 2 : 4);
      if (!bytes) continue;
      r->bufs[b].data = malloc(bytes);
      s = r->bufs[b].data ? fg_device_copy(o->dev, r->bufs[b].data, src, bytes, FG_COPY_D2H)
                          : fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
    }
    if (s == FG_OK && sl->master) {
      r->has_master = true;
      r->master = malloc(sl->t->numel ? sl->t->numel * 4 : 1);
      s = r->master ? fg_device_copy(o->dev, r->master, sl->master, sl->t->numel * 4, FG_COPY_D2H)
                    : fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
    }
  }
  if (s == FG_OK) s = fg_optim_frame_serialize(&f, out, out_len);
  for (size_t i = 0; i < f.n_slots; i++) f.slots[i].name = NULL; /* borrowed */
  fg_frame_slots_free(&f);
  return s;
}

fg_status fg_optim_load_state(fg_optim *o, const uint8_t *data, size_t len) {
  if (!o || (len && !data)) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_load_state: NULL argument");
  const char *k = fg_optim_kind_name(o->c.kind);
  fg_oframe *f = NULL;
  fg_status s = fg_optim_frame_parse(data, len, &f);
  if (s) return fg_fail_prefix(s, "%s state: ", k);
  fg_oframe want;
  fg_optim_header(o, &want);
  s = fg_optim_frame_check_header(f, &want);
  fg_oframe_expect *ex = calloc(o->n ? o->n : 1, sizeof *ex);
  size_t *map = calloc(o->n ? o->n : 1, sizeof *map);
  if (s == FG_OK && (!ex || !map)) s = fg_fail(FG_ERR_NOMEM, "optimizer state: out of memory");
  for (size_t i = 0; i < o->n && s == FG_OK; i++) {
    const fg_optim_slot *sl = &o->slots[i];
    ex[i].name = sl->name;
    ex[i].name_len = strlen(sl->name);
    fg_slot_dims(sl->t, &ex[i].rows, &ex[i].cols);
    for (int b = 0; b < 2; b++) {
      fg_dtype dt;
      fg_slot_buf(o, sl, b, &dt);
      ex[i].dtypes[b] = fg_optim_wire(dt);
    }
    ex[i].is16 = sl->master != NULL;
  }
  if (s == FG_OK) s = fg_optim_frame_match(f, false, ex, o->n, map);
  /* Everything is valid: commit. Device copies of validated bytes cannot fail for a reason
   * the frame caused; a device failure here is reported as it is. */
  const int nb = fg_optim_frame_bufs_per_slot(f ? f->kind : FG_OFRAME_KIND_SGD);
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
    if (s == FG_OK) sl->step = r->step;
  }
  free(ex);
  free(map);
  fg_optim_frame_free(f);
  return s ? fg_fail_prefix(s, "%s state: ", k) : FG_OK;
}
