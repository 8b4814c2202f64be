#include "core/clock.h"
#include "util_limits.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

double fg_cli_read_gbs(const char *const *paths, size_t n) {
  size_t bufsz = (size_t)16 << 20;
  char *buf = malloc(bufsz);
  if (!buf) return -1.0;
  unsigned long long total = 0;
  double t0 = fg_clock_seconds();
  for (size_t i = 0; i < n; i++) {
    /* The model's files were checked when it was opened; O_NONBLOCK and the check below
     * keep a file swapped for a FIFO since then from hanging the measurement. */
    int fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      if (fd >= 0) close(fd);
      free(buf);
      return -1.0;
    }
    ssize_t r;
    while ((r = read(fd, buf, bufsz)) > 0) total += (unsigned long long)r;
    close(fd);
  }
  double dt = fg_clock_seconds() - t0;
  free(buf);
  return dt > 0 ? (double)total / dt / 1e9 : 0.0;
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
  if (fg_host_alloc_pinned(dev, n, -1, &h) == FG_OK && fg_device_alloc(dev, n, &d) == FG_OK) {
    memset(h, 1, n);
    for (int rep = 0; rep < 5; rep++) {
      double t0 = fg_clock_seconds();
      if (fg_device_copy(dev, d, h, n, FG_COPY_H2D) || fg_device_sync(dev)) break;
      double dt = fg_clock_seconds() - t0;
      if (dt > 0 && (double)n / dt / 1e9 > best) best = (double)n / dt / 1e9;
    }
  }
  fg_device_free(dev, d);
  fg_host_free_pinned(dev, h);
  return best;
}
