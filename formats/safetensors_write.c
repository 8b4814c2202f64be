/* safetensors writer: the upstream serializer's layout, validated before any output. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "formats/safetensors_internal.h"

static int name_cmp(const char *a, size_t al, const char *b, size_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  if (c) return c;
  return al < bl ? -1 : al > bl;
}

/* Descending upstream dtype index, then ascending name bytes (Rust's str Ord). */
static int write_order(const fg_st_write_tensor *a, const fg_st_write_tensor *b) {
  int ra = st_dtype_rank(a->dtype), rb = st_dtype_rank(b->dtype);
  if (ra != rb) return ra > rb ? -1 : 1;
  return name_cmp(a->name, strlen(a->name), b->name, strlen(b->name));
}

static void sort_tensors(const fg_st_write_tensor **v, const fg_st_write_tensor **tmp, size_t n) {
  if (n < 2) return;
  size_t h = n / 2;
  sort_tensors(v, tmp, h);
  sort_tensors(v + h, tmp, n - h);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = write_order(v[j], v[i]) < 0 ? v[j++] : v[i++];
  while (i < h) tmp[k++] = v[i++];
  while (j < n) tmp[k++] = v[j++];
  memcpy(v, tmp, n * sizeof *v);
}

static int str_cmp_p(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts v in place and returns a string that occurs twice in it, or NULL. */
static const char *first_duplicate(const char **v, size_t n) {
  qsort(v, n, sizeof *v, str_cmp_p);
  for (size_t i = 1; i < n; i++)
    if (strcmp(v[i - 1], v[i]) == 0) return v[i];
  return NULL;
}

static fg_status check_utf8(const char *s, const char *what) {
  size_t bad;
  if (!st_utf8_valid((const uint8_t *)s, strlen(s), &bad))
    return fg_fail(FG_ERR_INVALID_ARG, "safetensors writer: %s '%.64s' is not UTF-8 (byte %zu)", what, s, bad);
  return FG_OK;
}

/* Validates everything and builds prefix + padded header; *order gets the tensors in
 * file order (free it), *total the file size. */
fg_status st_header_build(const fg_st_write_tensor *ts, size_t n, const fg_st_kv *meta, size_t nmeta, bool with_data,
                          st_buf *out, const fg_st_write_tensor ***order_out, uint64_t *total) {
  if ((n && !ts) || (nmeta && !meta)) return fg_fail(FG_ERR_INVALID_ARG, "safetensors writer: NULL array");
  fg_status s = FG_OK;
  for (size_t i = 0; i < n; i++) {
    const fg_st_write_tensor *t = &ts[i];
    if (!t->name || !t->name[0]) return fg_fail(FG_ERR_INVALID_ARG, "safetensors writer: tensor %zu has no name", i);
    if ((s = check_utf8(t->name, "tensor name"))) return s;
    if (strcmp(t->name, "__metadata__") == 0)
      return fg_fail(FG_ERR_INVALID_ARG, "safetensors writer: a tensor may not be named __metadata__ (readers "
                     "take it for the metadata map)");
    if (st_dtype_rank(t->dtype) < 0)
      return fg_fail(FG_ERR_BAD_DTYPE, "safetensors writer: tensor '%.200s': dtype %s has no safetensors tag",
                     t->name, fg_dtype_name(t->dtype));
    if (t->ndim < 0 || (t->ndim > 0 && !t->shape))
      return fg_fail(FG_ERR_BAD_SHAPE, "safetensors writer: tensor '%.200s': bad ndim %d or NULL shape", t->name,
                     t->ndim);
    uint64_t want;
    if ((s = st_tensor_bytes(t->dtype, t->shape, t->ndim, &want, "safetensors writer", t->name, strlen(t->name))))
      return s;
    if (want != t->nbytes)
      return fg_fail(FG_ERR_TENSOR_INVALID_INFO, "safetensors writer: tensor '%.200s': %llu bytes given, %s x shape "
                     "needs %llu", t->name, (unsigned long long)t->nbytes, fg_dtype_info(t->dtype)->st_tag,
                     (unsigned long long)want);
    if (with_data && t->nbytes && !t->data)
      return fg_fail(FG_ERR_INVALID_ARG, "safetensors writer: tensor '%.200s': NULL data", t->name);
  }
  for (size_t i = 0; i < nmeta; i++) {
    if (!meta[i].key || !meta[i].value)
      return fg_fail(FG_ERR_INVALID_ARG, "safetensors writer: metadata entry %zu has a NULL key or value", i);
    if ((s = check_utf8(meta[i].key, "metadata key")) || (s = check_utf8(meta[i].value, "metadata value")))
      return s;
  }
  if (nmeta > 1) {
    const char **keys = malloc(nmeta * sizeof *keys);
    if (!keys) return fg_fail(FG_ERR_NOMEM, "safetensors writer: out of memory");
    for (size_t i = 0; i < nmeta; i++) keys[i] = meta[i].key;
    const char *dup = first_duplicate(keys, nmeta);
    if (dup) s = fg_fail(FG_ERR_DUPLICATE, "safetensors writer: metadata key '%.200s' given twice", dup);
    free(keys);
    if (s) return s;
  }
  const fg_st_write_tensor **order = malloc((n ? n : 1) * sizeof *order);
  const fg_st_write_tensor **tmp = malloc((n ? n : 1) * sizeof *tmp);
  if (!order || !tmp) {
    free(order);
    free(tmp);
    return fg_fail(FG_ERR_NOMEM, "safetensors writer: out of memory");
  }
  for (size_t i = 0; i < n; i++) order[i] = &ts[i];
  sort_tensors(order, tmp, n);
  free(tmp);
  if (n > 1) {
    const char **names = malloc(n * sizeof *names);
    if (!names) {
      free(order);
      return fg_fail(FG_ERR_NOMEM, "safetensors writer: out of memory");
    }
    for (size_t i = 0; i < n; i++) names[i] = ts[i].name;
    const char *dup = first_duplicate(names, n);
    if (dup) s = fg_fail(FG_ERR_DUPLICATE, "safetensors writer: tensor name '%.200s' given twice", dup);
    free(names);
    if (s) {
      free(order);
      return s;
    }
  }

  st_buf b = {0};
  st_buf_put(&b, "\0\0\0\0\0\0\0\0{", 9);
  if (meta) {
    st_buf_puts(&b, "\"__metadata__\":{");
    for (size_t i = 0; i < nmeta; i++) {
      if (i) st_buf_put(&b, ",", 1);
      st_buf_json_string(&b, meta[i].key, strlen(meta[i].key), false);
      st_buf_put(&b, ":", 1);
      st_buf_json_string(&b, meta[i].value, strlen(meta[i].value), false);
    }
    st_buf_put(&b, "}", 1);
    if (n) st_buf_put(&b, ",", 1);
  }
  uint64_t off = 0;
  for (size_t i = 0; i < n; i++) {
    const fg_st_write_tensor *t = order[i];
    if (i) st_buf_put(&b, ",", 1);
    st_buf_json_string(&b, t->name, strlen(t->name), false);
    st_buf_printf(&b, ":{\"dtype\":\"%s\",\"shape\":[", fg_dtype_info(t->dtype)->st_tag);
    for (int d = 0; d < t->ndim; d++) st_buf_printf(&b, d ? ",%llu" : "%llu", (unsigned long long)t->shape[d]);
    if (t->nbytes > UINT64_MAX - off) {
      free(b.p);
      free(order);
      return fg_fail(FG_ERR_OVERFLOW, "safetensors writer: data offsets overflow at tensor '%.200s'", t->name);
    }
    st_buf_printf(&b, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                  (unsigned long long)(off + t->nbytes));
    off += t->nbytes;
    if (b.failed || b.len > FG_ST_MAX_HEADER_SIZE + 8) break;
  }
  st_buf_put(&b, "}", 1);
  while (!b.failed && (b.len - 8) % 8 != 0 && b.len <= FG_ST_MAX_HEADER_SIZE + 8) st_buf_put(&b, " ", 1);
  if (b.failed) {
    free(b.p);
    free(order);
    return fg_fail(FG_ERR_NOMEM, "safetensors writer: out of memory building the header");
  }
  uint64_t hn = b.len - 8;
  if (hn > FG_ST_MAX_HEADER_SIZE) {
    free(b.p);
    free(order);
    return fg_fail(FG_ERR_HEADER_TOO_LARGE, "safetensors writer: header of %llu bytes or more exceeds the limit of %llu",
                   (unsigned long long)hn, (unsigned long long)FG_ST_MAX_HEADER_SIZE);
  }
  if (off > UINT64_MAX - b.len) {
    free(b.p);
    free(order);
    return fg_fail(FG_ERR_OVERFLOW, "safetensors writer: file size overflows u64");
  }
  for (int i = 0; i < 8; i++) b.p[i] = (char)(uint8_t)(hn >> (8 * i));
  *out = b;
  *order_out = order;
  *total = b.len + off;
  return FG_OK;

}

fg_status fg_st_serialized_size(const fg_st_write_tensor *tensors, size_t n, const fg_st_kv *meta, size_t nmeta,
                                uint64_t *out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_serialized_size: NULL out");
  st_buf b = {0};
  const fg_st_write_tensor **order = NULL;
  fg_status s = st_header_build(tensors, n, meta, nmeta, true, &b, &order, out);
  if (s) return s;
  free(b.p);
  free(order);
  return FG_OK;
}

fg_status fg_st_serialize(const fg_st_write_tensor *tensors, size_t n, const fg_st_kv *meta, size_t nmeta,
                          uint8_t **out, size_t *out_len) {
  if (!out || !out_len) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_serialize: NULL out");
  *out = NULL;
  *out_len = 0;
  st_buf b = {0};
  const fg_st_write_tensor **order = NULL;
  uint64_t total = 0;
  fg_status s = st_header_build(tensors, n, meta, nmeta, true, &b, &order, &total);
  if (s) return s;
  if (total > SIZE_MAX) {
    free(b.p);
    free(order);
    return fg_fail(FG_ERR_OVERFLOW, "fg_st_serialize: %llu bytes do not fit in memory", (unsigned long long)total);
  }
  uint8_t *p = realloc(b.p, total ? (size_t)total : 1);
  if (!p) {
    free(b.p);
    free(order);
    return fg_fail(FG_ERR_NOMEM, "fg_st_serialize: cannot allocate %llu bytes", (unsigned long long)total);
  }
  size_t at = b.len;
  for (size_t i = 0; i < n; i++) {
    if (order[i]->nbytes) memcpy(p + at, order[i]->data, (size_t)order[i]->nbytes);
    at += (size_t)order[i]->nbytes;
  }
  free(order);
  *out = p;
  *out_len = (size_t)total;
  return FG_OK;
}

fg_status fg_st_write_frame(FILE *stream, const fg_st_write_tensor *tensors, size_t n, const fg_st_kv *meta,
                            size_t nmeta) {
  if (!stream) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_write_frame: NULL stream");
  st_buf b = {0};
  const fg_st_write_tensor **order = NULL;
  uint64_t total = 0;
  fg_status s = st_header_build(tensors, n, meta, nmeta, true, &b, &order, &total);
  if (s) return s;
  bool ok = fwrite(b.p, 1, b.len, stream) == b.len;
  for (size_t i = 0; ok && i < n; i++)
    if (order[i]->nbytes) ok = fwrite(order[i]->data, 1, (size_t)order[i]->nbytes, stream) == order[i]->nbytes;
  free(b.p);
  free(order);
  if (!ok) return fg_fail(FG_ERR_IO, "fg_st_write_frame: write failed: %s", strerror(errno));
  return FG_OK;
}

/* Upstream writes a temp file beside the target and renames it, so a live mapping of the
 * old file keeps its (unlinked) inode and readers never see a half-written file;
 * core/atomic_file.h also syncs the directory and refuses to replace non-regular files. */
fg_status st_write_atomic(const char *path, const void *head, size_t head_len,
                          const fg_st_write_tensor *const *order, size_t n) {
  fg_atomic_file f;
  fg_status s = fg_atomic_file_begin(&f, path);
  if (!s) s = fg_atomic_file_write(&f, head, head_len);
  for (size_t i = 0; !s && i < n; i++) s = fg_atomic_file_write(&f, order[i]->data, order[i]->nbytes);
  if (!s) s = fg_atomic_file_commit(&f);
  fg_atomic_file_abort(&f); /* a no-op unless a step above failed */
  return s;
}

fg_status fg_st_save(const char *path, const fg_st_write_tensor *tensors, size_t n, const fg_st_kv *meta,
                     size_t nmeta) {
  if (!path) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_save: NULL path");
  st_buf b = {0};
  const fg_st_write_tensor **order = NULL;
  uint64_t total = 0;
  fg_status s = st_header_build(tensors, n, meta, nmeta, true, &b, &order, &total);
  if (s) return fg_fail_prefix(s, "%s: ", path);
  s = st_write_atomic(path, b.p, b.len, order, n);
  free(b.p);
  free(order);
  return s;
}
