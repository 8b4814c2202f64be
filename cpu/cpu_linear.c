/* The linear layer on the CPU (forgia/linear.h, elem/linear.h).
 *
 * Exact: tiles of FG_LIN_OT outputs over OpenMP threads. A tile decodes its rows of W chunk
 * by chunk (FG_LIN_KC inputs, whole blocks) into a transposed panel [input][output], and the
 * micro-kernels step one accumulator per (token, output) lane across that panel in input
 * order, vectorised across outputs; the accumulators live in the thread's acc tile between
 * chunks. Every output is the scalar loop's, whatever the tiling, thread count or vector width.
 *
 * Fast: for fewer than FG_LIN_BLAS_MIN_TOK tokens (generation) one decoded row at a time
 * (L1-resident) dotted with each token, rows split over the threads; for more, tiles of
 * decoded rows handed to OpenBLAS's sgemm (single-threaded per call, cpu/openblas_lazy.h),
 * tiles split over the threads. */
#include <limits.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_linear_x86.h"
#include "cpu/openblas_lazy.h"
#include "device/backend.h"
#include "device/scratch.h"
#include "forgia/elem/linear.h"
#include "forgia/gemm.h"

#define FG_LIN_OT 32  /* outputs per exact tile */
#define FG_LIN_TT 256 /* tokens per exact tile: bounds the acc tile */
#define FG_LIN_KC 256 /* inputs per exact chunk, rounded to whole blocks */
/* From this many tokens the fast mode decodes tiles for sgemm; below, each decoded row serves
 * too few tokens for sgemm's packing to pay (measured on 576 x 1536 Q4_1 and Q8_0, one
 * thread: the row products 3-4x faster at 1-2 tokens, even at 8, sgemm 1.5x faster at 16). */
#define FG_LIN_BLAS_MIN_TOK 8
/* Bytes of decoded f32 rows per sgemm call: the tile stays in the core's L2 between its
 * decode and sgemm's reads of it. */
#define FG_LIN_BLAS_TILE_BYTES (192u * 1024u)
/* Tokens per call of a fused row product. */
#define FG_LIN_GEMV_GROUP 8
/* Below this many multiply-adds one thread is cheaper than waking the team. */
#define FG_LIN_PAR_MIN 65536.0

typedef float fg_lin_v4f __attribute__((vector_size(16)));
typedef float fg_lin_v8f __attribute__((vector_size(32)));

#define FG_LIN_SFX generic
#define FG_LIN_ATTR
#define FG_LIN_VT fg_lin_v4f
#define FG_LIN_MR 4
#define FG_LIN_NV 2
#include "cpu/cpu_linear_isa.h"
#undef FG_LIN_SFX
#undef FG_LIN_ATTR
#undef FG_LIN_VT
#undef FG_LIN_MR
#undef FG_LIN_NV

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FG_LIN_X86 1
/* target("avx2") widens the vectors only: -ffp-contract=off still forbids fusing the exact
 * kernels' multiplies into their adds (tests/cpu/test_linear.cpp compares both sets' bits). */
#define FG_LIN_SFX avx2
#define FG_LIN_ATTR __attribute__((target("avx2")))
#define FG_LIN_VT fg_lin_v8f
#define FG_LIN_MR 6
#define FG_LIN_NV 2
#define FG_LIN_DECODE_HOOK(t, p, nb, out) (fg_lin_x86_usable() && fg_lin_x86_decode(t, p, nb, out))
#include "cpu/cpu_linear_isa.h"
#undef FG_LIN_SFX
#undef FG_LIN_ATTR
#undef FG_LIN_VT
#undef FG_LIN_MR
#undef FG_LIN_NV
#undef FG_LIN_DECODE_HOOK
#endif

static void fg_lin_transpose8_generic(const float *src, size_t ld, size_t rows, size_t kc, float *dst,
                                      size_t ld_dst) {
  for (size_t p = 0; p < kc; p++)
    for (size_t i = 0; i < rows; i++) dst[p * ld_dst + i] = src[i * ld + p];
}

typedef struct fg_lin_isa {
  const char *name;
  bool (*decode)(fg_dtype t, const uint8_t *p, size_t nb, unsigned be, unsigned bb, float *out);
  void (*exact_chunk)(size_t nt, size_t kc, const float *panel, const float *x, size_t ldx, float *acc, int first);
  float (*dot)(const float *a, const float *b, size_t n);
  void (*transpose8)(const float *src, size_t ld, size_t rows, size_t kc, float *dst, size_t ld_dst);
  bool fused; /* the fast mode may use cpu/cpu_linear_x86.h's fused row products */
} fg_lin_isa;

static const fg_lin_isa fg_lin_isas[] = {
#ifdef FG_LIN_X86
  {"avx2", fg_lin_decode_avx2, fg_lin_exact_chunk_avx2, fg_lin_dot_avx2, fg_lin_x86_transpose8, true},
#endif
  {"generic", fg_lin_decode_generic, fg_lin_exact_chunk_generic, fg_lin_dot_generic, fg_lin_transpose8_generic, false},
};

static bool fg_lin_usable(const fg_lin_isa *k) {
#ifdef FG_LIN_X86
  __builtin_cpu_init();
  if (strcmp(k->name, "avx2") == 0) return __builtin_cpu_supports("avx2");
#endif
  (void)k;
  return true;
}

/* The widest set the CPU runs; FORGIA_CPU_LINEAR_KERNEL=avx2|generic picks a narrower one
 * (tests check that both give the same exact bits). */
static const fg_lin_isa *fg_lin_pick(void) {
  const char *want = getenv("FORGIA_CPU_LINEAR_KERNEL");
  const size_t n = sizeof fg_lin_isas / sizeof fg_lin_isas[0];
  for (size_t i = 0; i < n; i++) {
    if (want && *want && strcmp(want, fg_lin_isas[i].name) != 0) continue;
    if (fg_lin_usable(&fg_lin_isas[i])) return &fg_lin_isas[i];
  }
  return &fg_lin_isas[n - 1];
}

static size_t fg_lin_round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* Per-thread scratch: nth slices of per bytes, 64-byte aligned. */
static fg_status fg_lin_scratch(fg_stream *stream, int nth, size_t per, char **base) {
  void *p;
  fg_status st = fg_stream_scratch(stream, (size_t)nth * per + 64, &p);
  if (st) return st;
  *base = (char *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
  return FG_OK;
}

static int fg_lin_team(double work, size_t items) {
  int nth = work >= FG_LIN_PAR_MIN ? omp_get_max_threads() : 1;
  if ((size_t)nth > items) nth = (int)items;
  return nth < 1 ? 1 : nth;
}

static double fg_lin_work(const fg_linear_call *c) { return (double)c->n_tok * (double)c->n_in * (double)c->n_out; }

static void fg_lin_store(const fg_linear_call *c, size_t t, size_t o, float acc) {
  float *y = c->y + t * c->n_out + o;
  *y = fg_linear_out(acc, c->accumulate, c->accumulate ? *y : 0.0f);
}

/* n_in == 0: every sum is +0. */
static void fg_lin_empty(const fg_linear_call *c) {
  for (size_t t = 0; t < c->n_tok; t++)
    for (size_t o = 0; o < c->n_out; o++) fg_lin_store(c, t, o, 0.0f);
}

/* ---- the exact mode ------------------------------------------------------------------- */

/* Rows [o0, o0 + on) of W, inputs [k0, k0 + kc), into panel[p][r], eight rows at a time
 * through rows (8 x kc, row-major); columns past on are +0 (their lanes are computed and
 * never stored). */
static bool fg_lin_panel(const fg_linear_call *c, const fg_lin_isa *isa, size_t o0, size_t on, size_t k0, size_t kc,
                         float *rows, float *panel) {
  bool ok = true;
  const size_t be = c->block_elems, boff = k0 / be * c->block_bytes;
  for (size_t r0 = 0; r0 < on; r0 += 8) {
    const size_t rn = on - r0 < 8 ? on - r0 : 8;
    for (size_t r = 0; r < rn; r++)
      ok &= isa->decode(c->w_type, (const uint8_t *)c->w + (o0 + r0 + r) * c->row_bytes + boff, kc / be,
                        c->block_elems, c->block_bytes, rows + r * kc);
    isa->transpose8(rows, kc, rn, kc, panel + r0, FG_LIN_OT);
  }
  for (size_t p = 0; on < FG_LIN_OT && p < kc; p++)
    for (size_t r = on; r < FG_LIN_OT; r++) panel[p * FG_LIN_OT + r] = 0.0f;
  return ok;
}

static fg_status fg_lin_exact(const fg_linear_call *c, fg_stream *stream, const fg_lin_isa *isa) {
  const size_t be = c->block_elems;
  const size_t kcs = (FG_LIN_KC / be ? FG_LIN_KC / be : 1) * be;
  const size_t tt = c->n_tok < FG_LIN_TT ? c->n_tok : FG_LIN_TT;
  const size_t tiles = (c->n_out + FG_LIN_OT - 1) / FG_LIN_OT;
  const int nth = fg_lin_team(fg_lin_work(c), tiles);
  const size_t pb = fg_lin_round64(kcs * FG_LIN_OT * 4), ab = fg_lin_round64(tt * FG_LIN_OT * 4),
               rb = fg_lin_round64(8 * kcs * 4), per = pb + ab + rb;
  char *base;
  fg_status st = fg_lin_scratch(stream, nth, per, &base);
  if (st) return st;
  int ok = 1;
#pragma omp parallel num_threads(nth) reduction(& : ok)
  {
    char *mine = base + (size_t)omp_get_thread_num() * per;
    float *panel = (float *)mine, *acc = (float *)(mine + pb), *rows = (float *)(mine + pb + ab);
#pragma omp for schedule(dynamic, 1)
    for (size_t tile = 0; tile < tiles; tile++) {
      const size_t o0 = tile * FG_LIN_OT, on = c->n_out - o0 < FG_LIN_OT ? c->n_out - o0 : FG_LIN_OT;
      for (size_t t0 = 0; t0 < c->n_tok; t0 += tt) {
        const size_t nt = c->n_tok - t0 < tt ? c->n_tok - t0 : tt;
        for (size_t k0 = 0; k0 < c->n_in; k0 += kcs) {
          const size_t kc = c->n_in - k0 < kcs ? c->n_in - k0 : kcs;
          ok &= fg_lin_panel(c, isa, o0, on, k0, kc, rows, panel);
          isa->exact_chunk(nt, kc, panel, c->x + t0 * c->n_in + k0, c->n_in, acc, k0 == 0);
        }
        for (size_t t = 0; t < nt; t++)
          for (size_t r = 0; r < on; r++) fg_lin_store(c, t0 + t, o0 + r, acc[t * FG_LIN_OT + r]);
      }
    }
  }
  return ok ? FG_OK : fg_fail(FG_ERR_UNSUPPORTED, "cpu linear: no decoder for %s", fg_dtype_name(c->w_type));
}

/* ---- the fast mode -------------------------------------------------------------------- */

static fg_status fg_lin_gemv(const fg_linear_call *c, fg_stream *stream, const fg_lin_isa *isa) {
  const int nth = fg_lin_team(fg_lin_work(c), c->n_out);
  const size_t per = fg_lin_round64(c->n_in * 4);
  char *base;
  fg_status st = fg_lin_scratch(stream, nth, per, &base);
  if (st) return st;
  const size_t nb = c->n_in / c->block_elems;
  const bool fused = isa->fused && fg_lin_x86_usable();
  int ok = 1;
#pragma omp parallel num_threads(nth) reduction(& : ok)
  {
    float *row = (float *)(base + (size_t)omp_get_thread_num() * per);
#pragma omp for schedule(static)
    for (size_t o = 0; o < c->n_out; o++) {
      const uint8_t *wrow = (const uint8_t *)c->w + o * c->row_bytes;
      float dots[FG_LIN_GEMV_GROUP];
      size_t t0 = 0;
      for (; fused && t0 < c->n_tok; t0 += FG_LIN_GEMV_GROUP) {
        const size_t nt = c->n_tok - t0 < FG_LIN_GEMV_GROUP ? c->n_tok - t0 : FG_LIN_GEMV_GROUP;
        if (!fg_lin_x86_gemv(c->w_type, wrow, c->n_in, c->x + t0 * c->n_in, c->n_in, nt, dots)) break;
        for (size_t t = 0; t < nt; t++) {
          float *y = c->y + (t0 + t) * c->n_out + o;
          *y = c->accumulate ? *y + dots[t] : dots[t];
        }
      }
      if (t0 >= c->n_tok) continue;
      ok &= isa->decode(c->w_type, (const uint8_t *)c->w + o * c->row_bytes, nb, c->block_elems, c->block_bytes, row);
      for (size_t t = t0; t < c->n_tok; t++) {
        const float d = isa->dot(row, c->x + t * c->n_in, c->n_in);
        float *y = c->y + t * c->n_out + o;
        *y = c->accumulate ? *y + d : d;
      }
    }
  }
  return ok ? FG_OK : fg_fail(FG_ERR_UNSUPPORTED, "cpu linear: no decoder for %s", fg_dtype_name(c->w_type));
}

static fg_status fg_lin_blas(const fg_linear_call *c, fg_stream *stream, const fg_lin_isa *isa,
                             const fg_openblas_api *blas) {
  size_t rows = FG_LIN_BLAS_TILE_BYTES / (c->n_in * 4) / 16 * 16;
  if (rows < 16) rows = 16;
  const size_t tiles = (c->n_out + rows - 1) / rows;
  const int nth = fg_lin_team(fg_lin_work(c), tiles);
  /* f32 weights on a little-endian host are already sgemm's operand. */
  const bool direct = c->w_type == FG_F32 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  const size_t per = direct ? 64 : fg_lin_round64(rows * c->n_in * 4);
  char *base;
  fg_status st = fg_lin_scratch(stream, nth, per, &base);
  if (st) return st;
  const size_t nb = c->n_in / c->block_elems;
  int ok = 1;
#pragma omp parallel num_threads(nth) reduction(& : ok)
  {
    float *buf = (float *)(base + (size_t)omp_get_thread_num() * per);
#pragma omp for schedule(dynamic, 1)
    for (size_t tile = 0; tile < tiles; tile++) {
      const size_t o0 = tile * rows, on = c->n_out - o0 < rows ? c->n_out - o0 : rows;
      const float *wt = (const float *)c->w + o0 * c->n_in;
      if (!direct) {
        for (size_t r = 0; r < on; r++)
          ok &= isa->decode(c->w_type, (const uint8_t *)c->w + (o0 + r) * c->row_bytes, nb, c->block_elems,
                            c->block_bytes, buf + r * c->n_in);
        wt = buf;
      }
      blas->sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)c->n_tok, (blasint)on, (blasint)c->n_in, 1.0f,
                  c->x, (blasint)c->n_in, wt, (blasint)c->n_in, c->accumulate ? 1.0f : 0.0f, c->y + o0,
                  (blasint)c->n_out);
    }
  }
  return ok ? FG_OK : fg_fail(FG_ERR_UNSUPPORTED, "cpu linear: no decoder for %s", fg_dtype_name(c->w_type));
}

fg_status fg_cpu_linear(fg_device *dev, const fg_linear_call *c, fg_stream *stream) {
  (void)dev;
  if (c->n_in == 0) {
    fg_lin_empty(c);
    return FG_OK;
  }
  const fg_lin_isa *isa = fg_lin_pick();
  if (c->mode == FG_GEMM_EXACT) return fg_lin_exact(c, stream, isa);
  const bool fits = c->n_tok <= INT_MAX && c->n_in <= INT_MAX && c->n_out <= INT_MAX;
  if (fits && c->n_tok >= FG_LIN_BLAS_MIN_TOK) {
    /* Without OpenBLAS the row-at-a-time path still computes the fast mode. */
    const fg_openblas_api *blas = fg_openblas();
    if (blas) return fg_lin_blas(c, stream, isa, blas);
  }
  return fg_lin_gemv(c, stream, isa);
}
