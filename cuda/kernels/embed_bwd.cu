// The embedding gradient on CUDA (forgia/embed.h): one thread per column, walking the tokens
// in order and adding each into its id's row by elem/embed.h's step, so repeated ids sum in
// token order. Built with --fmad=false (and the step uses the _rn intrinsics), so the bits
// are the CPU launcher's.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "forgia/elem/embed.h"

__global__ void fg_embed_bwd_kernel(fg_embed_bwd_call c) {
  for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < c.n_cols; k += (size_t)gridDim.x * blockDim.x)
    for (size_t t = 0; t < c.n_ids; t++) {
      float *d = fg_embed_bwd_row(&c, t);
      if (d) d[k] = fg_embed_bwd_step(d[k], c.dy[t * c.n_cols + k], c.scale);
    }
}

extern "C" fg_status fg_cuda_embed_bwd(fg_device *dev, const fg_embed_bwd_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "embed_bwd");
  if (s) return s;
  size_t blocks = (c->n_cols + 127) / 128;
  if (blocks > 65535u) blocks = 65535u;
  fg_embed_bwd_kernel<<<(unsigned)(blocks ? blocks : 1), 128, 0, (cudaStream_t)stream->impl>>>(*c);
  return fg_cuda_launch_status(dev, "embed_bwd", (int)cudaGetLastError());
}
