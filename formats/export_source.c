/* Export sources: a GGUF file (or split model) or a safetensors checkpoint, flattened into
 * one list of tensors with GGUF shapes so that planning and streaming need not care. */
#include <stdlib.h>
#include <string.h>

#include "formats/export_internal.h"

static fg_status set_path(fg_export_source *s, const char *path) {
  size_t n = strlen(path);
  s->path = malloc(n + 1);
  if (!s->path) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  memcpy(s->path, path, n + 1);
  return FG_OK;
}

static fg_status alloc_tensors(fg_export_source *s, size_t n) {
  s->n = n;
  if (n == 0) return FG_OK;
  s->t = calloc(n, sizeof *s->t);
  if (!s->t) return fg_fail(FG_ERR_NOMEM, "%s: out of memory for %zu tensors", s->path, n);
  return FG_OK;
}

fg_status fg_export_source_open_gguf(const char *path, fg_export_source **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_source_open_gguf: NULL argument");
  *out = NULL;
  fg_export_source *s = calloc(1, sizeof *s);
  if (!s) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  fg_status st = set_path(s, path);
  if (!st) st = fg_gguf_open_auto(path, &s->gguf);
  if (!st) st = alloc_tensors(s, (size_t)fg_gguf_tensor_count(s->gguf));
  for (size_t i = 0; !st && i < s->n; i++) {
    const fg_gguf_tensor *g = fg_gguf_tensor_at(s->gguf, i);
    fg_export_src_tensor *t = &s->t[i];
    t->name = g->name;
    t->dtype = g->dtype;
    t->ndim = g->ndim;
    memcpy(t->ne, g->ne, sizeof t->ne);
    memcpy(t->shape, g->shape, sizeof t->shape);
    t->data = g->data;
    t->nbytes = g->nbytes;
    t->map = fg_gguf_mapping(s->gguf, g->part);
    t->map_off = fg_gguf_data_offset(s->gguf, g->part) + g->offset;
  }
  if (st) {
    fg_export_source_close(s);
    return st;
  }
  *out = s;
  return FG_OK;
}

/* Checks that GGUF can carry a safetensors tensor and fills its GGUF description. */
static fg_status st_tensor(const char *src, const fg_st_tensor *x, const fg_st_file *shard,
                           fg_export_src_tensor *t) {
  if (x->name_len == 0 || x->name_len >= FG_GGUF_MAX_NAME || memchr(x->name, 0, x->name_len))
    return fg_fail(FG_ERR_BAD_STRING, "%s: tensor '%s': name of %zu bytes cannot be a GGUF tensor name "
                   "(expected 1..%u bytes without NUL)", src, x->name, x->name_len, FG_GGUF_MAX_NAME - 1);
  if (fg_dtype_ggml_code(x->dtype) < 0)
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s': dtype %s has no GGUF type", src, x->name,
                   fg_dtype_info(x->dtype)->st_tag);
  if (x->ndim > FG_GGUF_MAX_DIMS)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor '%s': %d dims, GGUF holds at most %d", src, x->name,
                   x->ndim, FG_GGUF_MAX_DIMS);
  t->name = x->name;
  t->dtype = x->dtype;
  if (x->ndim == 0) {
    t->ndim = 1;
    t->ne[0] = t->shape[0] = 1;
  } else {
    t->ndim = (uint32_t)x->ndim;
    for (uint32_t d = 0; d < t->ndim; d++) {
      t->shape[d] = x->shape[d];
      t->ne[t->ndim - 1 - d] = x->shape[d];
    }
  }
  for (uint32_t d = t->ndim; d < 4; d++) t->ne[d] = 1;
  t->data = x->data;
  t->nbytes = x->nbytes;
  t->map = fg_st_mapping(shard);
  t->map_off = fg_st_data_start(shard) + x->begin;
  return FG_OK;
}

fg_status fg_export_source_open_safetensors(const char *path, fg_export_source **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_source_open_safetensors: NULL argument");
  *out = NULL;
  fg_export_source *s = calloc(1, sizeof *s);
  if (!s) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  fg_status st = set_path(s, path);
  if (!st) st = fg_st_dir_open(path, FG_MAP_MMAP, &s->st);
  if (!st) st = alloc_tensors(s, fg_st_dir_count(s->st));
  for (size_t i = 0; !st && i < s->n; i++) {
    size_t shard = 0;
    const fg_st_tensor *x = fg_st_dir_tensor_at(s->st, i, &shard);
    st = st_tensor(path, x, fg_st_dir_shard(s->st, shard), &s->t[i]);
  }
  if (st) {
    fg_export_source_close(s);
    return st;
  }
  *out = s;
  return FG_OK;
}

void fg_export_source_close(fg_export_source *s) {
  if (!s) return;
  fg_gguf_close(s->gguf);
  fg_st_dir_close(s->st);
  free(s->t);
  free(s->path);
  free(s);
}

const char *fg_export_source_path(const fg_export_source *s) { return s ? s->path : ""; }
bool fg_export_source_is_gguf(const fg_export_source *s) { return s && s->gguf; }
