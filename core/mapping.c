#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/mapping_internal.h"

static fg_status fg_mapping_new(const char *path, fg_mapping **out) {
  fg_mapping *m = calloc(1, sizeof *m);
  if (!m) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  m->path = strdup(path);
  if (!m->path) {
    free(m);
    return fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  }
  atomic_init(&m->refs, 1);
  *out = m;
  return FG_OK;
}

fg_status fg_mapping_open(const char *path, fg_map_mode mode, fg_mapping **out) {
  if (!path || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_mapping_open: NULL argument");
  /* Refuse anything but a regular file before opening it: open(2) on a FIFO blocks until a
   * writer comes. O_NONBLOCK covers a path replaced by a FIFO after the stat (the fstat
   * below refuses it); reads of a regular file ignore the flag. */
  struct stat st;
  if (stat(path, &st) != 0)
    return fg_fail(errno == ENOENT ? FG_ERR_NOT_FOUND : FG_ERR_IO, "%s: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) return fg_fail(FG_ERR_IO, "%s: not a regular file", path);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fg_fail(errno == ENOENT ? FG_ERR_NOT_FOUND : FG_ERR_IO, "%s: open: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return fg_fail(FG_ERR_IO, "%s: stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return fg_fail(FG_ERR_IO, "%s: not a regular file", path);
  }
  fg_mapping *m = NULL;
  fg_status s = fg_mapping_new(path, &m);
  if (s) {
    close(fd);
    return s;
  }
  m->size = (size_t)st.st_size;
  m->from_file = true;
  m->st_dev = st.st_dev;
  m->st_ino = st.st_ino;
  m->mtime = st.st_mtim;
  if (m->size == 0) {
    m->kind = FG_MAP_KIND_OWNED;
  } else if (mode == FG_MAP_MMAP) {
    void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      close(fd);
      fg_mapping_release(m);
      return fg_fail(FG_ERR_IO, "%s: mmap of %zu bytes: %s", path, (size_t)st.st_size, strerror(e));
    }
    m->data = p;
    m->kind = FG_MAP_KIND_MMAP;
  } else {
    uint8_t *buf = malloc(m->size);
    if (!buf) {
      close(fd);
      fg_mapping_release(m);
      return fg_fail(FG_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, (size_t)st.st_size);
    }
    size_t got = 0;
    while (got < m->size) {
      ssize_t r = read(fd, buf + got, m->size - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        int e = errno;
        free(buf);
        close(fd);
        fg_mapping_release(m);
        return fg_fail(FG_ERR_IO, "%s: read at offset %zu: %s", path, got, r == 0 ? "file shrank" : strerror(e));
      }
      got += (size_t)r;
    }
    m->data = buf;
    m->kind = FG_MAP_KIND_OWNED;
  }
  close(fd);
  *out = m;
  return FG_OK;
}

fg_status fg_mapping_wrap(const void *data, size_t size, fg_mapping **out) {
  if ((!data && size) || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_mapping_wrap: NULL argument");
  fg_mapping *m = NULL;
  fg_status s = fg_mapping_new("<memory>", &m);
  if (s) return s;
  m->data = size ? data : NULL;
  m->size = size;
  m->kind = FG_MAP_KIND_BORROWED;
  *out = m;
  return FG_OK;
}

fg_status fg_mapping_adopt(void *data, size_t size, const char *name, fg_mapping **out) {
  if ((!data && size) || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_mapping_adopt: NULL argument");
  fg_mapping *m = NULL;
  fg_status s = fg_mapping_new(name ? name : "<memory>", &m);
  if (s) return s;
  m->data = data;
  m->size = size;
  m->kind = FG_MAP_KIND_OWNED;
  *out = m;
  return FG_OK;
}

const uint8_t *fg_mapping_data(const fg_mapping *m) { return m ? m->data : NULL; }
size_t fg_mapping_size(const fg_mapping *m) { return m ? m->size : 0; }
const char *fg_mapping_path(const fg_mapping *m) { return m ? m->path : ""; }

fg_mapping *fg_mapping_retain(fg_mapping *m) {
  if (m) atomic_fetch_add(&m->refs, 1);
  return m;
}

void fg_mapping_release(fg_mapping *m) {
  if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
  if (m->kind == FG_MAP_KIND_MMAP && m->data) munmap((void *)m->data, m->size);
  if (m->kind == FG_MAP_KIND_OWNED) free((void *)m->data);
  free(m->path);
  free(m);
}

static void fg_mapping_advise(const fg_mapping *m, uint64_t off, uint64_t len, int advice) {
  if (!m || m->kind != FG_MAP_KIND_MMAP || off >= m->size || len == 0) return;
  if (len > m->size - off) len = m->size - off;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)m->data + off) & ~(page - 1);
  uintptr_t hi = (uintptr_t)m->data + off + len;
  (void)madvise((void *)lo, hi - lo, advice);
}

void fg_mapping_prefetch(const fg_mapping *m, uint64_t off, uint64_t len) {
  fg_mapping_advise(m, off, len, MADV_WILLNEED);
}

void fg_mapping_evict(const fg_mapping *m, uint64_t off, uint64_t len) {
  fg_mapping_advise(m, off, len, MADV_DONTNEED);
}

fg_status fg_mapping_check(const fg_mapping *m) {
  if (!m || m->kind != FG_MAP_KIND_MMAP || !m->from_file) return FG_OK;
  struct stat st;
  /* A path that is gone or names another file now: the mapping still holds the file that
   * was opened, and nothing here can tell whether that one changed. */
  if (stat(m->path, &st) != 0 || st.st_ino != m->st_ino || st.st_dev != m->st_dev) return FG_OK;
  if ((uint64_t)st.st_size < m->size)
    return fg_fail(FG_ERR_TRUNCATED, "%s: truncated since it was opened: %llu bytes now, %llu then", m->path,
                   (unsigned long long)st.st_size, (unsigned long long)m->size);
  if ((uint64_t)st.st_size != m->size || st.st_mtim.tv_sec != m->mtime.tv_sec || st.st_mtim.tv_nsec != m->mtime.tv_nsec)
    return fg_fail(FG_ERR_IO, "%s: modified since it was opened (%llu bytes then, %llu now, a new modification time)",
                   m->path, (unsigned long long)m->size, (unsigned long long)st.st_size);
  return FG_OK;
}
