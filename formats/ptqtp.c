/* PTQTP matrices (forgia/ptqtp.h): rows fanned out over OpenMP threads, each group solved
 * (formats/ptqtp_solve.c), its scales rounded to f16, its trits searched once more against
 * them and packed as TQ2_0 blocks. Statistics are summed per row in element order and then
 * over rows in row order, as Fucina does, so they too are the same for any thread count. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "formats/ptqtp_internal.h"
#include "forgia/elem/half.h"
#include "forgia/elem/quant_ternary.h"

fg_ptqtp_options fg_ptqtp_options_default(void) {
  fg_ptqtp_options o = {2, false, 50, 1e-4f, 1e-8f, 1.0f, 1e6f, 0};
  return o;
}

fg_status fg_ptqtp_options_check(const fg_ptqtp_options *o) {
  if (!o) return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: NULL options");
  if (o->planes < 1 || o->planes > 3)
    return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: planes = %d (expected 1, 2 or 3)", o->planes);
  if (o->tie_scales && o->planes < 2)
    return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: tie_scales locks the plane scales to ratio 3, so it needs "
                   "planes >= 2 (got %d)", o->planes);
  if (o->max_iterations < 1)
    return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: max_iterations = %d (expected >= 1)", o->max_iterations);
  if (!(o->epsilon >= 0)) return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: epsilon = %g (expected >= 0)", (double)o->epsilon);
  if (!(o->lambda0 > 0)) return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: lambda0 = %g (expected > 0)", (double)o->lambda0);
  if (!(o->lambda_max >= o->lambda0))
    return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: lambda_max = %g (expected >= lambda0 = %g)", (double)o->lambda_max,
                   (double)o->lambda0);
  if (!(o->kappa_max >= 1))
    return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: kappa_max = %g (expected >= 1)", (double)o->kappa_max);
  if (o->threads < 0) return fg_fail(FG_ERR_INVALID_ARG, "ptqtp: threads = %d (expected >= 0)", o->threads);
  return FG_OK;
}

fg_status fg_ptqtp_plane_bytes(uint64_t rows, uint64_t cols, uint64_t *bytes) {
  if (rows == 0 || cols == 0)
    return fg_fail(FG_ERR_BAD_SHAPE, "ptqtp: a %llu x %llu matrix (expected both dims > 0)",
                   (unsigned long long)rows, (unsigned long long)cols);
  if (cols % FG_PTQTP_GROUP != 0)
    return fg_fail(FG_ERR_BAD_ROW, "ptqtp: rows of %llu elements (expected a multiple of %d, the TQ2_0 block)",
                   (unsigned long long)cols, FG_PTQTP_GROUP);
  const uint64_t blocks_per_row = cols / FG_PTQTP_GROUP;
  if (rows > UINT64_MAX / blocks_per_row || rows * blocks_per_row > UINT64_MAX / FG_PTQTP_BLOCK_BYTES ||
      rows > UINT64_MAX / cols || rows * cols > SIZE_MAX / sizeof(float))
    return fg_fail(FG_ERR_OVERFLOW, "ptqtp: a %llu x %llu matrix is too large", (unsigned long long)rows,
                   (unsigned long long)cols);
  if (bytes) *bytes = rows * blocks_per_row * FG_PTQTP_BLOCK_BYTES;
  return FG_OK;
}

/* What inference multiplies by: non-negative (the candidate set is sign-symmetric, so the
 * trits re-derive losslessly), clamped below f16's infinity, rounded to f16. */
static float round_scale_f16(float a) {
  return fg_f16_to_f32(fg_f32_to_f16(fminf(fabsf(a), 65504.0f)));
}

/* TQ2_0 crumbs: byte m of half h holds elements 128h + 32n + m in bits 2n..2n+1 as t + 1. */
static void pack_block(uint8_t *blk, const int8_t *t, float d) {
  for (int h = 0; h < 2; h++) {
    for (int m = 0; m < 32; m++) {
      unsigned q = 0;
      for (int c = 0; c < 4; c++) q |= (unsigned)(t[128 * h + 32 * c + m] + 1) << (2 * c);
      blk[32 * h + m] = (uint8_t)q;
    }
  }
  const uint16_t bits = fg_f32_to_f16(d);
  blk[64] = (uint8_t)(bits & 0xff);
  blk[65] = (uint8_t)(bits >> 8);
}

typedef struct row_stat {
  double err, w2;
  uint64_t zeros[3], iters, unconverged;
} row_stat;

static void quantize_row(const float *row, uint64_t blocks, const fg_ptqtp_options *o, uint8_t *const out[3],
                         row_stat *st) {
  int8_t tb[3][FG_PTQTP_GROUP];
  int8_t *const t[3] = {tb[0], tb[1], tb[2]};
  const int k = o->planes;
  memset(st, 0, sizeof *st);
  for (uint64_t g = 0; g < blocks; g++) {
    const float *w = row + g * FG_PTQTP_GROUP;
    const fg_ptqtp_group res = fg_ptqtp_solve(w, FG_PTQTP_GROUP, t, o);
    float alpha[3] = {0, 0, 0};
    for (int p = 0; p < k; p++) alpha[p] = round_scale_f16(res.alpha[p]);
    fg_ptqtp_search(k, w, FG_PTQTP_GROUP, t, alpha);
    for (int p = 0; p < k; p++) pack_block(out[p] + g * FG_PTQTP_BLOCK_BYTES, t[p], alpha[p]);
    for (int j = 0; j < FG_PTQTP_GROUP; j++) {
      for (int p = 0; p < k; p++) st->zeros[p] += t[p][j] == 0;
      if (!isfinite(w[j])) continue;
      float rec = 0;
      for (int p = 0; p < k; p++) rec += alpha[p] * (float)t[p][j];
      const double e = (double)w[j] - (double)rec;
      st->err += e * e;
      st->w2 += (double)w[j] * (double)w[j];
    }
    st->iters += (uint64_t)res.iterations;
    st->unconverged += !res.converged;
  }
}

fg_status fg_ptqtp_quantize(const float *w, uint64_t rows, uint64_t cols, const fg_ptqtp_options *opt,
                            void *const planes[FG_PTQTP_MAX_PLANES], fg_ptqtp_stats *stats) {
  const fg_ptqtp_options defaults = fg_ptqtp_options_default();
  if (!opt) opt = &defaults;
  fg_status s = fg_ptqtp_options_check(opt);
  if (s || (s = fg_ptqtp_plane_bytes(rows, cols, NULL))) return s;
  if (!w || !planes) return fg_fail(FG_ERR_INVALID_ARG, "fg_ptqtp_quantize: NULL argument");
  for (int p = 0; p < opt->planes; p++)
    if (!planes[p]) return fg_fail(FG_ERR_INVALID_ARG, "fg_ptqtp_quantize: plane %d of %d is NULL", p, opt->planes);
  row_stat *rs = malloc((size_t)rows * sizeof *rs);
  if (!rs) return fg_fail(FG_ERR_NOMEM, "ptqtp: out of memory for the statistics of %llu rows",
                          (unsigned long long)rows);
  const uint64_t blocks = cols / FG_PTQTP_GROUP;
  const int threads = opt->threads > 0 ? opt->threads : omp_get_max_threads();
  const long long nrows = (long long)rows;
  /* rows cost unequal numbers of iterations: hand them out one at a time */
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && rows * blocks >= 8)
  for (long long r = 0; r < nrows; r++) {
    const uint64_t first = (uint64_t)r * blocks * FG_PTQTP_BLOCK_BYTES;
    uint8_t *const out[3] = {(uint8_t *)planes[0] + first,
                             opt->planes >= 2 ? (uint8_t *)planes[1] + first : NULL,
                             opt->planes == 3 ? (uint8_t *)planes[2] + first : NULL};
    quantize_row(w + (uint64_t)r * cols, blocks, opt, out, &rs[r]);
  }
  if (stats) {
    double err = 0, w2 = 0;
    uint64_t zeros[3] = {0, 0, 0}, iters = 0, unconverged = 0;
    for (uint64_t r = 0; r < rows; r++) {
      err += rs[r].err;
      w2 += rs[r].w2;
      for (int p = 0; p < 3; p++) zeros[p] += rs[r].zeros[p];
      iters += rs[r].iters;
      unconverged += rs[r].unconverged;
    }
    const double elems = (double)(rows * cols);
    stats->rel_frob_err = w2 > 0 ? sqrt(err / w2) : 0;
    for (int p = 0; p < 3; p++) stats->zero_frac[p] = (double)zeros[p] / elems;
    stats->group_count = rows * blocks;
    stats->mean_iterations = (double)iters / (double)stats->group_count;
    stats->unconverged_groups = unconverged;
  }
  free(rs);
  return FG_OK;
}

fg_status fg_ptqtp_solve_group(const float *w, size_t n, const fg_ptqtp_options *opt,
                               int8_t *const trits[FG_PTQTP_MAX_PLANES], float alpha[3], int *iterations,
                               bool *converged) {
  const fg_ptqtp_options defaults = fg_ptqtp_options_default();
  if (!opt) opt = &defaults;
  fg_status s = fg_ptqtp_options_check(opt);
  if (s) return s;
  if (!w || !trits || !alpha || n == 0) return fg_fail(FG_ERR_INVALID_ARG, "fg_ptqtp_solve_group: NULL argument or n = 0");
  for (int p = 0; p < opt->planes; p++)
    if (!trits[p]) return fg_fail(FG_ERR_INVALID_ARG, "fg_ptqtp_solve_group: trits[%d] is NULL", p);
  int8_t *const t[3] = {trits[0], opt->planes >= 2 ? trits[1] : NULL, opt->planes == 3 ? trits[2] : NULL};
  const fg_ptqtp_group r = fg_ptqtp_solve(w, n, t, opt);
  memcpy(alpha, r.alpha, sizeof r.alpha);
  if (iterations) *iterations = r.iterations;
  if (converged) *converged = r.converged;
  return FG_OK;
}

fg_status fg_ptqtp_reconstruct(const void *const planes[FG_PTQTP_MAX_PLANES], int k, uint64_t rows, uint64_t cols,
                               float *dst) {
  if (k < 1 || k > 3) return fg_fail(FG_ERR_INVALID_ARG, "fg_ptqtp_reconstruct: k = %d (expected 1, 2 or 3)", k);
  fg_status s = fg_ptqtp_plane_bytes(rows, cols, NULL);
  if (s) return s;
  if (!planes || !dst) return fg_fail(FG_ERR_INVALID_ARG, "fg_ptqtp_reconstruct: NULL argument");
  for (int p = 0; p < k; p++)
    if (!planes[p]) return fg_fail(FG_ERR_INVALID_ARG, "fg_ptqtp_reconstruct: plane %d of %d is NULL", p, k);
  const uint64_t nblocks = rows * (cols / FG_PTQTP_GROUP);
  memset(dst, 0, (size_t)(rows * cols) * sizeof *dst);
  float y[FG_PTQTP_GROUP];
  for (int p = 0; p < k; p++) {
    const uint8_t *b = planes[p];
    for (uint64_t i = 0; i < nblocks; i++, b += FG_PTQTP_BLOCK_BYTES) {
      for (int m = 0; m < 64; m++)
        for (int c = 0; c < 4; c++)
          if (((b[m] >> (2 * c)) & 3) == 3)
            return fg_fail(FG_ERR_RANGE, "fg_ptqtp_reconstruct: plane %d, element %llu holds code 3 (TQ2_0 codes are "
                           "0..2)", p, (unsigned long long)(i * FG_PTQTP_GROUP + 128 * (m / 32) + 32 * c + m % 32));
      fg_dequant_tq2_0(b, y);
      float *o = dst + i * FG_PTQTP_GROUP;
      for (int j = 0; j < FG_PTQTP_GROUP; j++) o[j] += y[j];
    }
  }
  return FG_OK;
}
