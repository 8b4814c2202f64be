/* Metadata of a safetensors source as GGUF KVs: config.json under "safetensors.config."
 * and the first shard's __metadata__ under "safetensors.metadata.".
 *
 * Wire types are those gguf-py's GGUFValueType.get_type gives the Python values json.load
 * produces: str -> STRING, bool -> BOOL, int -> INT32, float -> FLOAT32, list -> ARRAY of
 * the elements' type. Where gguf-py would fail, forgia widens instead: an int outside
 * int32 is INT64 (outside int64 FLOAT32), a list mixing ints and floats is FLOAT32. Nested objects are flattened
 * with '.' ("rope_scaling.factor"). null, empty lists (gguf-py's add_array skips them) and
 * lists of lists, objects or mixed kinds are left out.
 *
 * json.load tells 1 from 1.0, cJSON does not, so the config text is lexed once more: the
 * k-th number node of the tree (document order) is the k-th number literal of the text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "formats/export_internal.h"

typedef struct meta_ctx {
  fg_gguf_writer *w;
  const char *where;
  bool *is_float;            /* per number literal, document order */
  size_t nnum, next;
  char key[1024];
} meta_ctx;

static char *read_text(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t n = 0, cap = 0;
  bool ok = true;
  for (;;) {
    if (n + 4096 + 1 > cap) {
      cap = (cap ? cap * 2 : 8192);
      char *b = realloc(buf, cap);
      if (!b) {
        ok = false;
        errno = ENOMEM;
        break;
      }
      buf = b;
    }
    size_t k = fread(buf + n, 1, cap - n - 1, f);
    n += k;
    if (k == 0) break;
  }
  ok = ok && buf && !ferror(f);
  fclose(f);
  if (!ok) {
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

/* Marks each number literal outside strings as float (has '.', 'e' or 'E') or integer. */
static fg_status lex_numbers(meta_ctx *c, const char *s, size_t n) {
  size_t cap = 0;
  for (size_t i = 0; i < n;) {
    char ch = s[i];
    if (ch == '"') {
      for (i++; i < n && s[i] != '"'; i++)
        if (s[i] == '\\') i++;
      i++;
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
      bool fl = false;
      for (; i < n && strchr("+-0123456789.eE", s[i]) && s[i]; i++) fl |= s[i] == '.' || s[i] == 'e' || s[i] == 'E';
      if (c->nnum == cap) {
        cap = cap ? cap * 2 : 64;
        bool *b = realloc(c->is_float, cap * sizeof *b);
        if (!b) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", c->where);
        c->is_float = b;
      }
      c->is_float[c->nnum++] = fl;
    } else {
      i++;
    }
  }
  return FG_OK;
}

typedef enum kind { K_SKIP, K_BOOL, K_INT32, K_INT64, K_FLOAT, K_STRING } kind;

static bool fits_i32(double v) { return v >= -2147483648.0 && v <= 2147483647.0; }

/* Kind of one scalar node; consumes its number literal. */
static kind scalar_kind(meta_ctx *c, const cJSON *v) {
  if (cJSON_IsBool(v)) return K_BOOL;
  if (cJSON_IsString(v)) return K_STRING;
  if (!cJSON_IsNumber(v)) return K_SKIP;
  bool fl = c->next < c->nnum ? c->is_float[c->next] : v->valuedouble != (double)(int64_t)v->valuedouble;
  c->next++;
  if (fl || !(v->valuedouble >= -9223372036854775808.0 && v->valuedouble < 9223372036854775808.0))
    return K_FLOAT;
  return fits_i32(v->valuedouble) ? K_INT32 : K_INT64;
}

/* Numbers inside a subtree that is skipped still consume their literals. */
static void skip_numbers(meta_ctx *c, const cJSON *v) {
  if (cJSON_IsNumber(v)) c->next++;
  for (const cJSON *e = v->child; e; e = e->next) skip_numbers(c, e);
}

static fg_status put_array(meta_ctx *c, const cJSON *a) {
  size_t n = (size_t)cJSON_GetArraySize(a);
  kind k = K_SKIP;
  bool ok = n > 0;
  for (const cJSON *e = a->child; e; e = e->next) {
    kind ek = cJSON_IsArray(e) || cJSON_IsObject(e) ? K_SKIP : scalar_kind(c, e);
    if (cJSON_IsArray(e) || cJSON_IsObject(e)) skip_numbers(c, e);
    bool num = ek == K_INT32 || ek == K_INT64 || ek == K_FLOAT;
    bool knum = k == K_INT32 || k == K_INT64 || k == K_FLOAT;
    if (ek == K_SKIP) ok = false;
    else if (k == K_SKIP) k = ek;
    else if (num && knum) k = (k == K_FLOAT || ek == K_FLOAT) ? K_FLOAT : (k == K_INT64 || ek == K_INT64) ? K_INT64 : K_INT32;
    else if (ek != k) ok = false;
  }
  if (!ok) return FG_OK;
  void *buf = NULL;
  const char **strs = NULL;
  fg_status st = FG_OK;
  size_t esz = k == K_BOOL ? 1 : k == K_INT64 ? 8 : 4;
  if (k == K_STRING ? !(strs = malloc(n * sizeof *strs)) : !(buf = malloc(n * esz)))
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory for '%s'", c->where, c->key);
  size_t i = 0;
  for (const cJSON *e = a->child; e; e = e->next, i++) {
    if (k == K_STRING) strs[i] = e->valuestring;
    else if (k == K_BOOL) ((uint8_t *)buf)[i] = cJSON_IsTrue(e) ? 1 : 0;
    else if (k == K_INT32) ((int32_t *)buf)[i] = (int32_t)e->valuedouble;
    else if (k == K_INT64) ((int64_t *)buf)[i] = (int64_t)e->valuedouble;
    else ((float *)buf)[i] = (float)e->valuedouble;
  }
  if (k == K_STRING) st = fg_gguf_writer_set_str_array(c->w, c->key, strs, NULL, n);
  else
    st = fg_gguf_writer_set_array(c->w, c->key,
                                  k == K_BOOL ? FG_GGUF_BOOL : k == K_INT32 ? FG_GGUF_INT32
                                  : k == K_INT64 ? FG_GGUF_INT64 : FG_GGUF_FLOAT32, buf, n);
  free(buf);
  free(strs);
  return st;
}

static fg_status put_value(meta_ctx *c, const cJSON *v) {
  if (cJSON_IsObject(v)) {
    size_t base = strlen(c->key);
    for (const cJSON *e = v->child; e; e = e->next) {
      int m = snprintf(c->key + base, sizeof c->key - base, ".%s", e->string ? e->string : "");
      fg_status st;
      if (m < 0 || (size_t)m >= sizeof c->key - base) {
        skip_numbers(c, e); /* a key this long is no use to a loader */
        st = FG_OK;
      } else {
        st = put_value(c, e);
      }
      c->key[base] = 0;
      if (st) return st;
    }
    return FG_OK;
  }
  if (cJSON_IsArray(v)) return put_array(c, v);
  switch (scalar_kind(c, v)) {
  case K_BOOL: return fg_gguf_writer_set_bool(c->w, c->key, cJSON_IsTrue(v));
  case K_STRING: return fg_gguf_writer_set_str(c->w, c->key, v->valuestring, strlen(v->valuestring));
  case K_INT32: return fg_gguf_writer_set_i32(c->w, c->key, (int32_t)v->valuedouble);
  case K_INT64: return fg_gguf_writer_set_i64(c->w, c->key, (int64_t)v->valuedouble);
  case K_FLOAT: return fg_gguf_writer_set_f32(c->w, c->key, (float)v->valuedouble);
  case K_SKIP: return FG_OK;
  }
  return FG_OK;
}

/* config.json beside the checkpoint, as fg_st_dir_open finds it. */
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

static fg_status config_kvs(const fg_ckpt *s, fg_gguf_writer *w) {
  if (!fg_st_dir_config_text(fg_ckpt_safetensors(s), NULL)) return FG_OK;
  meta_ctx c = {.w = w};
  char *path = config_path(fg_ckpt_path(s));
  if (!path) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", fg_ckpt_path(s));
  c.where = path;
  size_t len = 0;
  char *text = read_text(path, &len);
  fg_status st = FG_OK;
  cJSON *root = NULL;
  if (!text) st = fg_fail(FG_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  if (!st && !(root = cJSON_ParseWithLength(text, len)))
    st = fg_fail(FG_ERR_INVALID_JSON, "%s: not JSON (changed since the checkpoint was opened?)", path);
  if (!st) st = lex_numbers(&c, text, len);
  if (!st && cJSON_IsObject(root)) {
    snprintf(c.key, sizeof c.key, "safetensors.config");
    st = put_value(&c, root);
  }
  if (st) st = fg_fail_prefix(st, "%s: ", path);
  cJSON_Delete(root);
  free(text);
  free(c.is_float);
  free(path);
  return st;
}

fg_status fg_export_st_metadata(const fg_ckpt *s, fg_gguf_writer *w) {
  fg_status st = config_kvs(s, w);
  if (st) return st;
  const fg_st_dir *d = fg_ckpt_safetensors(s);
  if (fg_st_dir_shard_count(d) == 0) return FG_OK;
  const fg_st_file *f = fg_st_dir_shard(d, 0);
  for (size_t i = 0; i < fg_st_metadata_count(f); i++) {
    const char *k, *v;
    if (!fg_st_metadata_at(f, i, &k, &v)) break;
    size_t kl = strlen(k);
    char *key = malloc(kl + sizeof "safetensors.metadata.");
    if (!key) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", fg_ckpt_path(s));
    snprintf(key, kl + sizeof "safetensors.metadata.", "safetensors.metadata.%s", k);
    st = fg_gguf_writer_set_str(w, key, v, strlen(v));
    free(key);
    if (st) return st;
  }
  return FG_OK;
}
