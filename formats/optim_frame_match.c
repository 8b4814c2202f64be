/* Optimizer frames: matching a parsed frame to a live optimizer's slots and header, with
 * Fucina's error classes, so that every optimizer's load checks the same way. */
#include <stdlib.h>
#include <string.h>

#include "core/name_table.h"
#include "formats/optim_frame_internal.h"

static fg_name expect_name_at(const void *ctx, uint64_t i) {
  const fg_oframe_expect *e = (const fg_oframe_expect *)ctx + i;
  return (fg_name){e->name, e->name_len};
}

static const char *dtype_name(fg_oframe_dtype d) { return d == FG_OFRAME_DTYPE_BF16 ? "bf16" : "f32"; }

fg_status fg_optim_frame_match(const fg_oframe *f, bool fallback, const fg_oframe_expect *expect, size_t n_expect,
                               size_t *map) {
  if (!f || (n_expect && !expect)) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_frame_match: NULL argument");
  int nb = fg_optim_frame_bufs_per_slot(f->kind);
  if (nb == 0 || (fallback && !of_kind_of(f->kind)->d.fallback_list))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_frame_match: a %s frame has no %sslot list", of_kind_name(f->kind),
                   fallback ? "fallback " : "");
  const fg_oframe_slot *slots = fallback ? f->fallback : f->slots;
  size_t n = fallback ? f->n_fallback : f->n_slots;
  const char *list = fallback ? "fallback slot" : "slot";
  const char *magic = of_magic(f->kind, f->version);
  fg_name_table t = {0};
  size_t *rec = malloc((n_expect ? n_expect : 1) * sizeof *rec);
  fg_status st = rec ? fg_name_table_reset(&t, n_expect) : fg_fail(FG_ERR_NOMEM, "optimizer frame: matching");
  for (size_t i = 0; !st && i < n_expect; i++) {
    int64_t dup;
    rec[i] = SIZE_MAX;
    st = fg_name_table_insert(&t, expect[i].name, expect[i].name_len, i, expect_name_at, expect, &dup);
    if (!st && dup >= 0)
      st = fg_fail(FG_ERR_INVALID_ARG, "fg_optim_frame_match: expected slots %lld and %zu share the name \"%.*s\"",
                   (long long)dup, i, (int)expect[i].name_len, expect[i].name);
  }
  for (size_t r = 0; !st && r < n; r++) {
    const fg_oframe_slot *s = &slots[r];
    int64_t k = fg_name_table_find(&t, s->name, s->name_len, expect_name_at, expect);
    if (k < 0) {
      st = fg_fail(FG_ERR_FRAME_UNKNOWN_NAME, "optimizer frame %s: %s %zu \"%.*s\": no such slot in the optimizer",
                   magic, list, r, (int)s->name_len, s->name);
      break;
    }
    const fg_oframe_expect *e = &expect[k];
    if (rec[k] != SIZE_MAX) {
      st = fg_fail(FG_ERR_DUPLICATE, "optimizer frame %s: %s %zu \"%.*s\": the name was already given by %s %zu",
                   magic, list, r, (int)s->name_len, s->name, list, rec[k]);
      break;
    }
    rec[k] = r;
    if (s->rows != e->rows || s->cols != e->cols) {
      st = fg_fail(FG_ERR_FRAME_SHAPE_MISMATCH, "optimizer frame %s: %s %zu \"%.*s\": dims %llu x %llu, the "
                   "optimizer's slot is %llu x %llu", magic, list, r, (int)s->name_len, s->name,
                   (unsigned long long)s->rows, (unsigned long long)s->cols, (unsigned long long)e->rows,
                   (unsigned long long)e->cols);
      break;
    }
    for (int b = 0; !st && b < nb; b++)
      if (s->bufs[b].dtype != e->dtypes[b])
        st = fg_fail(FG_ERR_FRAME_DTYPE_MISMATCH, "optimizer frame %s: %s %zu \"%.*s\": state buffer %d is %s, the "
                     "optimizer keeps %s (no conversion)", magic, list, r, (int)s->name_len, s->name, b,
                     dtype_name(s->bufs[b].dtype), dtype_name(e->dtypes[b]));
    if (!st && s->has_master && !e->is16)
      st = fg_fail(FG_ERR_FRAME_DTYPE_MISMATCH, "optimizer frame %s: %s %zu \"%.*s\": carries an f32 master, the "
                   "optimizer's parameter is f32", magic, list, r, (int)s->name_len, s->name);
  }
  for (size_t i = 0; !st && i < n_expect; i++)
    if (rec[i] == SIZE_MAX)
      st = fg_fail(FG_ERR_FRAME_MISSING_ENTRY, "optimizer frame %s: no record for the optimizer's %s %zu \"%.*s\"",
                   magic, list, i, (int)expect[i].name_len, expect[i].name);
  if (!st && map) memcpy(map, rec, n_expect * sizeof *map);
  fg_name_table_free(&t);
  free(rec);
  return st;
}

fg_status fg_optim_frame_check_header(const fg_oframe *f, const fg_oframe *want) {
  if (!f || !want) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_frame_check_header: NULL argument");
  if (f->kind != want->kind)
    return fg_fail(FG_ERR_BAD_MAGIC, "optimizer frame: a %s frame, expected a %s frame", of_kind_name(f->kind),
                   of_kind_name(want->kind));
  if (f->kind == FG_OFRAME_KIND_SET && f->n_members != want->n_members)
    return fg_fail(FG_ERR_FRAME_SHAPE_MISMATCH, "optimizer set: %zu members, the set has %zu", f->n_members,
                   want->n_members);
  /* The first header field, in wire order, that differs (f32 fields compare bits). */
  const of_kind *k = of_kind_of(f->kind);
  const char *field = NULL, *bits = "";
  unsigned long long got = 0, exp = 0;
  for (size_t i = 0; k && !field && i < k->d.n_header; i++) {
    const fg_oframe_field *h = &k->d.header[i];
    got = of_field_get(f, h);
    exp = of_field_get(want, h);
    if (got == exp) continue;
    field = h->label;
    bits = h->type == FG_OFRAME_FIELD_F32 ? " bits" : "";
  }
  if (field)
    return fg_fail(FG_ERR_FRAME_CONFIG_MISMATCH, "optimizer frame %s: header %s%s is %llu (0x%llx), the optimizer's "
                   "is %llu (0x%llx)", of_magic(f->kind, f->version), field, bits, got, got, exp, exp);
  return FG_OK;
}
