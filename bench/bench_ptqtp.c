/* PTQTP solver throughput (forgia/ptqtp.h): MB/s of f32 source quantized to K = 1, 2, 3
 * planes (free fit) and K = 2, 3 (tied fit), with 1 and 2 threads, each next to memcpy
 * bandwidth with the same thread count measured in the same run. Gaussian weights (std
 * 0.02, the shape real weights have) in rows of 4096; --size sets the f32 bytes (default
 * 16 MiB). Also printed: the mean solver iterations per group, which sets the cost. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "forgia/ptqtp.h"
#include "harness.h"

#define COLS 4096

typedef struct {
  const float *w;
  uint64_t rows;
  fg_ptqtp_options o;
  void *planes[3];
  fg_ptqtp_stats stats;
} p_ctx;

static void run(void *p) {
  p_ctx *c = p;
  if (fg_ptqtp_quantize(c->w, c->rows, COLS, &c->o, c->planes, &c->stats) != FG_OK) {
    fprintf(stderr, "ptqtp: %s\n", fg_last_error());
    exit(1);
  }
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("ptqtp", (size_t)16 << 20, argc, argv);
  const uint64_t rows = b.size / 4 / COLS > 0 ? b.size / 4 / COLS : 1;
  const size_t n = (size_t)(rows * COLS);
  uint64_t pb = 0;
  if (fg_ptqtp_plane_bytes(rows, COLS, &pb)) return 1;
  float *w = malloc(n * 4);
  void *planes[3] = {malloc(pb), malloc(pb), malloc(pb)};
  if (!w || !planes[0] || !planes[1] || !planes[2]) return 1;
  uint64_t s = 42; /* Box-Muller over a fixed LCG */
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u1 = ((s >> 11) + 0.5) * 0x1p-53;
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u2 = (s >> 11) * 0x1p-53;
    w[i] = (float)(0.02 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
  }
  const double mb = (double)(n * 4) / 1e6;
  double memcpy_mbs[3] = {0};
  for (int th = 1; th <= 2; th++) memcpy_mbs[th] = fg_bench_memcpy_gbs(&b, n * 4, th) * 1e3;
  const struct {
    int k;
    int tie;
  } cases[] = {{1, 0}, {2, 0}, {3, 0}, {2, 1}, {3, 1}};
  char fig[64];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    for (int th = 1; th <= 2; th++) {
      p_ctx c = {w, rows, fg_ptqtp_options_default(), {planes[0], planes[1], planes[2]}, {0, {0, 0, 0}, 0, 0, 0}};
      c.o.planes = cases[i].k;
      c.o.tie_scales = cases[i].tie != 0;
      c.o.threads = th;
      fg_bench bt = b;
      bt.threads = th;
      const double t = fg_bench_time(&bt, run, &c);
      snprintf(fig, sizeof fig, "k%d%s_t%d", cases[i].k, cases[i].tie ? "_tied" : "", th);
      fg_bench_report(&bt, fig, mb / t, "MB/s", "memcpy", memcpy_mbs[th]);
      if (th == 1) {
        snprintf(fig, sizeof fig, "k%d%s_iterations", cases[i].k, cases[i].tie ? "_tied" : "");
        /* the cap is the limit an iteration count is read against */
        fg_bench_report(&bt, fig, c.stats.mean_iterations, "iters/group", "max_iterations",
                        (double)c.o.max_iterations);
      }
    }
  }
  free(w);
  for (int p = 0; p < 3; p++) free(planes[p]);
  return 0;
}
