/* The fast gaussian fill (ES noise, Fucina's gaussianFillAtFast) in values per second: on the
 * CPU device with 1 thread and with all threads, through the host fill, and on each CUDA
 * device present. Limits measured in the same run: numpy's Generator.standard_normal (PCG64,
 * ziggurat) on one core for the 1-thread figures, when `--peer PYTHON` names a Python with
 * numpy (bench_rng_peer.py); memcpy's write rate in f32 values per second for the all-thread
 * figure; a device-to-device copy's for CUDA (each timed CUDA run queues 20 fills on a stream
 * and waits once). --size sets the bytes of f32 output (default 64 MiB). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

#define CUDA_BATCH 20

typedef struct {
  fg_device *dev; /* NULL: the host fill */
  fg_stream *s;
  fg_rng_spec r;
  void *dst;
  size_t n;
} fill_ctx;

static void die(void) {
  fprintf(stderr, "bench_rng: %s\n", fg_last_error());
  exit(1);
}

static void run(void *p) {
  fill_ctx *c = p;
  if (!c->dev) {
    if (fg_rng_fill_host(&c->r, c->dst, c->n)) die();
    return;
  }
  const int k = c->s ? CUDA_BATCH : 1;
  for (int i = 0; i < k; i++)
    if (fg_rng_fill(c->dev, &c->r, c->dst, FG_F32, c->n, c->s)) die();
  if (c->s && fg_stream_sync(c->s)) die();
}

static double per_second(const fg_bench *b, fill_ctx *c) {
  return (double)c->n / (fg_bench_time(b, run, c) / (c->s ? CUDA_BATCH : 1));
}

/* numpy's values per second for f32 and f64 output, from bench_rng_peer.py. */
static int run_peer(const char *python, size_t n, int reps, double *f32, double *f64) {
  char cmd[4096], line[256], what[32];
  snprintf(cmd, sizeof cmd, "'%s' '%s/bench_rng_peer.py' %zu %d", python, FORGIA_BENCH_DIR, n, reps);
  FILE *f = popen(cmd, "r");
  if (!f) return 0;
  int got = 0;
  double v;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%31s %lf", what, &v) != 2) continue;
    if (strcmp(what, "standard_normal_f32") == 0) *f32 = v, got |= 1;
    if (strcmp(what, "standard_normal_f64") == 0) *f64 = v, got |= 2;
  }
  pclose(f);
  return got == 3;
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("rng", (size_t)64 << 20, argc, argv);
  const char *python = NULL;
  for (int i = 1; i + 1 < argc; i += 2)
    if (strcmp(argv[i], "--peer") == 0) python = argv[i + 1];
  const size_t n = b.size / 4 ? b.size / 4 : 1;
  const fg_rng_spec r = {.kind = FG_RNG_GAUSS_FAST, .seed = 42, .scale = 1.0f};

  double np32 = 0, np64 = 0;
  if (python && !run_peer(python, n, b.reps, &np32, &np64)) fprintf(stderr, "rng: the numpy peer gave no figures\n");

  fg_device *cpu;
  if (fg_device_open("cpu", &cpu)) die();
  void *buf;
  if (fg_device_mem_alloc(cpu, n * 4, &buf)) die();
  memset(buf, 0, n * 4); /* fault the pages in before timing */
  const int all = b.threads > 0 ? b.threads : omp_get_max_threads();
  fill_ctx c = {cpu, NULL, r, buf, n};

  fg_bench b1 = b;
  b1.threads = 1;
  omp_set_num_threads(1);
  const double t1 = per_second(&b1, &c);
  fill_ctx h = {NULL, NULL, r, buf, n};
  const double host1 = per_second(&b1, &h);
  if (np32 > 0) {
    fg_bench_report(&b1, "gauss_fast_cpu_t1", t1, "values/s", "numpy_standard_normal_f32", np32);
    fg_bench_report(&b1, "gauss_fast_cpu_t1_vs_f64", t1, "values/s", "numpy_standard_normal_f64", np64);
    fg_bench_report(&b1, "gauss_fast_host_fill_t1", host1, "values/s", "numpy_standard_normal_f32", np32);
  } else {
    fg_bench_report(&b1, "gauss_fast_cpu_t1", t1, "values/s", "none", 0);
    fg_bench_report(&b1, "gauss_fast_host_fill_t1", host1, "values/s", "none", 0);
  }

  fg_bench bn = b;
  bn.threads = all;
  omp_set_num_threads(all);
  const double memcpy_vals = fg_bench_memcpy_gbs(&bn, n * 4, all) * 1e9 / 4;
  fg_bench_report(&bn, "gauss_fast_cpu_all_threads", per_second(&bn, &c), "values/s", "memcpy_f32_writes", memcpy_vals);
  fg_device_mem_free(cpu, buf);
  fg_device_close(cpu);

  for (int d = 0; d < fg_cuda_device_count(); d++) {
    char spec[16], fig[64];
    snprintf(spec, sizeof spec, "cuda:%d", d);
    fg_device *g;
    fg_stream *s;
    void *x, *y;
    if (fg_device_open(spec, &g) || fg_stream_create(g, &s) || fg_device_mem_alloc(g, n * 4, &x) ||
        fg_device_mem_alloc(g, n * 4, &y))
      die();
    fill_ctx gc = {g, s, r, x, n};
    /* a D2D copy moves 4 bytes of f32 in and out per value; the fill only writes them */
    fg_event *e0, *e1;
    if (fg_event_create(g, &e0) || fg_event_create(g, &e1)) die();
    float best = 0;
    for (int i = 0; i < 5; i++) {
      float ms;
      if (fg_event_record(e0, s) || fg_device_copy_async(g, y, x, n * 4, FG_COPY_D2D, s) || fg_event_record(e1, s) ||
          fg_event_sync(e1) || fg_event_elapsed_ms(e0, e1, &ms))
        die();
      if (best == 0 || ms < best) best = ms;
    }
    snprintf(fig, sizeof fig, "gauss_fast_%s", spec);
    fg_bench_report(&b, fig, per_second(&b, &gc), "values/s", "d2d_copy_f32", (double)n / (best / 1e3));
    fg_event_free(e0);
    fg_event_free(e1);
    fg_device_mem_free(g, x);
    fg_device_mem_free(g, y);
    fg_stream_free(s);
    fg_device_close(g);
  }
  return 0;
}
