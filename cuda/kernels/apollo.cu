// APOLLO's kernels (forgia/apollo.h) on CUDA: the elements of elem/op_apollo.h, one thread
// per channel (each channel's f64 sums run serially in flat order, as on the CPU), one
// thread per element of the update, one thread for the limiter. Built with --fmad=false.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/apollo_call.h"
#include "device/backend.h"
#include "forgia/elem/op_apollo.h"

__global__ void fg_apollo_scaling_kernel(fg_apollo_call c, size_t nch) {
  const size_t ch = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (ch >= nch) return;
  size_t first, count, stride;
  fg_apollo_channel_span(c.layout, c.rows, c.cols, c.rank, ch, &first, &count, &stride);
  c.scaling[ch] = fg_apollo_channel_factor(c.m, c.v, c.r, first, count, stride, c.eps);
}

__global__ void fg_apollo_build_kernel(fg_apollo_call c, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    c.u[i] = fg_apollo_build_at(c.layout, c.g, c.factors, c.cols, i, c.front);
}

__global__ void fg_apollo_limit_kernel(fg_apollo_call c) { *c.limiter = (double)fg_apollo_limit_eval(*c.sumsq, c.prev_norm); }

extern "C" fg_status fg_cuda_apollo(fg_device *dev, const fg_apollo_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "apollo");
  if (s) return s;
  cudaStream_t st = (cudaStream_t)stream->impl;
  if (c->kernel == FG_APOLLO_KERNEL_SCALING) {
    const size_t nch = fg_apollo_call_channels(c);
    if (nch) fg_apollo_scaling_kernel<<<(unsigned)((nch + 127) / 128), 128, 0, st>>>(*c, nch);
  } else if (c->kernel == FG_APOLLO_KERNEL_BUILD) {
    const size_t n = c->rows * c->cols;
    size_t blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535;
    if (n) fg_apollo_build_kernel<<<(unsigned)blocks, 256, 0, st>>>(*c, n);
  } else {
    fg_apollo_limit_kernel<<<1, 1, 0, st>>>(*c);
  }
  return fg_cuda_launch_status(dev, "apollo", (int)cudaGetLastError());
}
