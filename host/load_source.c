/* The loader's source: GGUF (single or split) and safetensors (file or sharded directory)
 * behind one list of tensors with absolute file offsets. The parsers keep the files mapped;
 * the source adds one descriptor per file for pread and fadvise, and remembers each file's
 * identity so that a change under the load is reported instead of read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forgia/gguf.h"
#include "forgia/safetensors.h"
#include "host/load_internal.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

struct fg_source {
  const char *format;
  fg_gguf_file *gguf;
  fg_st_dir *st;
  uint32_t nfiles;
  fg_src_file *files;
  size_t n;
  fg_src_tensor *tensors;
  size_t *by_name; /* indices into tensors, sorted by name */
};

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

static fg_status build_index(fg_source *s) {
  name_ref *refs = malloc((s->n ? s->n : 1) * sizeof *refs);
  s->by_name = malloc((s->n ? s->n : 1) * sizeof *s->by_name);
  if (!refs || !s->by_name) {
    free(refs);
    return fg_fail(FG_ERR_NOMEM, "load: out of memory indexing %zu tensors", s->n);
  }
  for (size_t i = 0; i < s->n; i++) refs[i] = (name_ref){s->tensors[i].name, s->tensors[i].name_len, i};
  qsort(refs, s->n, sizeof *refs, name_ref_cmp);
  for (size_t i = 0; i < s->n; i++) s->by_name[i] = refs[i].index;
  free(refs);
  return FG_OK;
}

/* Opens our own descriptor on a file the parser mapped and records what it is. Kernel
 * readahead is switched off on it (POSIX_FADV_RANDOM): the loader says itself, with
 * WILLNEED, which ranges to read ahead, and so never reads a rejected tensor's pages. */
static fg_status open_file(fg_src_file *f, const fg_mapping *m) {
  f->map = m;
  f->path = fg_mapping_path(m);
  f->base = fg_mapping_data(m);
  f->size = fg_mapping_size(m);
  f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) return fg_fail(FG_ERR_IO, "%s: open: %s", f->path, strerror(errno));
  struct stat st;
  if (fstat(f->fd, &st) != 0) return fg_fail(FG_ERR_IO, "%s: stat: %s", f->path, strerror(errno));
  if ((uint64_t)st.st_size != f->size)
    return fg_fail(FG_ERR_IO, "%s: changed while being opened: mapped %llu bytes, now %llu bytes", f->path,
                   (unsigned long long)f->size, (unsigned long long)st.st_size);
  f->st_dev = st.st_dev;
  f->st_ino = st.st_ino;
  f->mtime = st.st_mtim;
  (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
  return FG_OK;
}

static fg_status alloc_files(fg_source *s, uint32_t n) {
  s->files = calloc(n ? n : 1, sizeof *s->files);
  if (!s->files) return fg_fail(FG_ERR_NOMEM, "load: out of memory");
  for (uint32_t i = 0; i < n; i++) s->files[i].fd = -1;
  s->nfiles = n;
  return FG_OK;
}

static fg_status open_gguf(fg_source *s, const char *path) {
  fg_status st = fg_gguf_open_auto(path, &s->gguf);
  if (st) return st;
  s->format = "gguf";
  uint32_t parts = fg_gguf_part_count(s->gguf);
  if ((st = alloc_files(s, parts))) return st;
  for (uint32_t p = 0; p < parts; p++)
    if ((st = open_file(&s->files[p], fg_gguf_mapping(s->gguf, p)))) return st;
  s->n = (size_t)fg_gguf_tensor_count(s->gguf);
  s->tensors = calloc(s->n ? s->n : 1, sizeof *s->tensors);
  if (!s->tensors) return fg_fail(FG_ERR_NOMEM, "%s: out of memory for %zu tensors", path, s->n);
  for (size_t i = 0; i < s->n; i++) {
    const fg_gguf_tensor *g = fg_gguf_tensor_at(s->gguf, i);
    fg_src_tensor *t = &s->tensors[i];
    if (!g || g->part >= parts) return fg_fail(FG_ERR_STATE, "%s: tensor %zu: bad directory entry", path, i);
    const fg_src_file *f = &s->files[g->part];
    t->name = g->name;
    t->name_len = g->name_len;
    t->dtype = g->dtype;
    t->ndim = (int)g->ndim;
    t->shape = g->shape;
    t->numel = fg_gguf_tensor_numel(g);
    t->nbytes = g->nbytes;
    t->row = g->ne[0];
    t->file = g->part;
    t->offset = g->data ? (uint64_t)(g->data - f->base) : fg_gguf_data_offset(s->gguf, g->part) + g->offset;
  }
  return FG_OK;
}

static fg_status open_st(fg_source *s, const char *path) {
  fg_status st = fg_st_dir_open(path, FG_MAP_MMAP, &s->st);
  if (st) return st;
  s->format = "safetensors";
  size_t shards = fg_st_dir_shard_count(s->st);
  if ((st = alloc_files(s, (uint32_t)shards))) return st;
  for (size_t i = 0; i < shards; i++)
    if ((st = open_file(&s->files[i], fg_st_mapping(fg_st_dir_shard(s->st, i))))) return st;
  s->n = fg_st_dir_count(s->st);
  s->tensors = calloc(s->n ? s->n : 1, sizeof *s->tensors);
  if (!s->tensors) return fg_fail(FG_ERR_NOMEM, "%s: out of memory for %zu tensors", path, s->n);
  for (size_t i = 0; i < s->n; i++) {
    size_t shard = 0;
    const fg_st_tensor *x = fg_st_dir_tensor_at(s->st, i, &shard);
    fg_src_tensor *t = &s->tensors[i];
    if (!x || shard >= shards) return fg_fail(FG_ERR_STATE, "%s: tensor %zu: bad directory entry", path, i);
    const fg_src_file *f = &s->files[shard];
    t->name = x->name;
    t->name_len = x->name_len;
    t->dtype = x->dtype;
    t->ndim = x->ndim;
    t->shape = x->shape;
    fg_status ns = fg_shape_numel(x->shape, x->ndim, &t->numel);
    if (ns) return fg_fail_prefix(ns, "%s: tensor %s: ", f->path, x->name);
    t->nbytes = x->nbytes;
    t->row = x->ndim > 0 ? x->shape[x->ndim - 1] : 1;
    t->file = (uint32_t)shard;
    t->offset = x->data ? (uint64_t)(x->data - f->base) : fg_st_data_start(fg_st_dir_shard(s->st, shard)) + x->begin;
  }
  return FG_OK;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

fg_status fg_source_open(const char *path, fg_source **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_load: NULL path");
  struct stat st;
  if (stat(path, &st) != 0)
    return fg_fail(errno == ENOENT ? FG_ERR_NOT_FOUND : FG_ERR_IO, "%s: %s", path, strerror(errno));
  fg_source *s = calloc(1, sizeof *s);
  if (!s) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  fg_status rc;
  unsigned char magic[4] = {0};
  bool is_gguf = false;
  if (!S_ISDIR(st.st_mode)) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      rc = fg_fail(FG_ERR_IO, "%s: open: %s", path, strerror(errno));
      goto fail;
    }
    ssize_t got = pread(fd, magic, 4, 0);
    close(fd);
    is_gguf = got == 4 && memcmp(magic, "GGUF", 4) == 0;
  }
  if (is_gguf) {
    rc = open_gguf(s, path);
  } else if (S_ISDIR(st.st_mode) || ends_with(path, ".safetensors") || ends_with(path, ".json")) {
    rc = open_st(s, path);
  } else {
    rc = open_st(s, path);
    if (rc && rc != FG_ERR_NOMEM && rc != FG_ERR_IO)
      rc = fg_fail(FG_ERR_BAD_MAGIC,
                   "%s: neither GGUF (first bytes %02x %02x %02x %02x, expected \"GGUF\") nor safetensors (%s)",
                   path, magic[0], magic[1], magic[2], magic[3], fg_last_error());
  }
  if (rc == FG_OK) rc = build_index(s);
  if (rc == FG_OK) {
    *out = s;
    return FG_OK;
  }
fail:
  fg_source_close(s);
  return rc;
}

void fg_source_close(fg_source *s) {
  if (!s) return;
  for (uint32_t i = 0; i < s->nfiles; i++)
    if (s->files[i].fd >= 0) close(s->files[i].fd);
  free(s->files);
  free(s->tensors);
  free(s->by_name);
  fg_gguf_close(s->gguf);
  fg_st_dir_close(s->st);
  free(s);
}

const char *fg_source_format(const fg_source *s) { return s->format; }
size_t fg_source_count(const fg_source *s) { return s->n; }
const fg_src_tensor *fg_source_at(const fg_source *s, size_t i) { return i < s->n ? &s->tensors[i] : NULL; }
uint32_t fg_source_file_count(const fg_source *s) { return s->nfiles; }
const fg_src_file *fg_source_file(const fg_source *s, uint32_t i) { return i < s->nfiles ? &s->files[i] : NULL; }

const fg_src_tensor *fg_source_find(const fg_source *s, const char *name) {
  size_t len = strlen(name), lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const fg_src_tensor *t = &s->tensors[s->by_name[mid]];
    int c = name_cmp(t->name, t->name_len, name, len);
    if (c == 0) return t;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

fg_mapping *fg_source_retain_mapping(const fg_source *s, uint32_t file) {
  if (file >= s->nfiles) return NULL;
  if (s->gguf) return fg_gguf_retain_mapping(s->gguf, file);
  return fg_mapping_retain(fg_st_mapping(fg_st_dir_shard(s->st, file)));
}

const uint8_t *fg_source_data(const fg_source *s, const fg_src_tensor *t) {
  return t->nbytes ? s->files[t->file].base + t->offset : NULL;
}

fg_status fg_source_check(const fg_source *s, const fg_src_tensor *t, uint64_t off) {
  const fg_src_file *f = &s->files[t->file];
  struct stat st;
  if (fstat(f->fd, &st) != 0)
    return fg_fail(FG_ERR_IO, "%s: tensor %s at offset %llu: stat: %s", f->path, t->name,
                   (unsigned long long)(t->offset + off), strerror(errno));
  if ((uint64_t)st.st_size < f->size)
    return fg_fail(FG_ERR_TRUNCATED,
                   "%s: truncated during the load: the file now has %llu bytes (it had %llu); tensor %s at offset "
                   "%llu, its data ends at %llu",
                   f->path, (unsigned long long)st.st_size, (unsigned long long)f->size, t->name,
                   (unsigned long long)(t->offset + off), (unsigned long long)(t->offset + t->nbytes));
  if ((uint64_t)st.st_size != f->size || st.st_mtim.tv_sec != f->mtime.tv_sec ||
      st.st_mtim.tv_nsec != f->mtime.tv_nsec)
    return fg_fail(FG_ERR_IO,
                   "%s: modified during the load (size %llu -> %llu, mtime changed) while reading tensor %s at "
                   "offset %llu",
                   f->path, (unsigned long long)f->size, (unsigned long long)st.st_size, t->name,
                   (unsigned long long)(t->offset + off));
  struct stat now;
  if (stat(f->path, &now) != 0)
    return fg_fail(FG_ERR_IO, "%s: removed during the load (%s) while reading tensor %s at offset %llu", f->path,
                   strerror(errno), t->name, (unsigned long long)(t->offset + off));
  if (now.st_ino != f->st_ino || now.st_dev != f->st_dev)
    return fg_fail(FG_ERR_IO, "%s: replaced during the load (inode %llu -> %llu) while reading tensor %s at offset %llu",
                   f->path, (unsigned long long)f->st_ino, (unsigned long long)now.st_ino, t->name,
                   (unsigned long long)(t->offset + off));
  return FG_OK;
}

/* One pread loop; returns the bytes read (short only at end of file) or -errno. */
static int64_t pread_full(int fd, uint8_t *dst, size_t len, uint64_t off) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = pread(fd, dst + got, len - got, (off_t)(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -(int64_t)errno;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (int64_t)got;
}

#define FG_READ_PIECE ((size_t)1 << 20)

fg_status fg_source_read(const fg_source *s, const fg_src_tensor *t, uint64_t off, void *dst, size_t len,
                         int threads) {
  if (off > t->nbytes || len > t->nbytes - off)
    return fg_fail(FG_ERR_RANGE, "%s: tensor %s: read of %zu bytes at %llu past its %llu bytes",
                   s->files[t->file].path, t->name, len, (unsigned long long)off, (unsigned long long)t->nbytes);
  const fg_src_file *f = &s->files[t->file];
  uint64_t base = t->offset + off;
  int64_t pieces = (int64_t)((len + FG_READ_PIECE - 1) / FG_READ_PIECE);
  if (threads < 1) threads = 1;
  if (pieces < threads) threads = (int)(pieces > 0 ? pieces : 1);
  /* The first failing piece, by position, is the one reported. */
  int64_t bad_piece = -1, bad_result = 0;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (int64_t p = 0; p < pieces; p++) {
    size_t o = (size_t)p * FG_READ_PIECE, n = len - o < FG_READ_PIECE ? len - o : FG_READ_PIECE;
    int64_t r = pread_full(f->fd, (uint8_t *)dst + o, n, base + o);
    if (r != (int64_t)n) {
#pragma omp critical(fg_source_read_err)
      if (bad_piece < 0 || p < bad_piece) {
        bad_piece = p;
        bad_result = r;
      }
    }
  }
  if (bad_piece < 0) return FG_OK;
  uint64_t at = base + (uint64_t)bad_piece * FG_READ_PIECE;
  if (bad_result < 0)
    return fg_fail(FG_ERR_IO, "%s: tensor %s: read at offset %llu: %s", f->path, t->name, (unsigned long long)at,
                   strerror((int)-bad_result));
  return fg_fail(FG_ERR_TRUNCATED,
                 "%s: truncated during the load: tensor %s: read at offset %llu got %lld bytes, expected %zu", f->path,
                 t->name, (unsigned long long)at, (long long)bad_result,
                 len - (size_t)bad_piece * FG_READ_PIECE < FG_READ_PIECE ? len - (size_t)bad_piece * FG_READ_PIECE
                                                                          : FG_READ_PIECE);
}

static bool clamp(const fg_src_tensor *t, uint64_t off, uint64_t *len) {
  if (off >= t->nbytes || *len == 0) return false;
  if (*len > t->nbytes - off) *len = t->nbytes - off;
  return true;
}

void fg_source_prefetch_fd(const fg_source *s, const fg_src_tensor *t, uint64_t off, uint64_t len) {
  if (!clamp(t, off, &len)) return;
  (void)posix_fadvise(s->files[t->file].fd, (off_t)(t->offset + off), (off_t)len, POSIX_FADV_WILLNEED);
}

void fg_source_release_map(const fg_source *s, const fg_src_tensor *t, uint64_t off, uint64_t len) {
  if (!clamp(t, off, &len)) return;
  fg_mapping_evict(s->files[t->file].map, t->offset + off, len);
}

void fg_source_set_random(const fg_source *s, bool random) {
  for (uint32_t i = 0; i < s->nfiles; i++) {
    const fg_src_file *f = &s->files[i];
    if (f->base && f->size) (void)madvise((void *)(uintptr_t)f->base, f->size, random ? MADV_RANDOM : MADV_NORMAL);
  }
}

/* -1: not probed, 0: the kernel lacks MADV_POPULATE_READ, 1: it has it. A fact about the
 * running kernel, so one value per process is right. */
static _Atomic int populate_supported = -1;

fg_status fg_source_populate(const fg_source *s, const fg_src_tensor *t, uint64_t off, uint64_t len) {
  if (!clamp(t, off, &len)) return FG_OK;
  const fg_src_file *f = &s->files[t->file];
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)f->base + t->offset + off) & ~(page - 1);
  uintptr_t hi = (uintptr_t)f->base + t->offset + off + len;
  if (populate_supported != 0) {
    for (;;) {
      if (madvise((void *)lo, hi - lo, MADV_POPULATE_READ) == 0) {
        populate_supported = 1;
        return FG_OK;
      }
      int e = errno;
      if (e == EINTR || e == EAGAIN) continue;
      if (e == EINVAL && populate_supported == -1) {
        populate_supported = 0;
        break;
      }
      if (e == EFAULT) {
        fg_status c = fg_source_check(s, t, off);
        if (c) return c;
        return fg_fail(FG_ERR_TRUNCATED, "%s: tensor %s: pages at offset %llu..%llu are past the end of the file",
                       f->path, t->name, (unsigned long long)(t->offset + off),
                       (unsigned long long)(t->offset + off + len));
      }
      if (e == ENOMEM) return fg_fail(FG_ERR_NOMEM, "%s: tensor %s: populating %llu bytes: %s", f->path, t->name,
                                      (unsigned long long)len, strerror(e));
      return fg_fail(FG_ERR_IO, "%s: tensor %s: reading offset %llu: %s", f->path, t->name,
                     (unsigned long long)(t->offset + off), strerror(e));
    }
  }
  /* Old kernel: touch one byte per page after checking that the file still covers them. */
  fg_status c = fg_source_check(s, t, off);
  if (c) return c;
  volatile uint8_t sink = 0;
  for (uintptr_t p = lo; p < hi; p += page) sink ^= *(const volatile uint8_t *)p;
  (void)sink;
  return FG_OK;
}
