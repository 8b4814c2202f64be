/* Evolution strategies at memory bandwidth: perturb + restore of one member and the update
 * from a population of 32 (32 noise streams: antithetic off), on one f32 parameter of 16M and
 * 64M elements (or --size BYTES), as elements per second and as a ratio to memcpy's traffic
 * measured in the same run (a device-to-device copy's on CUDA; target >= 0.5). Traffic per
 * element: perturb reads and writes the parameter (8 bytes), restore the same (8), the
 * update the same (8): the noise is regenerated in registers, never read from memory.
 *
 * The fast gaussian (FG_RNG_GAUSS_FAST, the ES noise) in values per second against numpy's
 * Generator.standard_normal into float32 (bench_es_peer.py, with `--peer PYTHON`) in as many
 * processes as the fill has threads: the host fill (fg_rng_fill_host, one thread) against one
 * process, the device's fill (the CPU op layer on every thread, or the GPU) against one
 * process per thread (per core next to a GPU); and the device fill against memcpy's write
 * rate.
 *
 * Every ES figure is also given as gaussians per second (perturb + restore: 2 per element; the
 * update: 32, one per stream) against the rate of generating them (the GPU's fill, or the
 * host fill times the threads): on a few CPU cores ES is bound by its noise, not by memory.
 *
 * Flags: --device cpu|cuda:N (default cpu), --reps N, --warmup N, --size BYTES, --threads N,
 * --peer PYTHON. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "harness.h"

#define POPULATION 32

static void die(const char *what) {
  fprintf(stderr, "bench_es: %s: %s\n", what, fg_last_error());
  exit(1);
}

typedef struct {
  fg_es *es;
  float rewards[POPULATION];
  uint64_t member;
} es_ctx;

static void perturb_restore(void *p) {
  es_ctx *c = p;
  if (fg_es_perturb(c->es, c->member) || fg_es_restore(c->es, c->member)) die("perturb/restore");
  c->member = (c->member + 1) % POPULATION;
}

static void update(void *p) {
  es_ctx *c = p;
  if (fg_es_update(c->es, c->rewards, POPULATION, NULL)) die("update");
}

/* numpy's standard_normal float32 values per second over procs processes. */
static double run_peer(const char *python, size_t n, int reps, int procs) {
  char cmd[4096], line[256], what[64];
  snprintf(cmd, sizeof cmd, "'%s' '%s/bench_es_peer.py' %zu %d %d", python, FORGIA_BENCH_DIR, n, reps, procs);
  FILE *f = popen(cmd, "r");
  if (!f) return 0;
  double v = 0, got = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "%63s %lf", what, &v) == 2 && strcmp(what, "standard_normal_f32") == 0) got = v;
  if (pclose(f) != 0 || got <= 0) fprintf(stderr, "bench_es: the numpy peer gave no figure (%s)\n", cmd);
  return got;
}

static void bench_size(const fg_bench *b, fg_device *dev, const char *tag, size_t n, const char *sz, double traffic,
                       const char *limit, const char *gauss_name, double gauss) {
  fg_tensor *t;
  const uint64_t shape[1] = {n};
  if (fg_tensor_create(dev, "theta", FG_F32, 1, shape, &t)) die("tensor");
  const fg_rng_spec init = {.kind = FG_RNG_UNIFORM, .seed = 1, .lo = -1.0f, .hi = 1.0f};
  if (fg_rng_fill_tensor(t, &init, NULL)) die("init");
  fg_es_config c = fg_es_defaults();
  c.sigma = 0.01f;
  c.population = POPULATION;
  c.seed = 7;
  es_ctx x = {0};
  if (fg_es_create(&c, &x.es) || fg_es_add(x.es, t, NULL)) die("trainer");
  for (int m = 0; m < POPULATION; m++) x.rewards[m] = (float)((m * 37) % POPULATION) - 15.5f;
  char fig[96];
  const double pr = fg_bench_time(b, perturb_restore, &x);
  snprintf(fig, sizeof fig, "%s_perturb_restore_%s", tag, sz);
  fg_bench_report(b, fig, (double)n / pr, "elem/s", limit, traffic / 16.0);
  snprintf(fig, sizeof fig, "%s_perturb_restore_%s_noise", tag, sz);
  fg_bench_report(b, fig, 2.0 * (double)n / pr, "values/s", gauss_name, gauss);
  const double up = fg_bench_time(b, update, &x);
  snprintf(fig, sizeof fig, "%s_update_pop%d_%s", tag, POPULATION, sz);
  fg_bench_report(b, fig, (double)n / up, "elem/s", limit, traffic / 8.0);
  /* The update draws one gaussian per element and stream: its compute roof is the fill's. */
  snprintf(fig, sizeof fig, "%s_update_pop%d_%s_noise", tag, POPULATION, sz);
  fg_bench_report(b, fig, (double)n * POPULATION / up, "values/s", gauss_name, gauss);
  fg_es_free(x.es);
  fg_tensor_free(t);
}

typedef struct {
  fg_device *dev; /* NULL: the host fill */
  fg_stream *s;
  fg_rng_spec r;
  void *dst;
  size_t n;
} fill_ctx;

static void fill(void *p) {
  fill_ctx *c = p;
  if (!c->dev) {
    if (fg_rng_fill_host(&c->r, c->dst, c->n)) die("host fill");
    return;
  }
  if (fg_rng_fill(c->dev, &c->r, c->dst, FG_F32, c->n, c->s) || fg_stream_sync(c->s)) die("device fill");
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("es", (size_t)64 << 20, argc, argv);
  const char *python = NULL, *device = "cpu";
  bool sized = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--peer") == 0) python = argv[i + 1];
    if (strcmp(argv[i], "--device") == 0) device = argv[i + 1];
    if (strcmp(argv[i], "--size") == 0) sized = true;
  }
  fg_device *dev;
  if (fg_device_open(device, &dev)) die(device);
  const bool gpu = fg_device_kind_of(dev) == FG_DEVICE_CUDA;
  const int threads = b.threads > 0 ? b.threads : omp_get_max_threads();
  const char *tag = gpu ? "cuda" : "cpu";
  const char *limit = gpu ? "d2d_copy_traffic_as_elem/s" : "memcpy_traffic_as_elem/s";
  /* Traffic (bytes read + written per second) of the copy, the roof of a streaming op. */
  const double traffic = gpu ? 1e9 * fg_bench_d2d_traffic_gbs(dev, (size_t)256 << 20)
                             : 2e9 * fg_bench_memcpy_gbs(&b, (size_t)256 << 20, b.threads);
  /* The fast gaussian, 16M values (or --size bytes of them): the host fill (one thread)
   * against numpy in one process, and the device's fill (the op layer: every thread, or the
   * GPU) against numpy in as many processes as there are threads; that fill is also the roof
   * of ES's noise generation below. */
  const size_t n = sized ? (b.size / 4 ? b.size / 4 : 1) : (size_t)16 << 20;
  const fg_rng_spec r = {.kind = FG_RNG_GAUSS_FAST, .seed = 42, .scale = 1.0f};
  char fig[64], lim[64];
  float *host = calloc(n, 4); /* zeroed: the pages are faulted in before timing */
  if (!host) die("alloc");
  memset(host, 0, n * 4);
  fill_ctx hf = {.r = r, .dst = host, .n = n};
  const double host_vps = (double)n / fg_bench_time(&b, fill, &hf);
  const double np1 = python ? run_peer(python, n, b.reps, 1) : 0.0;
  const int procs = gpu ? omp_get_num_procs() : threads;
  const double npn = python ? (procs == 1 ? np1 : run_peer(python, n, b.reps, procs)) : 0.0;
  if (np1 > 0) fg_bench_report(&b, "host_gauss_fast_1thread", host_vps, "values/s", "numpy_standard_normal_f32_x1_procs", np1);
  fill_ctx f = {.dev = dev, .r = r, .n = n};
  if (fg_stream_create(dev, &f.s) || fg_device_mem_alloc(dev, n * 4, &f.dst) || fg_device_memset(dev, f.dst, 0, n * 4))
    die("alloc");
  const double vps = (double)n / fg_bench_time(&b, fill, &f);
  snprintf(fig, sizeof fig, "%s_gauss_fast", tag);
  snprintf(lim, sizeof lim, "numpy_standard_normal_f32_x%d_procs", procs);
  if (npn > 0) fg_bench_report(&b, fig, vps, "values/s", lim, npn);
  fg_bench_report(&b, fig, vps, "values/s", gpu ? "d2d_copy_traffic_as_f32/s" : "memcpy_traffic_as_f32/s",
                  traffic / 4.0);
  /* The roof of ES's noise: the GPU's fill, or on the CPU the host fill (which draws the
   * gaussians in Box-Muller pairs) times the threads, as if it scaled perfectly. */
  char roof_name[64];
  snprintf(roof_name, sizeof roof_name, gpu ? "gpu_gauss_fast_fill" : "host_gauss_fast_fill_x%d_threads", threads);
  const double roof = gpu ? vps : host_vps * threads;
  if (sized) {
    char sz[32];
    snprintf(sz, sizeof sz, "%zuB", b.size);
    bench_size(&b, dev, tag, b.size / 4 ? b.size / 4 : 1, sz, traffic, limit, roof_name, roof);
  } else {
    bench_size(&b, dev, tag, (size_t)16 << 20, "16M", traffic, limit, roof_name, roof);
    bench_size(&b, dev, tag, (size_t)64 << 20, "64M", traffic, limit, roof_name, roof);
  }

  fg_device_mem_free(dev, f.dst);
  fg_stream_free(f.s);
  free(host);
  fg_device_close(dev);
  return 0;
}
