/* The loader's reading of an opened checkpoint. The checkpoint (forgia/ckpt.h) keeps the
 * files mapped; this adds one descriptor per file for pread and fadvise, and remembers each
 * file's identity so that a change under the load is reported instead of read. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/load_internal.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

/* Opens our own descriptor on a file the checkpoint mapped and records what it is. Kernel
 * readahead is switched off on it (POSIX_FADV_RANDOM): the loader says itself, with
 * WILLNEED, which ranges to read ahead, and so never reads a rejected tensor's pages.
 * O_NONBLOCK: a path replaced by a FIFO since it was mapped must not block the open. */
static fg_status open_file(fg_load_file *f, const fg_ckpt_file *cf) {
  f->map = cf->map;
  f->path = cf->path;
  f->base = cf->data;
  f->size = cf->size;
  f->fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f->fd < 0) return fg_fail(FG_ERR_IO, "%s: open: %s", f->path, strerror(errno));
  struct stat st;
  if (fstat(f->fd, &st) != 0) return fg_fail(FG_ERR_IO, "%s: stat: %s", f->path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return fg_fail(FG_ERR_IO, "%s: no longer a regular file", f->path);
  if ((uint64_t)st.st_size != f->size)
    return fg_fail(FG_ERR_IO, "%s: changed while being opened: mapped %llu bytes, now %llu bytes", f->path,
                   (unsigned long long)f->size, (unsigned long long)st.st_size);
  f->st_dev = st.st_dev;
  f->st_ino = st.st_ino;
  f->mtime = st.st_mtim;
  (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
  return FG_OK;
}

fg_status fg_load_io_open(const fg_ckpt *c, fg_load_io **out) {
  *out = NULL;
  fg_load_io *io = calloc(1, sizeof *io);
  size_t n = fg_ckpt_file_count(c);
  if (io) io->files = calloc(n ? n : 1, sizeof *io->files);
  if (!io || !io->files) {
    free(io);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory", fg_ckpt_path(c));
  }
  io->ckpt = c;
  io->nfiles = n;
  for (size_t i = 0; i < n; i++) io->files[i].fd = -1;
  for (size_t i = 0; i < n; i++) {
    fg_status s = open_file(&io->files[i], fg_ckpt_file_at(c, i));
    if (s) {
      fg_load_io_close(io);
      return s;
    }
  }
  *out = io;
  return FG_OK;
}

void fg_load_io_close(fg_load_io *io) {
  if (!io) return;
  for (size_t i = 0; i < io->nfiles; i++)
    if (io->files[i].fd >= 0) close(io->files[i].fd);
  free(io->files);
  free(io);
}

const char *fg_load_io_path(const fg_load_io *io, const fg_ckpt_tensor *t) { return io->files[t->file].path; }

fg_status fg_load_io_check(const fg_load_io *s, const fg_ckpt_tensor *t, uint64_t off) {
  const fg_load_file *f = &s->files[t->file];
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

fg_status fg_load_io_read(const fg_load_io *s, const fg_ckpt_tensor *t, uint64_t off, void *dst, size_t len,
                          int threads) {
  if (off > t->nbytes || len > t->nbytes - off)
    return fg_fail(FG_ERR_RANGE, "%s: tensor %s: read of %zu bytes at %llu past its %llu bytes",
                   s->files[t->file].path, t->name, len, (unsigned long long)off, (unsigned long long)t->nbytes);
  const fg_load_file *f = &s->files[t->file];
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
#pragma omp critical(fg_load_io_read_err)
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

static bool clamp(const fg_ckpt_tensor *t, uint64_t off, uint64_t *len) {
  if (off >= t->nbytes || *len == 0) return false;
  if (*len > t->nbytes - off) *len = t->nbytes - off;
  return true;
}

void fg_load_io_prefetch(const fg_load_io *s, const fg_ckpt_tensor *t, uint64_t off, uint64_t len) {
  if (!clamp(t, off, &len)) return;
  (void)posix_fadvise(s->files[t->file].fd, (off_t)(t->offset + off), (off_t)len, POSIX_FADV_WILLNEED);
}

void fg_load_io_evict(const fg_load_io *s, size_t file, uint64_t off, uint64_t len) {
  if (file < s->nfiles) fg_mapping_evict(s->files[file].map, off, len);
}

void fg_load_io_set_random(const fg_load_io *s, bool random) {
  for (size_t i = 0; i < s->nfiles; i++) {
    const fg_load_file *f = &s->files[i];
    if (f->base && f->size) (void)madvise((void *)(uintptr_t)f->base, f->size, random ? MADV_RANDOM : MADV_NORMAL);
  }
}

typedef struct touch_job {
  uintptr_t lo, hi, page;
} touch_job;

static fg_status touch_fn(void *user) {
  const touch_job *j = user;
  volatile uint8_t sink = 0;
  for (uintptr_t p = j->lo; p < j->hi; p += j->page) sink ^= *(const volatile uint8_t *)p;
  (void)sink;
  return FG_OK;
}

/* -1: not probed, 0: the kernel lacks MADV_POPULATE_READ, 1: it has it. A fact about the
 * running kernel, so one value per process is right. */
static _Atomic int populate_supported = -1;

fg_status fg_load_io_populate(const fg_load_io *s, const fg_ckpt_tensor *t, uint64_t off, uint64_t len) {
  if (!clamp(t, off, &len)) return FG_OK;
  const fg_load_file *f = &s->files[t->file];
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
        fg_status c = fg_load_io_check(s, t, off);
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
  /* Old kernel: touch one byte per page after checking that the file still covers them,
   * under the mapping's guard: the file may still shrink between the check and a touch.
   * The caller runs this inside each OpenMP thread's own work, where a guard may jump. */
  fg_status c = fg_load_io_check(s, t, off);
  if (c) return c;
  touch_job job = {lo, hi, page};
  fg_status g = fg_mapping_access(f->map, touch_fn, &job);
  if (!g) return FG_OK;
  if ((c = fg_load_io_check(s, t, off))) return c;
  return fg_fail_prefix(g, "tensor %s at offset %llu: ", t->name, (unsigned long long)(t->offset + off));
}
