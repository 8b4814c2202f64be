// The exact GEMM mode (forgia/elem/gemm_exact.h) on CUDA. A block computes a 64 x 64 tile of
// C with 256 threads, 4 x 4 outputs each; op(A) and op(B) are staged through shared memory
// 16 steps of k at a time, widened to f32. Each output has its own register accumulator that
// takes the steps in ascending k, tile after tile, with fg_gemm_exact_step (__fmul_rn then
// __fadd_rn), so the bits are those of the CPU for any launch geometry.
#include <cuda_runtime.h>

#include "cuda/cuda_gemm.h"
#include "forgia/elem/gemm_exact.h"

namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256, kTM = 4, kTN = 4;
constexpr int kSide = 16;  // threads per tile side: thread (ty, tx) owns rows ty + 16 r, cols tx + 16 c

__device__ __forceinline__ float fg_ld(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ float fg_ld(const uint16_t *p, size_t i) { return fg_bf16_to_f32(p[i]); }

// op(A)[i, p] = a[i * a_si + p * a_sp]; op(B)[p, j] = b[p * b_sp + j * b_sj].
template <typename TA, typename TB>
__global__ void __launch_bounds__(kThreads)
    fg_gemm_exact_kernel(size_t m, size_t n, size_t k, const TA *__restrict__ a, size_t a_si, size_t a_sp, bool a_along_k,
                         const TB *__restrict__ b, size_t b_sp, size_t b_sj, bool b_along_k, float alpha, float beta,
                         float *__restrict__ c, size_t ldc) {
  __shared__ float as[kBK][kBM];
  __shared__ float bs[kBK][kBN];
  const int tid = threadIdx.x, tx = tid % kSide, ty = tid / kSide;
  const size_t tiles_m = (m + kBM - 1) / kBM;
  const size_t j0 = (size_t)blockIdx.x * kBN;
  for (size_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
    const size_t i0 = tm * kBM;
    float acc[kTM][kTN];
#pragma unroll
    for (int r = 0; r < kTM; r++)
#pragma unroll
      for (int q = 0; q < kTN; q++) acc[r][q] = 0.0f;
    for (size_t k0 = 0; k0 < k; k0 += kBK) {
      // Stage the tiles; neighbouring threads take neighbouring addresses: along p when the
      // stored rows run along k, else along i or j. Every thread-to-element map covers the tile.
#pragma unroll
      for (int e = 0; e < kBM * kBK / kThreads; e++) {
        int idx = tid + e * kThreads, r, p;
        if (a_along_k) r = idx / kBK, p = idx % kBK;
        else p = idx / kBM, r = idx % kBM;
        size_t i = i0 + r, kp = k0 + p;
        as[p][r] = (i < m && kp < k) ? fg_ld(a, i * a_si + kp * a_sp) : 0.0f;
      }
#pragma unroll
      for (int e = 0; e < kBN * kBK / kThreads; e++) {
        int idx = tid + e * kThreads, q, p;
        if (b_along_k) q = idx / kBK, p = idx % kBK;
        else p = idx / kBN, q = idx % kBN;
        size_t j = j0 + q, kp = k0 + p;
        bs[p][q] = (j < n && kp < k) ? fg_ld(b, kp * b_sp + j * b_sj) : 0.0f;
      }
      __syncthreads();
      // Only the steps inside k: padding is never added, not even as zeros.
      const int kt = k - k0 < (size_t)kBK ? (int)(k - k0) : kBK;
      for (int p = 0; p < kt; p++) {
        float av[kTM], bv[kTN];
#pragma unroll
        for (int r = 0; r < kTM; r++) av[r] = as[p][ty + kSide * r];
#pragma unroll
        for (int q = 0; q < kTN; q++) bv[q] = bs[p][tx + kSide * q];
#pragma unroll
        for (int r = 0; r < kTM; r++)
#pragma unroll
          for (int q = 0; q < kTN; q++) acc[r][q] = fg_gemm_exact_step(acc[r][q], av[r], bv[q]);
      }
      __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < kTM; r++) {
      size_t i = i0 + ty + kSide * r;
      if (i >= m) continue;
#pragma unroll
      for (int q = 0; q < kTN; q++) {
        size_t j = j0 + tx + kSide * q;
        if (j >= n) continue;
        float *cp = c + i * ldc + j;
        *cp = fg_gemm_exact_out(acc[r][q], alpha, beta, beta != 0.0f ? *cp : 0.0f);
      }
    }
  }
}

// No product term: C = beta * C (beta == 0: +0), one thread per element.
__global__ void fg_gemm_scale_kernel(size_t m, size_t n, float beta, float *__restrict__ c, size_t ldc) {
  const size_t total = m * n;
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x) {
    float *cp = c + (e / n) * ldc + e % n;
    *cp = fg_gemm_exact_scale(beta, beta != 0.0f ? *cp : 0.0f);
  }
}

template <typename TA, typename TB>
int fg_launch(const fg_gemm_call *g, cudaStream_t st) {
  const size_t a_si = g->trans_a ? 1 : g->lda, a_sp = g->trans_a ? g->lda : 1;
  const size_t b_sp = g->trans_b ? 1 : g->ldb, b_sj = g->trans_b ? g->ldb : 1;
  const size_t tiles_n = (g->n + kBN - 1) / kBN, tiles_m = (g->m + kBM - 1) / kBM;
  if (tiles_n > 0x7fffffffu) return (int)cudaErrorInvalidValue;
  dim3 grid((unsigned)tiles_n, (unsigned)(tiles_m < 65535 ? tiles_m : 65535));
  fg_gemm_exact_kernel<TA, TB><<<grid, kThreads, 0, st>>>(g->m, g->n, g->k, (const TA *)g->a, a_si, a_sp,
                                                          !g->trans_a, (const TB *)g->b, b_sp, b_sj, g->trans_b,
                                                          g->alpha, g->beta, g->c, g->ldc);
  return (int)cudaGetLastError();
}

}  // namespace

extern "C" int fg_cuda_launch_gemm_exact(const fg_gemm_call *g, void *stream) {
  cudaStream_t st = (cudaStream_t)stream;
  if (g->k == 0) {
    size_t total = g->m * g->n, blocks = (total + 255) / 256;
    fg_gemm_scale_kernel<<<(unsigned)(blocks < 65536 ? blocks : 65536), 256, 0, st>>>(g->m, g->n, g->beta, g->c,
                                                                                        g->ldc);
    return (int)cudaGetLastError();
  }
  const bool abf = g->a_type == FG_BF16, bbf = g->b_type == FG_BF16;
  if (abf && bbf) return fg_launch<uint16_t, uint16_t>(g, st);
  if (abf) return fg_launch<uint16_t, float>(g, st);
  if (bbf) return fg_launch<float, uint16_t>(g, st);
  return fg_launch<float, float>(g, st);
}
