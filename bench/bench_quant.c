/* Quant codec throughput: encode (f32 -> TYPE) and decode (TYPE -> f32) in MB/s of f32, with 1
 * and 2 threads, each as a ratio to memcpy bandwidth with the same thread count measured in
 * the same run. With `--peer PYTHON` (a Python with gguf + numpy) the same rows also go through
 * gguf-py's numpy codec (bench_quant_peer.py) and the 1-thread figures are reported against it.
 * Rows are 4096 gaussian floats; --size sets the f32 input bytes. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "harness.h"

#define ROW 4096

typedef struct {
  fg_dtype t;
  float *x, *y;
  uint8_t *q;
  size_t qbytes;
  int64_t nrows;
} q_ctx;

static void run_encode(void *p) {
  q_ctx *c = p;
  if (fg_quant_encode_rows(c->t, c->x, c->nrows, ROW, c->q, c->qbytes) != FG_OK) {
    fprintf(stderr, "encode: %s\n", fg_last_error());
    exit(1);
  }
}

static void run_decode(void *p) {
  q_ctx *c = p;
  if (fg_quant_decode_rows(c->t, c->q, c->qbytes, c->y, c->nrows, ROW) != FG_OK) {
    fprintf(stderr, "decode: %s\n", fg_last_error());
    exit(1);
  }
}

/* gguf-py's MB/s per (op, type), filled from bench_quant_peer.py's output. */
typedef struct {
  char op[8], type[16];
  double mbs;
} peer_fig;

static int run_peer(const char *python, const char *rows_path, int reps, peer_fig *out, int cap) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' '%s/bench_quant_peer.py' '%s' %d %d", python, FORGIA_BENCH_DIR, rows_path, ROW,
           reps);
  FILE *f = popen(cmd, "r");
  if (!f) return 0;
  int n = 0;
  char line[256];
  while (n < cap && fgets(line, sizeof line, f)) {
    if (sscanf(line, "%7s %15s %lf", out[n].op, out[n].type, &out[n].mbs) == 3) n++;
  }
  pclose(f);
  return n;
}

static double peer_lookup(const peer_fig *p, int n, const char *op, const char *type) {
  for (int i = 0; i < n; i++)
    if (strcmp(p[i].op, op) == 0 && strcmp(p[i].type, type) == 0) return p[i].mbs;
  return 0.0;
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("quant", (size_t)8 << 20, argc, argv);
  const char *python = NULL;
  for (int i = 1; i + 1 < argc; i += 2)
    if (strcmp(argv[i], "--peer") == 0) python = argv[i + 1];

  const int64_t nrows = (int64_t)(b.size / 4 / ROW) > 0 ? (int64_t)(b.size / 4 / ROW) : 1;
  const size_t n = (size_t)nrows * ROW;
  float *x = malloc(n * 4), *y = malloc(n * 4);
  uint8_t *q = malloc(n * 4);
  if (!x || !y || !q) return 1;
  /* gaussian rows (Box-Muller over a fixed LCG), the shape real weights have */
  uint64_t s = 42;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u1 = ((s >> 11) + 0.5) * 0x1p-53;
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u2 = (s >> 11) * 0x1p-53;
    x[i] = (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
  }

  peer_fig peer[128];
  int npeer = 0;
  if (python) {
    char path[] = "/tmp/forgia_bench_quant_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (f && fwrite(x, 4, n, f) == n) {
      fclose(f);
      npeer = run_peer(python, path, b.reps, peer, 128);
    } else if (f) {
      fclose(f);
    }
    remove(path);
    if (npeer == 0) fprintf(stderr, "quant: gguf-py peer gave no figures\n");
  }

  const fg_dtype types[] = {FG_F16,  FG_BF16,  FG_Q8_0,   FG_Q4_0,   FG_Q4_1,  FG_Q5_0,  FG_Q5_1, FG_Q8_1,
                            FG_Q2_K, FG_Q3_K,  FG_Q4_K,   FG_Q5_K,   FG_Q6_K,  FG_Q8_K,  FG_TQ1_0, FG_TQ2_0,
                            FG_IQ4_NL, FG_IQ4_XS, FG_MXFP4, FG_NVFP4, FG_Q1_0, FG_Q2_0};
  const double mb = (double)(n * 4) / 1e6;
  double memcpy_mbs[3] = {0};
  for (int th = 1; th <= 2; th++) memcpy_mbs[th] = fg_bench_memcpy_gbs(&b, n * 4, th) * 1e3;

  char fig[96];
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    uint64_t qb;
    fg_dtype_nbytes(types[k], n, &qb);
    q_ctx c = {types[k], x, y, q, (size_t)qb, nrows};
    const char *nm = fg_dtype_name(types[k]);
    for (int th = 1; th <= 2; th++) {
      fg_bench bt = b;
      bt.threads = th;
      omp_set_num_threads(th);
      const double te = fg_bench_time(&bt, run_encode, &c);
      const double td = fg_bench_time(&bt, run_decode, &c);
      snprintf(fig, sizeof fig, "%s_encode_t%d", nm, th);
      fg_bench_report(&bt, fig, mb / te, "MB/s", "memcpy", memcpy_mbs[th]);
      snprintf(fig, sizeof fig, "%s_decode_t%d", nm, th);
      fg_bench_report(&bt, fig, mb / td, "MB/s", "memcpy", memcpy_mbs[th]);
      if (th == 1 && npeer > 0) {
        const double pe = peer_lookup(peer, npeer, "encode", nm), pd = peer_lookup(peer, npeer, "decode", nm);
        if (pe > 0) {
          snprintf(fig, sizeof fig, "%s_encode_t1_vs_gguf_py", nm);
          fg_bench_report(&bt, fig, mb / te, "MB/s", "gguf-py", pe);
        }
        if (pd > 0) {
          snprintf(fig, sizeof fig, "%s_decode_t1_vs_gguf_py", nm);
          fg_bench_report(&bt, fig, mb / td, "MB/s", "gguf-py", pd);
        }
      }
    }
  }
  free(x);
  free(y);
  free(q);
  return 0;
}
