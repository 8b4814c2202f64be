// Attention's backward on CUDA (forgia/attention.h), two kernels:
//   dq: one block per (token, head) row; threads split a tile of the span's slots to compute
//       ds_j (each dot in d order), then thread d sums ds_j * k[j]_d over the tile in j order;
//   dk, dv: one block per cache slot; threads split a tile of (token, head) pairs, pair
//       i = t * G + g, to compute p and ds of the pairs that attend the slot, then thread d
//       sums them in pair order (tokens ascending, heads of the group ascending).
// Built with --fmad=false, so the bits are the CPU launcher's.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "forgia/elem/attention_bwd.h"

#define FG_AB_THREADS 128
#define FG_AB_TILE 1024
// The sums are in dynamic shared memory (2 x head_dim floats); with the tiles this stays
// under 48 KiB.
#define FG_AB_MAX_HEAD_DIM 4096

__global__ void __launch_bounds__(FG_AB_THREADS) fg_ab_dq_kernel(fg_attention_bwd_call c) {
  __shared__ float ds_sh[FG_AB_TILE];
  __shared__ float dterm_sh;
  extern __shared__ float acc[];
  const fg_attention_call &f = c.f;
  const unsigned tid = threadIdx.x;
  const size_t D = f.head_dim, pairs = f.n_tok * f.n_head;
  for (size_t row = blockIdx.x; row < pairs; row += gridDim.x) {
    float *dq = c.dq + row * D;
    size_t lo = 0, hi = 0, kv = 0;
    // The whole block takes the same branch: no barrier is skipped by some threads only.
    if (!fg_attn_span(&f, row / f.n_head, row % f.n_head, &lo, &hi, &kv)) {
      for (size_t d = tid; d < D; d += FG_AB_THREADS) dq[d] = fg_bits_f32(0x7fc00000u);
      continue;
    }
    const float *q = f.q + row * D, *g = c.dout + row * D, *K = f.k + kv + lo * D, *V = f.v + kv + lo * D;
    const float lse = f.lse[row];
    if (tid == 0) dterm_sh = fg_attn_dot(g, f.out + row * D, D);
    for (size_t d = tid; d < D; d += FG_AB_THREADS) acc[d] = 0.0f;
    __syncthreads();
    const float dterm = dterm_sh;
    const size_t n = hi - lo + 1;
    for (size_t t0 = 0; t0 < n; t0 += FG_AB_TILE) {
      const size_t tn = n - t0 < FG_AB_TILE ? n - t0 : FG_AB_TILE;
      for (size_t j = tid; j < tn; j += FG_AB_THREADS) {
        const float s = fg_attn_score(q, K + (t0 + j) * D, D, f.scale);
        const float dp = fg_attn_dot(g, V + (t0 + j) * D, D);
        ds_sh[j] = fg_attn_ds(fg_attn_p(s, lse), dp, dterm);
      }
      __syncthreads();
      for (size_t d = tid; d < D; d += FG_AB_THREADS) {
        float a = acc[d];
        const float *kd = K + t0 * D + d;
        for (size_t j = 0; j < tn; j++) a = a + ds_sh[j] * kd[j * D];
        acc[d] = a;
      }
      __syncthreads();
    }
    for (size_t d = tid; d < D; d += FG_AB_THREADS) dq[d] = fg_attn_dscaled(f.scale, acc[d]);
    __syncthreads();  // ds_sh and dterm_sh are reused by the next row
  }
}

__global__ void __launch_bounds__(FG_AB_THREADS) fg_ab_dkv_kernel(fg_attention_bwd_call c) {
  __shared__ float p_sh[FG_AB_TILE], ds_sh[FG_AB_TILE];
  __shared__ int in_sh[FG_AB_TILE];
  extern __shared__ float acc[];  // dk sums, then dv sums
  const fg_attention_call &f = c.f;
  const unsigned tid = threadIdx.x;
  const size_t D = f.head_dim, G = f.n_head / f.n_kv_head, slots = f.n_seq * f.n_kv_head * f.n_ctx;
  const size_t pairs = f.n_tok * G;
  for (size_t slot = blockIdx.x; slot < slots; slot += gridDim.x) {
    const size_t j = slot % f.n_ctx, blk = slot / f.n_ctx, sq = blk / f.n_kv_head, kvh = blk % f.n_kv_head;
    const float *kr = f.k + slot * D, *vr = f.v + slot * D;
    for (size_t d = tid; d < D; d += FG_AB_THREADS) acc[d] = 0.0f, acc[D + d] = 0.0f;
    int hit = 0;  // whether a pair attends: a slot without one stays +0, whatever the sign of scale
    for (size_t i0 = 0; i0 < pairs; i0 += FG_AB_TILE) {
      const size_t in = pairs - i0 < FG_AB_TILE ? pairs - i0 : FG_AB_TILE;
      for (size_t i = tid; i < in; i += FG_AB_THREADS) {
        const size_t t = (i0 + i) / G, row = t * f.n_head + kvh * G + (i0 + i) % G;
        size_t lo = 0, hi = 0;
        in_sh[i] = fg_attn_attends(&f, t, sq, j, &lo, &hi);
        if (!in_sh[i]) continue;
        const float s = fg_attn_score(f.q + row * D, kr, D, f.scale);
        const float dp = fg_attn_dot(c.dout + row * D, vr, D);
        const float p = fg_attn_p(s, f.lse[row]);
        p_sh[i] = p;
        ds_sh[i] = fg_attn_ds(p, dp, fg_attn_dot(c.dout + row * D, f.out + row * D, D));
      }
      __syncthreads();
      for (size_t d = tid; d < D; d += FG_AB_THREADS) {
        float a = acc[d], b = acc[D + d];
        for (size_t i = 0; i < in; i++) {
          if (!in_sh[i]) continue;
          hit = 1;
          const size_t t = (i0 + i) / G, row = t * f.n_head + kvh * G + (i0 + i) % G;
          a = a + ds_sh[i] * f.q[row * D + d];
          b = b + p_sh[i] * c.dout[row * D + d];
        }
        acc[d] = a, acc[D + d] = b;
      }
      __syncthreads();
    }
    for (size_t d = tid; d < D; d += FG_AB_THREADS) {
      c.dk[slot * D + d] = hit ? fg_attn_dscaled(f.scale, acc[d]) : 0.0f;
      c.dv[slot * D + d] = fg_attn_canon(acc[D + d]);
    }
    __syncthreads();  // the tiles are reused by the next slot
  }
}

extern "C" fg_status fg_cuda_attention_bwd(fg_device *dev, const fg_attention_bwd_call *c, fg_stream *stream) {
  if (c->f.head_dim > FG_AB_MAX_HEAD_DIM)
    return fg_fail(FG_ERR_UNSUPPORTED, "fg_attention_backward: head_dim %zu, the CUDA kernels take at most %d",
                   c->f.head_dim, FG_AB_MAX_HEAD_DIM);
  fg_status s = fg_cuda_use(dev, "attention_bwd");
  if (s) return s;
  const cudaStream_t st = (cudaStream_t)stream->impl;
  const size_t rows = c->f.n_tok * c->f.n_head, slots = c->f.n_seq * c->f.n_kv_head * c->f.n_ctx;
  const size_t D = c->f.head_dim;
  if (rows) {
    const unsigned blocks = (unsigned)(rows > 65535 * 4 ? 65535 * 4 : rows);
    fg_ab_dq_kernel<<<blocks, FG_AB_THREADS, D * sizeof(float), st>>>(*c);
    s = fg_cuda_launch_status(dev, "attention_bwd", (int)cudaGetLastError());
    if (s) return s;
  }
  const unsigned blocks = (unsigned)(slots > 65535 * 4 ? 65535 * 4 : slots);
  fg_ab_dkv_kernel<<<blocks, FG_AB_THREADS, 2 * D * sizeof(float), st>>>(*c);
  return fg_cuda_launch_status(dev, "attention_bwd", (int)cudaGetLastError());
}
