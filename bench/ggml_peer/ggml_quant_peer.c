/* ggml's side of bench_quant --ggml: times ggml's own quantizers and dequantizers on the rows
 * bench_quant hands it, with 1 and 2 threads, and writes what they produced so that
 * bench_quant can compare forgia's bytes and floats with them (memcmp).
 *
 *   ggml_quant_peer ROWS.f32 ROW_LEN REPS WARMUP OUTDIR [TYPE [WEIGHTS.f32]]
 *
 * ROWS.f32 holds whole rows of ROW_LEN little-endian f32. For every type (or only TYPE, a ggml
 * type name: bench_quant asks for one type at a time, so that ggml's and forgia's timings of a
 * type are taken seconds apart on a machine whose load changes) it prints
 *   encode TYPE THREADS MEDIAN BEST   (MB of f32 input per second: median and best of REPS runs)
 *   decode TYPE THREADS MEDIAN BEST   (MB of f32 output per second)
 * and writes OUTDIR/TYPE.q (ggml's bytes for the rows) and OUTDIR/TYPE.f32 (ggml's to_float of
 * those bytes). Encode is ggml_quantize_chunk, without an importance matrix, the path
 * llama-quantize takes; q8_1 and q8_K, which it does not take, use their _ref quantizers. The
 * grid i-quants (which forgia only decodes) are encoded once with a flat importance matrix of
 * ones, some of them need one, so that their decode runs on bytes a quantizer wrote, and their
 * encode is not timed. Decode is ggml_get_type_traits(t)->to_float (q8_K, which has no trait,
 * dequantize_row_q8_K). With 2 threads the rows are split in two contiguous halves.
 * With WEIGHTS.f32 (ROW_LEN positive f32, the per-column importance of every row), each type
 * whose quantizer takes an importance matrix (q4_0..q5_1, the k-quants, iq4_nl/xs and the grid
 * i-quants) is also encoded with it as ggml_quantize_chunk's imatrix:
 *   wencode TYPE THREADS MEDIAN BEST
 * and OUTDIR/TYPE.wq holds those bytes (one single-threaded pass).
 *
 * Built against ggml's ggml.c, ggml-quants.c and ggml-threading.cpp only (build_ggml.sh): the
 * three backend entry points that ggml.c references are defined below and abort if reached. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml.h"

/* exported by ggml-quants.c; declared here to keep its internal block structs out */
void quantize_row_q8_1_ref(const float *x, void *y, int64_t k);
void quantize_row_q8_K_ref(const float *x, void *y, int64_t k);
void dequantize_row_q8_K(const void *x, float *y, int64_t k);

/* ggml.c's tensor-data paths call into the backend library, which is not linked: the peer
 * never creates a tensor, so none of these runs. */
struct ggml_backend_buffer;
void ggml_backend_tensor_set(struct ggml_tensor *t, const void *data, size_t offset, size_t size);
void ggml_backend_tensor_memset(struct ggml_tensor *t, uint8_t value, size_t offset, size_t size);
int ggml_backend_buffer_get_usage(struct ggml_backend_buffer *b);
void ggml_backend_tensor_set(struct ggml_tensor *t, const void *data, size_t offset, size_t size) {
  (void)t, (void)data, (void)offset, (void)size;
  abort();
}
void ggml_backend_tensor_memset(struct ggml_tensor *t, uint8_t value, size_t offset, size_t size) {
  (void)t, (void)value, (void)offset, (void)size;
  abort();
}
int ggml_backend_buffer_get_usage(struct ggml_backend_buffer *b) {
  (void)b;
  abort();
}

typedef struct {
  enum ggml_type t;
  const float *x;
  uint8_t *q;
  float *y;
  const float *imatrix;
  int64_t nrows, n;
  size_t row_bytes;
} peer_ctx;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* rows [r0, r1) */
static void encode_rows(const peer_ctx *c, int64_t r0, int64_t r1) {
  if (c->t == GGML_TYPE_Q8_1 || c->t == GGML_TYPE_Q8_K) {
    for (int64_t r = r0; r < r1; r++) {
      if (c->t == GGML_TYPE_Q8_1)
        quantize_row_q8_1_ref(c->x + r * c->n, c->q + r * c->row_bytes, c->n);
      else
        quantize_row_q8_K_ref(c->x + r * c->n, c->q + r * c->row_bytes, c->n);
    }
    return;
  }
  ggml_quantize_chunk(c->t, c->x, c->q, r0 * c->n, r1 - r0, c->n, c->imatrix);
}

static void decode_rows(const peer_ctx *c, int64_t r0, int64_t r1) {
  const uint8_t *q = c->q + r0 * c->row_bytes;
  float *y = c->y + r0 * c->n;
  if (c->t == GGML_TYPE_Q8_K)
    dequantize_row_q8_K(q, y, (r1 - r0) * c->n);
  else
    ggml_get_type_traits(c->t)->to_float(q, y, (r1 - r0) * c->n);
}

static void run(const peer_ctx *c, int threads, int encode) {
  if (threads == 1) {
    if (encode) encode_rows(c, 0, c->nrows);
    else decode_rows(c, 0, c->nrows);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t k = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t r0 = c->nrows * k / nt, r1 = c->nrows * (k + 1) / nt;
    if (encode) encode_rows(c, r0, r1);
    else decode_rows(c, r0, r1);
  }
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* median and shortest seconds of reps runs after warmup untimed ones */
static void time_run(const peer_ctx *c, int threads, int encode, int reps, int warmup, double *med, double *best) {
  double *t = malloc(sizeof(double) * (size_t)reps);
  if (!t) exit(1);
  for (int i = 0; i < warmup; i++) run(c, threads, encode);
  for (int i = 0; i < reps; i++) {
    const double t0 = now_s();
    run(c, threads, encode);
    t[i] = now_s() - t0;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  *med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
  *best = t[0];
  free(t);
}

static void report(const char *op, const char *name, int th, double mb, const peer_ctx *c, int reps, int warmup) {
  double med, best;
  time_run(c, th, op[0] != 'd', reps, warmup, &med, &best); /* encode, wencode */
  printf("%s %s %d %.3f %.3f\n", op, name, th, mb / med, mb / best);
}

static int write_file(const char *dir, const char *name, const char *ext, const void *p, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "ggml_quant_peer: cannot write %s\n", path);
    return 0;
  }
  const int ok = fwrite(p, 1, bytes, f) == bytes;
  return fclose(f) == 0 && ok;
}

int main(int argc, char **argv) {
  if (argc < 6 || argc > 8) {
    fprintf(stderr, "usage: %s ROWS.f32 ROW_LEN REPS WARMUP OUTDIR [TYPE [WEIGHTS.f32]]\n", argv[0]);
    return 2;
  }
  const int64_t n = atoll(argv[2]);
  const int reps = atoi(argv[3]), warmup = atoi(argv[4]);
  const char *outdir = argv[5], *only = argc >= 7 ? argv[6] : NULL, *wpath = argc == 8 ? argv[7] : NULL;
  FILE *f = fopen(argv[1], "rb");
  if (!f || n <= 0 || n % 256 != 0 || reps < 1 || warmup < 0) {
    fprintf(stderr, "ggml_quant_peer: bad arguments (rows file %s, row length %s)\n", argv[1], argv[2]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  const long fbytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  const int64_t nrows = fbytes / (long)(4 * n);
  if (nrows < 1 || fbytes != nrows * 4 * n) {
    fprintf(stderr, "ggml_quant_peer: %s is %ld bytes, not whole rows of %lld f32\n", argv[1], fbytes, (long long)n);
    return 2;
  }
  const size_t total = (size_t)(nrows * n);
  float *x = malloc(total * 4), *y = malloc(total * 4), *ones = malloc((size_t)n * 4);
  uint8_t *q = malloc(total * 4);
  if (!x || !y || !q || !ones || fread(x, 4, total, f) != total) return 1;
  fclose(f);
  for (int64_t i = 0; i < n; i++) ones[i] = 1.0f;
  float *wts = NULL;
  if (wpath) {
    FILE *wf = fopen(wpath, "rb");
    wts = malloc((size_t)n * 4);
    if (!wf || !wts || fread(wts, 4, (size_t)n, wf) != (size_t)n) {
      fprintf(stderr, "ggml_quant_peer: cannot read %lld weights from %s\n", (long long)n, wpath);
      return 2;
    }
    fclose(wf);
  }

  const enum ggml_type types[] = {
    GGML_TYPE_F16,     GGML_TYPE_BF16,   GGML_TYPE_Q8_0,    GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,  GGML_TYPE_Q5_0,
    GGML_TYPE_Q5_1,    GGML_TYPE_Q8_1,   GGML_TYPE_Q2_K,    GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,  GGML_TYPE_Q5_K,
    GGML_TYPE_Q6_K,    GGML_TYPE_Q8_K,   GGML_TYPE_TQ1_0,   GGML_TYPE_TQ2_0,  GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS,
    GGML_TYPE_MXFP4,   GGML_TYPE_NVFP4,  GGML_TYPE_Q1_0,    GGML_TYPE_Q2_0,   GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS,
    GGML_TYPE_IQ2_S,   GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S,  GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M,
  };
  const double mb = (double)total * 4 / 1e6;
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    const enum ggml_type t = types[k];
    const int grid = t == GGML_TYPE_IQ2_XXS || t == GGML_TYPE_IQ2_XS || t == GGML_TYPE_IQ2_S ||
                     t == GGML_TYPE_IQ3_XXS || t == GGML_TYPE_IQ3_S || t == GGML_TYPE_IQ1_S || t == GGML_TYPE_IQ1_M;
    peer_ctx c = {t, x, q, y, grid ? ones : NULL, nrows, n, ggml_row_size(t, n)};
    const char *name = ggml_type_name(t);
    if (only && strcmp(only, name) != 0) continue;
    if (grid) {
      run(&c, 1, 1);
    } else {
      for (int th = 1; th <= 2; th++) report("encode", name, th, mb, &c, reps, warmup);
      run(&c, 1, 1); /* the bytes written below are those of one single-threaded pass */
    }
    if (!write_file(outdir, name, "q", q, c.row_bytes * (size_t)nrows)) return 1;
    /* the types whose quantize_<type> reads quant_weights */
    const int weighted = grid || t == GGML_TYPE_Q4_0 || t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_0 ||
                         t == GGML_TYPE_Q5_1 || t == GGML_TYPE_Q2_K || t == GGML_TYPE_Q3_K || t == GGML_TYPE_Q4_K ||
                         t == GGML_TYPE_Q5_K || t == GGML_TYPE_Q6_K || t == GGML_TYPE_IQ4_NL || t == GGML_TYPE_IQ4_XS;
    if (wts && weighted) {
      peer_ctx cw = c;
      cw.imatrix = wts;
      for (int th = 1; th <= 2; th++) report("wencode", name, th, mb, &cw, reps, warmup);
      run(&cw, 1, 1);
      if (!write_file(outdir, name, "wq", q, c.row_bytes * (size_t)nrows)) return 1;
      run(&c, 1, 1); /* the unweighted bytes again, for the decode below */
    }
    if (t == GGML_TYPE_Q8_1) continue; /* ggml has no q8_1 dequantizer */
    for (int th = 1; th <= 2; th++) report("decode", name, th, mb, &c, reps, warmup);
    run(&c, 1, 0);
    if (!write_file(outdir, name, "f32", y, total * 4)) return 1;
    fflush(stdout);
  }
  free(x);
  free(y);
  free(q);
  free(ones);
  free(wts);
  return 0;
}
