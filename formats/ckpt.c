/* fg_ckpt: one opener for every checkpoint container. The format is sniffed once here; the
 * GGUF and safetensors parsers keep the files mapped, and their tensors are flattened into
 * one array with absolute file offsets, in the parsers' own order, so that a lookup by
 * name is the parser's name table. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forgia/ckpt.h"
#include "formats/safetensors_internal.h"

struct fg_ckpt {
  fg_ckpt_format format;
  char *path;
  fg_gguf_file *gguf;          /* exactly one of gguf / st is set */
  fg_st_dir *st;
  size_t nfiles;
  fg_ckpt_file *files;
  size_t n;
  fg_ckpt_tensor *tensors;
};

const char *fg_ckpt_format_name(fg_ckpt_format f) {
  switch (f) {
  case FG_CKPT_GGUF: return "gguf";
  case FG_CKPT_SAFETENSORS: return "safetensors";
  }
  return "invalid";
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

/* ---- a shard given alone ------------------------------------------------------------- */

/* A safetensors shard names no siblings; only an index beside it knows it is a fraction of
 * a model. 1 when the index at `index` lists `base` in its weight_map, 0 when it does not,
 * -1 when it cannot be read or parsed. Read with read(2) (no mapping: nothing to fault if
 * it shrinks) and O_NONBLOCK plus fstat (a FIFO named *.index.json never blocks). */
static int index_names(const char *index, const char *base) {
  int fd = open(index, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > FG_ST_MAX_HEADER_SIZE) {
    close(fd);
    return -1;
  }
  size_t cap = (size_t)sb.st_size, n = 0;
  char *text = malloc(cap + 1);
  while (text && n < cap) {
    ssize_t r = pread(fd, text + n, cap - n, (off_t)n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (!text) return -1;
  st_json j;
  int found = -1;
  if (st_json_parse(text, n, index, 0, &j) == FG_OK) {
    const st_node *root = j.nodes, *e = st_first(root);
    for (size_t k = 0; root->kind == ST_OBJ && k < root->len; k++, e = st_after(&j, e)) {
      if (e->key_len != 10 || memcmp(st_key(&j, e), "weight_map", 10) != 0 || e->kind != ST_OBJ || !e->tree) continue;
      found = 0;
      const st_node *v = st_first(e);
      size_t blen = strlen(base);
      for (size_t i = 0; i < e->len && !found; i++, v = st_after(&j, v))
        found = v->kind == ST_STR && v->len == blen && memcmp(st_str(&j, v), base, blen) == 0;
      break;
    }
    st_json_free(&j);
  }
  free(text);
  return found;
}

/* PREFIX-0000k-of-0000N.safetensors with N > 1: *prefix_len gets PREFIX's length. */
static bool shard_name(const char *base, size_t *prefix_len) {
  static const char suffix[] = "-00001-of-00002.safetensors";
  size_t n = strlen(base), k = sizeof suffix - 1;
  if (n < k) return false;
  const char *s = base + n - k;
  unsigned no = 0, count = 0;
  for (int i = 0; i < 5; i++) {
    if (s[1 + i] < '0' || s[1 + i] > '9' || s[10 + i] < '0' || s[10 + i] > '9') return false;
    no = no * 10 + (unsigned)(s[1 + i] - '0');
    count = count * 10 + (unsigned)(s[10 + i] - '0');
  }
  if (s[0] != '-' || memcmp(s + 6, "-of-", 4) != 0 || strcmp(s + 15, ".safetensors") != 0) return false;
  *prefix_len = n - k;
  return count > 1 && no >= 1 && no <= count;
}

/* Refuses a file that an index in its folder lists as a shard (or, when that index cannot
 * be read, a file named like a shard beside an index named for its set): opened alone it
 * would pass for the whole model. */
static fg_status lone_shard(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t dlen = slash ? (size_t)(slash - path) : 0;
  char *dir = slash ? strndup(path, dlen ? dlen : 1) : strdup(".");
  if (!dir) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  size_t prefix_len = 0;
  bool pattern = shard_name(base, &prefix_len);
  DIR *dp = opendir(dir);
  fg_status s = FG_OK;
  struct dirent *de;
  while (dp && !s && (de = readdir(dp))) {
    if (!ends_with(de->d_name, ".safetensors.index.json")) continue;
    size_t nlen = strlen(de->d_name);
    char *index = malloc(strlen(dir) + nlen + 2);
    if (!index) {
      s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
      break;
    }
    sprintf(index, "%s/%s", dir, de->d_name);
    struct stat sb;
    int names = stat(index, &sb) == 0 && S_ISREG(sb.st_mode) ? index_names(index, base) : 0;
    bool same_set = pattern && (strcmp(de->d_name, FG_ST_INDEX_NAME) == 0 ||
                                (nlen == prefix_len + sizeof ".safetensors.index.json" - 1 &&
                                 memcmp(de->d_name, base, prefix_len) == 0));
    if (names == 1 || (names < 0 && same_set))
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: a shard of the checkpoint indexed by %s; open that index or the folder %s, "
                  "which opens every shard", path, index, dir);
    free(index);
  }
  if (dp) closedir(dp);
  free(dir);
  return s;
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
  if (!ends_with(path, ".json") && (s = lone_shard(path))) return s;
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
  free(c->path);
  free(c);
}

fg_ckpt_format fg_ckpt_format_of(const fg_ckpt *c) { return c ? c->format : (fg_ckpt_format)0; }
const char *fg_ckpt_path(const fg_ckpt *c) { return c ? c->path : ""; }
size_t fg_ckpt_count(const fg_ckpt *c) { return c ? c->n : 0; }

const fg_ckpt_tensor *fg_ckpt_tensor_at(const fg_ckpt *c, size_t i) {
  return c && i < c->n ? &c->tensors[i] : NULL;
}

/* tensors[i] is tensor i of the parsed GGUF file or folder (flatten_*), so the parsers'
 * name tables answer for it. */
const fg_ckpt_tensor *fg_ckpt_find_n(const fg_ckpt *c, const char *name, size_t len) {
  if (!c || !name) return NULL;
  size_t i = SIZE_MAX;
  if (c->gguf) {
    const fg_gguf_tensor *g = fg_gguf_find_tensor_n(c->gguf, name, len);
    if (g) i = (size_t)(g - fg_gguf_tensor_at(c->gguf, 0));
  } else {
    i = st_dir_index_of(c->st, name, len);
  }
  return i < c->n ? &c->tensors[i] : NULL;
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
