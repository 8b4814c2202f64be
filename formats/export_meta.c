/* Metadata of a safetensors source as GGUF KVs: config.json under "safetensors.config."
 * and the first shard's __metadata__ under "safetensors.metadata.".
 *
 * Keys and strings keep every byte, NUL included (GGUF strings carry a length), so two keys
 * that differ only after a NUL stay two keys.
 *
 * config.json is read with the strict JSON parser (the one safetensors headers use), which
 * keeps numbers as their text, so a value becomes the wire type that holds it exactly:
 *   string -> STRING, true/false -> BOOL;
 *   an integer (no '.', 'e', 'E') -> INT32 when it fits, else INT64, else UINT64 (up to
 *     2^64-1); beyond that FG_ERR_RANGE (no GGUF type holds it);
 *   any other number -> FLOAT32 when its double is within f32's range (finite, and not
 *     flushed to zero), else FLOAT64; one beyond the double range is FG_ERR_RANGE;
 *   a list of one kind -> ARRAY of the narrowest of those types that holds every element
 *     (integers mixed with other numbers count as numbers; integers that need both INT64
 *     and UINT64 are FG_ERR_RANGE).
 * Nested objects are flattened with '.' ("rope_scaling.factor"). Two members that flatten to
 * one key ({"a":{"b":1},"a.b":2}, or a key repeated) are FG_ERR_DUPLICATE naming both. null,
 * empty lists (gguf-py's add_array skips them) and lists of lists, objects, nulls or mixed
 * kinds are left out. gguf-py would write every int as INT32 and every float as FLOAT32;
 * where that loses or breaks a value, forgia widens. */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/export_internal.h"
#include "formats/gguf_writer_internal.h"
#include "formats/safetensors_internal.h"

typedef enum kind { K_SKIP, K_BOOL, K_INT32, K_INT64, K_UINT64, K_FLOAT32, K_FLOAT64, K_STRING } kind;

/* A key written from config.json: its bytes and its JSON path, in meta_ctx.store. */
typedef struct flat_key {
  size_t key_off, key_len, path_off, path_len;
} flat_key;

typedef struct meta_ctx {
  fg_gguf_writer *w;
  const char *where;          /* config.json's path, for messages */
  const st_json *j;
  st_buf key;                 /* the GGUF key of the value being written */
  st_buf path;                /* its JSON path: ["a"]["b"] */
  st_buf val;                 /* its wire bytes */
  st_buf store;               /* keys and paths written so far */
  flat_key *keys;
  size_t nkeys, cap;
  fg_name_table seen;         /* over keys */
} meta_ctx;

static fg_name flat_key_at(const void *ctx, uint64_t i) {
  const meta_ctx *c = ctx;
  return (fg_name){c->store.p + c->keys[i].key_off, c->keys[i].key_len};
}

static fg_status nomem(const meta_ctx *c) { return fg_fail(FG_ERR_NOMEM, "%s: out of memory", c->where); }

/* ---------------------------------------------------------------- numbers */

typedef struct num {
  bool integer, neg;
  uint64_t mag;               /* integers: the magnitude */
  double d;                   /* the value (integers too, rounded) */
} num;

static bool fits_i32(const num *x) { return x->neg ? x->mag <= 2147483648ull : x->mag <= 2147483647ull; }
static bool fits_i64(const num *x) {
  return x->neg ? x->mag <= 9223372036854775808ull : x->mag <= 9223372036854775807ull;
}
/* Within f32's range: finite there, and not flushed to zero. */
static bool fits_f32(double d) {
  const float f = (float)d;
  return isfinite(f) && !(d != 0.0 && f == 0.0f);
}

static fg_status read_num(const meta_ctx *c, const st_node *v, num *out) {
  const char *s = st_str(c->j, v);
  const size_t n = v->len;
  memset(out, 0, sizeof *out);
  out->integer = !memchr(s, '.', n) && !memchr(s, 'e', n) && !memchr(s, 'E', n);
  if (out->integer) {
    out->neg = s[0] == '-';
    for (size_t i = out->neg; i < n; i++) {
      const unsigned dg = (unsigned)(s[i] - '0');
      if (out->mag > (UINT64_MAX - dg) / 10)
        return fg_fail(FG_ERR_RANGE, "%s: integer %.*s at byte %u does not fit in 64 bits (GGUF has no wider type)",
                       c->where, (int)(n > 40 ? 40 : n), s, v->pos);
      out->mag = out->mag * 10 + dg;
    }
    if (out->neg && out->mag > 9223372036854775808ull)
      return fg_fail(FG_ERR_RANGE, "%s: integer %.*s at byte %u is below -2^63 (GGUF has no wider type)", c->where,
                     (int)(n > 40 ? 40 : n), s, v->pos);
    out->d = out->neg ? -(double)out->mag : (double)out->mag;
    return FG_OK;
  }
  /* strtod reads the locale's decimal point; the JSON one is '.' */
  char buf[512];
  if (n >= sizeof buf)
    return fg_fail(FG_ERR_RANGE, "%s: number at byte %u has %zu characters", c->where, v->pos, n);
  memcpy(buf, s, n);
  buf[n] = '\0';
  const char *dp = localeconv()->decimal_point;
  if (dp && dp[0] && dp[0] != '.' && !dp[1]) {
    char *p = strchr(buf, '.');
    if (p) *p = dp[0];
  }
  out->d = strtod(buf, NULL);
  if (isinf(out->d))
    return fg_fail(FG_ERR_RANGE, "%s: number %.*s at byte %u is beyond the range of a double", c->where,
                   (int)(n > 40 ? 40 : n), s, v->pos);
  return FG_OK;
}

static kind num_kind(const num *x) {
  if (!x->integer) return fits_f32(x->d) ? K_FLOAT32 : K_FLOAT64;
  return fits_i32(x) ? K_INT32 : fits_i64(x) ? K_INT64 : K_UINT64;
}

/* Little-endian bytes of x as t. */
static void put_num(st_buf *b, kind t, const num *x) {
  uint8_t w[8];
  size_t len = 8;
  uint64_t bits;
  if (t == K_FLOAT32) {
    const float f = (float)x->d;
    uint32_t u;
    memcpy(&u, &f, 4);
    bits = u;
    len = 4;
  } else if (t == K_FLOAT64) {
    memcpy(&bits, &x->d, 8);
  } else {
    bits = x->neg ? (uint64_t)0 - x->mag : x->mag; /* two's complement */
    if (t == K_INT32) len = 4;
  }
  for (size_t i = 0; i < len; i++) w[i] = (uint8_t)(bits >> (8 * i));
  st_buf_put(b, w, len);
}

static fg_gguf_type wire_type(kind k) {
  switch (k) {
    case K_BOOL: return FG_GGUF_BOOL;
    case K_INT32: return FG_GGUF_INT32;
    case K_INT64: return FG_GGUF_INT64;
    case K_UINT64: return FG_GGUF_UINT64;
    case K_FLOAT32: return FG_GGUF_FLOAT32;
    case K_FLOAT64: return FG_GGUF_FLOAT64;
    default: return FG_GGUF_STRING;
  }
}

static void put_u32(st_buf *b, uint32_t v) {
  uint8_t w[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  st_buf_put(b, w, 4);
}
static void put_u64(st_buf *b, uint64_t v) {
  uint8_t w[8];
  for (int i = 0; i < 8; i++) w[i] = (uint8_t)(v >> (8 * i));
  st_buf_put(b, w, 8);
}

/* ---------------------------------------------------------------- values */

/* Records c->key (from c->path) as written; FG_ERR_DUPLICATE when an earlier member
 * flattened to it. */
static fg_status claim_key(meta_ctx *c) {
  /* C readers of GGUF (ggml's gguf_find_key) see a key up to its first NUL: "a\0b" and
   * "a\0c" would read as one key "a" */
  const char *nul = memchr(c->key.p, 0, c->key.len);
  if (nul)
    return fg_fail(FG_ERR_BAD_STRING, "%s: member %.*s: its key holds a NUL byte, which a GGUF key cannot carry "
                   "(C readers stop there)", c->where, (int)c->path.len, c->path.p);
  if (c->nkeys == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    flat_key *k = realloc(c->keys, cap * sizeof *k);
    if (!k) return nomem(c);
    c->keys = k;
    c->cap = cap;
  }
  flat_key *k = &c->keys[c->nkeys];
  k->key_off = c->store.len;
  k->key_len = c->key.len;
  st_buf_put(&c->store, c->key.p, c->key.len);
  k->path_off = c->store.len;
  k->path_len = c->path.len;
  st_buf_put(&c->store, c->path.p, c->path.len);
  if (c->store.failed) return nomem(c);
  int64_t dup;
  fg_status s = fg_name_table_insert(&c->seen, c->key.p, c->key.len, c->nkeys, flat_key_at, c, &dup);
  if (s) return s;
  if (dup >= 0) {
    const flat_key *d = &c->keys[dup];
    return fg_fail(FG_ERR_DUPLICATE, "%s: members %.*s and %.*s both flatten to the GGUF key '%.*s'", c->where,
                   (int)d->path_len, c->store.p + d->path_off, (int)c->path.len, c->path.p, (int)c->key.len, c->key.p);
  }
  c->nkeys++;
  return FG_OK;
}

static fg_status write_val(meta_ctx *c, fg_gguf_type t) {
  if (c->val.failed || c->key.failed || c->path.failed) return nomem(c);
  fg_status s = claim_key(c);
  if (s) return s;
  s = fg_gguf_writer_set_wire_n(c->w, c->key.p, c->key.len, t, c->val.p, c->val.len);
  return s ? fg_fail_prefix(s, "%s: ", c->where) : FG_OK;
}

/* The array's element type, or K_SKIP when it is left out. */
static fg_status array_kind(meta_ctx *c, const st_node *a, kind *out) {
  *out = K_SKIP;
  if (!a->len) return FG_OK;
  bool strs = true, bools = true, nums = true, all_int = true, i32 = true, i64 = true, u64 = true, f32 = true;
  st_iter it;
  st_node e;
  st_iter_init(&it, c->j, a);
  while (st_iter_next(&it, &e)) {
    strs &= e.kind == ST_STR;
    bools &= e.kind == ST_TRUE || e.kind == ST_FALSE;
    if (e.kind != ST_NUM) {
      nums = false;
      continue;
    }
    num x;
    fg_status s = read_num(c, &e, &x);
    if (s) return s;
    all_int &= x.integer;
    i32 &= x.integer && fits_i32(&x);
    i64 &= x.integer && fits_i64(&x);
    u64 &= x.integer && !x.neg;
    f32 &= fits_f32(x.d);
  }
  if (strs) *out = K_STRING;
  else if (bools) *out = K_BOOL;
  else if (nums && !all_int) *out = f32 ? K_FLOAT32 : K_FLOAT64;
  else if (nums && (i32 || i64 || u64)) *out = i32 ? K_INT32 : i64 ? K_INT64 : K_UINT64;
  else if (nums)
    return fg_fail(FG_ERR_RANGE, "%s: list %.*s mixes integers below 0 and above 2^63-1: no GGUF integer type holds both",
                   c->where, (int)c->path.len, c->path.p);
  return FG_OK;
}

static fg_status put_array(meta_ctx *c, const st_node *a) {
  kind k;
  fg_status s = array_kind(c, a, &k);
  if (s || k == K_SKIP) return s;
  c->val.len = 0;
  put_u32(&c->val, (uint32_t)wire_type(k));
  put_u64(&c->val, a->len);
  st_iter it;
  st_node e;
  st_iter_init(&it, c->j, a);
  while (st_iter_next(&it, &e)) {
    if (k == K_STRING) {
      put_u64(&c->val, e.len);
      st_buf_put(&c->val, st_str(c->j, &e), e.len);
    } else if (k == K_BOOL) {
      st_buf_put(&c->val, e.kind == ST_TRUE ? "\1" : "\0", 1);
    } else {
      num x;
      if ((s = read_num(c, &e, &x))) return s;
      put_num(&c->val, k, &x);
    }
  }
  return write_val(c, FG_GGUF_ARRAY);
}

static fg_status put_value(meta_ctx *c, const st_node *v) {
  c->val.len = 0;
  switch (v->kind) {
    case ST_OBJ: {
      if (!v->tree) return FG_OK; /* not reached: config.json is parsed whole */
      const size_t klen = c->key.len, plen = c->path.len;
      const st_node *e = st_first(v);
      for (size_t k = 0; k < v->len; k++, e = st_after(c->j, e)) {
        st_buf_put(&c->key, ".", 1);
        st_buf_put(&c->key, st_key(c->j, e), e->key_len);
        st_buf_put(&c->path, "[", 1);
        st_buf_json_string(&c->path, st_key(c->j, e), e->key_len, false);
        st_buf_put(&c->path, "]", 1);
        fg_status s = put_value(c, e);
        c->key.len = klen;
        c->path.len = plen;
        if (s) return s;
      }
      return FG_OK;
    }
    case ST_ARR:
      return put_array(c, v);
    case ST_STR:
      put_u64(&c->val, v->len);
      st_buf_put(&c->val, st_str(c->j, v), v->len);
      return write_val(c, FG_GGUF_STRING);
    case ST_TRUE:
    case ST_FALSE:
      st_buf_put(&c->val, v->kind == ST_TRUE ? "\1" : "\0", 1);
      return write_val(c, FG_GGUF_BOOL);
    case ST_NUM: {
      num x;
      fg_status s = read_num(c, v, &x);
      if (s) return s;
      const kind k = num_kind(&x);
      put_num(&c->val, k, &x);
      return write_val(c, wire_type(k));
    }
    default: /* null */
      return FG_OK;
  }
}

/* ---------------------------------------------------------------- sources */

/* config.json beside the checkpoint, as fg_st_dir_open finds it (for messages). */
static char *config_path(const char *src) {
  struct stat sb;
  size_t n = strlen(src);
  char *p = malloc(n + sizeof "/config.json");
  if (!p) return NULL;
  if (stat(src, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    snprintf(p, n + sizeof "/config.json", "%s/config.json", src);
  } else {
    const char *slash = strrchr(src, '/');
    if (slash) snprintf(p, n + sizeof "/config.json", "%.*s/config.json", (int)(slash - src), src);
    else snprintf(p, n + sizeof "/config.json", "config.json");
  }
  return p;
}

/* The config.json text read when the checkpoint was opened (so what is exported is what
 * was opened), parsed whole. */
static fg_status config_kvs(const fg_ckpt *s, fg_gguf_writer *w) {
  size_t len = 0;
  const char *text = fg_st_dir_config_text(fg_ckpt_safetensors(s), &len);
  if (!text) return FG_OK;
  char *path = config_path(fg_ckpt_path(s));
  if (!path) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", fg_ckpt_path(s));
  st_json j;
  fg_status st = st_json_parse_depth(text, len, path, 0, 1000, &j);
  if (st) {
    free(path);
    return st;
  }
  meta_ctx c = {.w = w, .where = path, .j = &j};
  if (j.nodes[0].kind == ST_OBJ) {
    st_buf_puts(&c.key, "safetensors.config");
    st = put_value(&c, &j.nodes[0]);
  }
  free(c.key.p);
  free(c.path.p);
  free(c.val.p);
  free(c.store.p);
  free(c.keys);
  fg_name_table_free(&c.seen);
  st_json_free(&j);
  free(path);
  return st;
}

fg_status fg_export_st_metadata(const fg_ckpt *s, fg_gguf_writer *w) {
  fg_status st = config_kvs(s, w);
  if (st) return st;
  const fg_st_dir *d = fg_ckpt_safetensors(s);
  if (fg_st_dir_shard_count(d) == 0) return FG_OK;
  const fg_st_file *f = fg_st_dir_shard(d, 0);
  static const char prefix[] = "safetensors.metadata.";
  st_buf key = {0}, val = {0};
  for (size_t i = 0; !st && i < fg_st_metadata_count(f); i++) {
    const char *k, *v;
    size_t kl, vl;
    if (!fg_st_metadata_at_n(f, i, &k, &kl, &v, &vl)) break;
    /* values may hold NUL (GGUF strings carry a length); keys may not (see claim_key) */
    const char *nul = memchr(k, 0, kl);
    if (nul) {
      st = fg_fail(FG_ERR_BAD_STRING, "%s: __metadata__ entry %zu: the key holds a NUL byte at byte %zu (\"%s\" "
                   "then more), which a GGUF key cannot carry (C readers stop there)", fg_st_source(f), i,
                   (size_t)(nul - k), k);
      break;
    }
    key.len = val.len = 0;
    st_buf_put(&key, prefix, sizeof prefix - 1);
    st_buf_put(&key, k, kl);
    put_u64(&val, vl);
    st_buf_put(&val, v, vl);
    if (key.failed || val.failed) st = fg_fail(FG_ERR_NOMEM, "%s: out of memory", fg_ckpt_path(s));
    else st = fg_gguf_writer_set_wire_n(w, key.p, key.len, FG_GGUF_STRING, val.p, val.len);
  }
  free(key.p);
  free(val.p);
  return st;
}
