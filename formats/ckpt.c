/* fg_ckpt: one opener for every checkpoint container. The format is sniffed once here; the
 * GGUF and safetensors parsers keep the files mapped, and their tensors are flattened into
 * one array with absolute file offsets and a name index. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forgia/ckpt.h"

struct fg_ckpt {
  fg_ckpt_format format;
  char *path;
  fg_gguf_file *gguf;          /* exactly one of gguf / st is set */
  fg_st_dir *st;
  size_t nfiles;
  fg_ckpt_file *files;
  size_t n;
  fg_ckpt_tensor *tensors;
  size_t *by_name;             /* indices into tensors, sorted by name */
};

const char *fg_ckpt_format_name(fg_ckpt_format f) {
  switch (f) {
  case FG_CKPT_GGUF: return "gguf";
  case FG_CKPT_SAFETENSORS: return "safetensors";
  }
  return "invalid";
}

/* ---- the name index ------------------------------------------------------------------ */

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  if (c) return c;
  return (alen > blen) - (alen < blen);
}

/* qsort has no context argument in C11: sort pairs that carry the name. */
typedef struct name_ref {
  const char *name;
  size_t len;
  size_t index;
} name_ref;

static int name_ref_cmp(const void *a, const void *b) {
  const name_ref *x = a, *y = b;
  return name_cmp(x->name, x->len, y->name, y->len);
}

static fg_status build_index(fg_ckpt *c) {
  name_ref *refs = malloc((c->n ? c->n : 1) * sizeof *refs);
  c->by_name = malloc((c->n ? c->n : 1) * sizeof *c->by_name);
  if (!refs || !c->by_name) {
    free(refs);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory indexing %zu tensors", c->path, c->n);
  }
  for (size_t i = 0; i < c->n; i++) refs[i] = (name_ref){c->tensors[i].name, c->tensors[i].name_len, i};
  qsort(refs, c->n, sizeof *refs, name_ref_cmp);
  for (size_t i = 0; i < c->n; i++) c->by_name[i] = refs[i].index;
  free(refs);
  return FG_OK;
}

/* ---- flattening ---------------------------------------------------------------------- */

static fg_status alloc_lists(fg_ckpt *c, size_t nfiles, size_t n) {
  c->nfiles = nfiles;
  c->n = n;
  c->files = calloc(nfiles ? nfiles : 1, sizeof *c->files);
  c->tensors = calloc(n ? n : 1, sizeof *c->tensors);
  if (!c->files || !c->tensors)
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory for %zu tensors", c->path, n);
  return FG_OK;
}

static void set_file(fg_ckpt *c, size_t i, const fg_mapping *m) {
  c->files[i] = (fg_ckpt_file){fg_mapping_path(m), m, fg_mapping_data(m), fg_mapping_size(m)};
}

/* ne from a row-major shape: reversed, 1 past ndim; a scalar is {1,1,1,1}, more than four
 * dims have no GGUF order (all 0). */
static void set_ne(fg_ckpt_tensor *t) {
  if (t->ndim > FG_GGUF_MAX_DIMS) {
    memset(t->ne, 0, sizeof t->ne);
    return;
  }
  for (int d = 0; d < 4; d++) t->ne[d] = d < t->ndim ? t->shape[t->ndim - 1 - d] : 1;
}

static fg_status flatten_gguf(fg_ckpt *c) {
  size_t parts = fg_gguf_part_count(c->gguf);
  fg_status st = alloc_lists(c, parts, fg_gguf_tensor_count(c->gguf));
  if (st) return st;
  for (size_t p = 0; p < parts; p++) {
    const fg_mapping *m = fg_gguf_mapping(c->gguf, p);
    if (!m) return fg_fail(FG_ERR_STATE, "%s: part %zu has no mapping", c->path, p);
    set_file(c, p, m);
  }
  for (size_t i = 0; i < c->n; i++) {
    const fg_gguf_tensor *g = fg_gguf_tensor_at(c->gguf, i);
    if (!g || g->part >= parts) return fg_fail(FG_ERR_STATE, "%s: tensor %zu: bad directory entry", c->path, i);
    fg_ckpt_tensor *t = &c->tensors[i];
    t->name = g->name;
    t->name_len = g->name_len;
    t->dtype = g->dtype;
    t->ndim = g->ndim;
    t->shape = g->shape;
    memcpy(t->ne, g->ne, sizeof t->ne);
    t->numel = fg_gguf_tensor_numel(g);
    t->nbytes = g->nbytes;
    t->data = g->data;
    t->file = g->part;
    t->offset = fg_gguf_data_offset(c->gguf, g->part) + g->offset;
  }
  return FG_OK;
}

static fg_status flatten_st(fg_ckpt *c) {
  size_t shards = fg_st_dir_shard_count(c->st);
  fg_status st = alloc_lists(c, shards, fg_st_dir_count(c->st));
  if (st) return st;
  for (size_t i = 0; i < shards; i++) {
    const fg_mapping *m = fg_st_mapping(fg_st_dir_shard(c->st, i));
    if (!m) return fg_fail(FG_ERR_STATE, "%s: shard %zu has no mapping", c->path, i);
    set_file(c, i, m);
  }
  for (size_t i = 0; i < c->n; i++) {
    size_t shard = 0;
    const fg_st_tensor *x = fg_st_dir_tensor_at(c->st, i, &shard);
    if (!x || shard >= shards) return fg_fail(FG_ERR_STATE, "%s: tensor %zu: bad directory entry", c->path, i);
    fg_ckpt_tensor *t = &c->tensors[i];
    t->name = x->name;
    t->name_len = x->name_len;
    t->dtype = x->dtype;
    t->ndim = x->ndim;
    t->shape = x->ndim ? x->shape : NULL;
    set_ne(t);
    /* the parser has checked that the product and its byte size fit */
    if ((st = fg_shape_numel(x->shape, x->ndim, &t->numel)))
      return fg_fail_prefix(st, "%s: tensor %s: ", c->files[shard].path, x->name);
    t->nbytes = x->nbytes;
    t->data = x->data;
    t->file = shard;
    t->offset = fg_st_data_start(fg_st_dir_shard(c->st, shard)) + x->begin;
  }
  return FG_OK;
}

/* ---- sniffing ------------------------------------------------------------------------ */

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static const char *file_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a regular file";
}

/* Reads up to 4 bytes from the start of a regular file. O_NONBLOCK: should the path turn
 * into a FIFO after the stat, the open still returns and fstat refuses it. */
static fg_status read_magic(const char *path, unsigned char magic[4], size_t *got) {
  *got = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fg_fail(errno == ENOENT ? FG_ERR_NOT_FOUND : FG_ERR_IO, "%s: open: %s", path, strerror(errno));
  struct stat sb;
  fg_status s = FG_OK;
  if (fstat(fd, &sb) != 0) {
    s = fg_fail(FG_ERR_IO, "%s: stat: %s", path, strerror(errno));
  } else if (!S_ISREG(sb.st_mode)) {
    s = fg_fail(FG_ERR_IO, "%s: %s, not a checkpoint file", path, file_kind(sb.st_mode));
  } else {
    ssize_t r;
    do r = pread(fd, magic, 4, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0) s = fg_fail(FG_ERR_IO, "%s: read: %s", path, strerror(errno));
    else *got = (size_t)r;
  }
  close(fd);
  return s;
}

/* A file that is not GGUF and that the safetensors parser refused. */
static fg_status neither(const char *path, const unsigned char *magic, size_t got) {
  char why[512];
  const char *m = fg_last_error();
  size_t n = strlen(path);
  if (strncmp(m, path, n) == 0 && m[n] == ':' && m[n + 1] == ' ') m += n + 2; /* say the path once */
  snprintf(why, sizeof why, "%s", m);
  char first[32] = "none: the file is empty";
  for (size_t i = 0, k = 0; i < got && k + 4 < sizeof first; i++)
    k += (size_t)snprintf(first + k, sizeof first - k, "%s%02x", i ? " " : "", magic[i]);
  return fg_fail(FG_ERR_BAD_MAGIC, "%s: neither GGUF (first bytes %s, expected \"GGUF\") nor safetensors (%s)",
                 path, first, why);
}

static fg_status open_any(fg_ckpt *c, const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return fg_fail(errno == ENOENT ? FG_ERR_NOT_FOUND : FG_ERR_IO, "%s: %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode)) {
    c->format = FG_CKPT_SAFETENSORS;
    return fg_st_dir_open(path, FG_MAP_MMAP, &c->st);
  }
  if (!S_ISREG(sb.st_mode)) return fg_fail(FG_ERR_IO, "%s: %s, not a checkpoint file", path, file_kind(sb.st_mode));
  unsigned char magic[4] = {0};
  size_t got = 0;
  fg_status s = read_magic(path, magic, &got);
  if (s) return s;
  if (got == 4 && memcmp(magic, "GGUF", 4) == 0) {
    c->format = FG_CKPT_GGUF;
    return fg_gguf_open_auto(path, &c->gguf);
  }
  c->format = FG_CKPT_SAFETENSORS;
  s = fg_st_dir_open(path, FG_MAP_MMAP, &c->st);
  if (s == FG_OK || s == FG_ERR_NOMEM || s == FG_ERR_IO || s == FG_ERR_NOT_FOUND ||
      ends_with(path, ".safetensors") || ends_with(path, ".json"))
    return s;
  return neither(path, magic, got);
}

/* ---- public -------------------------------------------------------------------------- */

fg_status fg_ckpt_open(const char *path, fg_ckpt **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_ckpt_open: NULL out");
  *out = NULL;
  if (!path) return fg_fail(FG_ERR_INVALID_ARG, "fg_ckpt_open: NULL path");
  fg_ckpt *c = calloc(1, sizeof *c);
  if (!c || !(c->path = strdup(path))) {
    free(c);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  }
  fg_status s = open_any(c, path);
  if (!s) s = c->gguf ? flatten_gguf(c) : flatten_st(c);
  if (!s) s = build_index(c);
  if (s) {
    fg_ckpt_close(c);
    return s;
  }
  *out = c;
  return FG_OK;
}

void fg_ckpt_close(fg_ckpt *c) {
  if (!c) return;
  fg_gguf_close(c->gguf);
  fg_st_dir_close(c->st);
  free(c->files);
  free(c->tensors);
  free(c->by_name);
  free(c->path);
  free(c);
}

fg_ckpt_format fg_ckpt_format_of(const fg_ckpt *c) { return c ? c->format : (fg_ckpt_format)0; }
const char *fg_ckpt_path(const fg_ckpt *c) { return c ? c->path : ""; }
size_t fg_ckpt_count(const fg_ckpt *c) { return c ? c->n : 0; }

const fg_ckpt_tensor *fg_ckpt_tensor_at(const fg_ckpt *c, size_t i) {
  return c && i < c->n ? &c->tensors[i] : NULL;
}

const fg_ckpt_tensor *fg_ckpt_find_n(const fg_ckpt *c, const char *name, size_t len) {
  if (!c || !name) return NULL;
  size_t lo = 0, hi = c->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const fg_ckpt_tensor *t = &c->tensors[c->by_name[mid]];
    int r = name_cmp(t->name, t->name_len, name, len);
    if (r == 0) return t;
    if (r < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

const fg_ckpt_tensor *fg_ckpt_find(const fg_ckpt *c, const char *name) {
  return name ? fg_ckpt_find_n(c, name, strlen(name)) : NULL;
}

fg_status fg_ckpt_get(const fg_ckpt *c, const char *name, const fg_ckpt_tensor **out) {
  if (!c || !name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_ckpt_get: NULL argument");
  const fg_ckpt_tensor *t = fg_ckpt_find(c, name);
  if (!t) return fg_fail(FG_ERR_NOT_FOUND, "%s: no tensor named '%s' (%zu tensors)", c->path, name, c->n);
  *out = t;
  return FG_OK;
}

size_t fg_ckpt_file_count(const fg_ckpt *c) { return c ? c->nfiles : 0; }

const fg_ckpt_file *fg_ckpt_file_at(const fg_ckpt *c, size_t i) {
  return c && i < c->nfiles ? &c->files[i] : NULL;
}

fg_mapping *fg_ckpt_retain_mapping(const fg_ckpt *c, size_t i) {
  if (!c || i >= c->nfiles) return NULL;
  if (c->gguf) return fg_gguf_retain_mapping(c->gguf, i);
  return fg_mapping_retain(fg_st_mapping(fg_st_dir_shard(c->st, i)));
}

const fg_gguf_file *fg_ckpt_gguf(const fg_ckpt *c) { return c ? c->gguf : NULL; }
const fg_st_dir *fg_ckpt_safetensors(const fg_ckpt *c) { return c ? c->st : NULL; }
