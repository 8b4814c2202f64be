/* The linear layer's input gradient on the CPU (forgia/linear.h: fg_linear_backward_x;
 * elem/linear.h's fg_linear_bwd_call).
 *
 * Exact: work items are (column chunk, token tile) pairs over OpenMP threads. A chunk is a
 * run of whole blocks of W's columns; an item walks the rows of W in chunks of kc, decodes
 * the rows' slices of each column tile straight into a panel [row][column] (no transpose:
 * W's rows are already the layout the sum steps through), and cpu/cpu_linear_isa.h's
 * micro-kernels step one accumulator per (token, column) lane across the panel in row order,
 * vectorised across columns. The accumulators live in the thread's acc tile between row
 * chunks; each (t, i) belongs to one item, so the bits are the scalar loop's whatever the
 * tiling, the thread count or the vector width.
 *
 * Fast: for fewer than FG_LB_BLAS_MIN_TOK tokens, or without OpenBLAS, the exact path (it is
 * within rounding of itself). Otherwise each item hands tiles of decoded rows (its column
 * chunk only) to OpenBLAS's sgemm, single-threaded per call (cpu/openblas_lazy.h), row tiles
 * in order so that the item's slice of dx accumulates the tiles' products. */
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

/* cpu/cpu_linear_isa.h's one-token micro-kernel is FG_LIN_OT columns wide: column tiles are
 * whole multiples of it. */
#define FG_LIN_OT 32
#define FG_LB_TT 120                 /* tokens per exact item: a multiple of both sets' FG_LIN_MR */
#define FG_LB_IT_MAX 512             /* columns per panel at most */
#define FG_LB_PANEL_FLOATS 32768     /* 128 KiB of panel: kc = this / the panel's width */
#define FG_LB_BLAS_MIN_TOK 8         /* as the forward's: below it sgemm's packing does not pay */
#define FG_LB_BLAS_TILE_BYTES (192u * 1024u)
#define FG_LB_PAR_MIN 65536.0 /* multiply-adds below which one thread is cheaper than a team */

typedef float fg_lin_v4f __attribute__((vector_size(16)));
typedef float fg_lin_v8f __attribute__((vector_size(32)));

/* This file uses the ISA header's decoder and micro-kernels, not its chunk driver or its dot
 * product: `unused` keeps those two from warning. */
#define FG_LIN_SFX generic
#define FG_LIN_ATTR __attribute__((unused))
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
#define FG_LB_X86 1
/* As in cpu/cpu_linear.c: target("avx2") widens the vectors; -ffp-contract=off still keeps
 * every multiply apart from its add. Five tokens, not the forward's six: GCC keeps 5 x 2
 * accumulators, the broadcasts and the panel's vectors in the 16 registers, where at six it
 * spilled three accumulators through the stack every step (1.4x the rate on SmolLM2's
 * vocabulary projection, Zen 3). */
#define FG_LIN_SFX avx2
#define FG_LIN_ATTR __attribute__((target("avx2"), unused))
#define FG_LIN_VT fg_lin_v8f
#define FG_LIN_MR 5
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

typedef void (*fg_lb_uk)(size_t kc, const float *w, size_t ldw, const float *x, size_t ldx, float *acc, size_t ldacc,
                         int first);

typedef struct fg_lb_isa {
  bool (*decode)(fg_dtype t, const uint8_t *p, size_t nb, unsigned be, unsigned bb, float *out);
  fg_lb_uk many, one; /* mr tokens x group columns; one token x FG_LIN_OT columns */
  size_t mr, group;
} fg_lb_isa;

/* The widest set the CPU runs, or the one FORGIA_CPU_LINEAR_KERNEL=avx2|generic names (the
 * forward's switch: tests compare both sets' exact bits). */
static fg_lb_isa fg_lb_pick(void) {
  const fg_lb_isa generic = {fg_lin_decode_generic, fg_lin_uk_many_generic, fg_lin_uk_one_generic, 4, 8};
#ifdef FG_LB_X86
  const char *want = getenv("FORGIA_CPU_LINEAR_KERNEL");
  __builtin_cpu_init();
  if ((!want || !*want || strcmp(want, "avx2") == 0) && __builtin_cpu_supports("avx2"))
    return (fg_lb_isa){fg_lin_decode_avx2, fg_lin_uk_many_avx2, fg_lin_uk_one_avx2, 5, 16};
#endif
  return generic;
}

static size_t fg_lb_round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }
static size_t fg_lb_min(size_t a, size_t b) { return a < b ? a : b; }
static size_t fg_lb_ceil(size_t a, size_t b) { return (a + b - 1) / b; }

/* Per-thread scratch: nth slices of per bytes, 64-byte aligned. */
static fg_status fg_lb_scratch(fg_stream *stream, int nth, size_t per, char **base) {
  void *p;
  fg_status st = fg_stream_scratch(stream, (size_t)nth * per + 64, &p);
  if (st) return st;
  *base = (char *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
  return FG_OK;
}

static int fg_lb_team(const fg_linear_bwd_call *c, size_t items) {
  const double work = (double)c->n_tok * (double)c->n_in * (double)c->n_out;
  int nth = work >= FG_LB_PAR_MIN ? omp_get_max_threads() : 1;
  if ((size_t)nth > items) nth = (int)items;
  return nth < 1 ? 1 : nth;
}

/* The columns' partition: chunks of whole units (a multiple of both the block and
 * FG_LIN_OT), chunk k covering [fg_lb_edge(k), fg_lb_edge(k + 1)). */
typedef struct fg_lb_cols {
  size_t unit, units, chunks;
} fg_lb_cols;

static fg_lb_cols fg_lb_cols_for(const fg_linear_bwd_call *c, size_t want_chunks) {
  fg_lb_cols p;
  p.unit = c->block_elems;
  while (p.unit % FG_LIN_OT) p.unit += c->block_elems;
  p.units = fg_lb_ceil(c->n_in, p.unit);
  p.chunks = want_chunks < 1 ? 1 : fg_lb_min(want_chunks, p.units);
  return p;
}

static size_t fg_lb_edge(const fg_linear_bwd_call *c, const fg_lb_cols *p, size_t k) {
  return fg_lb_min(c->n_in, k * p->units / p->chunks * p->unit);
}

static void fg_lb_store(const fg_linear_bwd_call *c, size_t t, size_t i, float acc) {
  float *dx = c->dx + t * c->n_in + i;
  *dx = fg_linear_out(acc, c->accumulate, c->accumulate ? *dx : 0.0f);
}

/* n_out == 0: every sum is +0. */
static void fg_lb_empty(const fg_linear_bwd_call *c) {
  for (size_t t = 0; t < c->n_tok; t++)
    for (size_t i = 0; i < c->n_in; i++) fg_lb_store(c, t, i, 0.0f);
}

/* Rows [o0, o0 + k) of W, columns [j0, j0 + w) (whole blocks), into panel[p][col], ldp
 * floats a row; columns w .. ldp are +0 (their lanes are computed and never stored). */
static bool fg_lb_panel(const fg_linear_bwd_call *c, const fg_lb_isa *isa, size_t o0, size_t k, size_t j0, size_t w,
                        float *panel, size_t ldp) {
  bool ok = true;
  const size_t boff = j0 / c->block_elems * c->block_bytes, nb = w / c->block_elems;
  for (size_t p = 0; p < k; p++) {
    float *row = panel + p * ldp;
    ok &= isa->decode(c->w_type, (const uint8_t *)c->w + (o0 + p) * c->row_bytes + boff, nb, c->block_elems,
                      c->block_bytes, row);
    for (size_t q = w; q < ldp; q++) row[q] = 0.0f;
  }
  return ok;
}

/* ---- the exact mode ------------------------------------------------------------------- */

static fg_status fg_lb_exact(const fg_linear_bwd_call *c, fg_stream *stream, const fg_lb_isa *isa) {
  const size_t tiles = fg_lb_ceil(c->n_tok, FG_LB_TT);
  const int nth = fg_lb_team(c, fg_lb_ceil(c->n_in, FG_LIN_OT) * tiles);
  const fg_lb_cols cols = fg_lb_cols_for(c, (size_t)nth);
  const size_t items = cols.chunks * tiles;
  /* The widest chunk, and the panel's width and rows. */
  const size_t cw_max = fg_lb_ceil(cols.units, cols.chunks) * cols.unit;
  const size_t it = cw_max < FG_LB_IT_MAX ? cw_max : (FG_LB_IT_MAX / cols.unit ? FG_LB_IT_MAX / cols.unit : 1) * cols.unit;
  const size_t kc = FG_LB_PANEL_FLOATS / it > 16 ? FG_LB_PANEL_FLOATS / it : 16;
  const size_t tt = c->n_tok < FG_LB_TT ? c->n_tok : FG_LB_TT;
  const size_t pb = fg_lb_round64(kc * it * 4), per = pb + fg_lb_round64(tt * cw_max * 4);
  char *base;
  fg_status st = fg_lb_scratch(stream, nth, per, &base);
  if (st) return st;
  int ok = 1;
#pragma omp parallel num_threads(nth) reduction(& : ok)
  {
    char *mine = base + (size_t)omp_get_thread_num() * per;
    float *panel = (float *)mine, *acc = (float *)(mine + pb);
#pragma omp for schedule(dynamic, 1)
    for (size_t item = 0; item < items; item++) {
      const size_t c0 = fg_lb_edge(c, &cols, item % cols.chunks), c1 = fg_lb_edge(c, &cols, item % cols.chunks + 1);
      const size_t t0 = item / cols.chunks * FG_LB_TT, nt = fg_lb_min(FG_LB_TT, c->n_tok - t0);
      const size_t lda = fg_lb_ceil(c1 - c0, FG_LIN_OT) * FG_LIN_OT;
      const float *dy = c->dy + t0 * c->n_out;
      for (size_t o0 = 0; o0 < c->n_out; o0 += kc) {
        const size_t k = fg_lb_min(kc, c->n_out - o0);
        for (size_t j0 = c0; j0 < c1; j0 += it) {
          const size_t w = fg_lb_min(it, c1 - j0), ldp = fg_lb_ceil(w, FG_LIN_OT) * FG_LIN_OT;
          ok &= fg_lb_panel(c, isa, o0, k, j0, w, panel, ldp);
          float *a = acc + (j0 - c0);
          size_t t = 0;
          for (; t + isa->mr <= nt; t += isa->mr)
            for (size_t g = 0; g < ldp; g += isa->group)
              isa->many(k, panel + g, ldp, dy + t * c->n_out + o0, c->n_out, a + t * lda + g, lda, o0 == 0);
          for (; t < nt; t++)
            for (size_t g = 0; g < ldp; g += FG_LIN_OT)
              isa->one(k, panel + g, ldp, dy + t * c->n_out + o0, c->n_out, a + t * lda + g, lda, o0 == 0);
        }
      }
      for (size_t t = 0; t < nt; t++)
        for (size_t i = c0; i < c1; i++) fg_lb_store(c, t0 + t, i, acc[t * lda + (i - c0)]);
    }
  }
  return ok ? FG_OK : fg_fail(FG_ERR_UNSUPPORTED, "cpu linear_bwd: no decoder for %s", fg_dtype_name(c->w_type));
}

/* ---- the fast mode -------------------------------------------------------------------- */

static fg_status fg_lb_blas(const fg_linear_bwd_call *c, fg_stream *stream, const fg_lb_isa *isa,
                            const fg_openblas_api *blas) {
  const int nth0 = fg_lb_team(c, (size_t)omp_get_max_threads());
  const fg_lb_cols cols = fg_lb_cols_for(c, (size_t)nth0);
  /* Threads the column chunks leave idle take token tiles. */
  const size_t ttiles = fg_lb_min(c->n_tok, fg_lb_ceil((size_t)nth0, cols.chunks)), items = cols.chunks * ttiles;
  const size_t tt = fg_lb_ceil(c->n_tok, ttiles);
  const int nth = (size_t)nth0 < items ? nth0 : (int)items;
  const size_t cw_max = fg_lb_ceil(cols.units, cols.chunks) * cols.unit;
  size_t rows = FG_LB_BLAS_TILE_BYTES / (cw_max * 4);
  if (rows < 16) rows = 16;
  /* f32 weights on a little-endian host are already sgemm's operand. */
  const bool direct = c->w_type == FG_F32 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  if (direct) rows = c->n_out;
  const size_t per = direct ? 64 : fg_lb_round64(rows * cw_max * 4);
  char *base;
  fg_status st = fg_lb_scratch(stream, nth, per, &base);
  if (st) return st;
  int ok = 1;
#pragma omp parallel num_threads(nth) reduction(& : ok)
  {
    float *buf = (float *)(base + (size_t)omp_get_thread_num() * per);
#pragma omp for schedule(dynamic, 1)
    for (size_t item = 0; item < items; item++) {
      const size_t c0 = fg_lb_edge(c, &cols, item % cols.chunks), c1 = fg_lb_edge(c, &cols, item % cols.chunks + 1);
      const size_t t0 = item / cols.chunks * tt;
      if (t0 >= c->n_tok || c0 >= c1) continue;
      const size_t nt = fg_lb_min(tt, c->n_tok - t0), cw = c1 - c0;
      for (size_t o0 = 0; o0 < c->n_out; o0 += rows) {
        const size_t on = fg_lb_min(rows, c->n_out - o0);
        const float *b = buf;
        size_t ldb = cw;
        if (direct)
          b = (const float *)c->w + o0 * c->n_in + c0, ldb = c->n_in;
        else
          ok &= fg_lb_panel(c, isa, o0, on, c0, cw, buf, cw);
        const float beta = o0 > 0 || c->accumulate ? 1.0f : 0.0f;
        blas->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)nt, (blasint)cw, (blasint)on, 1.0f,
                    c->dy + t0 * c->n_out + o0, (blasint)c->n_out, b, (blasint)ldb, beta, c->dx + t0 * c->n_in + c0,
                    (blasint)c->n_in);
      }
    }
  }
  return ok ? FG_OK : fg_fail(FG_ERR_UNSUPPORTED, "cpu linear_bwd: no decoder for %s", fg_dtype_name(c->w_type));
}

fg_status fg_cpu_linear_bwd(fg_device *dev, const fg_linear_bwd_call *c, fg_stream *stream) {
  (void)dev;
  if (c->n_out == 0) {
    fg_lb_empty(c);
    return FG_OK;
  }
  const fg_lb_isa isa = fg_lb_pick();
  const bool fits = c->n_tok <= INT_MAX && c->n_in <= INT_MAX && c->n_out <= INT_MAX;
  if (c->mode != FG_GEMM_EXACT && fits && c->n_tok >= FG_LB_BLAS_MIN_TOK) {
    const fg_openblas_api *blas = fg_openblas();
    if (blas) return fg_lb_blas(c, stream, &isa, blas);
  }
  return fg_lb_exact(c, stream, &isa);
}
