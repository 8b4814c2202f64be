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

static fg_status read_header(of_rd *r, fg_oframe *f) {
  fg_status st = FG_OK;
  switch (f->kind) {
    case FG_OFRAME_KIND_SGD: {
      if ((st = of_need(r, 9, "the SGD header (momentum, dampening, nesterov)"))) return st;
      f->sgd.momentum_bits = of_get_u32(r);
      f->sgd.dampening_bits = of_get_u32(r);
      size_t at = r->off;
      if ((st = read_bool(r, "nesterov", &f->sgd.nesterov))) return st;
      if (f->sgd.nesterov && ((f->sgd.momentum_bits & 0x7fffffffu) == 0 || (f->sgd.dampening_bits & 0x7fffffffu)))
        return of_rd_fail(r, FG_ERR_RANGE, at, "nesterov with momentum bits %08x, dampening bits %08x: expected "
                          "momentum != 0 and dampening == 0", f->sgd.momentum_bits, f->sgd.dampening_bits);
      return FG_OK;
    }
    case FG_OFRAME_KIND_MUON:
      if ((st = of_need(r, 6, "the Muon header (scale, nesterov, ns_steps)"))) return st;
      if ((st = read_bool(r, "scale (spectral 0, match_rms_adamw 1)", &f->muon.scale))) return st;
      if ((st = read_bool(r, "nesterov", &f->muon.nesterov))) return st;
      f->muon.ns_steps = of_get_u32(r);
      return FG_OK;
    case FG_OFRAME_KIND_APOLLO:
      if ((st = of_need(r, 24, "the APOLLO header"))) return st;
      f->apollo.rank = of_get_u64(r);
      f->apollo.update_proj_gap = of_get_u64(r);
      f->apollo.scale_bits = of_get_u32(r);
      if ((st = read_bool(r, "scale_type (channel 0, tensor 1)", &f->apollo.scale_type))) return st;
      if ((st = read_bool(r, "correct_bias", &f->apollo.correct_bias))) return st;
      if ((st = read_bool(r, "scale_front", &f->apollo.scale_front))) return st;
      return read_bool(r, "disable_norm_growth_limiter", &f->apollo.disable_limiter);
    default: return FG_OK;
  }
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
  bool apollo_main = f->kind == FG_OFRAME_KIND_APOLLO && !fallback;
  uint64_t fixed = 16 + (f->kind == FG_OFRAME_KIND_MUON ? 0 : 8) + (apollo_main ? 12 : 0);
  if ((st = of_need(r, fixed, apollo_main ? "dims, step, seed and prev_norm" : "dims and step"))) return st;
  size_t dims_at = r->off;
  s->rows = of_get_u64(r);
  s->cols = of_get_u64(r);
  if (f->kind != FG_OFRAME_KIND_MUON) s->step = of_get_u64(r);
  if (apollo_main) {
    s->seed = of_get_u64(r);
    s->prev_norm_bits = of_get_u32(r);
  }
  uint64_t n_el;
  if (__builtin_mul_overflow(s->rows, s->cols, &n_el))
    return of_rd_fail(r, FG_ERR_BAD_SHAPE, dims_at, "dims %llu x %llu overflow", (unsigned long long)s->rows,
                      (unsigned long long)s->cols);
  s->n_bufs = fg_optim_frame_bufs_per_slot(f->kind);
  static const char *const names[5][2] = {
      [FG_OFRAME_KIND_ADAMW] = {"m", "v"}, [FG_OFRAME_KIND_ADAM] = {"m", "v"}, [FG_OFRAME_KIND_SGD] = {"buf", ""},
      [FG_OFRAME_KIND_MUON] = {"momentum", ""}, [FG_OFRAME_KIND_APOLLO] = {"m", "v"}};
  for (int b = 0; b < s->n_bufs; b++) {
    fg_oframe_buf *buf = &s->bufs[b];
    const char *what = names[f->kind][b];
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
  static const struct {
    fg_oframe_kind kind;
    int version;
  } known[] = {{FG_OFRAME_KIND_ADAMW, 3}, {FG_OFRAME_KIND_ADAMW, 4}, {FG_OFRAME_KIND_ADAMW, 5},
               {FG_OFRAME_KIND_ADAM, 3},  {FG_OFRAME_KIND_ADAM, 4},  {FG_OFRAME_KIND_ADAM, 5},
               {FG_OFRAME_KIND_SGD, 3},   {FG_OFRAME_KIND_SGD, 4},   {FG_OFRAME_KIND_SGD, 5},
               {FG_OFRAME_KIND_MUON, 3},  {FG_OFRAME_KIND_MUON, 4},  {FG_OFRAME_KIND_MUON, 5},
               {FG_OFRAME_KIND_APOLLO, 3}, {FG_OFRAME_KIND_APOLLO, 5}, {FG_OFRAME_KIND_SET, 3},
               {FG_OFRAME_KIND_TENSORS, 1}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    const char *magic = of_magic(known[i].kind, known[i].version);
    if (memcmp(m, magic, 4) != 0) continue;
    if (known[i].kind == FG_OFRAME_KIND_SET && !allow_set)
      return of_rd_fail(r, FG_ERR_BAD_MAGIC, r->off, "an optimizer set (FZO3) where a member frame was expected "
                        "(sets do not nest)");
    f->kind = known[i].kind;
    f->version = known[i].version;
    r->magic = magic;
    r->off += 4;
    return FG_OK;
  }
  char shown[20];
  snprintf(shown, sizeof shown, "%02x %02x %02x %02x", m[0], m[1], m[2], m[3]);
  if (m[0] == 'F' && m[1] == 'Z' && memchr("ADSMPOT", m[2], 7))
    return of_rd_fail(r, FG_ERR_BAD_VERSION, r->off, "magic %s names a frame family with an unknown version", shown);
  return of_rd_fail(r, FG_ERR_BAD_MAGIC, r->off, "magic %s is no optimizer frame (FZA3/4/5, FZAD/FZD4/5, "
                    "FZS3/4/5, FZM3/4/5, FZP3/5, FZO3, FZT1)", shown);
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
    if (!st) st = read_slots(r, f, false, f->version);
    if (!st && f->kind == FG_OFRAME_KIND_APOLLO) st = read_slots(r, f, true, f->version);
    if (!st && f->kind == FG_OFRAME_KIND_MUON) {
      f->embedded = calloc(1, sizeof *f->embedded);
      if (!f->embedded) return of_rd_fail(r, FG_ERR_NOMEM, r->off, "allocating the fallback frame");
      size_t at = r->off;
      st = of_parse_frame(r, f->embedded, false);
      if (st) return fg_fail_prefix(st, "Muon fallback: ");
      r->magic = of_magic(f->kind, f->version);
      if (!st && f->embedded->kind != FG_OFRAME_KIND_ADAMW)
        st = of_rd_fail(r, FG_ERR_BAD_MAGIC, at, "the fallback frame is %s, expected an AdamW frame (FZA3/4/5)",
                        of_kind_name(f->embedded->kind));
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
