/* Loader throughput, as a ratio to the page-cache read() bandwidth of the same file measured
 * in the same run: a safetensors file of --size bytes (f16 and f32 tensors) is generated,
 * read once (so it is in the page cache), then loaded kept and converted (f32) to the CPU,
 * and to the first GPU when there is one (ratio to pinned host-to-device bandwidth there).
 * bench_load_peer.py loads the same file with safetensors.numpy for the peer ratio:
 *   bench_load --keep-file /tmp/x.safetensors && python3 bench/bench_load_peer.py /tmp/x.safetensors */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forgia/elem/half.h"
#include "forgia/forgia.h"
#include "forgia/load.h"
#include "harness.h"

#define NT 16 /* tensors: even ones f16, odd ones f32 */

static int make_file(const char *path, size_t bytes) {
  size_t per = bytes / NT / 4 * 4;
  fg_st_write_tensor t[NT];
  uint64_t shape[NT][1];
  char names[NT][32];
  void *data[NT];
  for (int i = 0; i < NT; i++) {
    bool half = i % 2 == 0;
    size_t n = per / (half ? 2 : 4);
    data[i] = malloc(per);
    if (!data[i]) return -1;
    for (size_t j = 0; j < n; j++) {
      float v = (float)((j * 2654435761u + (size_t)i) % 2001) * 0.001f - 1.0f;
      if (half) ((uint16_t *)data[i])[j] = fg_f32_to_f16(v);
      else ((float *)data[i])[j] = v;
    }
    snprintf(names[i], sizeof names[i], "layer.%02d.weight", i);
    shape[i][0] = n;
    t[i] = (fg_st_write_tensor){names[i], half ? FG_F16 : FG_F32, 1, shape[i], data[i], per};
  }
  fg_status s = fg_st_save(path, t, NT, NULL, 0);
  for (int i = 0; i < NT; i++) free(data[i]);
  if (s) fprintf(stderr, "bench_load: %s\n", fg_last_error());
  return s ? -1 : 0;
}

typedef struct {
  const char *path;
  size_t bytes;
} read_ctx;

static void run_read(void *p) {
  read_ctx *c = p;
  static char buf[16 << 20];
  int fd = open(c->path, O_RDONLY);
  if (fd < 0) return;
  ssize_t r;
  size_t total = 0;
  while ((r = read(fd, buf, sizeof buf)) > 0) total += (size_t)r;
  close(fd);
  c->bytes = total;
}

typedef struct {
  const char *path;
  fg_device *dev;
  fg_load_options o;
  uint64_t bytes;
} load_ctx;

static void run_load(void *p) {
  load_ctx *c = p;
  fg_model *m;
  if (fg_load(c->path, c->dev, &c->o, &m) != FG_OK) {
    fprintf(stderr, "bench_load: %s\n", fg_last_error());
    exit(1);
  }
  c->bytes = fg_model_stats(m)->bytes_read;
  fg_model_free(m);
}

typedef struct {
  fg_device *dev;
  void *h, *d;
  size_t n;
} h2d_ctx;

static void run_h2d(void *p) {
  h2d_ctx *c = p;
  fg_device_copy(c->dev, c->d, c->h, c->n, FG_COPY_H2D);
  fg_device_sync(c->dev);
}

static void bench_target(const fg_bench *b, const char *spec, const char *path, double read_gbs) {
  fg_device *dev;
  if (fg_device_open(spec, &dev) != FG_OK) return;
  double limit = read_gbs;
  const char *limit_name = "page_cache_read";
  fg_load_ring *ring = NULL;
  if (fg_device_kind_of(dev) == FG_DEVICE_CUDA) {
    h2d_ctx h = {dev, NULL, NULL, (size_t)256 << 20};
    if (fg_host_alloc_pinned(dev, h.n, -1, &h.h) == FG_OK && fg_device_alloc(dev, h.n, &h.d) == FG_OK) {
      memset(h.h, 1, h.n);
      limit = (double)h.n / fg_bench_time(b, run_h2d, &h) / 1e9;
      limit_name = "pinned_h2d";
    }
    fg_device_free(dev, h.d);
    fg_host_free_pinned(dev, h.h);
    /* one ring for every repetition, as a long-lived caller would keep */
    if (fg_load_ring_create(dev, FG_LOAD_RING_DEFAULT_COUNT, FG_LOAD_RING_DEFAULT_BYTES, &ring) != FG_OK) {
      fprintf(stderr, "bench_load: %s\n", fg_last_error());
      fg_device_close(dev);
      return;
    }
  }
  const struct {
    const char *name;
    fg_load_dtype dtype;
    unsigned flags;
  } cases[] = {{"keep", FG_LOAD_DTYPE_KEEP, 0}, {"keep_copy", FG_LOAD_DTYPE_KEEP, FG_LOAD_FLAG_COPY}, {"f32", FG_LOAD_DTYPE_F32, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].flags == FG_LOAD_FLAG_COPY && fg_device_kind_of(dev) != FG_DEVICE_CPU) continue;
    load_ctx c = {path, dev, {0}, 0};
    fg_load_options_init(&c.o);
    c.o.dtype = cases[i].dtype;
    c.o.flags = cases[i].flags;
    c.o.ring = ring;
    double t = fg_bench_time(b, run_load, &c);
    char fig[96];
    snprintf(fig, sizeof fig, "%s_load_%s", spec, cases[i].name);
    fg_bench_report(b, fig, (double)c.bytes / t / 1e9, "GB/s", limit_name, limit);
    if (fg_device_kind_of(dev) != FG_DEVICE_CPU) {
      snprintf(fig, sizeof fig, "%s_load_%s_vs_read", spec, cases[i].name);
      fg_bench_report(b, fig, (double)c.bytes / t / 1e9, "GB/s", "page_cache_read", read_gbs);
    }
  }
  fg_load_ring_free(ring);
  fg_device_close(dev);
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("load", (size_t)512 << 20, argc, argv);
  const char *keep = NULL;
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--keep-file") == 0) keep = argv[i + 1];
  char path[256];
  snprintf(path, sizeof path, "%s", keep ? keep : "bench_load.tmp.safetensors");
  if (make_file(path, b.size)) return 1;
  read_ctx r = {path, 0};
  run_read(&r); /* into the page cache */
  double read_gbs = (double)r.bytes / fg_bench_time(&b, run_read, &r) / 1e9;
  fg_bench_report(&b, "page_cache_read", read_gbs, "GB/s", "memcpy", fg_bench_memcpy_gbs(&b, (size_t)256 << 20, 0));
  bench_target(&b, "cpu", path, read_gbs);
  if (fg_cuda_device_count() > 0) bench_target(&b, "cuda:0", path, read_gbs);
  if (!keep) unlink(path);
  return 0;
}
