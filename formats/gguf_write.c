/* GGUF writer, first half: collecting KVs (kept as their exact wire bytes, so copies from a
 * parsed file stay byte-verbatim) and tensor declarations. */
#include "formats/gguf_writer_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

fg_name fg_gguf_wkv_name_at(const void *wp, uint64_t i) {
  const fg_gguf_writer *w = wp;
  return (fg_name){(const char *)w->kvs[i].wire + 8, (size_t)w->kvs[i].key_len};
}

static fg_name wt_name_at(const void *wp, uint64_t i) {
  const fg_gguf_writer *w = wp;
  return (fg_name){w->tensors[i].name, w->tensors[i].name_len};
}

fg_status fg_gguf_writer_create(fg_gguf_writer **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_create: NULL argument");
  fg_gguf_writer *w = calloc(1, sizeof *w);
  if (!w) return fg_fail(FG_ERR_NOMEM, "fg_gguf_writer_create: out of memory");
  w->version = 3;
  w->alignment = FG_GGUF_DEFAULT_ALIGNMENT;
  w->out = (fg_atomic_file)FG_ATOMIC_FILE_INIT;
  *out = w;
  return FG_OK;
}

static fg_status frozen(const fg_gguf_writer *w, const char *fn) {
  if (!w) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL writer", fn);
  if (fg_atomic_file_open(&w->out)) return fg_fail(FG_ERR_STATE, "%s: a streaming write is in progress; metadata and tensors are frozen", fn);
  return FG_OK;
}

fg_status fg_gguf_writer_set_version(fg_gguf_writer *w, uint32_t version) {
  fg_status s = frozen(w, "fg_gguf_writer_set_version");
  if (s) return s;
  if (version != 2 && version != 3) return fg_fail(FG_ERR_BAD_VERSION, "GGUF writer: version %u, expected 2 or 3", version);
  w->version = version;
  return FG_OK;
}

static int is_alignment_key(const char *key, uint64_t len) {
  return len == sizeof FG_GGUF_KEY_ALIGNMENT - 1 && memcmp(key, FG_GGUF_KEY_ALIGNMENT, len) == 0;
}

/* Takes ownership of wire (a complete KV, key at wire + 8) whether it succeeds or not.
 * Validates general.alignment, then replaces the key in place or appends it. */
static fg_status put_kv(fg_gguf_writer *w, uint8_t *wire, uint64_t wire_len) {
  uint64_t key_len = fg_bytes_ld_le64(wire);
  const char *key = (const char *)wire + 8;
  uint32_t type = fg_bytes_ld_le32(wire + 8 + key_len);
  uint32_t align = 0;
  if (is_alignment_key(key, key_len)) {
    if (type != FG_GGUF_UINT32) {
      free(wire);
      return fg_fail(FG_ERR_BAD_ALIGNMENT, "GGUF writer: general.alignment has wire type %s, expected UINT32",
                     fg_gguf_type_name((fg_gguf_type)type));
    }
    align = fg_bytes_ld_le32(wire + 12 + key_len);
    if (align == 0 || (align & (align - 1)) || align > FG_GGUF_MAX_ALIGNMENT) {
      free(wire);
      return fg_fail(FG_ERR_BAD_ALIGNMENT, "GGUF writer: general.alignment %u, expected a power of two <= 2^20", align);
    }
  }
  int64_t i = fg_name_table_find(&w->kv_index, key, key_len, fg_gguf_wkv_name_at, w);
  if (i >= 0) {
    free(w->kvs[i].wire);
    w->kvs[i].wire = wire;
    w->kvs[i].wire_len = wire_len;
  } else {
    if (w->n_kv == w->cap_kv) {
      uint64_t cap = w->cap_kv ? w->cap_kv * 2 : 16;
      fg_gguf_wkv *k = realloc(w->kvs, (size_t)cap * sizeof *k);
      if (!k) {
        free(wire);
        return fg_fail(FG_ERR_NOMEM, "GGUF writer: out of memory");
      }
      w->kvs = k;
      w->cap_kv = cap;
    }
    w->kvs[w->n_kv] = (fg_gguf_wkv){wire, wire_len, key_len};
    int64_t dup;
    fg_status s = fg_name_table_insert(&w->kv_index, key, key_len, w->n_kv, fg_gguf_wkv_name_at, w, &dup);
    if (s) {
      free(wire);
      return s;
    }
    w->n_kv++;
  }
  if (align) w->alignment = align;
  return FG_OK;
}

/* Allocates a KV: key length, key (klen bytes, which may hold NUL), type, then room for
 * vlen value bytes at *val. */
static fg_status new_kv_n(fg_gguf_writer *w, const char *key, size_t klen, uint32_t type, uint64_t vlen,
                          uint8_t **wire, uint64_t *wire_len, uint8_t **val) {
  *wire = *val = NULL;
  *wire_len = 0;
  fg_status s = frozen(w, "GGUF writer");
  if (s) return s;
  if (!key || !klen) return fg_fail(FG_ERR_BAD_STRING, "GGUF writer: empty or NULL key");
  if (klen > FG_GGUF_MAX_STRING || vlen > SIZE_MAX - 12 - klen)
    return fg_fail(FG_ERR_RANGE, "GGUF writer: key '%.40s' is too large", key);
  uint64_t n = 8 + klen + 4 + vlen;
  uint8_t *p = malloc((size_t)n);
  if (!p) return fg_fail(FG_ERR_NOMEM, "GGUF writer: key '%.40s': out of memory for %" PRIu64 " bytes", key, n);
  fg_bytes_st_le64(p, klen);
  memcpy(p + 8, key, klen);
  fg_bytes_st_le32(p + 8 + klen, type);
  *wire = p;
  *wire_len = n;
  *val = p + 12 + klen;
  return FG_OK;
}

static fg_status new_kv(fg_gguf_writer *w, const char *key, uint32_t type, uint64_t vlen, uint8_t **wire,
                        uint64_t *wire_len, uint8_t **val) {
  return new_kv_n(w, key, key ? strlen(key) : 0, type, vlen, wire, wire_len, val);
}

static fg_status set_scalar(fg_gguf_writer *w, const char *key, fg_gguf_type type, uint64_t bits) {
  uint8_t *wire, *val;
  uint64_t n, size = fg_gguf_type_size(type);
  fg_status s = new_kv(w, key, type, size, &wire, &n, &val);
  if (s) return s;
  for (uint64_t b = 0; b < size; b++) val[b] = (uint8_t)(bits >> (8 * b));
  return put_kv(w, wire, n);
}

fg_status fg_gguf_writer_set_u8(fg_gguf_writer *w, const char *k, uint8_t v) { return set_scalar(w, k, FG_GGUF_UINT8, v); }
fg_status fg_gguf_writer_set_i8(fg_gguf_writer *w, const char *k, int8_t v) { return set_scalar(w, k, FG_GGUF_INT8, (uint8_t)v); }
fg_status fg_gguf_writer_set_u16(fg_gguf_writer *w, const char *k, uint16_t v) { return set_scalar(w, k, FG_GGUF_UINT16, v); }
fg_status fg_gguf_writer_set_i16(fg_gguf_writer *w, const char *k, int16_t v) { return set_scalar(w, k, FG_GGUF_INT16, (uint16_t)v); }
fg_status fg_gguf_writer_set_u32(fg_gguf_writer *w, const char *k, uint32_t v) { return set_scalar(w, k, FG_GGUF_UINT32, v); }
fg_status fg_gguf_writer_set_i32(fg_gguf_writer *w, const char *k, int32_t v) { return set_scalar(w, k, FG_GGUF_INT32, (uint32_t)v); }
fg_status fg_gguf_writer_set_i64(fg_gguf_writer *w, const char *k, int64_t v) { return set_scalar(w, k, FG_GGUF_INT64, (uint64_t)v); }
fg_status fg_gguf_writer_set_bool(fg_gguf_writer *w, const char *k, bool v) { return set_scalar(w, k, FG_GGUF_BOOL, v ? 1 : 0); }

fg_status fg_gguf_writer_set_u64(fg_gguf_writer *w, const char *k, uint64_t v) {
  return set_scalar(w, k, FG_GGUF_UINT64, v);
}

fg_status fg_gguf_writer_set_f32(fg_gguf_writer *w, const char *k, float v) {
  uint32_t b;
  memcpy(&b, &v, 4);
  return set_scalar(w, k, FG_GGUF_FLOAT32, b);
}

fg_status fg_gguf_writer_set_f64(fg_gguf_writer *w, const char *k, double v) {
  uint64_t b;
  memcpy(&b, &v, 8);
  return set_scalar(w, k, FG_GGUF_FLOAT64, b);
}

fg_status fg_gguf_writer_set_str(fg_gguf_writer *w, const char *key, const char *value, uint64_t len) {
  if (!value && len) return fg_fail(FG_ERR_INVALID_ARG, "GGUF writer: key '%.40s': NULL string", key ? key : "");
  if (len > FG_GGUF_MAX_STRING) return fg_fail(FG_ERR_BAD_STRING, "GGUF writer: key '%.40s': string over 1 GiB", key ? key : "");
  uint8_t *wire, *val;
  uint64_t n;
  fg_status s = new_kv(w, key, FG_GGUF_STRING, 8 + len, &wire, &n, &val);
  if (s) return s;
  fg_bytes_st_le64(val, len);
  if (len) memcpy(val + 8, value, (size_t)len);
  return put_kv(w, wire, n);
}

fg_status fg_gguf_writer_set_array(fg_gguf_writer *w, const char *key, fg_gguf_type et, const void *elems, uint64_t count) {
  const char *k = key ? key : "";
  uint64_t esz = fg_gguf_type_size(et);
  if (!esz) return fg_fail(FG_ERR_BAD_VALUE_TYPE, "GGUF writer: key '%.40s': array element type %d is not a scalar type", k, (int)et);
  if (count > FG_GGUF_MAX_ARRAY) return fg_fail(FG_ERR_RANGE, "GGUF writer: key '%.40s': %" PRIu64 " elements exceed 2^30", k, count);
  if (!elems && count) return fg_fail(FG_ERR_INVALID_ARG, "GGUF writer: key '%.40s': NULL elements", k);
  uint8_t *wire, *val;
  uint64_t n;
  fg_status s = new_kv(w, key, FG_GGUF_ARRAY, 12 + count * esz, &wire, &n, &val);
  if (s) return s;
  fg_bytes_st_le32(val, et);
  fg_bytes_st_le64(val + 4, count);
  if (count) memcpy(val + 12, elems, (size_t)(count * esz));
  return put_kv(w, wire, n);
}

fg_status fg_gguf_writer_set_str_array(fg_gguf_writer *w, const char *key, const char *const *strs, const uint64_t *lens,
                                       uint64_t count) {
  const char *k = key ? key : "";
  if (count > FG_GGUF_MAX_ARRAY) return fg_fail(FG_ERR_RANGE, "GGUF writer: key '%.40s': %" PRIu64 " elements exceed 2^30", k, count);
  if (!strs && count) return fg_fail(FG_ERR_INVALID_ARG, "GGUF writer: key '%.40s': NULL strings", k);
  uint64_t total = 12;
  for (uint64_t j = 0; j < count; j++) {
    uint64_t l = lens ? lens[j] : (strs[j] ? strlen(strs[j]) : 0);
    if ((!strs[j] && l) || l > FG_GGUF_MAX_STRING || total > UINT64_MAX - 8 - l)
      return fg_fail(FG_ERR_BAD_STRING, "GGUF writer: key '%.40s': element %" PRIu64 " is NULL or too long", k, j);
    total += 8 + l;
  }
  uint8_t *wire, *val;
  uint64_t n;
  fg_status s = new_kv(w, key, FG_GGUF_ARRAY, total, &wire, &n, &val);
  if (s) return s;
  fg_bytes_st_le32(val, FG_GGUF_STRING);
  fg_bytes_st_le64(val + 4, count);
  uint8_t *p = val + 12;
  for (uint64_t j = 0; j < count; j++) {
    uint64_t l = lens ? lens[j] : (strs[j] ? strlen(strs[j]) : 0);
    fg_bytes_st_le64(p, l);
    if (l) memcpy(p + 8, strs[j], (size_t)l);
    p += 8 + l;
  }
  return put_kv(w, wire, n);
}

fg_status fg_gguf_writer_set_wire_n(fg_gguf_writer *w, const char *key, size_t key_len, fg_gguf_type type,
                                    const void *value, uint64_t value_len) {
  uint8_t *wire, *val;
  uint64_t n;
  fg_status s = new_kv_n(w, key, key_len, (uint32_t)type, value_len, &wire, &n, &val);
  if (s) return s;
  if (value_len) memcpy(val, value, (size_t)value_len);
  return put_kv(w, wire, n);
}

/* The mapping of from that holds p (a KV's bytes lie in one part's header). */
static const fg_mapping *mapping_of(const fg_gguf_file *from, const uint8_t *p) {
  for (uint32_t k = 0; k < from->n_parts; k++) {
    const fg_mapping *m = from->parts[k].map;
    const uint8_t *b = fg_mapping_data(m);
    if (b && p >= b && p < b + fg_mapping_size(m)) return m;
  }
  return NULL;
}

/* Copies KV i's wire bytes out of from's mapping, unless its key is in skip. The copy is
 * guarded (fg_mapping_copy: a file truncated since it was parsed is a status) and checked
 * against the parsed record, since put_kv trusts the lengths in it. */
static fg_status copy_one(fg_gguf_writer *w, const fg_gguf_file *from, uint64_t i, const char *const *skip,
                          size_t n_skip) {
  const fg_gguf_kvrec *kv = &from->kvs[i];
  const uint8_t *raw = kv->wire;
  uint64_t len = kv->wire_len;
  if (len > SIZE_MAX) return fg_fail(FG_ERR_NOMEM, "GGUF writer: KV too large");
  uint8_t *wire = malloc((size_t)len);
  if (!wire) return fg_fail(FG_ERR_NOMEM, "GGUF writer: out of memory for a %" PRIu64 "-byte KV", len);
  const fg_mapping *m = mapping_of(from, raw);
  fg_status s = m ? fg_mapping_copy(m, wire, (uint64_t)(raw - fg_mapping_data(m)), len) : FG_OK;
  if (!m) memcpy(wire, raw, (size_t)len);
  if (s) {
    free(wire);
    return fg_fail_prefix(s, "GGUF writer: copying KV %" PRIu64 ": ", i);
  }
  if (fg_bytes_ld_le64(wire) != kv->key_len || fg_bytes_ld_le32(wire + 8 + kv->key_len) != kv->type) {
    free(wire);
    return fg_fail(FG_ERR_IO, "%s: KV %" PRIu64 " changed since the file was parsed (modified while being read)",
                   fg_gguf_path(from), i);
  }
  const char *key = (const char *)wire + 8;
  for (size_t j = 0; j < n_skip; j++)
    if (skip[j] && strlen(skip[j]) == kv->key_len && memcmp(skip[j], key, kv->key_len) == 0) {
      free(wire);
      return FG_OK;
    }
  return put_kv(w, wire, len);
}

fg_status fg_gguf_writer_copy_kv(fg_gguf_writer *w, const fg_gguf_file *from, const char *key) {
  fg_status s = frozen(w, "fg_gguf_writer_copy_kv");
  if (s) return s;
  if (!from || !key) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_copy_kv: NULL argument");
  int64_t i = fg_gguf_key_index(from, key);
  if (i < 0) return fg_fail(FG_ERR_NOT_FOUND, "%s: no key '%s' to copy", fg_gguf_path(from), key);
  return copy_one(w, from, (uint64_t)i, NULL, 0);
}

fg_status fg_gguf_writer_copy_all_kv(fg_gguf_writer *w, const fg_gguf_file *from, const char *const *skip, size_t n_skip) {
  fg_status s = frozen(w, "fg_gguf_writer_copy_all_kv");
  if (s) return s;
  if (!from || (n_skip && !skip)) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_copy_all_kv: NULL argument");
  for (uint64_t i = 0; i < from->n_kv; i++)
    if ((s = copy_one(w, from, i, skip, n_skip))) return s;
  return FG_OK;
}

fg_status fg_gguf_writer_remove_kv(fg_gguf_writer *w, const char *key) {
  fg_status s = frozen(w, "fg_gguf_writer_remove_kv");
  if (s) return s;
  if (!key) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_remove_kv: NULL key");
  int64_t i = fg_name_table_find(&w->kv_index, key, strlen(key), fg_gguf_wkv_name_at, w);
  if (i < 0) return fg_fail(FG_ERR_NOT_FOUND, "GGUF writer: no key '%s' to remove", key);
  /* Rebuild the index first so that a failure leaves the writer unchanged. */
  fg_name_table h = {0};
  if ((s = fg_name_table_reset(&h, w->n_kv))) return s;
  uint8_t *gone = w->kvs[i].wire;
  int align = is_alignment_key(key, strlen(key));
  memmove(&w->kvs[i], &w->kvs[i + 1], (size_t)(w->n_kv - (uint64_t)i - 1) * sizeof *w->kvs);
  w->n_kv--;
  for (uint64_t j = 0; j < w->n_kv; j++) {
    int64_t dup;
    fg_name k = fg_gguf_wkv_name_at(w, j);
    (void)fg_name_table_insert(&h, k.ptr, k.len, j, fg_gguf_wkv_name_at, w, &dup); /* sized: cannot grow */
  }
  fg_name_table_free(&w->kv_index);
  w->kv_index = h;
  free(gone);
  if (align) w->alignment = FG_GGUF_DEFAULT_ALIGNMENT;
  return FG_OK;
}

size_t fg_gguf_writer_kv_count(const fg_gguf_writer *w) { return w ? w->n_kv : 0; }
size_t fg_gguf_writer_tensor_count(const fg_gguf_writer *w) { return w ? w->n_tensors : 0; }

static fg_status add(fg_gguf_writer *w, const char *name, fg_dtype dtype, uint32_t ndim, const uint64_t *ne,
                     const void *data, uint64_t nbytes, int has_data) {
  fg_status s = frozen(w, "GGUF writer");
  if (s) return s;
  if (!name || !ne) return fg_fail(FG_ERR_INVALID_ARG, "GGUF writer: NULL tensor name or shape");
  size_t len = strlen(name);
  if (len == 0 || len >= FG_GGUF_MAX_NAME)
    return fg_fail(FG_ERR_BAD_STRING, "GGUF writer: tensor name '%.80s' has %zu bytes, expected 1..%u", name, len,
                   FG_GGUF_MAX_NAME - 1);
  char what[96];
  snprintf(what, sizeof what, "GGUF writer: tensor '%s'", name);
  uint64_t size;
  if ((s = fg_gguf_tensor_nbytes(what, dtype, ndim, ne, &size))) return s;
  if (has_data && (nbytes != size || (!data && size)))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %" PRIu64 " data bytes, expected %" PRIu64 " for its shape and %s", what,
                   nbytes, size, fg_dtype_name(dtype));
  if (fg_name_table_find(&w->tensor_index, name, len, wt_name_at, w) >= 0)
    return fg_fail(FG_ERR_DUPLICATE, "%s: a tensor of that name was added already", what);
  if (w->n_tensors == w->cap_tensors) {
    uint64_t cap = w->cap_tensors ? w->cap_tensors * 2 : 16;
    fg_gguf_wtensor *t = realloc(w->tensors, (size_t)cap * sizeof *t);
    if (!t) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", what);
    w->tensors = t;
    w->cap_tensors = cap;
  }
  fg_gguf_wtensor *t = &w->tensors[w->n_tensors];
  memset(t, 0, sizeof *t);
  memcpy(t->name, name, len + 1);
  t->name_len = (uint32_t)len;
  t->dtype = dtype;
  t->ndim = ndim;
  for (uint32_t d = 0; d < 4; d++) t->ne[d] = d < ndim ? ne[d] : 1;
  t->nbytes = size;
  t->data = data;
  t->has_data = has_data;
  int64_t dup;
  if ((s = fg_name_table_insert(&w->tensor_index, name, len, w->n_tensors, wt_name_at, w, &dup))) return s;
  w->n_tensors++;
  return FG_OK;
}

fg_status fg_gguf_writer_add_tensor(fg_gguf_writer *w, const char *name, fg_dtype dtype, int ndim,
                                    const uint64_t *ne, const void *data, uint64_t nbytes) {
  return add(w, name, dtype, ndim, ne, data, nbytes, 1);
}

fg_status fg_gguf_writer_declare_tensor(fg_gguf_writer *w, const char *name, fg_dtype dtype, int ndim,
                                        const uint64_t *ne) {
  return add(w, name, dtype, ndim, ne, NULL, 0, 0);
}
