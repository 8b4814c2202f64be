// RoPE on CUDA (forgia/rope.h): one thread per (token, head, pair), each rotating its pair
// by elem/rope.h. Built with --fmad=false, so the bits are the CPU launcher's.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "forgia/elem/rope.h"

__global__ void fg_rope_kernel(fg_rope_call c) {
  const size_t half = c.n_dims / 2, per_tok = c.n_heads * half, total = c.n_tok * per_tok;
  for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += (size_t)gridDim.x * blockDim.x) {
    const size_t t = k / per_tok, h = (k % per_tok) / half, i = k % half;
    const float *row = fg_rope_row(&c, t);
    if (row) fg_rope_pair(&c, c.x + (t * c.n_heads + h) * c.head_dim, row, i);
  }
}

extern "C" fg_status fg_cuda_rope(fg_device *dev, const fg_rope_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "rope");
  if (s) return s;
  const size_t total = c->n_tok * c->n_heads * (c->n_dims / 2);
  size_t blocks = (total + 255) / 256;
  if (blocks > 65535u * 8u) blocks = 65535u * 8u;
  fg_rope_kernel<<<(unsigned)(blocks ? blocks : 1), 256, 0, (cudaStream_t)stream->impl>>>(*c);
  return fg_cuda_launch_status(dev, "rope", (int)cudaGetLastError());
}
