// Fixed-grid reduction (elem/reduce.h): one block of FG_REDUCE_LANES threads per chunk;
// each thread is one lane; the shared-memory tree adds in the order fg_reduce_tree does.
#include <cuda_runtime.h>

#include "cuda/kernels.h"

__global__ void fg_reduce_chunks_kernel(const float *__restrict__ x, size_t n, fg_sum2 *__restrict__ part) {
  __shared__ double ssum[FG_REDUCE_LANES], ssq[FG_REDUCE_LANES];
  const size_t c = blockIdx.x;
  const unsigned l = threadIdx.x;
  fg_sum2 a = fg_reduce_lane(x, n, c, l);
  ssum[l] = a.sum;
  ssq[l] = a.sumsq;
  __syncthreads();
  for (unsigned s = FG_REDUCE_LANES / 2; s > 0; s /= 2) {
    if (l < s) {
      ssum[l] = ssum[l] + ssum[l + s];
      ssq[l] = ssq[l] + ssq[l + s];
    }
    __syncthreads();
  }
  if (l == 0) {
    part[c].sum = ssum[0];
    part[c].sumsq = ssq[0];
  }
}

extern "C" int fg_cuda_launch_reduce_chunks(const float *x, size_t n, fg_sum2 *part, void *stream) {
  size_t nc = fg_reduce_nchunks(n);
  if (nc == 0) return 0;
  if (nc > 0x7fffffffu) return (int)cudaErrorInvalidValue;
  fg_reduce_chunks_kernel<<<(unsigned)nc, FG_REDUCE_LANES, 0, (cudaStream_t)stream>>>(x, n, part);
  return (int)cudaGetLastError();
}
