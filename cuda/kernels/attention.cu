// Attention on CUDA (forgia/attention.h): one block per (token, head) pair. Threads split
// the keys for the scores (each dot in d order) and the max (NaN-propagating, so any tree
// gives the CPU's m); thread 0 sums the p_j in j order; thread d sums its output over j in
// order. Scores live in a shared tile; a span longer than the tile computes its scores twice
// (once for the max, once per tile), never out of order. Built with --fmad=false, so the
// bits are the CPU launcher's.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "forgia/elem/attention.h"

#define FG_AT_THREADS 128
#define FG_AT_TILE 2048
// The output sums are in dynamic shared memory; with the tile this stays under 48 KiB.
#define FG_AT_MAX_HEAD_DIM 8192

__device__ float fg_at_block_max(float v, float *red) {
  for (unsigned h = 16; h >= 1; h /= 2) v = fg_attn_max(v, __shfl_xor_sync(0xffffffffu, v, h));
  if ((threadIdx.x & 31u) == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = red[0];
    for (unsigned w = 1; w < FG_AT_THREADS / 32; w++) m = fg_attn_max(m, red[w]);
    red[FG_AT_THREADS / 32] = m;
  }
  __syncthreads();
  return red[FG_AT_THREADS / 32];
}

__global__ void __launch_bounds__(FG_AT_THREADS) fg_at_kernel(fg_attention_call c) {
  __shared__ float sc[FG_AT_TILE];
  __shared__ float red[FG_AT_THREADS / 32 + 1];
  __shared__ float l_sh;
  extern __shared__ float acc[];
  const unsigned tid = threadIdx.x;
  const size_t D = c.head_dim, pairs = c.n_tok * c.n_head;
  for (size_t row = blockIdx.x; row < pairs; row += gridDim.x) {
    float *o = c.out + row * D;
    size_t lo = 0, hi = 0, kv = 0;
    // The whole block takes the same branch: no barrier is skipped by some threads only.
    if (!fg_attn_span(&c, row / c.n_head, row % c.n_head, &lo, &hi, &kv)) {
      for (size_t d = tid; d < D; d += FG_AT_THREADS) o[d] = fg_bits_f32(0x7fc00000u);
      if (tid == 0 && c.lse) c.lse[row] = fg_bits_f32(0x7fc00000u);
      continue;
    }
    const size_t n = hi - lo + 1;
    const float *q = c.q + row * D, *K = c.k + kv + lo * D, *V = c.v + kv + lo * D;
    const bool one_tile = n <= FG_AT_TILE;
    float m = fg_bits_f32(0xff800000u);
    for (size_t j = tid; j < n; j += FG_AT_THREADS) {
      const float s = fg_attn_score(q, K + j * D, D, c.scale);
      if (one_tile) sc[j] = s;
      m = fg_attn_max(m, s);
    }
    m = fg_at_block_max(m, red);
    for (size_t d = tid; d < D; d += FG_AT_THREADS) acc[d] = 0.0f;
    float l = 0.0f;  // thread 0's
    for (size_t t0 = 0; t0 < n; t0 += FG_AT_TILE) {
      const size_t tn = n - t0 < FG_AT_TILE ? n - t0 : FG_AT_TILE;
      for (size_t j = tid; j < tn; j += FG_AT_THREADS) {
        const float s = one_tile ? sc[j] : fg_attn_score(q, K + (t0 + j) * D, D, c.scale);
        sc[j] = fg_attn_p(s, m);
      }
      __syncthreads();
      if (tid == 0)
        for (size_t j = 0; j < tn; j++) l = l + sc[j];
      for (size_t d = tid; d < D; d += FG_AT_THREADS) {
        float a = acc[d];
        const float *vd = V + t0 * D + d;
        for (size_t j = 0; j < tn; j++) a = a + sc[j] * vd[j * D];
        acc[d] = a;
      }
      __syncthreads();
    }
    if (tid == 0) {
      l_sh = l;
      if (c.lse) c.lse[row] = fg_attn_lse(m, l);
    }
    __syncthreads();
    for (size_t d = tid; d < D; d += FG_AT_THREADS) o[d] = fg_attn_out(acc[d], l_sh);
    __syncthreads();  // sc, red and l_sh are reused by the next pair
  }
}

extern "C" fg_status fg_cuda_attention(fg_device *dev, const fg_attention_call *c, fg_stream *stream) {
  if (c->head_dim > FG_AT_MAX_HEAD_DIM)
    return fg_fail(FG_ERR_UNSUPPORTED, "fg_attention_forward: head_dim %zu, the CUDA kernel takes at most %d",
                   c->head_dim, FG_AT_MAX_HEAD_DIM);
  fg_status s = fg_cuda_use(dev, "attention");
  if (s) return s;
  const size_t pairs = c->n_tok * c->n_head;
  const unsigned blocks = (unsigned)(pairs > 65535 * 4 ? 65535 * 4 : pairs);
  fg_at_kernel<<<blocks, FG_AT_THREADS, c->head_dim * sizeof(float), (cudaStream_t)stream->impl>>>(*c);
  return fg_cuda_launch_status(dev, "attention", (int)cudaGetLastError());
}
