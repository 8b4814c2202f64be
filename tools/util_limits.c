#include "core/clock.h"
#include "util_limits.h"

#include <fcntl.h>
#include <omp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

/* Opens a model file for reading; -1 unless it is a regular file. The model's files were
 * checked when it was opened; O_NONBLOCK and the check keep a file swapped for a FIFO since
 * then from hanging the measurement. */
static int open_regular(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *size = (size_t)st.st_size;
  return fd;
}

/* Seconds to read one file into memory allocated for it (2 MiB aligned, huge pages advised,
 * as the loader's CPU arena is), every thread its contiguous share in 16 MiB preads, the
 * allocation and release included; negative on a failed read. */
static double read_fresh(int fd, size_t size) {
  const size_t huge = (size_t)2 << 20, piece = (size_t)16 << 20;
  const size_t len = (size + huge - 1) / huge * huge + huge;
  double t0 = fg_clock_seconds();
  uint8_t *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return -1.0;
  uint8_t *p = (uint8_t *)(((uintptr_t)base + huge - 1) & ~(uintptr_t)(huge - 1));
  (void)madvise(p, len - (size_t)(p - base), MADV_HUGEPAGE);
  int bad = 0;
#pragma omp parallel reduction(| : bad)
  {
    const size_t nt = (size_t)omp_get_num_threads(), me = (size_t)omp_get_thread_num();
    const size_t share = (size + nt - 1) / nt, lo = me * share < size ? me * share : size;
    const size_t hi = lo + share < size ? lo + share : size;
    for (size_t o = lo; o < hi && !bad;) {
      ssize_t r = pread(fd, p + o, hi - o < piece ? hi - o : piece, (off_t)o);
      if (r <= 0) bad = 1;
      else o += (size_t)r;
    }
  }
  munmap(base, len);
  return bad ? -1.0 : fg_clock_seconds() - t0;
}

double fg_cli_read_gbs(const char *const *paths, size_t n) {
  size_t bufsz = (size_t)16 << 20;
  char *buf = malloc(bufsz);
  if (!buf) return -1.0;
  /* first every file into the page cache (a load timed after this reads it from there) */
  for (size_t i = 0; i < n; i++) {
    size_t size;
    int fd = open_regular(paths[i], &size);
    if (fd < 0) {
      free(buf);
      return -1.0;
    }
    while (read(fd, buf, bufsz) > 0) {
    }
    close(fd);
  }
  free(buf);
  /* best of three: the first touch of memory the process never had varies a lot */
  unsigned long long total = 0;
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    double dt = 0;
    total = 0;
    for (size_t i = 0; i < n; i++) {
      size_t size;
      int fd = open_regular(paths[i], &size);
      double t = fd < 0 ? -1.0 : read_fresh(fd, size);
      if (fd >= 0) close(fd);
      if (t < 0) return -1.0;
      dt += t;
      total += size;
    }
    if (rep == 0 || dt < best) best = dt;
  }
  return best > 0 ? (double)total / best / 1e9 : 0.0;
}

double fg_cli_memcpy_gbs(void) {
  size_t n = (size_t)256 << 20;
  char *a = malloc(n), *b = malloc(n);
  double best = 0.0;
  fg_device *cpu = NULL; /* a CPU device copy is the library's threaded memcpy (public API only) */
  if (a && b && fg_device_open("cpu", &cpu) == FG_OK) {
    memset(a, 1, n);
    memset(b, 2, n);
    for (int rep = 0; rep < 5; rep++) {
      double t0 = fg_clock_seconds();
      if (fg_device_copy(cpu, b, a, n, FG_COPY_D2D)) break;
      double dt = fg_clock_seconds() - t0;
      if (dt > 0 && (double)n / dt / 1e9 > best) best = (double)n / dt / 1e9;
    }
  }
  fg_device_close(cpu);
  free(a);
  free(b);
  return best;
}

double fg_cli_h2d_gbs(fg_device *dev) {
  if (fg_device_kind_of(dev) != FG_DEVICE_CUDA) return 0.0;
  size_t n = (size_t)256 << 20;
  void *h = NULL, *d = NULL;
  double best = 0.0;
  if (fg_device_pinned_alloc(dev, n, -1, &h) == FG_OK && fg_device_mem_alloc(dev, n, &d) == FG_OK) {
    memset(h, 1, n);
    for (int rep = 0; rep < 5; rep++) {
      double t0 = fg_clock_seconds();
      if (fg_device_copy(dev, d, h, n, FG_COPY_H2D) || fg_device_sync(dev)) break;
      double dt = fg_clock_seconds() - t0;
      if (dt > 0 && (double)n / dt / 1e9 > best) best = (double)n / dt / 1e9;
    }
  }
  fg_device_mem_free(dev, d);
  fg_device_pinned_free(dev, h);
  return best;
}
