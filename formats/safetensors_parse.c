/* safetensors reader: header validation in the upstream order, open/parse entry points,
 * lookups. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/safetensors_internal.h"

/* Upstream declaration order ("increasing alignment order"); the writer sorts by it. */
static const fg_dtype st_order[] = {
  FG_BOOL, FG_F4, FG_F6_E2M3, FG_F6_E3M2, FG_U8, FG_I8, FG_F8_E5M2, FG_F8_E4M3, FG_F8_E8M0,
  FG_F8_E4M3FNUZ, FG_F8_E5M2FNUZ, FG_I16, FG_U16, FG_F16, FG_BF16, FG_I32, FG_U32, FG_F32,
  FG_C64, FG_F64, FG_I64, FG_U64,
};

int st_dtype_rank(fg_dtype d) {
  for (size_t i = 0; i < sizeof st_order / sizeof st_order[0]; i++)
    if (st_order[i] == d) return (int)i;
  return -1;
}

unsigned st_dtype_bits(fg_dtype d) {
  const fg_dtype_traits *tr = fg_dtype_info(d);
  if (!tr || !tr->st_tag) return 0;
  return tr->block_bytes * 8 / tr->block_elems;
}

#define NAME_MAX_SHOWN 200

fg_status st_tensor_bytes(fg_dtype d, const uint64_t *shape, int ndim, uint64_t *out,
                          const char *where, const char *name, size_t name_len) {
  int nl = (int)(name_len > NAME_MAX_SHOWN ? NAME_MAX_SHOWN : name_len);
  /* Left to right from 1, as upstream does: [0, 2^64-1, 2] passes, [2, 2^64-1, 0] does not. */
  uint64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] != 0 && n > UINT64_MAX / shape[i])
      return fg_fail(FG_ERR_OVERFLOW, "%s: tensor '%.*s': element count overflows u64 at dim %d (%llu)", where, nl,
                     name, i, (unsigned long long)shape[i]);
    n *= shape[i];
  }
  unsigned bits = st_dtype_bits(d);
  if (n != 0 && bits > UINT64_MAX / n)
    return fg_fail(FG_ERR_OVERFLOW, "%s: tensor '%.*s': bit size of %llu x %s overflows u64", where, nl, name,
                   (unsigned long long)n, fg_dtype_info(d)->st_tag);
  uint64_t nbits = n * bits;
  if (nbits % 8 != 0)
    return fg_fail(FG_ERR_MISALIGNED_SLICE,
                   "%s: tensor '%.*s': %llu elements of %s are %llu bits, not a whole number of bytes", where, nl,
                   name, (unsigned long long)n, fg_dtype_info(d)->st_tag, (unsigned long long)nbits);
  *out = nbits / 8;
  return FG_OK;
}

/* ---------------------------------------------------------------- name table */

static fg_name tensor_name_at(const void *file, uint64_t i) {
  const fg_st_file *f = file;
  return (fg_name){f->tensors[i].name, f->tensors[i].name_len};
}

static fg_name meta_key_at(const void *file, uint64_t i) {
  const fg_st_file *f = file;
  return (fg_name){f->strs + f->meta[i].key_off, f->meta[i].key_len};
}

/* ---------------------------------------------------------------- header schema */

typedef struct st_ctx {
  fg_st_file *f;
  const st_json *j;
  const char *src;
  uint64_t base;             /* file offset of the JSON text (8) */
  size_t ndims, dims_cap;    /* f->dims in use / allocated */
  const st_node *last_dtype; /* tensors mostly share a dtype: the last tag looked up */
  fg_dtype last;
} st_ctx;

static int shown(size_t n) { return (int)(n > NAME_MAX_SHOWN ? NAME_MAX_SHOWN : n); }

/* The key of a member, for messages. */
#define KEY(c, v) shown((v)->key_len), st_key((c)->j, (v))

static fg_status parse_metadata(st_ctx *c, const st_node *v, uint64_t at) {
  fg_st_file *f = c->f;
  if (v->kind == ST_NULL) return FG_OK; /* upstream treats null as absent */
  if (v->kind != ST_OBJ || !v->tree)
    return fg_fail(FG_ERR_METADATA_NOT_STRING, "%s: __metadata__ at byte %llu must be an object of strings", c->src,
                   (unsigned long long)at);
  size_t n = v->len;
  f->has_meta = true;
  /* a name table over the keys, so a hostile header with millions of keys costs linear
   * time */
  f->meta = malloc((n ? n : 1) * sizeof *f->meta);
  fg_name_table set = {0};
  if (!f->meta || fg_name_table_reset(&set, n)) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", c->src);
  fg_status s = FG_OK;
  const st_node *e = st_first(v);
  for (size_t k = 0; k < n; k++, e = st_after(c->j, e)) {
    uint64_t kat = c->base + e->key_pos;
    st_meta *m = &f->meta[f->nmeta];
    m->key_off = e->key_pos + 1;
    m->key_len = e->key_len;
    int64_t dup;
    if ((s = fg_name_table_insert(&set, st_key(c->j, e), e->key_len, f->nmeta, meta_key_at, f, &dup))) break;
    if (dup >= 0) {
      s = fg_fail(FG_ERR_DUPLICATE, "%s: __metadata__ key '%.*s' repeated at byte %llu", c->src, KEY(c, e),
                  (unsigned long long)kat);
      break;
    }
    if (e->kind != ST_STR) {
      s = fg_fail(FG_ERR_METADATA_NOT_STRING, "%s: __metadata__ value of '%.*s' (byte %llu) is not a string",
                  c->src, KEY(c, e), (unsigned long long)kat);
      break;
    }
    m->val_off = e->pos + 1;
    m->val_len = e->len;
    f->nmeta++;
  }
  fg_name_table_free(&set);
  return s;
}

static fg_status parse_u64_pair(st_ctx *c, const st_node *v, const st_node *name, uint64_t out[2]) {
  if (v->kind != ST_ARR || v->len != 2)
    return fg_fail(FG_ERR_INVALID_JSON, "%s: tensor '%.*s': data_offsets must be an array of 2 integers", c->src,
                   KEY(c, name));
  st_iter it;
  st_node e;
  st_iter_init(&it, c->j, v);
  for (int i = 0; i < 2 && st_iter_next(&it, &e); i++) {
    if (!st_num_u64(c->j, &e, &out[i]))
      return fg_fail(FG_ERR_INVALID_JSON,
                     "%s: tensor '%.*s': data_offsets[%d] is not an integer in [0, 2^64) (byte %llu)", c->src,
                     KEY(c, name), i,
                     (unsigned long long)(c->base + (e.kind == ST_NUM || e.kind == ST_STR ? e.pos : 0)));
  }
  return FG_OK;
}

static fg_status parse_shape(st_ctx *c, const st_node *v, const st_node *name, fg_st_tensor *t) {
  if (v->kind != ST_ARR)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor '%.*s': shape must be an array of integers", c->src, KEY(c, name));
  size_t n = v->len;
  if (n > INT32_MAX)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor '%.*s': %zu dims", c->src, KEY(c, name), n);
  /* f->dims has room for every shape array's elements (counted before) */
  uint64_t *shape = c->f->dims + c->ndims;
  st_iter it;
  st_node e;
  st_iter_init(&it, c->j, v);
  for (size_t i = 0; st_iter_next(&it, &e); i++) {
    if (e.kind != ST_NUM || c->ndims + i >= c->dims_cap || !st_num_u64(c->j, &e, &shape[i])) {
      if (e.kind == ST_NUM || e.kind == ST_STR) /* a string shows as nothing, as it always has */
        return fg_fail(FG_ERR_BAD_SHAPE,
                       "%s: tensor '%.*s': shape[%zu] at byte %llu is %.*s, expected an integer in [0, 2^64)",
                       c->src, KEY(c, name), i, (unsigned long long)(c->base + e.pos),
                       e.kind == ST_NUM ? (int)(e.len > 40 ? 40 : e.len) : 0, c->j->text + e.pos);
      return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor '%.*s': shape[%zu] is not an integer", c->src, KEY(c, name), i);
    }
  }
  c->ndims += n;
  t->shape = shape;
  t->ndim = (int)n;
  return FG_OK;
}

static fg_status parse_dtype(st_ctx *c, const st_node *d, const st_node *name, fg_st_tensor *t) {
  const st_node *p = c->last_dtype;
  const char *tag = st_str(c->j, d);
  if (p && p->len == d->len && memcmp(st_str(c->j, p), tag, d->len) == 0) {
    t->dtype = c->last;
    return FG_OK;
  }
  if (fg_dtype_from_st_tag(tag, d->len, &t->dtype) != FG_OK)
    return fg_fail(FG_ERR_BAD_DTYPE, "%s: tensor '%.*s': unknown dtype '%.*s' at byte %llu", c->src, KEY(c, name),
                   shown(d->len), tag, (unsigned long long)(c->base + d->pos));
  c->last_dtype = d;
  c->last = t->dtype;
  return FG_OK;
}

static bool is_key(const st_json *j, const st_node *e, const char *k, size_t n) {
  return e->key_len == n && memcmp(st_key(j, e), k, n) == 0;
}

static fg_status parse_tensor(st_ctx *c, const st_node *v, fg_st_tensor *t) {
  const st_node *name = v;
  uint64_t at = c->base + name->key_pos;
  if (v->kind != ST_OBJ || !v->tree)
    return fg_fail(FG_ERR_INVALID_JSON, "%s: tensor '%.*s' (byte %llu): expected an object with dtype, shape, "
                   "data_offsets", c->src, KEY(c, name), (unsigned long long)at);
  bool have_dtype = false, have_shape = false, have_offsets = false;
  const st_node *e = st_first(v);
  for (size_t k = 0; k < v->len; k++, e = st_after(c->j, e)) {
    bool *seen = NULL;
    if (is_key(c->j, e, "dtype", 5)) seen = &have_dtype;
    else if (is_key(c->j, e, "shape", 5)) seen = &have_shape;
    else if (is_key(c->j, e, "data_offsets", 12)) seen = &have_offsets;
    else continue; /* upstream ignores unknown fields */
    if (*seen)
      return fg_fail(FG_ERR_DUPLICATE, "%s: tensor '%.*s': field '%s' repeated at byte %llu", c->src, KEY(c, name),
                     st_key(c->j, e), (unsigned long long)(c->base + e->key_pos));
    *seen = true;
    fg_status s;
    if (seen == &have_dtype) {
      if (e->kind != ST_STR)
        return fg_fail(FG_ERR_INVALID_JSON, "%s: tensor '%.*s': dtype is not a string", c->src, KEY(c, name));
      if ((s = parse_dtype(c, e, name, t))) return s;
    } else if (seen == &have_shape) {
      if ((s = parse_shape(c, e, name, t))) return s;
    } else {
      uint64_t off[2];
      if ((s = parse_u64_pair(c, e, name, off))) return s;
      t->begin = off[0];
      t->end = off[1];
    }
  }
  const char *missing = !have_dtype ? "dtype" : !have_shape ? "shape" : !have_offsets ? "data_offsets" : NULL;
  if (missing)
    return fg_fail(FG_ERR_INVALID_JSON, "%s: tensor '%.*s' (byte %llu): missing field '%s'", c->src, KEY(c, name),
                   (unsigned long long)at, missing);
  return FG_OK;
}

/* v: the member whose key is the tensor name; the name points into f->strs. */
static fg_status add_tensor(st_ctx *c, const st_node *v) {
  fg_st_file *f = c->f;
  fg_st_tensor *t = &f->tensors[f->n];
  memset(t, 0, sizeof *t);
  t->name = st_key(c->j, v);
  t->name_len = v->key_len;
  int64_t dup;
  fg_status s = fg_name_table_insert(&f->names, t->name, t->name_len, f->n, tensor_name_at, f, &dup);
  if (s) return s;
  if (dup >= 0)
    return fg_fail(FG_ERR_DUPLICATE, "%s: tensor name '%.*s' repeated at byte %llu", c->src, KEY(c, v),
                   (unsigned long long)(c->base + v->key_pos));
  f->n++;
  return parse_tensor(c, v, t);
}

static int cmp_offset(const void *a, const void *b, void *ctx) {
  const fg_st_tensor *ts = ctx;
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  if (ts[i].begin != ts[j].begin) return ts[i].begin < ts[j].begin ? -1 : 1;
  if (ts[i].end != ts[j].end) return ts[i].end < ts[j].end ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* qsort_r is not C11; n is small next to the JSON work, so a merge sort keeps it portable
 * and stable. */
static void sort_by_offset(size_t *idx, size_t *tmp, size_t n, const fg_st_tensor *ts) {
  if (n < 2) return;
  size_t h = n / 2;
  sort_by_offset(idx, tmp, h, ts);
  sort_by_offset(idx + h, tmp, n - h, ts);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp_offset(&idx[j], &idx[i], (void *)ts) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, n * sizeof *idx);
}

/* Steps 4-6 of the header: JSON, schema, offset walk. *buffer_end = end of the last
 * tensor. */
static fg_status parse_header(fg_st_file *f, const uint8_t *hdr, uint64_t n, uint64_t *buffer_end) {
  st_json j;
  fg_status s = st_json_parse((const char *)hdr, (size_t)n, f->source, 8, &j);
  if (s) return s;
  st_ctx c = {.f = f, .j = &j, .src = f->source, .base = 8};
  const st_node *root = j.nodes;
  if (root->kind != ST_OBJ) {
    s = fg_fail(FG_ERR_INVALID_JSON, "%s: header is not a JSON object", f->source);
    goto done;
  }
  size_t count = root->len;
  /* names and metadata point into the decoded strings, which the file keeps */
  f->strs = j.strs;
  /* room for the elements of every array under a "shape" key, so that a header of numbers
   * elsewhere costs no dims */
  const st_node *e = st_first(root);
  for (size_t k = 0; k < count; k++, e = st_after(&j, e)) {
    if (e->kind != ST_OBJ || !e->tree) continue;
    const st_node *g = st_first(e);
    for (size_t q = 0; q < e->len; q++, g = st_after(&j, g))
      if (g->kind == ST_ARR && is_key(&j, g, "shape", 5)) c.dims_cap += g->len;
  }
  f->tensors = malloc((count ? count : 1) * sizeof *f->tensors);
  fg_status ts = fg_name_table_reset(&f->names, count);
  f->dims = malloc((c.dims_cap ? c.dims_cap : 1) * sizeof *f->dims);
  if (!f->tensors || ts || !f->dims) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory for %zu tensors", f->source, count);
    goto done;
  }
  bool meta_seen = false;
  e = st_first(root);
  for (size_t k = 0; k < count; k++, e = st_after(&j, e)) {
    if (is_key(&j, e, "__metadata__", 12)) {
      if (meta_seen) {
        s = fg_fail(FG_ERR_DUPLICATE, "%s: duplicate field '__metadata__' at byte %llu", f->source,
                    (unsigned long long)(8 + e->key_pos));
        goto done;
      }
      meta_seen = true;
      if ((s = parse_metadata(&c, e, 8 + e->key_pos))) goto done;
    } else if ((s = add_tensor(&c, e))) {
      goto done;
    }
  }
  f->by_offset = malloc((f->n ? f->n : 1) * sizeof *f->by_offset);
  size_t *tmp = malloc((f->n ? f->n : 1) * sizeof *tmp);
  if (!f->by_offset || !tmp) {
    free(tmp);
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", f->source);
    goto done;
  }
  for (size_t i = 0; i < f->n; i++) f->by_offset[i] = i;
  sort_by_offset(f->by_offset, tmp, f->n, f->tensors);
  free(tmp);
  uint64_t start = 0;
  for (size_t k = 0; k < f->n; k++) {
    fg_st_tensor *t = &f->tensors[f->by_offset[k]];
    if (t->begin != start || t->end < t->begin) {
      s = fg_fail(FG_ERR_INVALID_OFFSET,
                  "%s: tensor '%.*s': data_offsets [%llu, %llu], expected to begin at %llu and end at or after it",
                  f->source, shown(t->name_len), t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
                  (unsigned long long)start);
      goto done;
    }
    start = t->end;
    uint64_t want;
    if ((s = st_tensor_bytes(t->dtype, t->shape, t->ndim, &want, f->source, t->name, t->name_len))) goto done;
    t->nbytes = t->end - t->begin;
    if (t->nbytes != want) {
      s = fg_fail(FG_ERR_TENSOR_INVALID_INFO,
                  "%s: tensor '%.*s': data_offsets [%llu, %llu] hold %llu bytes, %s x shape needs %llu", f->source,
                  shown(t->name_len), t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
                  (unsigned long long)t->nbytes, fg_dtype_info(t->dtype)->st_tag, (unsigned long long)want);
      goto done;
    }
  }
  *buffer_end = start;
done:
  if (f->strs == j.strs) j.strs = NULL; /* the file keeps them (fg_st_close frees them) */
  st_json_free(&j);
  return s;
}

/* ---------------------------------------------------------------- entry points */

void fg_st_close(fg_st_file *f) {
  if (!f) return;
  free(f->strs);
  free(f->dims);
  free(f->meta);
  free(f->tensors);
  free(f->by_offset);
  fg_name_table_free(&f->names);
  free(f->source);
  fg_mapping_release(f->map);
  free(f);
}

static fg_status st_new(const char *source, fg_st_file **out) {
  fg_st_file *f = calloc(1, sizeof *f);
  if (!f) return fg_fail(FG_ERR_NOMEM, "out of memory");
  f->source = strdup(source ? source : "<memory>");
  if (!f->source) {
    free(f);
    return fg_fail(FG_ERR_NOMEM, "out of memory");
  }
  *out = f;
  return FG_OK;
}

/* Steps 1-3 on a length prefix: returns N. */
static fg_status check_prefix(const char *src, const uint8_t *b, uint64_t avail, uint64_t *n_out) {
  if (avail < 8)
    return fg_fail(FG_ERR_HEADER_TOO_SMALL, "%s: %llu bytes, a safetensors file needs at least 8 (header length)", src,
                   (unsigned long long)avail);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | b[i];
  if (n > FG_ST_MAX_HEADER_SIZE || n > (uint64_t)SIZE_MAX - 8)
    return fg_fail(FG_ERR_HEADER_TOO_LARGE, "%s: header length %llu at byte 0 exceeds the limit of %llu", src,
                   (unsigned long long)n, (unsigned long long)FG_ST_MAX_HEADER_SIZE);
  *n_out = n;
  return FG_OK;
}

/* The JSON header is parsed from a copy taken with fg_mapping_copy: a file truncated under
 * the parse is then a status, and the JSON parser never has to be abandoned half-way (it
 * allocates as it goes). Nothing parsed points into the header text. */
static fg_status st_from_mapping(fg_mapping *m, const char *src, fg_st_file **out) {
  const uint8_t *b = fg_mapping_data(m);
  uint64_t len = fg_mapping_size(m);
  uint8_t prefix[8] = {0};
  uint64_t n = 0;
  fg_status s = fg_mapping_copy(m, prefix, 0, len < 8 ? len : 8);
  if (s || (s = check_prefix(src, prefix, len, &n))) return s;
  if (8 + n > len)
    return fg_fail(FG_ERR_INVALID_HEADER_LENGTH, "%s: header length %llu runs past the end (%llu bytes, need %llu)",
                   src, (unsigned long long)n, (unsigned long long)len, (unsigned long long)(8 + n));
  uint8_t *hdr = malloc(n ? (size_t)n : 1);
  if (!hdr) return fg_fail(FG_ERR_NOMEM, "%s: out of memory for a %llu-byte header", src, (unsigned long long)n);
  fg_st_file *f = NULL;
  if ((s = fg_mapping_copy(m, hdr, 8, n)) || (s = st_new(src, &f))) {
    free(hdr);
    return s;
  }
  uint64_t end = 0;
  s = parse_header(f, hdr, n, &end);
  free(hdr);
  if (s) {
    fg_st_close(f);
    return s;
  }
  if (end > len - 8 - n || end + 8 + n != len) {
    fg_st_close(f);
    return fg_fail(FG_ERR_INCOMPLETE_BUFFER,
                   "%s: tensors cover %llu data bytes from byte %llu, the file has %llu (%s)", src,
                   (unsigned long long)end, (unsigned long long)(8 + n), (unsigned long long)(len - 8 - n),
                   end > len - 8 - n ? "truncated" : "trailing bytes");
  }
  f->header_size = n;
  f->data_start = 8 + n;
  f->data_size = end;
  for (size_t i = 0; i < f->n; i++)
    f->tensors[i].data = f->tensors[i].nbytes ? b + 8 + n + f->tensors[i].begin : NULL;
  f->map = fg_mapping_retain(m);
  *out = f;
  return FG_OK;
}

fg_status fg_st_open_mapping(fg_mapping *m, fg_st_file **out) {
  if (!m || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_open_mapping: NULL argument");
  *out = NULL;
  return st_from_mapping(m, fg_mapping_path(m), out);
}

fg_status fg_st_parse(const void *bytes, size_t len, const char *source, fg_st_file **out) {
  if ((!bytes && len) || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_parse: NULL argument");
  *out = NULL;
  fg_mapping *m = NULL;
  fg_status s = fg_mapping_wrap(bytes, len, &m);
  if (s) return s;
  s = st_from_mapping(m, source ? source : "<memory>", out);
  fg_mapping_release(m);
  return s;
}

fg_status fg_st_open(const char *path, fg_map_mode mode, fg_st_file **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_open: NULL argument");
  *out = NULL;
  fg_mapping *m = NULL;
  fg_status s = fg_mapping_open(path, mode, &m);
  if (s) return s;
  s = st_from_mapping(m, path, out);
  fg_mapping_release(m);
  return s;
}

/* ---------------------------------------------------------------- stream frames */

typedef size_t (*st_read_fn)(void *ctx, void *buf, size_t n, int *err);

static size_t read_file_fn(void *ctx, void *buf, size_t n, int *err) {
  size_t got = fread(buf, 1, n, (FILE *)ctx);
  if (got < n && ferror((FILE *)ctx)) *err = errno ? errno : EIO;
  return got;
}

static size_t read_fd_fn(void *ctx, void *buf, size_t n, int *err) {
  int fd = *(int *)ctx;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (uint8_t *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      *err = errno;
      break;
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  return got;
}

static fg_status read_frame(st_read_fn rd, void *ctx, const char *src, fg_st_file **out) {
  int err = 0;
  uint8_t pre[8];
  size_t got = rd(ctx, pre, 8, &err);
  if (err) return fg_fail(FG_ERR_IO, "%s: read: %s", src, strerror(err));
  uint64_t n = 0;
  fg_status s = check_prefix(src, pre, got, &n);
  if (s) return s;
  /* The whole frame lands in one buffer that the mapping adopts: header first, then
   * the data in growing steps so that a lying header fails at EOF, not in malloc. */
  size_t cap = (size_t)(8 + n);
  uint8_t *buf = malloc(cap ? cap : 1);
  if (!buf) return fg_fail(FG_ERR_NOMEM, "%s: cannot allocate a %llu-byte header", src, (unsigned long long)n);
  memcpy(buf, pre, 8);
  got = rd(ctx, buf + 8, (size_t)n, &err);
  if (err || got < n) {
    free(buf);
    if (err) return fg_fail(FG_ERR_IO, "%s: read: %s", src, strerror(err));
    return fg_fail(FG_ERR_INVALID_HEADER_LENGTH, "%s: header length %llu, the stream ended after %zu header bytes",
                   src, (unsigned long long)n, got);
  }
  fg_st_file *probe = NULL;
  if ((s = st_new(src, &probe))) {
    free(buf);
    return s;
  }
  uint64_t end = 0;
  s = parse_header(probe, buf + 8, n, &end);
  fg_st_close(probe);
  if (s) {
    free(buf);
    return s;
  }
  if (end > SIZE_MAX - 8 - n) {
    free(buf);
    return fg_fail(FG_ERR_OVERFLOW, "%s: frame of 8 + %llu + %llu bytes does not fit in memory sizes", src,
                   (unsigned long long)n, (unsigned long long)end);
  }
  size_t total = (size_t)(8 + n + end), have = (size_t)(8 + n);
  while (have < total) {
    size_t want = total - have;
    if (have + want > cap) {
      size_t ncap = cap < ((size_t)1 << 20) ? ((size_t)1 << 20) : cap;
      while (ncap < total && ncap < have + want) ncap = ncap > SIZE_MAX / 2 ? total : ncap * 2;
      if (ncap > total) ncap = total;
      uint8_t *p = realloc(buf, ncap);
      if (!p) {
        free(buf);
        return fg_fail(FG_ERR_NOMEM, "%s: cannot allocate %zu bytes for the frame", src, ncap);
      }
      buf = p;
      cap = ncap;
      want = cap - have;
    }
    got = rd(ctx, buf + have, want, &err);
    have += got;
    if (err || got < want) {
      free(buf);
      if (err) return fg_fail(FG_ERR_IO, "%s: read: %s", src, strerror(err));
      return fg_fail(FG_ERR_INCOMPLETE_BUFFER, "%s: tensors cover %llu data bytes, the stream ended after %llu", src,
                     (unsigned long long)end, (unsigned long long)(have - 8 - n));
    }
  }
  fg_mapping *m = NULL;
  if ((s = fg_mapping_adopt(buf, total, src, &m))) {
    free(buf);
    return s;
  }
  s = st_from_mapping(m, src, out);
  fg_mapping_release(m);
  return s;
}

fg_status fg_st_read_frame(FILE *stream, const char *source, fg_st_file **out) {
  if (!stream || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_read_frame: NULL argument");
  *out = NULL;
  return read_frame(read_file_fn, stream, source ? source : "<stream>", out);
}

fg_status fg_st_read_frame_fd(int fd, const char *source, fg_st_file **out) {
  if (fd < 0 || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_read_frame_fd: bad argument");
  *out = NULL;
  return read_frame(read_fd_fn, &fd, source ? source : "<fd>", out);
}

/* ---------------------------------------------------------------- accessors */

size_t fg_st_count(const fg_st_file *f) { return f ? f->n : 0; }

const fg_st_tensor *fg_st_tensor_at(const fg_st_file *f, size_t i) {
  return (f && i < f->n) ? &f->tensors[i] : NULL;
}

const fg_st_tensor *fg_st_tensor_by_offset(const fg_st_file *f, size_t i) {
  return (f && i < f->n) ? &f->tensors[f->by_offset[i]] : NULL;
}

const fg_st_tensor *fg_st_find_n(const fg_st_file *f, const char *name, size_t len) {
  if (!f || !name) return NULL;
  int64_t i = fg_name_table_find(&f->names, name, len, tensor_name_at, f);
  return i < 0 ? NULL : &f->tensors[i];
}

const fg_st_tensor *fg_st_find(const fg_st_file *f, const char *name) {
  return name ? fg_st_find_n(f, name, strlen(name)) : NULL;
}

fg_status fg_st_get(const fg_st_file *f, const char *name, const fg_st_tensor **out) {
  if (!f || !name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_get: NULL argument");
  *out = fg_st_find(f, name);
  if (!*out) return fg_fail(FG_ERR_NOT_FOUND, "%s: tensor '%s' not found", f->source, name);
  return FG_OK;
}

bool fg_st_has_metadata(const fg_st_file *f) { return f && f->has_meta; }
size_t fg_st_metadata_count(const fg_st_file *f) { return f ? f->nmeta : 0; }

bool fg_st_metadata_at(const fg_st_file *f, size_t i, const char **key, const char **value) {
  return fg_st_metadata_at_n(f, i, key, NULL, value, NULL);
}

bool fg_st_metadata_at_n(const fg_st_file *f, size_t i, const char **key, size_t *key_len, const char **value,
                         size_t *value_len) {
  if (!f || i >= f->nmeta) return false;
  const st_meta *m = &f->meta[i];
  if (key) *key = f->strs + m->key_off;
  if (key_len) *key_len = m->key_len;
  if (value) *value = f->strs + m->val_off;
  if (value_len) *value_len = m->val_len;
  return true;
}

/* By the whole key: "a" does not find a key "a\0b". */
const char *fg_st_metadata_find(const fg_st_file *f, const char *key) {
  if (!f || !key) return NULL;
  size_t n = strlen(key);
  for (size_t i = 0; i < f->nmeta; i++)
    if (f->meta[i].key_len == n && memcmp(f->strs + f->meta[i].key_off, key, n) == 0) return f->strs + f->meta[i].val_off;
  return NULL;
}

uint64_t fg_st_header_size(const fg_st_file *f) { return f ? f->header_size : 0; }
uint64_t fg_st_data_start(const fg_st_file *f) { return f ? f->data_start : 0; }
uint64_t fg_st_data_size(const fg_st_file *f) { return f ? f->data_size : 0; }
const char *fg_st_source(const fg_st_file *f) { return f ? f->source : ""; }
fg_mapping *fg_st_mapping(const fg_st_file *f) { return f ? f->map : NULL; }
