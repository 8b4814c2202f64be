// Dequantization of ggml block types: one thread per block calling the same elem/
// decoder as the CPU loop, so both produce the same floats. The type is a kernel argument:
// the switch in fg_dequant_block is uniform across the grid, and elem/quant_decode.h stays
// the only list of decodable types.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "forgia/elem/quant_decode.h"

__global__ void fg_dequant_kernel(float *__restrict__ y, const uint8_t *__restrict__ x, size_t nblocks, fg_dtype t,
                                  unsigned belems, unsigned bbytes) {
  for (size_t b = blockIdx.x * (size_t)blockDim.x + threadIdx.x; b < nblocks; b += (size_t)gridDim.x * blockDim.x)
    fg_dequant_block(t, x + b * bbytes, y + b * belems);
}

extern "C" int fg_cuda_launch_dequant(float *dst, const void *src, fg_dtype t, size_t n, void *stream) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  if (!tr || !tr->is_quant) return -1;
  size_t nb = n / tr->block_elems, grid = (nb + 127) / 128;
  if (grid > 65535u * 8u) grid = 65535u * 8u;
  if (grid == 0) return 0;
  fg_dequant_kernel<<<(unsigned)grid, 128, 0, (cudaStream_t)stream>>>(dst, (const uint8_t *)src, nb, t,
                                                                       tr->block_elems, tr->block_bytes);
  return (int)cudaGetLastError();
}
