/* trainer_state.json in Fucina's exact text, and a reader that keeps every u64
 * (forgia/trainer_state.h). The JSON is read with the safetensors strict parser, whose
 * numbers stay source text. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/output.h"
#include "core/name_table.h"
#include "formats/safetensors_internal.h"
#include "forgia/mapping.h"
#include "forgia/trainer_state.h"

/* Larger files are refused before they are read: Fucina's records are under 2 KB. */
#define TS_MAX_FILE (16u << 20)

typedef struct ts_field {
  const char *name;
  char kind;                 /* 'u' u64 (fg_opt_u64), 'f' double (fg_opt_f64) */
  size_t off;
} ts_field;

/* The optional fields in Fucina's declaration order, the order they are written in. */
#define TS_U(f) {#f, 'u', offsetof(fg_trainer_state, f)}
#define TS_F(f) {#f, 'f', offsetof(fg_trainer_state, f)}
static const ts_field ts_fields[] = {
    TS_U(lora_rank),        TS_F(lora_alpha),       TS_F(lora_dropout_p),       TS_F(learning_rate),
    TS_U(accum_steps),      TS_U(data_seed),        TS_U(data_epoch),           TS_U(data_index),
    TS_F(es_sigma),         TS_F(es_alpha),         TS_U(es_population),        TS_U(es_noise),
    TS_U(es_antithetic),    TS_U(es_anchor_decay),  TS_F(es_anchor_lambda),     TS_F(es_ternary_flip_rate),
    TS_F(es_ternary_update_fraction),               TS_F(es_ternary_update_decay), TS_U(es_iteration),
};
#define TS_NFIELDS (sizeof ts_fields / sizeof ts_fields[0])

FG_API void fg_trainer_state_init(fg_trainer_state *s) {
  memset(s, 0, sizeof *s);
  s->version = 1;
}

FG_API bool fg_trainer_state_field(const fg_trainer_state *s, size_t i, const char **name, char *kind, bool *set,
                                   uint64_t *u, double *f) {
  static const char *const head[] = {"version", "step", "seed"};
  if (i < 3) {
    *name = head[i];
    *kind = 'u';
    *set = true;
    *u = i == 0 ? s->version : i == 1 ? s->step : s->seed;
    return true;
  }
  if (i - 3 >= TS_NFIELDS) return false;
  const ts_field *fd = &ts_fields[i - 3];
  const char *p = (const char *)s + fd->off;
  *name = fd->name;
  *kind = fd->kind;
  if (fd->kind == 'u') {
    const fg_opt_u64 *o = (const fg_opt_u64 *)(const void *)p;
    *set = o->set;
    *u = o->v;
  } else {
    const fg_opt_f64 *o = (const fg_opt_f64 *)(const void *)p;
    *set = o->set;
    *f = o->v;
  }
  return true;
}

/* ---------------------------------------------------------------- writing */

FG_API size_t fg_trainer_state_f64_text(double v, char *buf) {
  size_t k = 0;
  if (signbit(v)) buf[k++] = '-';
  if (isnan(v) || isinf(v)) return k + (size_t)sprintf(buf + k, isnan(v) ? "nan" : "inf");
  v = fabs(v);
  if (v == 0) return k + (size_t)sprintf(buf + k, "0");
  /* The fewest significant digits that read back to v, correctly rounded: the closest of
   * the shortest candidates, which is what Ryu (Zig's {d}) picks. */
  char e[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    if (strtod(e, NULL) == v) break;
  }
  char digits[20];
  size_t n = 0;
  const char *c = e;
  for (; *c && *c != 'e'; c++)
    if (*c != '.') digits[n++] = *c;
  int exp10 = atoi(c + 1);
  while (n > 1 && digits[n - 1] == '0') n--;
  long dp = (long)exp10 + 1; /* digits before the decimal point */
  if (dp <= 0) {
    buf[k++] = '0';
    buf[k++] = '.';
    for (long z = 0; z < -dp; z++) buf[k++] = '0';
    memcpy(buf + k, digits, n);
    k += n;
  } else if ((size_t)dp >= n) {
    memcpy(buf + k, digits, n);
    k += n;
    for (size_t z = n; z < (size_t)dp; z++) buf[k++] = '0';
  } else {
    memcpy(buf + k, digits, (size_t)dp);
    k += (size_t)dp;
    buf[k++] = '.';
    memcpy(buf + k, digits + dp, n - (size_t)dp);
    k += n - (size_t)dp;
  }
  buf[k] = 0;
  return k;
}

FG_API fg_status fg_trainer_state_format(const fg_trainer_state *s, char **out, size_t *len) {
  if (!s || !out || !len) return fg_fail(FG_ERR_INVALID_ARG, "trainer state: NULL argument");
  /* Every line fits in a key, its quotes and FG_F64_TEXT_MAX bytes. */
  size_t cap = 128 + (TS_NFIELDS + 3) * (64 + FG_F64_TEXT_MAX);
  char *b = malloc(cap);
  if (!b) return fg_fail(FG_ERR_NOMEM, "trainer state: %zu bytes", cap);
  size_t k = (size_t)sprintf(b, "{\n  \"format\": \"%s\",\n  \"version\": %u,\n  \"step\": %llu,\n  \"seed\": %llu",
                             FG_TRAINER_STATE_FORMAT, (unsigned)s->version, (unsigned long long)s->step,
                             (unsigned long long)s->seed);
  for (size_t i = 0; i < TS_NFIELDS; i++) {
    const char *p = (const char *)s + ts_fields[i].off;
    if (ts_fields[i].kind == 'u') {
      const fg_opt_u64 *o = (const fg_opt_u64 *)(const void *)p;
      if (o->set) k += (size_t)sprintf(b + k, ",\n  \"%s\": %llu", ts_fields[i].name, (unsigned long long)o->v);
    } else {
      const fg_opt_f64 *o = (const fg_opt_f64 *)(const void *)p;
      if (!o->set) continue;
      k += (size_t)sprintf(b + k, ",\n  \"%s\": ", ts_fields[i].name);
      k += fg_trainer_state_f64_text(o->v, b + k);
    }
  }
  k += (size_t)sprintf(b + k, "\n}\n");
  *out = b;
  *len = k;
  return FG_OK;
}

FG_API fg_status fg_trainer_state_save(const char *path, const fg_trainer_state *s) {
  char *text = NULL;
  size_t len = 0;
  fg_status st = fg_trainer_state_format(s, &text, &len);
  if (st) return st;
  st = fg_output_write(path, text, len);
  free(text);
  return st;
}

/* ---------------------------------------------------------------- reading */

typedef struct ts_keys {
  const st_json *j;
  const st_node **m;         /* the root's members */
} ts_keys;

static fg_name ts_key_at(const void *ctx, uint64_t i) {
  const ts_keys *k = ctx;
  fg_name r = {st_key(k->j, k->m[i]), k->m[i]->key_len};
  return r;
}

static const char *ts_kind_name(const st_node *v) {
  static const char *const names[] = {"null", "false", "true", "a number", "a string", "an array", "an object"};
  return v->kind <= ST_OBJ ? names[v->kind] : "?";
}

/* A u64 from the number's text: digits only (Zig's integer reading also takes "-0"). */
static fg_status ts_u64(const st_json *j, const st_node *v, const char *src, const char *key, uint64_t *out) {
  if (v->kind == ST_NUM && st_num_u64(j, v, out)) return FG_OK;
  if (v->kind == ST_NUM && v->len == 2 && memcmp(st_str(j, v), "-0", 2) == 0) {
    *out = 0;
    return FG_OK;
  }
  if (v->kind == ST_NUM)
    return fg_fail(FG_ERR_TYPE, "%s: \"%s\": expected an integer in 0..18446744073709551615, found %.*s", src, key,
                   (int)(v->len > 64 ? 64 : v->len), st_str(j, v));
  return fg_fail(FG_ERR_TYPE, "%s: \"%s\": expected an integer in 0..18446744073709551615, found %s", src, key,
                 ts_kind_name(v));
}

static fg_status ts_f64(const st_json *j, const st_node *v, const char *src, const char *key, double *out) {
  if (v->kind != ST_NUM)
    return fg_fail(FG_ERR_TYPE, "%s: \"%s\": expected a number, found %s", src, key, ts_kind_name(v));
  char small[64], *t = v->len < sizeof small ? small : malloc((size_t)v->len + 1);
  if (!t) return fg_fail(FG_ERR_NOMEM, "%s: \"%s\": %u bytes", src, key, (unsigned)v->len);
  memcpy(t, st_str(j, v), v->len);
  t[v->len] = 0;
  *out = strtod(t, NULL);
  if (t != small) free(t);
  return FG_OK;
}

static const st_node *ts_get(const fg_name_table *t, const ts_keys *k, const char *key) {
  int64_t i = fg_name_table_find(t, key, strlen(key), ts_key_at, k);
  return i < 0 ? NULL : k->m[i];
}

static fg_status ts_read(const st_json *j, const char *src, fg_trainer_state *out) {
  const st_node *root = &j->nodes[0];
  if (root->kind != ST_OBJ)
    return fg_fail(FG_ERR_INVALID_JSON, "%s: expected a JSON object, found %s", src, ts_kind_name(root));
  ts_keys k = {j, calloc(root->len ? root->len : 1, sizeof *k.m)};
  if (!k.m) return fg_fail(FG_ERR_NOMEM, "%s: %u keys", src, (unsigned)root->len);
  fg_name_table t = {0};
  fg_status st = fg_name_table_reset(&t, root->len);
  const st_node *c = st_first(root);
  for (uint32_t i = 0; !st && i < root->len; i++, c = st_after(j, c)) {
    k.m[i] = c;
    int64_t dup = -1;
    st = fg_name_table_insert(&t, st_key(j, c), c->key_len, i, ts_key_at, &k, &dup);
    if (!st && dup >= 0)
      st = fg_fail(FG_ERR_DUPLICATE, "%s: key \"%s\" given twice (byte %u)", src, st_key(j, c), (unsigned)c->key_pos);
  }
  fg_trainer_state s;
  fg_trainer_state_init(&s);
  const st_node *v = NULL;
  if (!st) {
    v = ts_get(&t, &k, "format");
    if (!v || v->kind != ST_STR || v->len != strlen(FG_TRAINER_STATE_FORMAT) ||
        memcmp(st_str(j, v), FG_TRAINER_STATE_FORMAT, v->len) != 0)
      st = fg_fail(FG_ERR_BAD_MAGIC, "%s: \"format\" is %s; expected \"%s\"", src,
                   !v ? "missing" : v->kind == ST_STR ? "another string" : ts_kind_name(v), FG_TRAINER_STATE_FORMAT);
  }
  uint64_t u = 0;
  if (!st) {
    v = ts_get(&t, &k, "version");
    st = !v ? fg_fail(FG_ERR_NOT_FOUND, "%s: no \"version\" key", src) : ts_u64(j, v, src, "version", &u);
    if (!st && u != 1)
      st = fg_fail(FG_ERR_BAD_VERSION, "%s: version %llu; expected 1", src, (unsigned long long)u);
  }
  for (int h = 0; h < 2 && !st; h++) {
    const char *key = h ? "seed" : "step";
    v = ts_get(&t, &k, key);
    st = !v ? fg_fail(FG_ERR_NOT_FOUND, "%s: no \"%s\" key (required)", src, key)
            : ts_u64(j, v, src, key, h ? &s.seed : &s.step);
  }
  for (size_t i = 0; i < TS_NFIELDS && !st; i++) {
    v = ts_get(&t, &k, ts_fields[i].name);
    if (!v) continue;
    char *p = (char *)&s + ts_fields[i].off;
    if (ts_fields[i].kind == 'u') {
      fg_opt_u64 *o = (fg_opt_u64 *)(void *)p;
      st = ts_u64(j, v, src, ts_fields[i].name, &o->v);
      o->set = !st;
    } else {
      fg_opt_f64 *o = (fg_opt_f64 *)(void *)p;
      st = ts_f64(j, v, src, ts_fields[i].name, &o->v);
      o->set = !st;
    }
  }
  fg_name_table_free(&t);
  free(k.m);
  if (!st) *out = s;
  return st;
}

FG_API fg_status fg_trainer_state_parse(const char *text, size_t len, const char *source,
                                        fg_trainer_state *out) {
  const char *src = source ? source : FG_TRAINER_STATE_FILE;
  if (!out || (len && !text)) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL argument", src);
  if (len > TS_MAX_FILE)
    return fg_fail(FG_ERR_RANGE, "%s: %zu bytes; a trainer state is at most %u", src, len, (unsigned)TS_MAX_FILE);
  st_json j = {0};
  fg_status st = st_json_parse(len ? text : "", len, src, 0, &j);
  if (!st) st = ts_read(&j, src, out);
  st_json_free(&j);
  return st;
}

FG_API fg_status fg_trainer_state_load(const char *path, fg_trainer_state *out) {
  struct stat sb;
  if (path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > TS_MAX_FILE)
    return fg_fail(FG_ERR_RANGE, "%s: %llu bytes; a trainer state is at most %u", path,
                   (unsigned long long)sb.st_size, (unsigned)TS_MAX_FILE);
  fg_mapping *m = NULL;
  fg_status st = fg_mapping_open(path, FG_MAP_READ, &m);
  if (st) return st;
  st = fg_trainer_state_parse((const char *)fg_mapping_data(m), fg_mapping_size(m), path, out);
  fg_mapping_release(m);
  return st;
}
