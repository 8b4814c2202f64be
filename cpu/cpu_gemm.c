/* CPU GEMM. Fast: OpenBLAS's cblas_sgemm, loaded on first use (cpu/openblas_lazy.h; bf16
 * operands widened to f32 in the stream's scratch first).
 * Exact: output tiles over OpenMP threads; each tile is computed by one thread, and each of
 * its outputs by one accumulator that sees k in ascending order (elem/gemm_exact.h), so the
 * bits depend neither on the thread count nor on the schedule nor on the vector width. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/gemm_call.h"
#include "cpu/cpu_ops.h"
#include "cpu/openblas_lazy.h"
#include "device/scratch.h"
#include "forgia/elem/gemm_exact.h"

/* ---- the exact mode ---------------------------------------------------------------------
 * A tile of MT x NT outputs is computed in k blocks of KC. Per block, op(A) rows are packed
 * into panels of MR rows ([p][r], f32) and op(B) columns into panels of NR columns ([p][c]);
 * a micro-kernel runs one MR x NR block of accumulators over the KC steps of the block, with
 * the accumulators living in registers and in the thread's acc tile between blocks. The
 * micro-kernels apply FG_GEMM_EXACT_STEP_LANES to compiler vectors of NR/NV lanes: left to
 * itself, GCC vectorises the scalar loop well for AVX-512 only (1.5 GFLOP/s with AVX2). */
#define FG_GEMM_KC 256

typedef void (*fg_gemm_ukernel)(size_t kc, const float *ap, const float *bp, float *acc, size_t ldacc, int first);

typedef struct fg_gemm_kernel {
  const char *name;
  fg_gemm_ukernel fn;
  size_t mr, nr; /* micro-tile */
  size_t mt, nt; /* output tile, multiples of mr and nr */
} fg_gemm_kernel;

typedef float fg_v4f __attribute__((vector_size(16)));
typedef float fg_v8f __attribute__((vector_size(32)));
typedef float fg_v16f __attribute__((vector_size(64)));

/* MR x (NV vectors of VT) accumulators over kc steps; a scalar times a vector splats the
 * scalar (no arithmetic on it). Constant bounds: the loops unroll into registers. */
#define FG_GEMM_UKERNEL(NAME, ATTR, VT, MR, NV)                                                             \
  ATTR static void NAME(size_t kc, const float *restrict ap, const float *restrict bp, float *restrict acc, \
                        size_t ldacc, int first) {                                                         \
    enum { VW = sizeof(VT) / sizeof(float), NR = VW * NV };                                                \
    const VT zero = {0};                                                                                   \
    VT r[MR][NV];                                                                                          \
    for (int i = 0; i < MR; i++)                                                                           \
      for (int v = 0; v < NV; v++) {                                                                       \
        if (first) r[i][v] = zero;                                                                         \
        else memcpy(&r[i][v], acc + (size_t)i * ldacc + (size_t)v * VW, sizeof(VT));                      \
      }                                                                                                    \
    for (size_t p = 0; p < kc; p++) {                                                                      \
      VT b[NV];                                                                                            \
      for (int v = 0; v < NV; v++) memcpy(&b[v], bp + p * NR + (size_t)v * VW, sizeof(VT));               \
      const float *a = ap + p * MR;                                                                        \
      for (int i = 0; i < MR; i++)                                                                         \
        for (int v = 0; v < NV; v++) r[i][v] = FG_GEMM_EXACT_STEP_LANES(r[i][v], a[i], b[v]);              \
    }                                                                                                      \
    for (int i = 0; i < MR; i++)                                                                           \
      for (int v = 0; v < NV; v++) memcpy(acc + (size_t)i * ldacc + (size_t)v * VW, &r[i][v], sizeof(VT)); \
  }

FG_GEMM_UKERNEL(fg_gemm_ukernel_generic, , fg_v4f, 6, 2)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FG_GEMM_X86 1
/* target("avx2") and target("avx512f") widen the vectors only: -ffp-contract=off still
 * forbids fusing the multiply into the add (tests/cpu/test_gemm.cpp checks the bits of
 * every kernel). */
FG_GEMM_UKERNEL(fg_gemm_ukernel_avx2, __attribute__((target("avx2"))), fg_v8f, 6, 2)
FG_GEMM_UKERNEL(fg_gemm_ukernel_avx512, __attribute__((target("avx512f"))), fg_v16f, 8, 2)
#endif

static const fg_gemm_kernel fg_gemm_kernels[] = {
#ifdef FG_GEMM_X86
  {"avx512", fg_gemm_ukernel_avx512, 8, 32, 96, 256},
  {"avx2", fg_gemm_ukernel_avx2, 6, 16, 96, 256},
#endif
  {"generic", fg_gemm_ukernel_generic, 6, 8, 96, 128},
};

static bool fg_gemm_kernel_usable(const fg_gemm_kernel *k) {
#ifdef FG_GEMM_X86
  __builtin_cpu_init();
  if (strcmp(k->name, "avx512") == 0) return __builtin_cpu_supports("avx512f");
  if (strcmp(k->name, "avx2") == 0) return __builtin_cpu_supports("avx2");
#endif
  (void)k;
  return true;
}

/* The widest kernel the CPU runs; FORGIA_CPU_GEMM_KERNEL=avx512|avx2|generic picks a narrower
 * one (tests check that every kernel gives the same bits). */
static const fg_gemm_kernel *fg_gemm_pick(void) {
  const char *want = getenv("FORGIA_CPU_GEMM_KERNEL");
  size_t nk = sizeof fg_gemm_kernels / sizeof fg_gemm_kernels[0];
  for (size_t i = 0; i < nk; i++) {
    const fg_gemm_kernel *k = &fg_gemm_kernels[i];
    if (want && *want && strcmp(want, k->name) != 0) continue;
    if (fg_gemm_kernel_usable(k)) return k;
  }
  return &fg_gemm_kernels[nk - 1];
}

/* op(A) rows [i0, i0+mt) x k [k0, k0+kc) into ceil(mt/mr) panels of kc x mr; rows past m
 * are zero (their outputs are never stored). */
static void fg_gemm_pack_a(const struct fg_gemm_call *g, size_t i0, size_t mt, size_t k0, size_t kc, size_t mr,
                           float *dst) {
  const int bf = g->a_type == FG_BF16;
  for (size_t u = 0; u * mr < mt; u++) {
    float *d = dst + u * kc * mr;
    for (size_t r = 0; r < mr; r++) {
      size_t i = i0 + u * mr + r;
      if (u * mr + r >= mt) {
        for (size_t p = 0; p < kc; p++) d[p * mr + r] = 0.0f;
      } else if (g->trans_a) {
        for (size_t p = 0; p < kc; p++) d[p * mr + r] = fg_gemm_exact_load(g->a, bf, (k0 + p) * g->lda + i);
      } else {
        for (size_t p = 0; p < kc; p++) d[p * mr + r] = fg_gemm_exact_load(g->a, bf, i * g->lda + k0 + p);
      }
    }
  }
}

/* op(B) k [k0, k0+kc) x columns [j0, j0+nt) into ceil(nt/nr) panels of kc x nr. */
static void fg_gemm_pack_b(const struct fg_gemm_call *g, size_t j0, size_t nt, size_t k0, size_t kc, size_t nr,
                           float *dst) {
  const int bf = g->b_type == FG_BF16;
  for (size_t v = 0; v * nr < nt; v++) {
    float *d = dst + v * kc * nr;
    size_t w = nt - v * nr < nr ? nt - v * nr : nr, jb = j0 + v * nr;
    for (size_t p = 0; p < kc; p++) {
      float *row = d + p * nr;
      if (g->trans_b) {
        for (size_t c = 0; c < w; c++) row[c] = fg_gemm_exact_load(g->b, bf, (jb + c) * g->ldb + k0 + p);
      } else {
        for (size_t c = 0; c < w; c++) row[c] = fg_gemm_exact_load(g->b, bf, (k0 + p) * g->ldb + jb + c);
      }
      for (size_t c = w; c < nr; c++) row[c] = 0.0f;
    }
  }
}

static void fg_gemm_store(const struct fg_gemm_call *g, size_t i0, size_t mt, size_t j0, size_t nt, const float *acc,
                          size_t ldacc) {
  const float alpha = g->alpha, beta = g->beta;
  for (size_t r = 0; r < mt; r++) {
    float *c = g->c + (i0 + r) * g->ldc + j0;
    const float *t = acc + r * ldacc;
    if (beta != 0.0f) {
      for (size_t j = 0; j < nt; j++) c[j] = fg_gemm_exact_out(t[j], alpha, beta, c[j]);
    } else {
      for (size_t j = 0; j < nt; j++) c[j] = fg_gemm_exact_out(t[j], alpha, 0.0f, 0.0f);
    }
  }
}

static size_t fg_gemm_round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Small products: one fg_gemm_exact_dot per output (no packing). */
static void fg_gemm_exact_direct(const struct fg_gemm_call *g) {
  const int abf = g->a_type == FG_BF16, bbf = g->b_type == FG_BF16;
  const size_t es_a = abf ? 2 : 4, es_b = bbf ? 2 : 4;
  const size_t a_step = g->trans_a ? g->lda : 1, b_step = g->trans_b ? 1 : g->ldb;
  for (size_t i = 0; i < g->m; i++) {
    const char *ai = (const char *)g->a + (g->trans_a ? i : i * g->lda) * es_a;
    for (size_t j = 0; j < g->n; j++) {
      const char *bj = (const char *)g->b + (g->trans_b ? j * g->ldb : j) * es_b;
      float acc = fg_gemm_exact_dot(ai, abf, a_step, bj, bbf, b_step, g->k);
      float *c = g->c + i * g->ldc + j;
      *c = fg_gemm_exact_out(acc, g->alpha, g->beta, g->beta != 0.0f ? *c : 0.0f);
    }
  }
}

static fg_status fg_gemm_exact(const struct fg_gemm_call *g, fg_stream *stream) {
  if ((double)g->m * (double)g->n * (double)g->k <= 32768.0) {
    fg_gemm_exact_direct(g);
    return FG_OK;
  }
  const fg_gemm_kernel *kern = fg_gemm_pick();
  const size_t mr = kern->mr, nr = kern->nr, mt = kern->mt, nt = kern->nt;
  const size_t kcmax = g->k < FG_GEMM_KC ? g->k : FG_GEMM_KC;
  const size_t tiles_i = (g->m + mt - 1) / mt, tiles_j = (g->n + nt - 1) / nt;
  const size_t ntiles = tiles_i * tiles_j;
  int nth = omp_get_max_threads();
  if ((size_t)nth > ntiles) nth = (int)ntiles;
  if (nth < 1) nth = 1;
  const size_t a_bytes = fg_gemm_round64(mt * kcmax * 4), b_bytes = fg_gemm_round64(kcmax * nt * 4),
               acc_bytes = fg_gemm_round64(mt * nt * 4), per = a_bytes + b_bytes + acc_bytes;
  void *scratch;
  fg_status st = fg_stream_scratch(stream, (size_t)nth * per + 64, &scratch);
  if (st) return st;
  char *base = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
#pragma omp parallel num_threads(nth)
  {
    char *mine = base + (size_t)omp_get_thread_num() * per;
    float *apk = (float *)mine, *bpk = (float *)(mine + a_bytes), *acc = (float *)(mine + a_bytes + b_bytes);
#pragma omp for schedule(dynamic, 1)
    for (size_t t = 0; t < ntiles; t++) {
      const size_t i0 = (t / tiles_j) * mt, j0 = (t % tiles_j) * nt;
      const size_t tm = g->m - i0 < mt ? g->m - i0 : mt, tn = g->n - j0 < nt ? g->n - j0 : nt;
      const size_t mu = (tm + mr - 1) / mr, nu = (tn + nr - 1) / nr;
      for (size_t k0 = 0; k0 < g->k; k0 += FG_GEMM_KC) {
        const size_t kc = g->k - k0 < FG_GEMM_KC ? g->k - k0 : FG_GEMM_KC;
        fg_gemm_pack_a(g, i0, tm, k0, kc, mr, apk);
        fg_gemm_pack_b(g, j0, tn, k0, kc, nr, bpk);
        for (size_t v = 0; v < nu; v++)
          for (size_t u = 0; u < mu; u++)
            kern->fn(kc, apk + u * kc * mr, bpk + v * kc * nr, acc + u * mr * nt + v * nr, nt, k0 == 0);
      }
      fg_gemm_store(g, i0, tm, j0, tn, acc, nt);
    }
  }
  return FG_OK;
}

/* No product term: C = beta * C elementwise (elem/gemm_exact.h), in every mode. */
static void fg_gemm_scale(const struct fg_gemm_call *g) {
  const float beta = g->beta;
  const long m = (long)g->m;
#pragma omp parallel for schedule(static) if (g->m * g->n > (1u << 16))
  for (long i = 0; i < m; i++) {
    float *c = g->c + (size_t)i * g->ldc;
    for (size_t j = 0; j < g->n; j++) c[j] = fg_gemm_exact_scale(beta, beta != 0.0f ? c[j] : 0.0f);
  }
}

/* ---- the fast mode ---------------------------------------------------------------------- */

/* A bf16 operand widened to f32 with its leading dimension kept (the span between rows is
 * inside the caller's buffer, so converting it whole reads nothing out of bounds). */
static size_t fg_gemm_span(size_t rows, size_t cols, size_t ld) { return (rows - 1) * ld + cols; }

static fg_status fg_gemm_fast(const struct fg_gemm_call *g, fg_stream *stream) {
  const size_t a_rows = g->trans_a ? g->k : g->m, a_cols = g->trans_a ? g->m : g->k;
  const size_t b_rows = g->trans_b ? g->n : g->k, b_cols = g->trans_b ? g->k : g->n;
  const size_t a_span = fg_gemm_span(a_rows, a_cols, g->lda), b_span = fg_gemm_span(b_rows, b_cols, g->ldb);
  const size_t a_need = g->a_type == FG_BF16 ? fg_gemm_round64(a_span * 4) : 0;
  const size_t b_need = g->b_type == FG_BF16 ? fg_gemm_round64(b_span * 4) : 0;
  const float *a = g->a, *b = g->b;
  if (a_need + b_need) {
    if (a_need > SIZE_MAX / 2 - b_need)
      return fg_fail(FG_ERR_NOMEM, "cpu gemm: bf16 operands too large to widen (%zu + %zu elements)", a_span, b_span);
    void *p;
    fg_status st = fg_stream_scratch(stream, a_need + b_need, &p);
    if (st) return st;
    if (a_need) {
      fg_cpu_convert(p, FG_F32, g->a, FG_BF16, a_span);
      a = p;
    }
    if (b_need) {
      fg_cpu_convert((char *)p + a_need, FG_F32, g->b, FG_BF16, b_span);
      b = (const float *)((char *)p + a_need);
    }
  }
  const fg_openblas_api *blas = fg_openblas();
  if (!blas) return fg_fail_prefix(FG_ERR_UNSUPPORTED, "cpu gemm: ");
  /* OpenBLAS runs single-threaded (cpu/openblas_lazy.h) and the rows of C are cut over the
   * OpenMP team, so one thread pool serves both the elementwise ops and the GEMMs: with two
   * pools, libgomp's spinning workers took the cores from OpenBLAS's (a Muon step at 2.6x
   * its GEMM time, 1.1x with one pool). Below a few MFLOP one call is cheaper. */
  const double flops = (double)g->m * (double)g->n * (double)g->k;
  const int team = flops >= 2097152.0 && g->m >= 64 ? omp_get_max_threads() : 1;
  const size_t parts = team > 1 ? (size_t)team : 1, step = (g->m + parts - 1) / parts;
#pragma omp parallel for schedule(static) num_threads(team) if (team > 1)
  for (long p = 0; p < (long)parts; p++) {
    const size_t i0 = (size_t)p * step, rows = i0 < g->m ? (g->m - i0 < step ? g->m - i0 : step) : 0;
    if (!rows) continue;
    /* Rows i0.. of op(A): rows of A, or columns of A when it is transposed. */
    const float *ap = g->trans_a ? a + i0 : a + i0 * g->lda;
    blas->sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans, g->trans_b ? CblasTrans : CblasNoTrans,
                (blasint)rows, (blasint)g->n, (blasint)g->k, g->alpha, ap, (blasint)g->lda, b, (blasint)g->ldb,
                g->beta, g->c + i0 * g->ldc, (blasint)g->ldc);
  }
  return FG_OK;
}

fg_status fg_cpu_gemm(fg_device *dev, const struct fg_gemm_call *g, fg_stream *stream) {
  (void)dev;
  if (g->k == 0) {
    fg_gemm_scale(g);
    return FG_OK;
  }
  return g->mode == FG_GEMM_EXACT ? fg_gemm_exact(g, stream) : fg_gemm_fast(g, stream);
}
