#define _GNU_SOURCE
#include "core/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

void fg_atomic_file_abort(fg_atomic_file *f) {
  if (!f) return;
  if (f->fd >= 0) {
    close(f->fd);
    if (f->tmp) unlink(f->tmp);
  }
  free(f->path);
  free(f->tmp);
  *f = (fg_atomic_file)FG_ATOMIC_FILE_INIT;
}

/* Resolves the destination: the path itself, or the regular file a link points to. */
static fg_status resolve(const char *path, char **out, unsigned *mode) {
  struct stat ls, st;
  *mode = ~0u;
  if (lstat(path, &ls) != 0) {
    if (errno != ENOENT) return fg_fail(FG_ERR_IO, "%s: %s", path, strerror(errno));
    *out = strdup(path);
    return *out ? FG_OK : fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  }
  if (S_ISLNK(ls.st_mode)) {
    if (stat(path, &st) != 0)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: a symbolic link to nothing (%s); refusing to write through it", path,
                     strerror(errno));
    if (!S_ISREG(st.st_mode))
      return fg_fail(FG_ERR_INVALID_ARG, "%s: links to %s; refusing to replace it with a regular file", path,
                     kind_of(st.st_mode));
    char *real = realpath(path, NULL);
    if (!real) return fg_fail(FG_ERR_IO, "%s: cannot resolve the link: %s", path, strerror(errno));
    *out = real;
    *mode = (unsigned)(st.st_mode & 07777);
    return FG_OK;
  }
  if (!S_ISREG(ls.st_mode))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: is %s; refusing to replace it with a regular file", path,
                   kind_of(ls.st_mode));
  *out = strdup(path);
  *mode = (unsigned)(ls.st_mode & 07777);
  return *out ? FG_OK : fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
}

fg_status fg_atomic_file_begin(fg_atomic_file *f, const char *path) {
  *f = (fg_atomic_file)FG_ATOMIC_FILE_INIT;
  fg_status s = resolve(path, &f->path, &f->mode);
  if (s) return s;
  size_t n = strlen(f->path) + 64;
  f->tmp = malloc(n);
  if (!f->tmp) {
    fg_atomic_file_abort(f);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  }
  /* A unique name in the destination's directory, so that the rename is atomic. O_EXCL
   * with 0666 gives a new file the umask's mode, as any other program's output. */
  for (unsigned attempt = 0; f->fd < 0; attempt++) {
    snprintf(f->tmp, n, "%s.tmp.%ld.%u", f->path, (long)getpid(), attempt);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f->fd < 0 && (errno != EEXIST || attempt > 1000)) {
      s = fg_fail(FG_ERR_IO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
      free(f->tmp);
      f->tmp = NULL; /* nothing to unlink */
      fg_atomic_file_abort(f);
      return s;
    }
  }
  if (f->mode != ~0u && fchmod(f->fd, (mode_t)f->mode) != 0) {
    s = fg_fail(FG_ERR_IO, "%s: cannot keep the mode %o of the file it replaces: %s", f->tmp, f->mode,
                strerror(errno));
    fg_atomic_file_abort(f);
    return s;
  }
  return FG_OK;
}

fg_status fg_atomic_file_write(fg_atomic_file *f, const void *data, uint64_t n) {
  if (f->fd < 0) return fg_fail(FG_ERR_STATE, "write: no file is being written");
  const uint8_t *p = data;
  while (n) {
    /* Slices of at most 1 GiB: some kernels cap one write() below 2 GiB. */
    size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
    ssize_t r = write(f->fd, p, chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      fg_status s = fg_fail(FG_ERR_IO, "%s: write: %s", f->tmp, r < 0 ? strerror(errno) : "no progress");
      fg_atomic_file_abort(f);
      return s;
    }
    p += r;
    n -= (uint64_t)r;
  }
  return FG_OK;
}

fg_status fg_atomic_file_write_zeros(fg_atomic_file *f, uint64_t n) {
  static const uint8_t zeros[4096];
  while (n) {
    uint64_t k = n < sizeof zeros ? n : sizeof zeros;
    fg_status s = fg_atomic_file_write(f, zeros, k);
    if (s) return s;
    n -= k;
  }
  return FG_OK;
}

/* The rename is durable only once the directory entry is on disk. */
static fg_status sync_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  if (!dir) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  fg_status s = FG_OK;
  /* Some file systems cannot sync a directory (EINVAL); the rename itself has happened. */
  if (fd >= 0 && fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
    s = fg_fail(FG_ERR_IO, "%s: fsync of the directory %s: %s", path, dir, strerror(errno));
  if (fd >= 0) close(fd);
  free(dir);
  return s;
}

fg_status fg_atomic_file_commit(fg_atomic_file *f) {
  if (f->fd < 0) return fg_fail(FG_ERR_STATE, "commit: no file is being written");
  fg_status s = FG_OK;
  if (fsync(f->fd) != 0) s = fg_fail(FG_ERR_IO, "%s: fsync: %s", f->tmp, strerror(errno));
  int fd = f->fd;
  f->fd = -1;
  if (close(fd) != 0 && !s) s = fg_fail(FG_ERR_IO, "%s: close: %s", f->tmp, strerror(errno));
  if (!s && rename(f->tmp, f->path) != 0)
    s = fg_fail(FG_ERR_IO, "%s: rename from %s: %s", f->path, f->tmp, strerror(errno));
  if (s) {
    unlink(f->tmp);
    fg_atomic_file_abort(f);
    return s;
  }
  s = sync_dir(f->path);
  fg_atomic_file_abort(f); /* fd is -1: only frees the names */
  return s;
}
