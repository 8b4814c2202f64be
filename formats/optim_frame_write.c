/* Optimizer frames: the layout rules shared by reader and writer, the little-endian
 * appender, and the writer (validate everything, then emit). */
#include <stdlib.h>
#include <string.h>

#include "core/name_table.h"
#include "formats/optim_frame_internal.h"
#include "formats/safetensors_internal.h"

const char *of_magic(fg_oframe_kind kind, int version) {
  const of_kind *k = of_kind_of(kind);
  return k && version >= 0 && version < 6 ? k->d.magics[version] : NULL;
}

const char *of_kind_name(fg_oframe_kind kind) {
  const of_kind *k = of_kind_of(kind);
  return k ? k->d.title : "unknown";
}

int fg_optim_frame_bufs_per_slot(fg_oframe_kind kind) {
  const of_kind *k = of_kind_of(kind);
  return k ? k->d.n_bufs : 0;
}

static bool mul_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }

bool of_buf_count(const fg_oframe *f, bool fallback, const fg_oframe_slot *s, int b, uint64_t *count) {
  const of_kind *k = of_kind_of(f->kind);
  if (k && k->buf_count) return k->buf_count(f, fallback, s, b, count);
  return mul_u64(s->rows, s->cols, count);
}

bool of_name_ok(const char *name, size_t len, const char **why, size_t *at) {
  *at = 0;
  if (len == 0) return *why = "an empty name", false;
  if (len > OF_MAX_NAME) return *why = "a name longer than 65535 bytes", false;
  const void *nul = memchr(name, 0, len);
  if (nul) return *at = (size_t)((const char *)nul - name), *why = "a NUL byte in the name", false;
  if (!st_utf8_valid((const uint8_t *)name, len, at)) return *why = "a name that is not UTF-8", false;
  return true;
}

static fg_name slot_name_at(const void *ctx, uint64_t i) {
  const fg_oframe_slot *s = (const fg_oframe_slot *)ctx + i;
  return (fg_name){s->name, s->name_len};
}

fg_status of_find_duplicate(const fg_oframe_slot *slots, size_t n, int64_t *dup, size_t *first) {
  *dup = -1;
  if (n < 2) return FG_OK;
  fg_name_table t = {0};
  fg_status st = fg_name_table_reset(&t, n);
  for (size_t i = 0; !st && i < n; i++) {
    int64_t prev;
    st = fg_name_table_insert(&t, slots[i].name, slots[i].name_len, i, slot_name_at, slots, &prev);
    if (!st && prev >= 0) {
      *dup = (int64_t)i;
      *first = (size_t)prev;
      break;
    }
  }
  fg_name_table_free(&t);
  return st;
}

void of_put(of_out *o, const void *src, size_t n) {
  if (o->oom || n == 0) return;
  if (o->cap - o->len < n) {
    size_t cap = o->cap ? o->cap : 256;
    while (cap - o->len < n) {
      if (cap > SIZE_MAX / 2) return (void)(o->oom = true);
      cap *= 2;
    }
    uint8_t *p = realloc(o->p, cap);
    if (!p) return (void)(o->oom = true);
    o->p = p;
    o->cap = cap;
  }
  memcpy(o->p + o->len, src, n);
  o->len += n;
}

void of_u8(of_out *o, uint8_t v) { of_put(o, &v, 1); }
void of_u16(of_out *o, uint16_t v) {
  uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  of_put(o, b, 2);
}
void of_u32(of_out *o, uint32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
  of_put(o, b, 4);
}
void of_u64(of_out *o, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  of_put(o, b, 8);
}

static bool any_master(const fg_oframe_slot *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i].has_master) return true;
  return false;
}

int of_pick_version(const fg_oframe *f) {
  const of_kind *k = of_kind_of(f->kind);
  if (k && k->d.n_bufs == 0) /* a set or FZT1: the one version its row has */
    for (int v = 0; v < 6; v++)
      if (k->d.magics[v]) return v;
  if (f->version) return f->version;
  if (any_master(f->slots, f->n_slots)) return 5;
  if (k && k->d.fallback_list && any_master(f->fallback, f->n_fallback)) return 5;
  if (k && k->d.untagged) return 3; /* f32 only: no v4 */
  int nb = fg_optim_frame_bufs_per_slot(f->kind);
  for (size_t i = 0; i < f->n_slots; i++)
    for (int b = 0; b < nb; b++)
      if (f->slots[i].bufs[b].dtype != FG_OFRAME_DTYPE_F32) return 4;
  return 3;
}

static fg_status check_slots(const fg_oframe *f, bool fallback, int version) {
  const fg_oframe_slot *slots = fallback ? f->fallback : f->slots;
  size_t n = fallback ? f->n_fallback : f->n_slots;
  const char *list = fallback ? "fallback slot" : "slot";
  const char *kind = of_kind_name(f->kind);
  if (n > UINT32_MAX) return fg_fail(FG_ERR_INVALID_ARG, "%s frame: %zu %ss (the count is a u32)", kind, n, list);
  if (n && !slots) return fg_fail(FG_ERR_INVALID_ARG, "%s frame: %zu %ss but no slot array", kind, n, list);
  int nb = fg_optim_frame_bufs_per_slot(f->kind);
  const bool untagged = of_kind_of(f->kind)->d.untagged;
  for (size_t i = 0; i < n; i++) {
    const fg_oframe_slot *s = &slots[i];
    const char *why;
    size_t at;
    if (!s->name && s->name_len) return fg_fail(FG_ERR_INVALID_ARG, "%s frame: %s %zu has no name", kind, list, i);
    if (!of_name_ok(s->name ? s->name : "", s->name_len, &why, &at))
      return fg_fail(FG_ERR_BAD_STRING, "%s frame: %s %zu: %s (byte %zu); names are 1..65535 bytes of UTF-8 "
                     "without NUL", kind, list, i, why, at);
    for (int b = 0; b < nb; b++) {
      const fg_oframe_buf *buf = &s->bufs[b];
      uint64_t want, bytes;
      if (!of_buf_count(f, fallback, s, b, &want) || !mul_u64(want, of_dtype_size(buf->dtype), &bytes) ||
          bytes > SIZE_MAX)
        return fg_fail(FG_ERR_INVALID_ARG, "%s frame: %s %zu \"%.*s\": dims %llux%llu overflow", kind, list, i,
                       (int)s->name_len, s->name, (unsigned long long)s->rows, (unsigned long long)s->cols);
      if ((unsigned)buf->dtype > FG_OFRAME_DTYPE_BF16)
        return fg_fail(FG_ERR_INVALID_ARG, "%s frame: %s %zu \"%.*s\": buffer %d has dtype %d (f32 0 or bf16 1)",
                       kind, list, i, (int)s->name_len, s->name, b, (int)buf->dtype);
      if (buf->count != want || (want && !buf->data))
        return fg_fail(FG_ERR_INVALID_ARG, "%s frame: %s %zu \"%.*s\": buffer %d holds %llu values%s, the layout "
                       "needs %llu", kind, list, i, (int)s->name_len, s->name, b, (unsigned long long)buf->count,
                       want && !buf->data ? " (no data)" : "", (unsigned long long)want);
      if (buf->dtype != FG_OFRAME_DTYPE_F32 && !of_tagged(f->kind, version))
        return fg_fail(FG_ERR_INVALID_ARG, "%s frame v%d: %s %zu \"%.*s\": buffer %d is bf16; %s%s", kind, version,
                       list, i, (int)s->name_len, s->name, b, untagged ? kind : "v3 holds f32 only",
                       untagged ? " state is always f32" : "");
    }
    if (s->has_master) {
      uint64_t n_el, bytes;
      if (version != 5)
        return fg_fail(FG_ERR_INVALID_ARG, "%s frame v%d: %s %zu \"%.*s\" has a master; only v5 carries masters",
                       kind, version, list, i, (int)s->name_len, s->name);
      if (!mul_u64(s->rows, s->cols, &n_el) || !mul_u64(n_el, 4, &bytes) || bytes > SIZE_MAX ||
          (n_el && !s->master))
        return fg_fail(FG_ERR_INVALID_ARG, "%s frame: %s %zu \"%.*s\": master of %llux%llu values missing or "
                       "too large", kind, list, i, (int)s->name_len, s->name, (unsigned long long)s->rows,
                       (unsigned long long)s->cols);
    }
  }
  int64_t dup;
  size_t first = 0;
  fg_status st = of_find_duplicate(slots, n, &dup, &first);
  if (st) return st;
  if (dup >= 0)
    return fg_fail(FG_ERR_DUPLICATE, "%s frame: %s %lld repeats the name \"%.*s\" of %s %zu", kind, list,
                   (long long)dup, (int)slots[dup].name_len, slots[dup].name, list, first);
  return FG_OK;
}

/* Every BOOL and ENUM byte 0 or 1, and the row's rule across fields. */
static fg_status check_header(const fg_oframe *f) {
  const of_kind *k = of_kind_of(f->kind);
  char msg[256] = "";
  size_t len = 0, n_flags = 0;
  bool bad = false;
  for (size_t i = 0; i < k->d.n_header; i++) {
    const fg_oframe_field *h = &k->d.header[i];
    if (h->type != FG_OFRAME_FIELD_BOOL && h->type != FG_OFRAME_FIELD_ENUM) continue;
    const uint64_t v = of_field_get(f, h);
    bad |= v > 1;
    len += (size_t)snprintf(msg + len, len < sizeof msg ? sizeof msg - len : 0, "%s%s byte %u", n_flags ? ", " : "",
                            h->key, (unsigned)v);
    n_flags++;
  }
  if (bad) return fg_fail(FG_ERR_RANGE, "%s frame: %s (0 or 1%s)", k->d.title, msg, n_flags > 1 ? " each" : "");
  if (k->header_rule && !k->header_rule(f, true, msg, sizeof msg))
    return fg_fail(FG_ERR_RANGE, "%s frame: %s", k->d.title, msg);
  return FG_OK;
}

fg_status of_validate(const fg_oframe *f, int depth) {
  if (!f) return fg_fail(FG_ERR_INVALID_ARG, "optimizer frame: NULL frame");
  if (!of_kind_of(f->kind)) return fg_fail(FG_ERR_INVALID_ARG, "optimizer frame: unknown kind %d", (int)f->kind);
  if (f->kind == FG_OFRAME_KIND_TENSORS) return of_validate_tensors(f);
  if (f->kind == FG_OFRAME_KIND_SET) {
    if (depth > 0) return fg_fail(FG_ERR_INVALID_ARG, "optimizer set: a member is itself a set");
    if (f->n_members > UINT32_MAX || (f->n_members && !f->members))
      return fg_fail(FG_ERR_INVALID_ARG, "optimizer set: %zu members (u32 count) without an array", f->n_members);
    for (size_t i = 0; i < f->n_members; i++) {
      if (f->members[i].kind == FG_OFRAME_KIND_TENSORS)
        return fg_fail(FG_ERR_INVALID_ARG, "optimizer set: member %zu is a tensor list", i);
      fg_status st = of_validate(&f->members[i], depth + 1);
      if (st) return fg_fail_prefix(st, "optimizer set member %zu: ", i);
    }
    return FG_OK;
  }
  int version = of_pick_version(f);
  if (!of_magic(f->kind, version))
    return fg_fail(FG_ERR_INVALID_ARG, "%s frame: no version %d", of_kind_name(f->kind), version);
  fg_status st = check_header(f);
  if (!st) st = check_slots(f, false, version);
  if (st) return st;
  const fg_oframe_kind_desc *d = &of_kind_of(f->kind)->d;
  if (d->fallback_list) return check_slots(f, true, version);
  if (d->embedded_adamw) {
    if (!f->embedded || f->embedded->kind != FG_OFRAME_KIND_ADAMW)
      return fg_fail(FG_ERR_INVALID_ARG, "%s frame: its fallback must be an AdamW frame", d->title);
    st = of_validate(f->embedded, depth + 1);
    if (st) return fg_fail_prefix(st, "%s fallback: ", d->title);
  }
  return FG_OK;
}

static void emit_slots(of_out *o, const fg_oframe *f, bool fallback, int version) {
  const fg_oframe_slot *slots = fallback ? f->fallback : f->slots;
  size_t n = fallback ? f->n_fallback : f->n_slots;
  const fg_oframe_kind_desc *d = &of_kind_of(f->kind)->d;
  const int nb = d->n_bufs;
  of_u32(o, (uint32_t)n);
  for (size_t i = 0; i < n; i++) {
    const fg_oframe_slot *s = &slots[i];
    of_u16(o, (uint16_t)s->name_len);
    of_put(o, s->name, s->name_len);
    of_u64(o, s->rows);
    of_u64(o, s->cols);
    if (d->step || fallback) of_u64(o, s->step);
    if (d->main_extras && !fallback) {
      of_u64(o, s->seed);
      of_u32(o, s->prev_norm_bits);
    }
    for (int b = 0; b < nb; b++) {
      if (of_tagged(f->kind, version)) of_u8(o, (uint8_t)s->bufs[b].dtype);
      of_put(o, s->bufs[b].data, (size_t)(s->bufs[b].count * of_dtype_size(s->bufs[b].dtype)));
    }
    if (version == 5) {
      of_u8(o, s->has_master ? 1 : 0);
      if (s->has_master) of_put(o, s->master, (size_t)(s->rows * s->cols * 4));
    }
  }
}

void of_emit(of_out *o, const fg_oframe *f) {
  if (f->kind == FG_OFRAME_KIND_SET) return of_emit_set(o, f);
  if (f->kind == FG_OFRAME_KIND_TENSORS) return of_emit_tensors(o, f);
  int version = of_pick_version(f);
  of_put(o, of_magic(f->kind, version), 4);
  const fg_oframe_kind_desc *d = &of_kind_of(f->kind)->d;
  for (size_t i = 0; i < d->n_header; i++) {
    const fg_oframe_field *h = &d->header[i];
    const uint64_t v = of_field_get(f, h);
    switch (of_field_bytes(h)) {
      case 1: of_u8(o, (uint8_t)v); break;
      case 4: of_u32(o, (uint32_t)v); break;
      default: of_u64(o, v); break;
    }
  }
  emit_slots(o, f, false, version);
  if (d->fallback_list) emit_slots(o, f, true, version);
  if (d->embedded_adamw) of_emit(o, f->embedded);
}

fg_status fg_optim_frame_serialize(const fg_oframe *f, uint8_t **out, size_t *out_len) {
  if (!out || !out_len) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_frame_serialize: NULL output");
  *out = NULL;
  *out_len = 0;
  fg_status st = of_validate(f, 0);
  if (st) return st;
  of_out o = {0};
  of_emit(&o, f);
  if (o.oom) {
    free(o.p);
    return fg_fail(FG_ERR_NOMEM, "%s frame: out of memory after %zu bytes", of_kind_name(f->kind), o.len);
  }
  *out = o.p;
  *out_len = o.len;
  return FG_OK;
}
