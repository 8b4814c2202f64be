/* Fault injection for the adversarial suite, preloaded into the forgia CLI (LD_PRELOAD).
 * It makes "the file changed while the command ran" and "a signal came mid-write" happen
 * at one exact point of the run instead of after a guessed delay, so the cases never race:
 *
 *   FG_ADV_ON=mmap:SUBSTR     after an mmap of a file whose path contains SUBSTR (the input
 *                             just mapped: nothing of it has been read yet);
 *   FG_ADV_ON=fadvise:SUBSTR  before a posix_fadvise(WILLNEED) on such a file (the loader's
 *                             readahead, issued just before it reads the tensor's bytes);
 *   FG_ADV_ON=write:SUBSTR    after a write(2) to such a file (e.g. ".fgtmp.": the export's
 *                             temporary file has its first bytes);
 *   a third field ":N" waits for the Nth such event (default 1); then
 *   FG_ADV_DO=signal:N        sends signal N to the process, or
 *   FG_ADV_DO=truncate:SIZE:PATH   truncates PATH to SIZE bytes, or
 *   FG_ADV_DO=copy:SRC:PATH   rewrites PATH in place (O_TRUNC, same inode) with SRC's bytes, or
 *   FG_ADV_DO=enospc          fails that write, and every later one to a matching file, with
 *                             ENOSPC (a disk that fills up mid-write; write events only).
 *   FG_ADV_FIRED=PATH         is created when it fires, so that the runner can tell a case
 *                             whose injection point was never reached from one that passed.
 *
 * It fires once. Paths are found with readlink(/proc/self/fd/N). Nothing here is
 * instrumented (see tests/adversarial.cmake): it runs inside ASan builds too. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_int fired;

static int fd_matches(int fd, const char *substr) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strstr(path, substr) != NULL;
}

static atomic_int seen;

/* Whether this event on fd is the one FG_ADV_ON names ("<event>:SUBSTR[:N]"). */
static int trigger(const char *event, int fd) {
  if (fd < 0 || atomic_load(&fired)) return 0;
  const char *on = getenv("FG_ADV_ON");
  size_t k = strlen(event);
  if (!on || strncmp(on, event, k) != 0 || on[k] != ':') return 0;
  char sub[1024];
  snprintf(sub, sizeof sub, "%s", on + k + 1);
  char *colon = strrchr(sub, ':');
  int nth = 1;
  if (colon && colon[1] >= '0' && colon[1] <= '9') {
    nth = atoi(colon + 1);
    *colon = '\0';
  }
  if (!fd_matches(fd, sub)) return 0;
  return atomic_fetch_add(&seen, 1) + 1 == nth;
}

static void copy_over(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  int out = open(dst, O_WRONLY | O_TRUNC | O_CLOEXEC);
  char buf[1 << 16];
  ssize_t r;
  while (in >= 0 && out >= 0 && (r = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)r) != r) break;
  if (in >= 0) close(in);
  if (out >= 0) close(out);
}

static void act(void) {
  if (atomic_exchange(&fired, 1)) return;
  const char *mark = getenv("FG_ADV_FIRED");
  if (mark) {
    int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
  }
  const char *what = getenv("FG_ADV_DO");
  if (!what) return;
  if (!strncmp(what, "signal:", 7)) {
    kill(getpid(), atoi(what + 7));
  } else if (!strncmp(what, "truncate:", 9)) {
    char *end;
    long long size = strtoll(what + 9, &end, 10);
    if (*end == ':' && truncate(end + 1, (off_t)size) != 0) perror("adversarial shim: truncate");
  } else if (!strncmp(what, "copy:", 5)) {
    const char *src = what + 5, *colon = strchr(src, ':');
    if (!colon) return;
    char *s = strndup(src, (size_t)(colon - src));
    if (s) copy_over(s, colon + 1);
    free(s);
  }
}

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);

static void *mmap_common(const char *name, void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  static mmap_fn real[2];
  int k = name[4] == '6';
  if (!real[k]) real[k] = (mmap_fn)dlsym(RTLD_NEXT, name);
  void *p = real[k](addr, len, prot, flags, fd, off);
  if (p != MAP_FAILED && trigger("mmap", fd)) act();
  return p;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap_common("mmap", addr, len, prot, flags, fd, off);
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap_common("mmap64", addr, len, prot, flags, fd, off);
}

static atomic_int full;

static int disk_fills(void) {
  const char *what = getenv("FG_ADV_DO");
  return what && strcmp(what, "enospc") == 0;
}

/* "write:SUBSTR": the part of FG_ADV_ON that names the files a full disk refuses. */
static int full_for(int fd) {
  const char *on = getenv("FG_ADV_ON");
  if (!on || strncmp(on, "write:", 6) != 0) return 0;
  char sub[1024];
  snprintf(sub, sizeof sub, "%s", on + 6);
  char *colon = strrchr(sub, ':');
  if (colon && colon[1] >= '0' && colon[1] <= '9') *colon = '\0';
  return fd_matches(fd, sub);
}

ssize_t write(int fd, const void *buf, size_t n) {
  static write_fn real;
  if (!real) real = (write_fn)dlsym(RTLD_NEXT, "write");
  if (disk_fills()) {
    if (!(atomic_load(&full) ? full_for(fd) : trigger("write", fd))) return real(fd, buf, n);
    if (!atomic_exchange(&full, 1)) act();
    errno = ENOSPC;
    return -1;
  }
  ssize_t r = real(fd, buf, n);
  if (r > 0 && trigger("write", fd)) act();
  return r;
}

typedef int (*fadvise_fn)(int, off_t, off_t, int);

static int fadvise_common(const char *name, int fd, off_t off, off_t len, int advice) {
  static fadvise_fn real[2];
  int k = name[13] == '6';
  if (!real[k]) real[k] = (fadvise_fn)dlsym(RTLD_NEXT, name);
  if (advice == POSIX_FADV_WILLNEED && trigger("fadvise", fd)) act();
  return real[k](fd, off, len, advice);
}

int posix_fadvise(int fd, off_t off, off_t len, int advice) {
  return fadvise_common("posix_fadvise", fd, off, len, advice);
}
int posix_fadvise64(int fd, off_t off, off_t len, int advice) {
  return fadvise_common("posix_fadvise64", fd, off, len, advice);
}
