// Elementwise dtype conversion: grid-stride loops over the elem/half.h functions.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/kernels.h"
#include "forgia/elem/half.h"

template <typename D, typename S, D (*F)(S)>
__global__ void fg_convert_kernel(D *__restrict__ d, const S *__restrict__ s, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    d[i] = F(s[i]);
}

__device__ static float fg_identity_f32(float x) { return x; }

template <typename D, typename S, D (*F)(S)>
static int launch(void *dst, const void *src, size_t n, cudaStream_t st) {
  size_t blocks = (n + 255) / 256;
  if (blocks > 65535u * 16u) blocks = 65535u * 16u;
  fg_convert_kernel<D, S, F><<<(unsigned)blocks, 256, 0, st>>>((D *)dst, (const S *)src, n);
  return (int)cudaGetLastError();
}

extern "C" int fg_cuda_launch_convert(void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n, void *stream) {
  cudaStream_t s = (cudaStream_t)stream;
  if (st == FG_F32 && dt == FG_BF16) return launch<uint16_t, float, fg_f32_to_bf16>(dst, src, n, s);
  if (st == FG_F32 && dt == FG_F16) return launch<uint16_t, float, fg_f32_to_f16>(dst, src, n, s);
  if (st == FG_BF16 && dt == FG_F32) return launch<float, uint16_t, fg_bf16_to_f32>(dst, src, n, s);
  if (st == FG_F16 && dt == FG_F32) return launch<float, uint16_t, fg_f16_to_f32>(dst, src, n, s);
  if (st == FG_F32 && dt == FG_F32) return launch<float, float, fg_identity_f32>(dst, src, n, s);
  return -1;
}
