/* Quant codec throughput: encode (f32 -> TYPE) and decode (TYPE -> f32) in MB/s of f32, with 1
 * and 2 threads, each as a ratio to memcpy bandwidth with the same thread count measured in
 * the same run. With `--peer PYTHON` (a Python with gguf + numpy) the same rows also go through
 * gguf-py's numpy codec (bench_quant_peer.py) and the 1-thread figures are reported against it.
 * With `--ggml PEER` (the ggml_quant_peer program that bench/ggml_peer/build_ggml.sh builds, or
 * its folder) the same rows go through ggml's own quantizers and to_float on 1 and 2 threads:
 * every figure is also reported against ggml's, forgia decodes ggml's bytes (so both decode the
 * same input; the grid i-quants, which forgia only decodes, are measured that way too), and a
 * table at the end ("#" lines) says per type whether forgia's bytes equal ggml's and whether
 * forgia's floats from ggml's bytes equal ggml's (memcmp). The figures against ggml are the best
 * of --reps runs on each side (on a shared machine the median moves with other work; the best
 * run is the codec's own speed), the others medians as everywhere.
 * Weighted encode: with --ggml (or --weighted 1 without it), every type whose encoder takes an
 * importance matrix (fg_quant_uses_weights: q4_0..q5_1, the k-quants, iq4_nl/xs and the grid
 * i-quants) is also encoded through fg_quant_encode_rows_weighted with one deterministic
 * positive weight per column, the same for every row, and by ggml_quantize_chunk with those
 * weights as its imatrix; "wencode" figures and table columns, and whether the bytes are equal.
 * Rows are 4096 gaussian floats; --size sets the f32 input bytes. */
#include <math.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/forgia.h"
#include "forgia/quant.h"
#include "forgia/quant_weighted.h"
#include "harness.h"

#define ROW 4096

typedef struct {
  fg_dtype t;
  float *x, *y;
  uint8_t *q;
  size_t qbytes;
  int64_t nrows;
  const float *w; /* ROW column weights, for run_wencode */
} q_ctx;

static void run_encode(void *p) {
  q_ctx *c = p;
  if (fg_quant_encode_rows(c->t, c->x, c->nrows, ROW, c->q, c->qbytes) != FG_OK) {
    fprintf(stderr, "encode: %s\n", fg_last_error());
    exit(1);
  }
}

static void run_wencode(void *p) {
  q_ctx *c = p;
  if (fg_quant_encode_rows_weighted(c->t, c->x, c->nrows, ROW, c->w, c->q, c->qbytes) != FG_OK) {
    fprintf(stderr, "weighted encode: %s\n", fg_last_error());
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

/* ggml's figures: "encode|decode TYPE THREADS MEDIAN BEST" (MB/s) lines of ggml_quant_peer */
typedef struct {
  char op[8], type[16];
  int threads;
  double median, best;
} ggml_fig;

/* fg_bench_time's runs, giving the median and the shortest run's seconds */
static void time_both(const fg_bench *b, void (*fn)(void *), void *ctx, double *med, double *best) {
  for (int i = 0; i < b->warmup; i++) fn(ctx);
  double *t = malloc(sizeof *t * (size_t)b->reps);
  if (!t) exit(1);
  for (int i = 0; i < b->reps; i++) {
    const double t0 = fg_clock_seconds();
    fn(ctx);
    t[i] = fg_clock_seconds() - t0;
  }
  double lo = t[0];
  for (int i = 1; i < b->reps; i++) lo = t[i] < lo ? t[i] : lo;
  /* median as fg_bench_time takes it */
  for (int i = 1; i < b->reps; i++)
    for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
      const double v = t[j];
      t[j] = t[j - 1];
      t[j - 1] = v;
    }
  *med = b->reps % 2 ? t[b->reps / 2] : 0.5 * (t[b->reps / 2 - 1] + t[b->reps / 2]);
  *best = lo;
  free(t);
}

/* Runs the peer on one type (just before forgia's timings of it, so that both are measured under
 * the same machine load); appends its figures to out[*n..cap). */
static void run_ggml(const char *peer, const char *rows_path, const char *wts_path, const char *dir, const fg_bench *b,
                     const char *type, ggml_fig *out, int *n, int cap) {
  char exe[4096], cmd[8192];
  struct stat st;
  if (stat(peer, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(exe, sizeof exe, "%s/ggml_quant_peer", peer);
  else snprintf(exe, sizeof exe, "%s", peer);
  snprintf(cmd, sizeof cmd, "'%s' '%s' %d %d %d '%s' '%s' %s%s%s", exe, rows_path, ROW, b->reps, b->warmup, dir, type,
           wts_path ? "'" : "", wts_path ? wts_path : "", wts_path ? "'" : "");
  FILE *f = popen(cmd, "r");
  if (!f) return;
  char line[256];
  while (*n < cap && fgets(line, sizeof line, f)) {
    ggml_fig *g = &out[*n];
    if (sscanf(line, "%7s %15s %d %lf %lf", g->op, g->type, &g->threads, &g->median, &g->best) == 5) (*n)++;
  }
  if (pclose(f) != 0) fprintf(stderr, "quant: %s failed on %s\n", exe, type);
}

static double ggml_lookup(const ggml_fig *p, int n, const char *op, const char *type, int threads) {
  for (int i = 0; i < n; i++)
    if (strcmp(p[i].op, op) == 0 && strcmp(p[i].type, type) == 0 && p[i].threads == threads) return p[i].best;
  return 0.0;
}

/* The whole file dir/name.ext when it is exactly `bytes` long, else NULL. */
static void *read_exact(const char *dir, const char *name, const char *ext, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  void *p = malloc(bytes + 1);
  const size_t got = p ? fread(p, 1, bytes + 1, f) : 0;
  fclose(f);
  if (got != bytes) {
    free(p);
    return NULL;
  }
  return p;
}

/* One row of the closing table: best-run MB/s [op][threads] for forgia and ggml (0: not measured);
 * op 0 encode, 1 decode, 2 weighted encode. */
typedef struct {
  const char *name;
  double fg[3][3], gg[3][3];
  int bytes_eq, floats_eq, wbytes_eq; /* 1 yes, 0 no, -1 not compared */
} ggml_row;

static void print_ratio(double a, double b) {
  if (a > 0 && b > 0) printf(" %8.0f %8.0f %5.2fx", a, b, a / b);
  else if (a > 0) printf(" %8.0f %8s %6s", a, "-", "-");
  else if (b > 0) printf(" %8s %8.0f %6s", "-", b, "-");
  else printf(" %8s %8s %6s", "-", "-", "-");
}

static void print_ggml_table(const ggml_row *rows, int n, double mb, int reps) {
  static const char *yn[3] = {"-", "no", "yes"};
  printf("# forgia vs ggml (same rows: %.1f MB of f32 in rows of %d; MB/s of f32, best of %d runs each;\n"
         "# ratio = forgia / ggml; decode of ggml's bytes; bytes/floats equal: memcmp with ggml's;\n"
         "# wencode: encode with the same per-column importance weights, wbytes: its bytes equal)\n", mb, ROW, reps);
  printf("# %-8s %-25s %-25s %-25s %-25s %-5s %-6s %-25s %-25s %-6s\n", "type", "encode t1: forgia ggml",
         "encode t2: forgia ggml", "decode t1: forgia ggml", "decode t2: forgia ggml", "bytes", "floats",
         "wencode t1: forgia ggml", "wencode t2: forgia ggml", "wbytes");
  for (int i = 0; i < n; i++) {
    printf("# %-8s", rows[i].name);
    for (int op = 0; op < 2; op++)
      for (int th = 1; th <= 2; th++) print_ratio(rows[i].fg[op][th], rows[i].gg[op][th]);
    printf(" %-5s %-6s", yn[rows[i].bytes_eq + 1], yn[rows[i].floats_eq + 1]);
    for (int th = 1; th <= 2; th++) print_ratio(rows[i].fg[2][th], rows[i].gg[2][th]);
    printf(" %-6s\n", yn[rows[i].wbytes_eq + 1]);
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  fg_bench b = fg_bench_begin("quant", (size_t)8 << 20, argc, argv);
  const char *python = NULL, *ggml = NULL;
  bool weighted = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--peer") == 0) python = argv[i + 1];
    if (strcmp(argv[i], "--ggml") == 0) ggml = argv[i + 1];
    if (strcmp(argv[i], "--weighted") == 0) weighted = atoi(argv[i + 1]) != 0;
  }
  if (ggml) weighted = true;

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
  /* column weights 0.25 .. 4.25 in a scrambled order (Knuth's multiplicative hash), the spread
   * an importance matrix has */
  float *wts = malloc(ROW * sizeof *wts);
  if (!wts) return 1;
  for (uint32_t i = 0; i < ROW; i++) wts[i] = 0.25f + (float)((i * 2654435761u) >> 22) / 256.0f;

  peer_fig peer[128];
  ggml_fig gfig[256];
  int npeer = 0, nggml = 0;
  char gdir[] = "/tmp/forgia_bench_quant_ggml_XXXXXX", rows_path[] = "/tmp/forgia_bench_quant_XXXXXX";
  char wts_path[] = "/tmp/forgia_bench_quant_w_XXXXXX";
  bool have_rows = false, have_gdir = false, have_wts = false;
  if (python || ggml) {
    int fd = mkstemp(rows_path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (f) {
      have_rows = fwrite(x, 4, n, f) == n;
      if (fclose(f) != 0) have_rows = false;
    }
    if (have_rows && python) npeer = run_peer(python, rows_path, b.reps, peer, 128);
    if (python && npeer == 0) fprintf(stderr, "quant: gguf-py peer gave no figures\n");
    have_gdir = have_rows && ggml && mkdtemp(gdir) != NULL;
    if (have_gdir) {
      fd = mkstemp(wts_path);
      f = fd >= 0 ? fdopen(fd, "wb") : NULL;
      if (f) {
        have_wts = fwrite(wts, 4, ROW, f) == ROW;
        if (fclose(f) != 0) have_wts = false;
      }
    }
  }

  /* the grid i-quants come last: forgia decodes them only, so they need ggml's bytes */
  const fg_dtype types[] = {FG_F16,  FG_BF16,  FG_Q8_0,   FG_Q4_0,   FG_Q4_1,  FG_Q5_0,  FG_Q5_1, FG_Q8_1,
                            FG_Q2_K, FG_Q3_K,  FG_Q4_K,   FG_Q5_K,   FG_Q6_K,  FG_Q8_K,  FG_TQ1_0, FG_TQ2_0,
                            FG_IQ4_NL, FG_IQ4_XS, FG_MXFP4, FG_NVFP4, FG_Q1_0, FG_Q2_0,
                            FG_IQ2_XXS, FG_IQ2_XS, FG_IQ2_S, FG_IQ3_XXS, FG_IQ3_S, FG_IQ1_S, FG_IQ1_M};
  ggml_row grows[sizeof types / sizeof *types];
  int ngrows = 0;
  const double mb = (double)(n * 4) / 1e6;
  double memcpy_mbs[3] = {0};
  for (int th = 1; th <= 2; th++) memcpy_mbs[th] = fg_bench_memcpy_gbs(&b, n * 4, th) * 1e3;

  char fig[96];
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    uint64_t qb;
    fg_dtype_nbytes(types[k], n, &qb);
    q_ctx c = {types[k], x, y, q, (size_t)qb, nrows, wts};
    const char *nm = fg_dtype_name(types[k]);
    const bool enc = fg_quant_can_encode(types[k]);
    const bool wenc = weighted && fg_quant_can_encode_weighted(types[k]) && fg_quant_uses_weights(types[k]);
    if (have_gdir) run_ggml(ggml, rows_path, have_wts ? wts_path : NULL, gdir, &b, nm, gfig, &nggml, 256);
    uint8_t *gq = have_gdir ? read_exact(gdir, nm, "q", (size_t)qb) : NULL;
    float *gy = have_gdir ? read_exact(gdir, nm, "f32", n * 4) : NULL;
    uint8_t *gwq = have_gdir && wenc ? read_exact(gdir, nm, "wq", (size_t)qb) : NULL;
    if (!enc && !gq && !wenc) continue;
    ggml_row *row = &grows[ngrows++];
    memset(row, 0, sizeof *row);
    row->name = nm;
    row->bytes_eq = enc && gq ? 1 : -1;
    row->floats_eq = gy ? 1 : -1;
    row->wbytes_eq = wenc && gwq ? 1 : -1;
    for (int th = 1; th <= 2; th++) {
      fg_bench bt = b;
      bt.threads = th;
      omp_set_num_threads(th);
      double te = 0.0, td = 0.0, te_best = 0.0, td_best = 0.0;
      if (enc) time_both(&bt, run_encode, &c, &te, &te_best);
      if (enc && gq && memcmp(q, gq, (size_t)qb) != 0) row->bytes_eq = 0;
      if (wenc) { /* before the decode below, which reads q */
        double tw, tw_best;
        time_both(&bt, run_wencode, &c, &tw, &tw_best);
        if (gwq && memcmp(q, gwq, (size_t)qb) != 0) row->wbytes_eq = 0;
        snprintf(fig, sizeof fig, "%s_wencode_t%d", nm, th);
        fg_bench_report(&bt, fig, mb / tw, "MB/s", "memcpy", memcpy_mbs[th]);
        row->fg[2][th] = mb / tw_best;
        const double gw = nggml > 0 ? ggml_lookup(gfig, nggml, "wencode", nm, th) : 0.0;
        row->gg[2][th] = gw;
        if (gw > 0) {
          snprintf(fig, sizeof fig, "%s_wencode_t%d_best_vs_ggml", nm, th);
          fg_bench_report(&bt, fig, mb / tw_best, "MB/s", "ggml", gw);
        }
      }
      if (!gq && !enc) continue; /* a grid i-quant without ggml's bytes: nothing to decode */
      if (gq) memcpy(q, gq, (size_t)qb); /* decode what ggml decodes */
      time_both(&bt, run_decode, &c, &td, &td_best);
      if (gy && memcmp(y, gy, n * 4) != 0) row->floats_eq = 0;
      if (enc) {
        snprintf(fig, sizeof fig, "%s_encode_t%d", nm, th);
        fg_bench_report(&bt, fig, mb / te, "MB/s", "memcpy", memcpy_mbs[th]);
      }
      snprintf(fig, sizeof fig, "%s_decode_t%d", nm, th);
      fg_bench_report(&bt, fig, mb / td, "MB/s", "memcpy", memcpy_mbs[th]);
      if (th == 1 && npeer > 0) {
        const double pe = peer_lookup(peer, npeer, "encode", nm), pd = peer_lookup(peer, npeer, "decode", nm);
        if (pe > 0 && enc) {
          snprintf(fig, sizeof fig, "%s_encode_t1_vs_gguf_py", nm);
          fg_bench_report(&bt, fig, mb / te, "MB/s", "gguf-py", pe);
        }
        if (pd > 0) {
          snprintf(fig, sizeof fig, "%s_decode_t1_vs_gguf_py", nm);
          fg_bench_report(&bt, fig, mb / td, "MB/s", "gguf-py", pd);
        }
      }
      row->fg[0][th] = enc ? mb / te_best : 0.0;
      row->fg[1][th] = mb / td_best;
      if (nggml > 0) {
        const double ge = ggml_lookup(gfig, nggml, "encode", nm, th), gd = ggml_lookup(gfig, nggml, "decode", nm, th);
        row->gg[0][th] = ge;
        row->gg[1][th] = gd;
        if (ge > 0 && enc) {
          snprintf(fig, sizeof fig, "%s_encode_t%d_best_vs_ggml", nm, th);
          fg_bench_report(&bt, fig, mb / te_best, "MB/s", "ggml", ge);
        }
        if (gd > 0) {
          snprintf(fig, sizeof fig, "%s_decode_t%d_best_vs_ggml", nm, th);
          fg_bench_report(&bt, fig, mb / td_best, "MB/s", "ggml", gd);
        }
      }
    }
    free(gq);
    free(gy);
    free(gwq);
  }
  if (ggml && nggml == 0) fprintf(stderr, "quant: ggml peer %s gave no figures\n", ggml);
  if (nggml > 0) print_ggml_table(grows, ngrows, mb, b.reps);
  if (have_rows) remove(rows_path);
  if (have_wts) remove(wts_path);
  if (have_gdir) { /* remove what the peer wrote */
    char path[4096];
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
      snprintf(path, sizeof path, "%s/%s.q", gdir, fg_dtype_name(types[k]));
      remove(path);
      snprintf(path, sizeof path, "%s/%s.f32", gdir, fg_dtype_name(types[k]));
      remove(path);
      snprintf(path, sizeof path, "%s/%s.wq", gdir, fg_dtype_name(types[k]));
      remove(path);
    }
    rmdir(gdir);
  }
  free(x);
  free(y);
  free(q);
  free(wts);
  return 0;
}
