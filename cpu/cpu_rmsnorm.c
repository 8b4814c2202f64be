/* RMSNorm on the CPU (forgia/rmsnorm.h): OpenMP over rows for y and dx, over blocks of
 * columns for dw, each value computed by elem/rmsnorm.h in the row grid's order, so the bits
 * do not depend on the thread count and equal CUDA's. Synchronous like every CPU stream
 * operation. */
#include "device/backend.h"
#include "forgia/elem/rmsnorm.h"

/* Columns of dw per work item: each row's slice is one cache line's worth of loads per
 * stream, and the f64 accumulators stay in registers or L1. */
#define FG_CPU_RN_DW_BLOCK 64

static double fg_cpu_rn_sumsq(const fg_rmsnorm_call *c, size_t base) {
  double s[FG_ROW_LANES] = {0};
  for (size_t i = 0; i < c->cols; i++) {
    const double v = (double)fg_row_load(c->x, c->x_dtype, base + i);
    s[i % FG_ROW_LANES] = s[i % FG_ROW_LANES] + v * v;
  }
  return fg_row_fold(s);
}

static void fg_cpu_rn_forward(const fg_rmsnorm_call *c) {
  const long long rows = (long long)c->rows;
#pragma omp parallel for schedule(static) if (c->rows * c->cols > 65536)
  for (long long r = 0; r < rows; r++) {
    const size_t base = (size_t)r * c->cols;
    const float rstd = fg_rmsnorm_rstd(fg_cpu_rn_sumsq(c, base), c->cols, c->eps);
    if (c->rstd) c->rstd[r] = rstd;
    for (size_t i = 0; i < c->cols; i++)
      c->y[base + i] =
          fg_rmsnorm_y(fg_row_load(c->x, c->x_dtype, base + i), rstd, fg_row_load(c->w, c->w_dtype, i), c->offset);
  }
}

static void fg_cpu_rn_dx(const fg_rmsnorm_call *c) {
  const long long rows = (long long)c->rows;
#pragma omp parallel for schedule(static) if (c->rows * c->cols > 65536)
  for (long long r = 0; r < rows; r++) {
    const size_t base = (size_t)r * c->cols;
    double s[FG_ROW_LANES] = {0};
    for (size_t i = 0; i < c->cols; i++)
      s[i % FG_ROW_LANES] = s[i % FG_ROW_LANES] + fg_rmsnorm_dot_term(fg_row_load(c->x, c->x_dtype, base + i), c->dy[base + i],
                                                                      fg_row_load(c->w, c->w_dtype, i), c->offset);
    const float rstd = c->rstd[r];
    const double coef = fg_rmsnorm_coef(fg_row_fold(s), c->cols, rstd);
    for (size_t i = 0; i < c->cols; i++) {
      const float g = c->dy[base + i] * (fg_row_load(c->w, c->w_dtype, i) + c->offset);
      c->dx[base + i] = fg_rmsnorm_dx(fg_row_load(c->x, c->x_dtype, base + i), g, rstd, coef);
    }
  }
}

static void fg_cpu_rn_dw(const fg_rmsnorm_call *c) {
  const long long blocks = (long long)((c->cols + FG_CPU_RN_DW_BLOCK - 1) / FG_CPU_RN_DW_BLOCK);
#pragma omp parallel for schedule(static) if (c->rows * c->cols > 65536)
  for (long long b = 0; b < blocks; b++) {
    const size_t lo = (size_t)b * FG_CPU_RN_DW_BLOCK;
    const size_t hi = lo + FG_CPU_RN_DW_BLOCK < c->cols ? lo + FG_CPU_RN_DW_BLOCK : c->cols;
    double acc[FG_CPU_RN_DW_BLOCK] = {0};
    for (size_t r = 0; r < c->rows; r++) {
      const size_t base = r * c->cols;
      const float rstd = c->rstd[r];
      for (size_t i = lo; i < hi; i++)
        acc[i - lo] = acc[i - lo] + fg_rmsnorm_dw_term(fg_row_load(c->x, c->x_dtype, base + i), c->dy[base + i], rstd);
    }
    for (size_t i = lo; i < hi; i++) c->dw[i] = (float)acc[i - lo];
  }
}

fg_status fg_cpu_rmsnorm(fg_device *dev, const fg_rmsnorm_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  if (!c->backward) {
    fg_cpu_rn_forward(c);
  } else {
    if (c->dx) fg_cpu_rn_dx(c);
    if (c->dw) fg_cpu_rn_dw(c);
  }
  return FG_OK;
}
