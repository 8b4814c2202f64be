// RMSNorm on CUDA (forgia/rmsnorm.h): one warp per row for y and dx, lane j summing the row
// grid's lane j of elem/rmsnorm.h and the shuffles folding lanes j + h into j in the grid's
// order; one thread per column for dw, summing rows in order. Built with --fmad=false, so
// the bits are the CPU launcher's.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "cuda/kernels/row_grid.cuh"
#include "device/backend.h"
#include "forgia/elem/rmsnorm.h"

#define FG_RN_WARPS 8

// The row grid's sum of term(i) over i < cols: this lane's elements in order, then the fold.
template <class Term> __device__ double fg_rn_row_sum(size_t cols, Term term) {
  double s = 0.0;
  for (size_t i = threadIdx.x & 31u; i < cols; i += FG_ROW_LANES) s = s + term(i);
  return fg_row_warp_sum(s);
}

__global__ void fg_rn_forward_kernel(fg_rmsnorm_call c) {
  const unsigned lane = threadIdx.x & 31u;
  const size_t step = (size_t)gridDim.x * FG_RN_WARPS;
  for (size_t r = (size_t)blockIdx.x * FG_RN_WARPS + threadIdx.x / 32; r < c.rows; r += step) {
    const size_t base = r * c.cols;
    const double ss = fg_rn_row_sum(c.cols, [&](size_t i) {
      const double v = (double)fg_row_load(c.x, c.x_dtype, base + i);
      return v * v;
    });
    const float rstd = fg_rmsnorm_rstd(ss, c.cols, c.eps);
    if (c.rstd && lane == 0) c.rstd[r] = rstd;
    for (size_t i = lane; i < c.cols; i += FG_ROW_LANES)
      c.y[base + i] = fg_rmsnorm_y(fg_row_load(c.x, c.x_dtype, base + i), rstd, fg_row_load(c.w, c.w_dtype, i), c.offset);
  }
}

__global__ void fg_rn_dx_kernel(fg_rmsnorm_call c) {
  const unsigned lane = threadIdx.x & 31u;
  const size_t step = (size_t)gridDim.x * FG_RN_WARPS;
  for (size_t r = (size_t)blockIdx.x * FG_RN_WARPS + threadIdx.x / 32; r < c.rows; r += step) {
    const size_t base = r * c.cols;
    const double dot = fg_rn_row_sum(c.cols, [&](size_t i) {
      return fg_rmsnorm_dot_term(fg_row_load(c.x, c.x_dtype, base + i), c.dy[base + i], fg_row_load(c.w, c.w_dtype, i),
                                 c.offset);
    });
    const float rstd = c.rstd[r];
    const double coef = fg_rmsnorm_coef(dot, c.cols, rstd);
    for (size_t i = lane; i < c.cols; i += FG_ROW_LANES) {
      const float g = c.dy[base + i] * (fg_row_load(c.w, c.w_dtype, i) + c.offset);
      c.dx[base + i] = fg_rmsnorm_dx(fg_row_load(c.x, c.x_dtype, base + i), g, rstd, coef);
    }
  }
}

__global__ void fg_rn_dw_kernel(fg_rmsnorm_call c) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < c.cols; i += (size_t)gridDim.x * blockDim.x) {
    double acc = 0.0;
    for (size_t r = 0; r < c.rows; r++)
      acc = acc + fg_rmsnorm_dw_term(fg_row_load(c.x, c.x_dtype, r * c.cols + i), c.dy[r * c.cols + i], c.rstd[r]);
    c.dw[i] = (float)acc;
  }
}

static unsigned fg_rn_blocks(size_t items, size_t per_block) {
  size_t b = (items + per_block - 1) / per_block;
  return (unsigned)(b > 65535 ? 65535 : b < 1 ? 1 : b);
}

extern "C" fg_status fg_cuda_rmsnorm(fg_device *dev, const fg_rmsnorm_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "rmsnorm");
  if (s) return s;
  cudaStream_t st = (cudaStream_t)stream->impl;
  if (!c->backward) {
    fg_rn_forward_kernel<<<fg_rn_blocks(c->rows, FG_RN_WARPS), 32 * FG_RN_WARPS, 0, st>>>(*c);
  } else {
    if (c->dx) fg_rn_dx_kernel<<<fg_rn_blocks(c->rows, FG_RN_WARPS), 32 * FG_RN_WARPS, 0, st>>>(*c);
    if (c->dw) fg_rn_dw_kernel<<<fg_rn_blocks(c->cols, 256), 256, 0, st>>>(*c);
  }
  return fg_cuda_launch_status(dev, "rmsnorm", (int)cudaGetLastError());
}
