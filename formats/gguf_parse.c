/* GGUF parser: header, KV section and tensor directory of one file, zero-copy over a
 * mapping. Validates everything before the file is handed out; on failure nothing
 * survives. Only the header pages are read: tensor data is bounds-checked, never touched. */
#include "formats/gguf_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct cursor {
  const uint8_t *base;
  uint64_t size;
  uint64_t pos;
  const char *path;
} cursor;

static uint64_t remaining(const cursor *c) { return c->size - c->pos; }

static fg_status need(const cursor *c, uint64_t n, const char *what) {
  if (n <= remaining(c)) return FG_OK;
  return fg_fail(FG_ERR_TRUNCATED, "%s: %s at offset %" PRIu64 " needs %" PRIu64 " bytes, only %" PRIu64 " remain",
                 c->path, what, c->pos, n, remaining(c));
}

static fg_status rd_u32(cursor *c, const char *what, uint32_t *v) {
  fg_status s = need(c, 4, what);
  if (s) return s;
  *v = fg_bytes_ld_le32(c->base + c->pos);
  c->pos += 4;
  return FG_OK;
}

static fg_status rd_u64(cursor *c, const char *what, uint64_t *v) {
  fg_status s = need(c, 8, what);
  if (s) return s;
  *v = fg_bytes_ld_le64(c->base + c->pos);
  c->pos += 8;
  return FG_OK;
}

/* A length-prefixed string. what names it for messages ("key of KV 3"). */
static fg_status rd_str(cursor *c, const char *what, const char **ptr, uint64_t *len) {
  uint64_t at = c->pos, n;
  fg_status s = rd_u64(c, what, &n);
  if (s) return s;
  if (n > FG_GGUF_MAX_STRING)
    return fg_fail(FG_ERR_BAD_STRING, "%s: %s at offset %" PRIu64 ": length %" PRIu64 " exceeds the 1 GiB limit",
                   c->path, what, at, n);
  if (n > remaining(c))
    return fg_fail(FG_ERR_BAD_STRING, "%s: %s at offset %" PRIu64 ": length %" PRIu64 " runs past the end (%" PRIu64 " bytes remain)",
                   c->path, what, at, n, remaining(c));
  *ptr = (const char *)(c->base + c->pos);
  *len = n;
  c->pos += n;
  return FG_OK;
}

static fg_status parse_array(cursor *c, fg_gguf_kvrec *kv) {
  uint32_t et;
  uint64_t count;
  fg_status s = rd_u32(c, "array element type", &et);
  if (s) return s;
  if (et >= FG_GGUF_TYPE_COUNT || et == FG_GGUF_ARRAY)
    return fg_fail(FG_ERR_BAD_VALUE_TYPE, "%s: key '%.*s': array element type %u at offset %" PRIu64 " is %s",
                   c->path, (int)kv->key_len, kv->key, et, c->pos - 4,
                   et == FG_GGUF_ARRAY ? "ARRAY (nested arrays are not supported)" : "not a GGUF type (0..12)");
  if ((s = rd_u64(c, "array length", &count))) return s;
  uint64_t esz = et == FG_GGUF_STRING ? 8 : fg_gguf_type_size((fg_gguf_type)et);
  if (count > remaining(c) / esz)
    return fg_fail(FG_ERR_TRUNCATED, "%s: key '%.*s': array of %" PRIu64 " %s at offset %" PRIu64 " needs at least %" PRIu64 " bytes per element, only %" PRIu64 " bytes remain",
                   c->path, (int)kv->key_len, kv->key, count, fg_gguf_type_name((fg_gguf_type)et), c->pos, esz, remaining(c));
  if (count > FG_GGUF_MAX_ARRAY)
    return fg_fail(FG_ERR_RANGE, "%s: key '%.*s': array of %" PRIu64 " elements exceeds the limit of 2^30",
                   c->path, (int)kv->key_len, kv->key, count);
  kv->elem_type = et;
  kv->count = count;
  kv->val = c->base + c->pos;
  if (et != FG_GGUF_STRING) {
    kv->val_len = count * esz;
    c->pos += kv->val_len;
    return FG_OK;
  }
  if (count) {
    kv->str_offs = malloc((size_t)count * sizeof *kv->str_offs);
    if (!kv->str_offs)
      return fg_fail(FG_ERR_NOMEM, "%s: key '%.*s': no memory for %" PRIu64 " string offsets", c->path,
                     (int)kv->key_len, kv->key, count);
  }
  char what[96];
  for (uint64_t j = 0; j < count; j++) {
    kv->str_offs[j] = (uint64_t)(c->base + c->pos - kv->val);
    /* A vocabulary has 10^5 strings: the element's name is formatted only for a message
     * (rd_str's, on the same bytes), not for every string read. */
    if (remaining(c) >= 8) {
      uint64_t n = fg_bytes_ld_le64(c->base + c->pos);
      if (n <= FG_GGUF_MAX_STRING && n <= remaining(c) - 8) {
        c->pos += 8 + n;
        continue;
      }
    }
    const char *p;
    uint64_t n;
    snprintf(what, sizeof what, "element %" PRIu64 " of string array '%.*s'", j,
             (int)(kv->key_len > 40 ? 40 : kv->key_len), kv->key);
    if ((s = rd_str(c, what, &p, &n))) return s;
  }
  kv->val_len = (uint64_t)(c->base + c->pos - kv->val);
  return FG_OK;
}

static fg_status parse_kv(cursor *c, uint64_t i, fg_gguf_kvrec *kv) {
  char what[64];
  uint64_t start = c->pos;
  snprintf(what, sizeof what, "key of KV %" PRIu64, i);
  fg_status s = rd_str(c, what, &kv->key, &kv->key_len);
  if (s) return s;
  if (kv->key_len == 0) return fg_fail(FG_ERR_BAD_STRING, "%s: KV %" PRIu64 " at offset %" PRIu64 " has an empty key", c->path, i, start);
  if ((s = rd_u32(c, "value type", &kv->type))) return s;
  if (kv->type >= FG_GGUF_TYPE_COUNT)
    return fg_fail(FG_ERR_BAD_VALUE_TYPE, "%s: key '%.*s': value type %u at offset %" PRIu64 " is not a GGUF type (0..12)",
                   c->path, (int)kv->key_len, kv->key, kv->type, c->pos - 4);
  kv->count = 1;
  kv->val_wire = c->base + c->pos;
  if (kv->type == FG_GGUF_ARRAY) {
    if ((s = parse_array(c, kv))) return s;
  } else if (kv->type == FG_GGUF_STRING) {
    snprintf(what, sizeof what, "string value of KV %" PRIu64, i);
    const char *p;
    if ((s = rd_str(c, what, &p, &kv->val_len))) return s;
    kv->val = (const uint8_t *)p;
  } else {
    uint64_t n = fg_gguf_type_size((fg_gguf_type)kv->type);
    snprintf(what, sizeof what, "%s value of KV %" PRIu64, fg_gguf_type_name((fg_gguf_type)kv->type), i);
    if ((s = need(c, n, what))) return s;
    kv->val = c->base + c->pos;
    kv->val_len = n;
    c->pos += n;
  }
  kv->wire = c->base + start;
  kv->wire_len = c->pos - start;
  kv->val_wire_len = (uint64_t)(c->base + c->pos - kv->val_wire);
  return FG_OK;
}

/* general.alignment from its wire value: UINT32, a power of two, at most 2^20. */
static fg_status check_alignment(const cursor *c, const fg_gguf_kvrec *kv, uint32_t *align) {
  uint64_t at = (uint64_t)(kv->wire - c->base);
  if (kv->type != FG_GGUF_UINT32)
    return fg_fail(FG_ERR_BAD_ALIGNMENT, "%s: general.alignment at offset %" PRIu64 " has wire type %s, expected UINT32",
                   c->path, at, fg_gguf_type_name((fg_gguf_type)kv->type));
  uint32_t a = fg_bytes_ld_le32(kv->val);
  if (a == 0 || (a & (a - 1)) || a > FG_GGUF_MAX_ALIGNMENT)
    return fg_fail(FG_ERR_BAD_ALIGNMENT, "%s: general.alignment at offset %" PRIu64 " is %u, expected a power of two <= 2^20",
                   c->path, at, a);
  *align = a;
  return FG_OK;
}

static fg_status parse_tensor_info(cursor *c, uint64_t i, fg_gguf_tensor *t) {
  char what[64];
  uint64_t start = c->pos;
  const char *name;
  uint64_t name_len;
  snprintf(what, sizeof what, "name of tensor %" PRIu64, i);
  fg_status s = rd_str(c, what, &name, &name_len);
  if (s) return s;
  /* An empty name is valid, as in ggml; 64 bytes or more is ggml's limit too. */
  if (name_len >= FG_GGUF_MAX_NAME)
    return fg_fail(FG_ERR_BAD_STRING, "%s: tensor %" PRIu64 " at offset %" PRIu64 ": name length %" PRIu64 ", expected at most %u bytes",
                   c->path, i, start, name_len, FG_GGUF_MAX_NAME - 1);
  /* The name is handed out NUL-terminated, so an embedded NUL would make it ambiguous
   * (ggml cuts the name there instead: a documented difference, see gguf.h). */
  if (memchr(name, 0, name_len))
    return fg_fail(FG_ERR_BAD_STRING, "%s: tensor %" PRIu64 " at offset %" PRIu64 ": name contains a NUL byte", c->path, i, start);
  memcpy(t->name, name, name_len);
  t->name[name_len] = '\0';
  t->name_len = (uint32_t)name_len;
  uint32_t ndim;
  if ((s = rd_u32(c, "n_dims", &ndim))) return s;
  if (ndim > FG_GGUF_MAX_DIMS)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor '%s' at offset %" PRIu64 ": n_dims %u, expected 0..4", c->path,
                   t->name, c->pos - 4, ndim);
  t->ndim = (int)ndim;
  for (int d = 0; d < 4; d++) t->ne[d] = 1;
  for (int d = 0; d < t->ndim; d++)
    if ((s = rd_u64(c, "tensor dimension", &t->ne[d]))) return s;
  uint32_t code;
  if ((s = rd_u32(c, "tensor type", &code))) return s;
  if (code >= FG_GGML_TYPE_COUNT || fg_dtype_ggml_code((fg_dtype)code) < 0)
    return fg_fail(FG_ERR_BAD_DTYPE, "%s: tensor '%s' at offset %" PRIu64 ": type code %u is unknown or removed",
                   c->path, t->name, c->pos - 4, code);
  t->dtype = (fg_dtype)code;
  if ((s = rd_u64(c, "tensor offset", &t->offset))) return s;
  char ctx[1200];
  snprintf(ctx, sizeof ctx, "%.1000s: tensor '%s'", c->path, t->name);
  /* n_dims 0 is one element: sized as the 1-d [1] it equals (ne is all 1 either way). */
  if ((s = fg_gguf_tensor_nbytes(ctx, t->dtype, t->ndim ? (uint32_t)t->ndim : 1u, t->ne, &t->nbytes))) return s;
  for (int d = 0; d < 4; d++) t->shape[d] = d < t->ndim ? t->ne[t->ndim - 1 - d] : 0;
  return FG_OK;
}

/* Offsets must be exactly the running padded total (ggml rejects anything else), and every
 * extent must lie inside the file. */
static fg_status place_tensors(const cursor *c, fg_gguf_file *f) {
  const fg_gguf_part *p = &f->parts[0];
  uint64_t run = 0;
  for (uint64_t i = 0; i < f->n_tensors; i++) {
    fg_gguf_tensor *t = &f->tensors[i];
    if (t->offset != run)
      return fg_fail(FG_ERR_BAD_OFFSET, "%s: tensor '%s': offset %" PRIu64 ", expected %" PRIu64 " (running total padded to %u)",
                     c->path, t->name, t->offset, run, p->alignment);
    uint64_t padded = fg_gguf_pad(t->nbytes, p->alignment);
    if (padded < t->nbytes || run + padded < run)
      return fg_fail(FG_ERR_BAD_OFFSET, "%s: tensor '%s': data offsets overflow", c->path, t->name);
    uint64_t begin = p->data_offset + t->offset;
    uint64_t end = begin + t->nbytes;
    if (begin < p->data_offset || end < begin || end > c->size) {
      /* The signature of a truncated download: say how much is missing. */
      uint64_t short_by = (begin < p->data_offset || end < begin) ? UINT64_MAX : end - c->size;
      return fg_fail(FG_ERR_TRUNCATED, "%s: tensor '%s' (%" PRIu64 " bytes at file offset %" PRIu64 ") runs past the end of the %" PRIu64 "-byte file: %" PRIu64 " bytes missing",
                     c->path, t->name, t->nbytes, begin, c->size, short_by);
    }
    t->data = t->nbytes ? c->base + begin : NULL;
    run += padded;
  }
  return FG_OK;
}

static fg_status parse_all(cursor *c, fg_gguf_file *f) {
  fg_gguf_part *p = &f->parts[0];
  fg_status s;
  if (c->size < 4)
    return fg_fail(FG_ERR_TRUNCATED, "%s: %" PRIu64 " bytes are too short for the GGUF magic", c->path, c->size);
  if (memcmp(c->base, "GGUF", 4) != 0)
    return fg_fail(FG_ERR_BAD_MAGIC, "%s: magic is %02x %02x %02x %02x, expected \"GGUF\"", c->path, c->base[0],
                   c->base[1], c->base[2], c->base[3]);
  c->pos = 4;
  if ((s = rd_u32(c, "version", &p->version))) return s;
  if ((p->version & 0xFFFFu) == 0)
    return fg_fail(FG_ERR_BAD_VERSION, "%s: version 0x%08x: a big-endian (byte-swapped) file, expected little-endian version 2 or 3",
                   c->path, p->version);
  if (p->version != 2 && p->version != 3)
    return fg_fail(FG_ERR_BAD_VERSION, "%s: version %u%s, expected 2 or 3", c->path, p->version,
                   p->version == 1 ? " (GGUFv1 is no longer supported)" : "");
  uint64_t n_tensors, n_kv;
  if ((s = rd_u64(c, "tensor count", &n_tensors)) || (s = rd_u64(c, "KV count", &n_kv))) return s;
  /* Counts are checked against the bytes left before anything is allocated. */
  uint64_t rem = remaining(c);
  if (n_kv > rem / FG_GGUF_MIN_KV_BYTES || n_tensors > rem / FG_GGUF_MIN_TENSOR_BYTES ||
      n_kv * FG_GGUF_MIN_KV_BYTES + n_tensors * FG_GGUF_MIN_TENSOR_BYTES > rem)
    return fg_fail(FG_ERR_TRUNCATED, "%s: header announces %" PRIu64 " KVs and %" PRIu64 " tensors but only %" PRIu64 " bytes follow",
                   c->path, n_kv, n_tensors, rem);

  if (n_kv && !(f->kvs = calloc((size_t)n_kv, sizeof *f->kvs)))
    return fg_fail(FG_ERR_NOMEM, "%s: no memory for %" PRIu64 " KVs", c->path, n_kv);
  if ((s = fg_name_table_reset(&f->kv_index, n_kv))) return s;
  p->alignment = FG_GGUF_DEFAULT_ALIGNMENT;
  for (uint64_t i = 0; i < n_kv; i++) {
    fg_gguf_kvrec *kv = &f->kvs[i];
    f->n_kv = i + 1; /* so that destroy frees this record's offsets */
    if ((s = parse_kv(c, i, kv))) return s;
    int64_t dup;
    if ((s = fg_name_table_insert(&f->kv_index, kv->key, kv->key_len, i, fg_gguf_kv_name_at, f, &dup))) return s;
    if (dup >= 0)
      return fg_fail(FG_ERR_DUPLICATE, "%s: key '%.*s' at offset %" PRIu64 " duplicates KV %" PRId64, c->path,
                     (int)kv->key_len, kv->key, (uint64_t)(kv->wire - c->base), dup);
    if (kv->key_len == sizeof FG_GGUF_KEY_ALIGNMENT - 1 && memcmp(kv->key, FG_GGUF_KEY_ALIGNMENT, kv->key_len) == 0 &&
        (s = check_alignment(c, kv, &p->alignment)))
      return s;
  }

  if (n_tensors && !(f->tensors = calloc((size_t)n_tensors, sizeof *f->tensors)))
    return fg_fail(FG_ERR_NOMEM, "%s: no memory for %" PRIu64 " tensors", c->path, n_tensors);
  if ((s = fg_name_table_reset(&f->tensor_index, n_tensors))) return s;
  for (uint64_t i = 0; i < n_tensors; i++) {
    fg_gguf_tensor *t = &f->tensors[i];
    uint64_t at = c->pos;
    if ((s = parse_tensor_info(c, i, t))) return s;
    f->n_tensors = i + 1;
    int64_t dup;
    if ((s = fg_name_table_insert(&f->tensor_index, t->name, t->name_len, i, fg_gguf_tensor_name_at, f, &dup)))
      return s;
    if (dup >= 0)
      return fg_fail(FG_ERR_DUPLICATE, "%s: tensor '%s' at offset %" PRIu64 " duplicates tensor %" PRId64, c->path,
                     t->name, at, dup);
  }
  p->data_offset = fg_gguf_pad(c->pos, p->alignment);
  return place_tensors(c, f);
}

typedef struct parse_job {
  cursor *c;
  fg_gguf_file *f;
} parse_job;

static fg_status parse_fn(void *user) {
  parse_job *j = user;
  return parse_all(j->c, j->f);
}

fg_status fg_gguf_open_mapping(fg_mapping *m, fg_gguf_file **out) {
  if (!m || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_open_mapping: NULL argument");
  *out = NULL;
  fg_gguf_file *f = calloc(1, sizeof *f);
  fg_gguf_part *part = calloc(1, sizeof *part);
  if (!f || !part) {
    free(f);
    free(part);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory", fg_mapping_path(m));
  }
  part->map = fg_mapping_retain(m);
  f->parts = part;
  f->n_parts = 1;
  cursor c = {fg_mapping_data(m), fg_mapping_size(m), 0, fg_mapping_path(m)};
  /* The header is read in place under the mapping's guard: a file truncated under the
   * parse is a status. Whatever the parse allocated hangs off f by then (each record is
   * counted in f before its bytes are read), so destroying f frees it after a fault too. */
  parse_job job = {&c, f};
  fg_status s = fg_mapping_access(m, parse_fn, &job);
  if (s) {
    fg_gguf_file_destroy(f);
    return s;
  }
  *out = f;
  return FG_OK;
}

fg_status fg_gguf_open(const char *path, fg_map_mode mode, fg_gguf_file **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_open: NULL argument");
  *out = NULL;
  fg_mapping *m;
  fg_status s = fg_mapping_open(path, mode, &m);
  if (s) return s;
  s = fg_gguf_open_mapping(m, out);
  fg_mapping_release(m);
  return s;
}

fg_status fg_gguf_open_bytes(const void *data, size_t len, fg_gguf_file **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_open_bytes: NULL argument");
  *out = NULL;
  fg_mapping *m;
  fg_status s = fg_mapping_wrap(data, len, &m);
  if (s) return s;
  s = fg_gguf_open_mapping(m, out);
  fg_mapping_release(m);
  return s;
}

void fg_gguf_file_destroy(fg_gguf_file *f) {
  if (!f) return;
  for (uint64_t i = 0; i < f->n_kv; i++) free(f->kvs[i].str_offs);
  free(f->kvs);
  free(f->tensors);
  fg_name_table_free(&f->kv_index);
  fg_name_table_free(&f->tensor_index);
  for (uint32_t i = 0; i < f->n_parts; i++) fg_mapping_release(f->parts[i].map);
  free(f->parts);
  free(f);
}

void fg_gguf_close(fg_gguf_file *f) { fg_gguf_file_destroy(f); }

fg_name fg_gguf_kv_name_at(const void *file, uint64_t i) {
  const fg_gguf_file *f = file;
  return (fg_name){f->kvs[i].key, (size_t)f->kvs[i].key_len};
}

fg_name fg_gguf_tensor_name_at(const void *file, uint64_t i) {
  const fg_gguf_file *f = file;
  return (fg_name){f->tensors[i].name, f->tensors[i].name_len};
}

uint32_t fg_gguf_version(const fg_gguf_file *f) { return f ? f->parts[0].version : 0; }
uint32_t fg_gguf_alignment(const fg_gguf_file *f) { return f ? f->parts[0].alignment : 0; }
const char *fg_gguf_path(const fg_gguf_file *f) { return f ? fg_mapping_path(f->parts[0].map) : ""; }
size_t fg_gguf_part_count(const fg_gguf_file *f) { return f ? f->n_parts : 0; }

uint64_t fg_gguf_data_offset(const fg_gguf_file *f, size_t part) {
  return f && part < f->n_parts ? f->parts[part].data_offset : 0;
}

const fg_mapping *fg_gguf_mapping(const fg_gguf_file *f, size_t part) {
  return f && part < f->n_parts ? f->parts[part].map : NULL;
}

fg_mapping *fg_gguf_retain_mapping(const fg_gguf_file *f, size_t part) {
  return f && part < f->n_parts ? fg_mapping_retain(f->parts[part].map) : NULL;
}
