/* Metadata getters of a parsed GGUF file: typed, widened, or as raw wire bytes. */
#include "formats/gguf_internal.h"

#include <inttypes.h>

static const char *type_str(uint32_t t) { return fg_gguf_type_name((fg_gguf_type)t); }

/* ---- arrays ---- */

static fg_status array_elem(const fg_gguf_array *a, uint64_t j, const char *want) {
  if (!a) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_array_%s: NULL array", want);
  if (j >= a->len)
    return fg_fail(FG_ERR_RANGE, "array element %" PRIu64 " is out of range (length %" PRIu64 ")", j, a->len);
  return FG_OK;
}

static const uint8_t *elem_at(const fg_gguf_array *a, uint64_t j) {
  return a->data + j * fg_gguf_type_size(a->elem_type);
}

fg_status fg_gguf_array_int(const fg_gguf_array *a, uint64_t j, int64_t *out) {
  fg_status s = array_elem(a, j, "int");
  if (s) return s;
  if (!fg_gguf_type_is_int(a->elem_type))
    return fg_fail(FG_ERR_TYPE, "array of %s read as integers", type_str(a->elem_type));
  const uint8_t *p = elem_at(a, j);
  if (fg_gguf_scalar_sign(a->elem_type, p) > 0)
    return fg_fail(FG_ERR_RANGE, "array element %" PRIu64 ": UINT64 value %" PRIu64 " does not fit int64 (read it with fg_gguf_array_uint)",
                   j, fg_bytes_ld_le64(p));
  *out = fg_gguf_scalar_int(a->elem_type, p);
  return FG_OK;
}

fg_status fg_gguf_array_uint(const fg_gguf_array *a, uint64_t j, uint64_t *out) {
  fg_status s = array_elem(a, j, "uint");
  if (s) return s;
  if (!fg_gguf_type_is_int(a->elem_type))
    return fg_fail(FG_ERR_TYPE, "array of %s read as unsigned integers", type_str(a->elem_type));
  const uint8_t *p = elem_at(a, j);
  if (fg_gguf_scalar_sign(a->elem_type, p) < 0)
    return fg_fail(FG_ERR_RANGE, "array element %" PRIu64 ": %s value %" PRId64 " is negative, expected an unsigned value",
                   j, type_str(a->elem_type), fg_gguf_scalar_int(a->elem_type, p));
  *out = fg_gguf_scalar_u64(a->elem_type, p);
  return FG_OK;
}

fg_status fg_gguf_array_float(const fg_gguf_array *a, uint64_t j, double *out) {
  fg_status s = array_elem(a, j, "float");
  if (s) return s;
  if (a->elem_type != FG_GGUF_FLOAT32 && a->elem_type != FG_GGUF_FLOAT64 && !fg_gguf_type_is_int(a->elem_type))
    return fg_fail(FG_ERR_TYPE, "array of %s read as numbers", type_str(a->elem_type));
  *out = fg_gguf_scalar_float(a->elem_type, elem_at(a, j));
  return FG_OK;
}

fg_status fg_gguf_array_bool(const fg_gguf_array *a, uint64_t j, bool *out) {
  fg_status s = array_elem(a, j, "bool");
  if (s) return s;
  if (a->elem_type != FG_GGUF_BOOL && !fg_gguf_type_is_int(a->elem_type))
    return fg_fail(FG_ERR_TYPE, "array of %s read as bools", type_str(a->elem_type));
  if (a->elem_type == FG_GGUF_BOOL) {
    *out = a->data[j] != 0;
  } else {
    *out = fg_gguf_scalar_u64(a->elem_type, elem_at(a, j)) != 0;
  }
  return FG_OK;
}

fg_status fg_gguf_array_str(const fg_gguf_array *a, uint64_t j, fg_gguf_str *out) {
  fg_status s = array_elem(a, j, "str");
  if (s) return s;
  if (a->elem_type != FG_GGUF_STRING || !a->str_offsets)
    return fg_fail(FG_ERR_TYPE, "array of %s read as strings", type_str(a->elem_type));
  const uint8_t *p = a->data + a->str_offsets[j];
  out->len = fg_bytes_ld_le64(p);
  out->ptr = (const char *)(p + 8);
  return FG_OK;
}

/* ---- by index ---- */

size_t fg_gguf_kv_count(const fg_gguf_file *f) { return f ? f->n_kv : 0; }

int64_t fg_gguf_key_index_n(const fg_gguf_file *f, const char *key, size_t len) {
  if (!f || !key) return -1;
  return fg_name_table_find(&f->kv_index, key, len, fg_gguf_kv_name_at, f);
}

int64_t fg_gguf_key_index(const fg_gguf_file *f, const char *key) {
  return key ? fg_gguf_key_index_n(f, key, strlen(key)) : -1;
}

fg_gguf_str fg_gguf_kv_key(const fg_gguf_file *f, size_t i) {
  if (!f || i >= f->n_kv) return (fg_gguf_str){"", 0};
  return (fg_gguf_str){f->kvs[i].key, f->kvs[i].key_len};
}

fg_gguf_type fg_gguf_kv_type(const fg_gguf_file *f, size_t i) {
  if (!f || i >= f->n_kv) return (fg_gguf_type)-1;
  return (fg_gguf_type)f->kvs[i].type;
}

static fg_status kv_at(const fg_gguf_file *f, uint64_t i, const fg_gguf_kvrec **kv) {
  if (!f) return fg_fail(FG_ERR_INVALID_ARG, "NULL GGUF file");
  if (i >= f->n_kv)
    return fg_fail(FG_ERR_RANGE, "%s: KV index %" PRIu64 " is out of range (%" PRIu64 " KVs)", fg_gguf_path(f), i, f->n_kv);
  *kv = &f->kvs[i];
  return FG_OK;
}

static fg_status wrong_type(const fg_gguf_file *f, const fg_gguf_kvrec *kv, const char *want) {
  return fg_fail(FG_ERR_TYPE, "%s: key '%.*s' has wire type %s, expected %s", fg_gguf_path(f), (int)kv->key_len,
                 kv->key, type_str(kv->type), want);
}

fg_status fg_gguf_kv_int(const fg_gguf_file *f, size_t i, int64_t *out) {
  const fg_gguf_kvrec *kv = NULL;
  fg_status s = kv_at(f, i, &kv);
  if (s) return s;
  if (!fg_gguf_type_is_int(kv->type)) return wrong_type(f, kv, "an integer");
  if (fg_gguf_scalar_sign(kv->type, kv->val) > 0)
    return fg_fail(FG_ERR_RANGE, "%s: key '%.*s': UINT64 value %" PRIu64 " does not fit int64 (read it with fg_gguf_kv_uint)",
                   fg_gguf_path(f), (int)kv->key_len, kv->key, fg_bytes_ld_le64(kv->val));
  *out = fg_gguf_scalar_int(kv->type, kv->val);
  return FG_OK;
}

fg_status fg_gguf_kv_uint(const fg_gguf_file *f, size_t i, uint64_t *out) {
  const fg_gguf_kvrec *kv = NULL;
  fg_status s = kv_at(f, i, &kv);
  if (s) return s;
  if (!fg_gguf_type_is_int(kv->type)) return wrong_type(f, kv, "an integer");
  if (fg_gguf_scalar_sign(kv->type, kv->val) < 0)
    return fg_fail(FG_ERR_RANGE, "%s: key '%.*s': %s value %" PRId64 " is negative, expected an unsigned value",
                   fg_gguf_path(f), (int)kv->key_len, kv->key, type_str(kv->type), fg_gguf_scalar_int(kv->type, kv->val));
  *out = fg_gguf_scalar_u64(kv->type, kv->val);
  return FG_OK;
}

fg_status fg_gguf_kv_float(const fg_gguf_file *f, size_t i, double *out) {
  const fg_gguf_kvrec *kv = NULL;
  fg_status s = kv_at(f, i, &kv);
  if (s) return s;
  if (kv->type != FG_GGUF_FLOAT32 && kv->type != FG_GGUF_FLOAT64 && !fg_gguf_type_is_int(kv->type))
    return wrong_type(f, kv, "a float or an integer");
  *out = fg_gguf_scalar_float(kv->type, kv->val);
  return FG_OK;
}

fg_status fg_gguf_kv_bool(const fg_gguf_file *f, size_t i, bool *out) {
  const fg_gguf_kvrec *kv = NULL;
  fg_status s = kv_at(f, i, &kv);
  if (s) return s;
  if (kv->type != FG_GGUF_BOOL && !fg_gguf_type_is_int(kv->type)) return wrong_type(f, kv, "BOOL or an integer");
  *out = kv->type == FG_GGUF_BOOL ? kv->val[0] != 0 : fg_gguf_scalar_u64(kv->type, kv->val) != 0;
  return FG_OK;
}

fg_status fg_gguf_kv_str(const fg_gguf_file *f, size_t i, fg_gguf_str *out) {
  const fg_gguf_kvrec *kv = NULL;
  fg_status s = kv_at(f, i, &kv);
  if (s) return s;
  if (kv->type != FG_GGUF_STRING) return wrong_type(f, kv, "STRING");
  out->ptr = (const char *)kv->val;
  out->len = kv->val_len;
  return FG_OK;
}

fg_status fg_gguf_kv_array(const fg_gguf_file *f, size_t i, fg_gguf_array *out) {
  const fg_gguf_kvrec *kv = NULL;
  fg_status s = kv_at(f, i, &kv);
  if (s) return s;
  if (kv->type != FG_GGUF_ARRAY) return wrong_type(f, kv, "ARRAY");
  out->elem_type = (fg_gguf_type)kv->elem_type;
  out->len = kv->count;
  out->data = kv->val;
  out->nbytes = kv->val_len;
  out->str_offsets = kv->str_offs;
  return FG_OK;
}

fg_status fg_gguf_kv_raw(const fg_gguf_file *f, size_t i, const uint8_t **bytes, uint64_t *len) {
  const fg_gguf_kvrec *kv = NULL;
  fg_status s = kv_at(f, i, &kv);
  if (s) return s;
  *bytes = kv->wire;
  *len = kv->wire_len;
  return FG_OK;
}

fg_status fg_gguf_kv_value_raw(const fg_gguf_file *f, size_t i, const uint8_t **bytes, uint64_t *len) {
  const fg_gguf_kvrec *kv = NULL;
  fg_status s = kv_at(f, i, &kv);
  if (s) return s;
  *bytes = kv->val_wire;
  *len = kv->val_wire_len;
  return FG_OK;
}

/* ---- by key ---- */

static fg_status key_index(const fg_gguf_file *f, const char *key, uint64_t *i) {
  if (!f || !key) return fg_fail(FG_ERR_INVALID_ARG, "NULL GGUF file or key");
  int64_t k = fg_gguf_key_index(f, key);
  if (k < 0) return fg_fail(FG_ERR_NOT_FOUND, "%s: no key '%s'", fg_gguf_path(f), key);
  *i = (uint64_t)k;
  return FG_OK;
}

#define BY_KEY(fn, T)                                                    \
  fg_status fg_gguf_get_##fn(const fg_gguf_file *f, const char *key, T *out) { \
    uint64_t i = 0;                                                      \
    fg_status s = key_index(f, key, &i);                                 \
    return s ? s : fg_gguf_kv_##fn(f, i, out);                           \
  }
BY_KEY(int, int64_t)
BY_KEY(uint, uint64_t)
BY_KEY(float, double)
BY_KEY(bool, bool)
BY_KEY(str, fg_gguf_str)
BY_KEY(array, fg_gguf_array)
#undef BY_KEY
