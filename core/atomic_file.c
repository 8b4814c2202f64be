#define _GNU_SOURCE
#include "core/atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forgia/cancel.h"

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

/* Bytes of path up to and including its last '/' (0 when it has none). */
static size_t dir_part(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? (size_t)(slash - path) + 1 : 0;
}

/* The directory of a path as a string of its own: "." or "/" when the path says nothing more. */
static char *dir_of(const char *path) {
  size_t d = dir_part(path);
  return d ? strndup(path, d == 1 ? 1 : d - 1) : strdup(".");
}

static fg_status cancelled(const char *path) { return fg_fail(FG_ERR_STATE, "%s: write cancelled", path); }

/* ---- temporary names and their leftovers --------------------------------------------- */

#define FG_TMP_NAME_BYTES 32 /* bytes of the destination's name kept in a temporary name */
#define FG_TMP_TAG ".fgtmp."

/* FNV-1a, unkeyed on purpose: every process must derive the same name for one destination.
 * Two names that collide only share a cleanup pattern, and only dead writers' files go. */
static uint64_t name_hash(const char *s) {
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* ".<name's first bytes>.<hash>.fgtmp.": what every temporary file of this destination starts
 * with. The cut backs off to a UTF-8 sequence boundary so a UTF-8 name gives a UTF-8 name. */
static char *tmp_stem(const char *base) {
  size_t n = strlen(base), k = n < FG_TMP_NAME_BYTES ? n : FG_TMP_NAME_BYTES;
  while (k > 0 && k < n && ((unsigned char)base[k] & 0xC0) == 0x80) k--;
  size_t cap = 1 + k + 1 + 16 + sizeof FG_TMP_TAG;
  char *s = malloc(cap);
  if (s) snprintf(s, cap, ".%.*s.%016llx" FG_TMP_TAG, (int)k, base, (unsigned long long)name_hash(base));
  return s;
}

/* "<pid>.<n>" after the stem: the writer's pid, or 0 when the name is not one of ours. */
static long owner_pid(const char *s) {
  long long pid = 0;
  int digits = 0;
  for (; *s >= '0' && *s <= '9' && digits <= 10; s++, digits++) pid = pid * 10 + (*s - '0');
  if (digits == 0 || pid > INT_MAX || *s++ != '.') return 0;
  for (digits = 0; *s >= '0' && *s <= '9'; s++) digits++;
  return digits > 0 && digits <= 10 && *s == '\0' ? (long)pid : 0;
}

/* Whether the temporary file name (in the directory dfd) belongs to a writer that is gone. */
static bool stale(int dfd, const char *name, long pid) {
  if (pid == (long)getpid()) return false;             /* another thread of ours may be writing */
  if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return false; /* alive (EPERM: someone else's) */
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno == EACCES; /* a write-only mode kept from its target: the pid decides */
  struct stat st;
  bool gone = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  /* A held lock means a writer the pid check cannot see (another pid namespace). A file
   * system without locks answers with another error: the pid alone decides. */
  if (gone && flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) gone = false;
  close(fd);
  return gone;
}

/* Best effort: a directory that cannot be listed keeps its leftovers, the write goes on. */
static void remove_leftovers(const char *dest, const char *stem) {
  char *dir = dir_of(dest);
  DIR *d = dir ? opendir(dir) : NULL;
  free(dir);
  if (!d) return;
  size_t sl = strlen(stem);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, stem, sl) != 0) continue;
    long pid = owner_pid(e->d_name + sl);
    if (pid > 0 && stale(dirfd(d), e->d_name, pid)) unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
}

/* ---- writing --------------------------------------------------------------------------- */

fg_status fg_atomic_file_check(const char *path, char **canonical) {
  if (canonical) *canonical = NULL;
  if (!path || !*path) return fg_fail(FG_ERR_INVALID_ARG, "an empty output path");
  char *dest = NULL;
  unsigned mode;
  fg_status s = resolve(path, &dest, &mode);
  if (s) return s;
  const char *base = dest + dir_part(dest);
  char *dir = dir_of(dest);
  struct stat st;
  if (!*base) {
    s = fg_fail(FG_ERR_INVALID_ARG, "%s: names a directory, not a file", path);
  } else if (!dir) {
    s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  } else if (stat(dir, &st) != 0) {
    s = fg_fail(FG_ERR_IO, "%s: cannot create a file in %s: %s", path, dir, strerror(errno));
  } else if (!S_ISDIR(st.st_mode)) {
    s = fg_fail(FG_ERR_IO, "%s: %s is %s, not a directory", path, dir, kind_of(st.st_mode));
  } else if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0) {
    s = fg_fail(FG_ERR_IO, "%s: cannot create a file in %s: %s", path, dir, strerror(errno));
  } else if (canonical) {
    char *real = realpath(dir, NULL);
    size_t rl = real ? strlen(real) : 0, bl = strlen(base);
    char *c = real ? malloc(rl + 1 + bl + 1) : NULL;
    if (!c) {
      s = real ? fg_fail(FG_ERR_NOMEM, "%s: out of memory", path)
               : fg_fail(FG_ERR_IO, "%s: cannot resolve %s: %s", path, dir, strerror(errno));
    } else {
      /* "/" + name, not "//" + name */
      snprintf(c, rl + 1 + bl + 1, "%s%s%s", real, rl && real[rl - 1] == '/' ? "" : "/", base);
      *canonical = c;
    }
    free(real);
  }
  free(dir);
  free(dest);
  return s;
}

fg_status fg_atomic_file_begin(fg_atomic_file *f, const char *path) {
  *f = (fg_atomic_file)FG_ATOMIC_FILE_INIT;
  if (!path || !*path) return fg_fail(FG_ERR_INVALID_ARG, "an empty output path");
  if (fg_cancel_requested()) return cancelled(path);
  fg_status s = resolve(path, &f->path, &f->mode);
  if (s) return s;
  const size_t dl = dir_part(f->path);
  if (!f->path[dl]) {
    fg_atomic_file_abort(f);
    return fg_fail(FG_ERR_INVALID_ARG, "%s: names a directory, not a file", path);
  }
  char *stem = tmp_stem(f->path + dl);
  size_t n = dl + (stem ? strlen(stem) : 0) + 32;
  f->tmp = stem ? malloc(n) : NULL;
  if (!f->tmp) {
    free(stem);
    fg_atomic_file_abort(f);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  }
  remove_leftovers(f->path, stem);
  /* A unique name in the destination's directory, so that the rename is atomic. O_EXCL
   * with 0666 gives a new file the umask's mode, as any other program's output. */
  for (unsigned attempt = 0; f->fd < 0; attempt++) {
    snprintf(f->tmp, n, "%.*s%s%ld.%u", (int)dl, f->path, stem, (long)getpid(), attempt);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (f->fd < 0 && (errno != EEXIST || attempt > 1000)) {
      s = fg_fail(FG_ERR_IO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
      free(f->tmp);
      f->tmp = NULL; /* nothing to unlink */
      free(stem);
      fg_atomic_file_abort(f);
      return s;
    }
  }
  free(stem);
  /* Marks the file as being written for remove_leftovers; released by the kernel however
   * this process ends. Without lock support the pid check alone protects it. */
  (void)flock(f->fd, LOCK_EX | LOCK_NB);
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
    if (fg_cancel_requested()) {
      fg_status s = cancelled(f->path);
      fg_atomic_file_abort(f);
      return s;
    }
    size_t slice = n > FG_ATOMIC_FILE_SLICE ? FG_ATOMIC_FILE_SLICE : (size_t)n;
    while (slice) {
      ssize_t r = write(f->fd, p, slice);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        fg_status s = fg_fail(FG_ERR_IO, "%s: write: %s", f->tmp, r < 0 ? strerror(errno) : "no progress");
        fg_atomic_file_abort(f);
        return s;
      }
      p += r;
      slice -= (size_t)r;
      n -= (uint64_t)r;
      f->written += (uint64_t)r;
    }
  }
  if (f->written - f->flushed >= FG_ATOMIC_FILE_FLUSH) {
    /* only started, not waited for; a file system that cannot (EINVAL, ENOSYS) syncs at commit */
    (void)sync_file_range(f->fd, (off_t)f->flushed, (off_t)(f->written - f->flushed), SYNC_FILE_RANGE_WRITE);
    f->flushed = f->written;
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
  char *dir = dir_of(path);
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
  /* Last look: the fsync may have taken long, and after the rename there is no going back. */
  if (!s && fg_cancel_requested()) s = cancelled(f->path);
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
