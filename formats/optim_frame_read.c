/* Optimizer frames: the strict reader. Every length is checked against what remains of
 * the input before anything is allocated, so a hostile count or dims cannot make a large
 * allocation; a failure frees whatever was built and returns nothing. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/optim_frame_internal.h"

fg_status of_rd_fail(const of_rd *r, fg_status s, size_t at, const char *fmt, ...) {
  char msg[512], where[192] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (r->list && r->name)
    snprintf(where, sizeof where, " %s %zu \"%.*s\":", r->list, r->idx, (int)(r->name_len > 64 ? 64 : r->name_len),
             r->name);
  else if (r->list)
    snprintf(where, sizeof where, " %s %zu:", r->list, r->idx);
  return fg_fail(s, "optimizer frame %s: offset %zu:%s %s", r->magic ? r->magic : "(magic)", at, where, msg);
}

fg_status of_need(of_rd *r, uint64_t n, const char *what) {
  uint64_t left = r->len - r->off;
  if (n <= left) return FG_OK;
  return of_rd_fail(r, FG_ERR_TRUNCATED, r->off, "%s needs %llu bytes, %llu remain", what, (unsigned long long)n,
                    (unsigned long long)left);
}

static uint64_t get_le(of_rd *r, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)r->p[r->off + i] << (8 * i);
  r->off += (size_t)n;
  return v;
}
uint8_t of_get_u8(of_rd *r) { return (uint8_t)get_le(r, 1); }
uint16_t of_get_u16(of_rd *r) { return (uint16_t)get_le(r, 2); }
uint32_t of_get_u32(of_rd *r) { return (uint32_t)get_le(r, 4); }
uint64_t of_get_u64(of_rd *r) { return get_le(r, 8); }

/* Copies n bytes (already checked present) into a fresh allocation. */
static fg_status take_bytes(of_rd *r, uint64_t n, uint8_t **out) {
  *out = NULL;
  if (n == 0) return FG_OK;
  uint8_t *p = malloc((size_t)n);
  if (!p) return of_rd_fail(r, FG_ERR_NOMEM, r->off, "allocating %llu bytes", (unsigned long long)n);
  memcpy(p, r->p + r->off, (size_t)n);
  r->off += (size_t)n;
  *out = p;
  return FG_OK;
}

static fg_status read_bool(of_rd *r, const char *what, uint8_t *v) {
  size_t at = r->off;
  *v = of_get_u8(r);
  if (*v > 1) return of_rd_fail(r, FG_ERR_RANGE, at, "%s byte is %u, expected 0 or 1", what, *v);
  return FG_OK;
}

/* The row's header fields in wire order; a BOOL or ENUM byte above 1 is FG_ERR_RANGE. */
static fg_status read_header(of_rd *r, fg_oframe *f) {
  const of_kind *k = of_kind_of(f->kind);
  uint64_t need = 0;
  for (size_t i = 0; i < k->d.n_header; i++) need += of_field_bytes(&k->d.header[i]);
  fg_status st = FG_OK;
  if (need && (st = of_need(r, need, k->d.header_what))) return st;
  size_t at = r->off;
  for (size_t i = 0; i < k->d.n_header; i++) {
    const fg_oframe_field *h = &k->d.header[i];
    at = r->off;
    uint64_t v;
    switch (of_field_bytes(h)) {
      case 1: {
        char what[96];
        if (h->type == FG_OFRAME_FIELD_ENUM)
          snprintf(what, sizeof what, "%s (%s 0, %s 1)", h->label, h->names[0], h->names[1]);
        else
          snprintf(what, sizeof what, "%s", h->label);
        uint8_t b;
        if ((st = read_bool(r, what, &b))) return st;
        v = b;
        break;
      }
      case 4: v = of_get_u32(r); break;
      default: v = of_get_u64(r); break;
    }
    of_field_set(f, h, v);
  }
  char why[256];
  if (k->header_rule && !k->header_rule(f, false, why, sizeof why)) return of_rd_fail(r, FG_ERR_RANGE, at, "%s", why);
  return FG_OK;
}

static fg_status read_name(of_rd *r, fg_oframe_slot *s) {
  fg_status st = of_need(r, 2, "the name length");
  if (st) return st;
  size_t at = r->off;
  s->name_len = of_get_u16(r);
  if (s->name_len == 0) return of_rd_fail(r, FG_ERR_BAD_STRING, at, "empty name (names are 1..65535 bytes)");
  if ((st = of_need(r, s->name_len, "the name"))) return st;
  const char *why;
  size_t bad;
  if (!of_name_ok((const char *)r->p + r->off, s->name_len, &why, &bad))
    return of_rd_fail(r, FG_ERR_BAD_STRING, r->off + bad, "%s: expected UTF-8 without NUL", why);
  s->name = malloc(s->name_len + 1);
  if (!s->name) return of_rd_fail(r, FG_ERR_NOMEM, at, "allocating a name");
  memcpy(s->name, r->p + r->off, s->name_len);
  s->name[s->name_len] = '\0';
  r->off += s->name_len;
  r->name = s->name;
  r->name_len = s->name_len;
  return FG_OK;
}

static fg_status read_slot(of_rd *r, fg_oframe *f, bool fallback, int version, fg_oframe_slot *s) {
  fg_status st = read_name(r, s);
  if (st) return st;
  const fg_oframe_kind_desc *d = &of_kind_of(f->kind)->d;
  const bool extras = d->main_extras && !fallback, step = d->step || fallback;
  uint64_t fixed = 16 + (step ? 8 : 0) + (extras ? 12 : 0);
  if ((st = of_need(r, fixed, extras ? "dims, step, seed and prev_norm" : "dims and step"))) return st;
  size_t dims_at = r->off;
  s->rows = of_get_u64(r);
  s->cols = of_get_u64(r);
  if (step) s->step = of_get_u64(r);
  if (extras) {
    s->seed = of_get_u64(r);
    s->prev_norm_bits = of_get_u32(r);
  }
  uint64_t n_el;
  if (__builtin_mul_overflow(s->rows, s->cols, &n_el))
    return of_rd_fail(r, FG_ERR_BAD_SHAPE, dims_at, "dims %llu x %llu overflow", (unsigned long long)s->rows,
                      (unsigned long long)s->cols);
  s->n_bufs = d->n_bufs;
  for (int b = 0; b < s->n_bufs; b++) {
    fg_oframe_buf *buf = &s->bufs[b];
    const char *what = d->buf_names[b];
    buf->dtype = FG_OFRAME_DTYPE_F32;
    if (of_tagged(f->kind, version)) {
      if ((st = of_need(r, 1, "the state dtype tag"))) return st;
      size_t at = r->off;
      uint8_t tag = of_get_u8(r);
      if (tag > FG_OFRAME_DTYPE_BF16)
        return of_rd_fail(r, FG_ERR_BAD_DTYPE, at, "state %s has dtype tag %u, expected 0 (f32) or 1 (bf16)", what,
                          tag);
      buf->dtype = (fg_oframe_dtype)tag;
    }
    uint64_t count, bytes;
    if (!of_buf_count(f, fallback, s, b, &count) || __builtin_mul_overflow(count, of_dtype_size(buf->dtype), &bytes))
      return of_rd_fail(r, FG_ERR_BAD_SHAPE, dims_at, "state %s of dims %llu x %llu overflows", what,
                        (unsigned long long)s->rows, (unsigned long long)s->cols);
    char need[64];
    snprintf(need, sizeof need, "state %s (%llu values)", what, (unsigned long long)count);
    if ((st = of_need(r, bytes, need))) return st;
    buf->count = count;
    if ((st = take_bytes(r, bytes, &buf->data))) return st;
  }
  if (version != 5) return FG_OK;
  if ((st = of_need(r, 1, "the master flag"))) return st;
  uint8_t has;
  if ((st = read_bool(r, "master flag", &has))) return st;
  if (!has) return FG_OK;
  uint64_t bytes;
  if (__builtin_mul_overflow(n_el, 4, &bytes))
    return of_rd_fail(r, FG_ERR_BAD_SHAPE, dims_at, "master of dims %llu x %llu overflows",
                      (unsigned long long)s->rows, (unsigned long long)s->cols);
  char need[64];
  snprintf(need, sizeof need, "the f32 master (%llu values)", (unsigned long long)n_el);
  if ((st = of_need(r, bytes, need))) return st;
  s->has_master = true;
  return take_bytes(r, bytes, &s->master);
}

static fg_status read_slots(of_rd *r, fg_oframe *f, bool fallback, int version) {
  fg_status st = of_need(r, 4, fallback ? "the fallback slot count" : "the slot count");
  if (st) return st;
  size_t at = r->off;
  uint32_t n = of_get_u32(r);
  if (n > (r->len - r->off) / OF_MIN_SLOT)
    return of_rd_fail(r, FG_ERR_TRUNCATED, at, "%u slots need at least %u bytes each, %zu remain", n, OF_MIN_SLOT,
                      r->len - r->off);
  fg_oframe_slot *slots = n ? calloc(n, sizeof *slots) : NULL;
  if (n && !slots) return of_rd_fail(r, FG_ERR_NOMEM, at, "allocating %u slots", n);
  if (fallback) {
    f->fallback = slots;
    f->n_fallback = n;
  } else {
    f->slots = slots;
    f->n_slots = n;
  }
  r->list = fallback ? "fallback slot" : "slot";
  for (uint32_t i = 0; i < n; i++) {
    r->idx = i;
    r->name = NULL;
    if ((st = read_slot(r, f, fallback, version, &slots[i]))) return st;
  }
  r->name = NULL;
  int64_t dup;
  size_t first = 0;
  if ((st = of_find_duplicate(slots, n, &dup, &first))) return st;
  r->list = NULL;
  if (dup >= 0)
    return of_rd_fail(r, FG_ERR_DUPLICATE, at, "%s %lld repeats the name \"%.*s\" of %s %zu",
                      fallback ? "fallback slot" : "slot", (long long)dup, (int)slots[dup].name_len, slots[dup].name,
                      fallback ? "fallback slot" : "slot", first);
  return FG_OK;
}

/* Maps a magic to (kind, version); an unknown one gives BAD_MAGIC, or BAD_VERSION when it
 * names a known frame family with an unknown version. */
static fg_status read_magic(of_rd *r, fg_oframe *f, bool allow_set) {
  fg_status st = of_need(r, 4, "the frame magic");
  if (st) return st;
  const uint8_t *m = r->p + r->off;
  char families[16] = "", expected[160] = "";
  size_t nf = 0, ne = 0;
  for (size_t k = 0; k < of_kind_count(); k++) {
    const fg_oframe_kind_desc *d = &of_kind_of((fg_oframe_kind)k)->d;
    ne += (size_t)snprintf(expected + ne, ne < sizeof expected ? sizeof expected - ne : 0, "%s%s", k ? ", " : "",
                           d->magic_list);
    for (int v = 0; v < 6; v++) {
      const char *magic = d->magics[v];
      if (!magic) continue;
      if (nf + 1 < sizeof families && !memchr(families, magic[2], nf)) families[nf++] = magic[2];
      if (memcmp(m, magic, 4) != 0) continue;
      if (d->kind == FG_OFRAME_KIND_SET && !allow_set)
        return of_rd_fail(r, FG_ERR_BAD_MAGIC, r->off, "an optimizer set (FZO3) where a member frame was expected "
                          "(sets do not nest)");
      f->kind = d->kind;
      f->version = v;
      r->magic = magic;
      r->off += 4;
      return FG_OK;
    }
  }
  char shown[20];
  snprintf(shown, sizeof shown, "%02x %02x %02x %02x", m[0], m[1], m[2], m[3]);
  if (m[0] == 'F' && m[1] == 'Z' && memchr(families, m[2], nf))
    return of_rd_fail(r, FG_ERR_BAD_VERSION, r->off, "magic %s names a frame family with an unknown version", shown);
  return of_rd_fail(r, FG_ERR_BAD_MAGIC, r->off, "magic %s is no optimizer frame (%s)", shown, expected);
}

fg_status of_parse_frame(of_rd *r, fg_oframe *f, bool allow_set) {
  const char *outer = r->magic;
  r->list = NULL;
  fg_status st = read_magic(r, f, allow_set);
  if (st) return st;
  if (f->kind == FG_OFRAME_KIND_SET) {
    st = of_parse_set(r, f);
  } else if (f->kind == FG_OFRAME_KIND_TENSORS) {
    st = of_parse_tensors(r, f);
  } else {
    st = read_header(r, f);
    const fg_oframe_kind_desc *d = &of_kind_of(f->kind)->d;
    if (!st) st = read_slots(r, f, false, f->version);
    if (!st && d->fallback_list) st = read_slots(r, f, true, f->version);
    if (!st && d->embedded_adamw) {
      f->embedded = calloc(1, sizeof *f->embedded);
      if (!f->embedded) return of_rd_fail(r, FG_ERR_NOMEM, r->off, "allocating the fallback frame");
      size_t at = r->off;
      st = of_parse_frame(r, f->embedded, false);
      if (st) return fg_fail_prefix(st, "%s fallback: ", d->title);
      r->magic = of_magic(f->kind, f->version);
      if (!st && f->embedded->kind != FG_OFRAME_KIND_ADAMW)
        st = of_rd_fail(r, FG_ERR_BAD_MAGIC, at, "the fallback frame is %s, expected an AdamW frame (%s)",
                        of_kind_name(f->embedded->kind), of_kind_of(FG_OFRAME_KIND_ADAMW)->d.magic_list);
    }
  }
  if (!st) r->magic = outer;
  return st;
}

void of_frame_clear(fg_oframe *f) {
  if (!f) return;
  fg_oframe_slot *lists[2] = {f->slots, f->fallback};
  size_t counts[2] = {f->n_slots, f->n_fallback};
  for (int l = 0; l < 2; l++) {
    for (size_t i = 0; i < counts[l]; i++) {
      free(lists[l][i].name);
      free(lists[l][i].bufs[0].data);
      free(lists[l][i].bufs[1].data);
      free(lists[l][i].master);
    }
    free(lists[l]);
  }
  if (f->embedded) {
    of_frame_clear(f->embedded);
    free(f->embedded);
  }
  for (size_t i = 0; i < f->n_members; i++) of_frame_clear(&f->members[i]);
  free(f->members);
  for (size_t i = 0; i < f->n_tensors; i++) {
    free(f->tensors[i].dims);
    free(f->tensors[i].data);
  }
  free(f->tensors);
  memset(f, 0, sizeof *f);
}

void fg_optim_frame_free(fg_oframe *f) {
  of_frame_clear(f);
  free(f);
}

fg_status fg_optim_frame_parse_prefix(const uint8_t *data, size_t len, size_t *used, fg_oframe **out) {
  if (out) *out = NULL;
  if (used) *used = 0;
  if (!out || (!data && len)) return fg_fail(FG_ERR_INVALID_ARG, "fg_optim_frame_parse: NULL argument");
  fg_oframe *f = calloc(1, sizeof *f);
  if (!f) return fg_fail(FG_ERR_NOMEM, "optimizer frame: allocating the frame");
  of_rd r = {.p = data, .len = len};
  fg_status st = of_parse_frame(&r, f, true);
  if (st) {
    fg_optim_frame_free(f);
    return st;
  }
  if (used) *used = r.off;
  *out = f;
  return FG_OK;
}

fg_status fg_optim_frame_parse(const uint8_t *data, size_t len, fg_oframe **out) {
  if (out) *out = NULL;
  size_t used;
  fg_oframe *f;
  fg_status st = fg_optim_frame_parse_prefix(data, len, &used, &f);
  if (st) return st;
  if (used != len) {
    const char *magic = of_magic(f->kind, f->version);
    fg_optim_frame_free(f);
    return fg_fail(FG_ERR_FRAME_TRAILING_BYTES, "optimizer frame %s: offset %zu: %zu bytes after the end of the "
                   "frame", magic, used, len - used);
  }
  *out = f;
  return FG_OK;
}
