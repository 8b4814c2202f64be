// The embedding gather on CUDA (forgia/embed.h): one thread per (token, block), decoding its
// block straight into the output by elem/embed.h. The dtype is a kernel argument: the switch
// in the decoder is uniform across the grid. Built with --fmad=false, so the bits are the CPU
// launcher's.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "forgia/elem/embed.h"

__global__ void fg_embed_kernel(fg_embed_call c) {
  const size_t blocks = c.n_cols / c.block_elems, total = c.n_ids * blocks;
  for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += (size_t)gridDim.x * blockDim.x) {
    const size_t t = k / blocks, b = k % blocks;
    float *y = c.out + t * c.n_cols + b * c.block_elems;
    const uint8_t *row = fg_embed_row(&c, t);
    if (!row) {
      fg_embed_nan(y, c.block_elems);
      continue;
    }
    fg_embed_decode(&c, row, b, 1, y);
    fg_embed_scale(&c, y, c.block_elems);
  }
}

extern "C" fg_status fg_cuda_embed(fg_device *dev, const fg_embed_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "embed");
  if (s) return s;
  const size_t total = c->n_ids * (c->n_cols / c->block_elems);
  size_t blocks = (total + 127) / 128;
  if (blocks > 65535u * 8u) blocks = 65535u * 8u;
  fg_embed_kernel<<<(unsigned)(blocks ? blocks : 1), 128, 0, (cudaStream_t)stream->impl>>>(*c);
  return fg_cuda_launch_status(dev, "embed", (int)cudaGetLastError());
}
