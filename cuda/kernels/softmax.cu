// Softmax, its nll and the nll's gradient on CUDA (forgia/softmax.h): one warp per row, lane
// j summing the row grid's lane j of elem/softmax.h and the shuffles folding lanes j + h into
// j in the grid's order; the max propagates NaN, so the shuffle tree gives the CPU's m. Built
// with --fmad=false, so the bits are the CPU launcher's.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "cuda/kernels/row_grid.cuh"
#include "device/backend.h"
#include "forgia/elem/softmax.h"

#define FG_SM_WARPS 8

__global__ void fg_sm_kernel(fg_softmax_call c) {
  const unsigned lane = threadIdx.x & 31u;
  const size_t n = c.cols, step = (size_t)gridDim.x * FG_SM_WARPS;
  for (size_t r = (size_t)blockIdx.x * FG_SM_WARPS + threadIdx.x / 32; r < c.rows; r += step) {
    const float *x = c.x + r * n;
    float *y = c.y ? c.y + r * n : NULL;
    if (c.kind != FG_SOFTMAX_ROWS && !fg_sm_target_ok(&c, r)) {
      if (c.kind == FG_SOFTMAX_NLL) {
        if (lane == 0) c.nll[r] = fg_sm_nan64();
      } else {
        for (size_t j = lane; j < n; j += FG_ROW_LANES) y[j] = fg_bits_f32(0x7fc00000u);
      }
      continue;
    }
    float m = fg_sm_max_init();
    for (size_t j = lane; j < n; j += FG_ROW_LANES) m = fg_sm_max(m, x[j]);
    for (unsigned h = 16; h >= 1; h /= 2) m = fg_sm_max(m, __shfl_xor_sync(0xffffffffu, m, h));
    // y may be x (in place): each lane reads its x_j before writing e_j over it, and every
    // lane read all of its x_j for the max before the shuffles above.
    double s = 0.0;
    for (size_t j = lane; j < n; j += FG_ROW_LANES) {
      const float v = fg_sm_e(x[j], m);
      if (y) y[j] = v;
      s = s + (double)v;
    }
    const double S = fg_row_warp_sum(s);
    if (c.kind == FG_SOFTMAX_NLL) {
      if (lane == 0) c.nll[r] = fg_sm_nll(m, S, x[c.targets[r]]);
    } else if (c.kind == FG_SOFTMAX_ROWS) {
      for (size_t j = lane; j < n; j += FG_ROW_LANES) y[j] = fg_sm_y(y[j], S);
    } else {
      const size_t tg = (size_t)c.targets[r];
      for (size_t j = lane; j < n; j += FG_ROW_LANES) y[j] = fg_sm_dx(y[j], S, j == tg, c.scale);
    }
  }
}

extern "C" fg_status fg_cuda_softmax(fg_device *dev, const fg_softmax_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "softmax");
  if (s) return s;
  size_t b = (c->rows + FG_SM_WARPS - 1) / FG_SM_WARPS;
  const unsigned blocks = (unsigned)(b > 65535 ? 65535 : b < 1 ? 1 : b);
  fg_sm_kernel<<<blocks, 32 * FG_SM_WARPS, 0, (cudaStream_t)stream->impl>>>(*c);
  return fg_cuda_launch_status(dev, "softmax", (int)cudaGetLastError());
}
