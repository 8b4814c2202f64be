// The reductions of elem/reduce.h on CUDA: one launch for the whole list.
//
// The grid fixes the arithmetic: per chunk (2^15 values), 16 lanes each add a serial chain
// of 2048 values, so one chunk has only 16-way parallelism and its chain is ~2048 dependent
// f64 additions long. Memory parallelism therefore has to come from elsewhere:
// - one block of 128 threads per chunk (every chunk of every tensor of the list is a block,
//   found through a chunk -> tensor map), so up to ~14 chunks run side by side on an SM;
// - all 128 threads stage the chunk through shared memory in tiles of 2048 values with
//   coalesced 16-byte loads (f32: 4 float4 a thread; f16/bf16: 2 x 8 halves, widened on
//   the way in), double buffered: the loads of tile k+1 are in flight (in registers) while
//   16 threads of warp 0 run the 16 lane chains over tile k from shared memory (16
//   consecutive floats per step: no bank conflicts). 8 KiB in flight per block and ~14
//   blocks per SM cover the memory latency; the other 112 threads exist to issue loads.
// - the last block of a tensor to finish (an atomic counter per tensor) adds the tensor's
//   chunk partials serially in chunk order, staged through shared memory, and writes its
//   result; the last tensor to finish adds the per-tensor results in list order into the
//   total. So the whole reduction is one kernel after one small table copy, with no host
//   round trip, and the serial combines are the only work that does not scale.
// Unaligned data and the short last tile of a chunk are read element by element.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/kernels.h"
#include "forgia/elem/reduce.h"

#define FG_RK_THREADS 128
#define FG_RK_TILE 2048                        // values per tile
#define FG_RK_PER (FG_RK_TILE / FG_RK_THREADS) // values per thread per tile: 16
#define FG_RK_STRIDES (FG_RK_TILE / FG_REDUCE_LANES)

// Loads tile k of the chunk [begin, begin + m) into v; returns true when v holds the
// 16-bit vector layout (8 consecutive values per uint4), false for the f32 layout (4
// consecutive values per float4; also used by the element-wise path).
static __device__ __forceinline__ bool fg_rk_load(float v[FG_RK_PER], const fg_cuda_red_desc &d, size_t begin,
                                                  size_t m, unsigned k, bool vec, unsigned tid) {
  const size_t off = (size_t)k * FG_RK_TILE;
  const size_t avail = m - off;
  if (vec && avail >= FG_RK_TILE) {
    if (d.dtype == FG_F32) {
      const float4 *p = (const float4 *)((const float *)d.x + begin + off);
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const float4 q = p[i * FG_RK_THREADS + tid];
        v[4 * i] = q.x, v[4 * i + 1] = q.y, v[4 * i + 2] = q.z, v[4 * i + 3] = q.w;
      }
      return false;
    }
    const uint4 *p = (const uint4 *)((const uint16_t *)d.x + begin + off);
    const bool half = d.dtype == FG_F16;
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const uint4 q = p[i * FG_RK_THREADS + tid];
      const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
      for (int j = 0; j < 8; j++) {
        const uint16_t h = (uint16_t)(w[j / 2] >> (16 * (j % 2)));
        v[8 * i + j] = half ? fg_f16_to_f32(h) : fg_bf16_to_f32(h);
      }
    }
    return true;
  }
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const size_t p = (size_t)i * (4 * FG_RK_THREADS) + tid * 4 + r;
      v[4 * i + r] = p < avail ? fg_reduce_widen(d.x, (fg_dtype)d.dtype, begin + off + p) : 0.0f;
    }
  return false;
}

static __device__ __forceinline__ void fg_rk_store(float *tile, const float v[FG_RK_PER], bool layout16,
                                                   unsigned tid) {
  float4 *t4 = (float4 *)tile;
  if (layout16) {
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
      for (int h = 0; h < 2; h++)
        t4[i * (2 * FG_RK_THREADS) + tid * 2 + h] =
            make_float4(v[8 * i + 4 * h], v[8 * i + 4 * h + 1], v[8 * i + 4 * h + 2], v[8 * i + 4 * h + 3]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; i++)
      t4[i * FG_RK_THREADS + tid] = make_float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
  }
}

// Thread 0 gets (+) of src[0..n) onto acc in index order; every thread of the block stages.
// src was written by other blocks: read through L2 (__ldcg), not a stale L1 line.
template <int OP>
static __device__ double fg_rk_serial(double acc, const double *src, size_t n, double *stage, unsigned tid) {
  const size_t cap = FG_RK_TILE; // 2 tiles of floats = FG_RK_TILE doubles
  for (size_t base = 0; base < n; base += cap) {
    const size_t len = n - base < cap ? n - base : cap;
    for (size_t i = tid; i < len; i += FG_RK_THREADS) stage[i] = __ldcg(src + base + i);
    __syncthreads();
    if (tid == 0)
      for (size_t i = 0; i < len; i++) acc = fg_reduce_join(OP, acc, stage[i]);
    __syncthreads();
  }
  return acc;
}

template <int OP>
__global__ void __launch_bounds__(FG_RK_THREADS) fg_reduce_kernel(const fg_cuda_red_args a) {
  __shared__ __align__(16) float tile[2][FG_RK_TILE];
  __shared__ double lanes[FG_REDUCE_LANES];
  __shared__ int last;
  const unsigned tid = threadIdx.x;
  const size_t g = blockIdx.x;
  const uint32_t t = a.map[g];
  const fg_cuda_red_desc d = a.desc[t];
  const size_t begin = (g - d.first) * FG_REDUCE_CHUNK;
  const size_t m = d.n > begin ? (d.n - begin < FG_REDUCE_CHUNK ? d.n - begin : FG_REDUCE_CHUNK) : 0;
  const unsigned ntiles = (unsigned)((m + FG_RK_TILE - 1) / FG_RK_TILE);
  const size_t nstr = m / FG_REDUCE_LANES; // whole strides of the chunk
  const bool vec = ((uintptr_t)d.x & 15u) == 0;
  float v[FG_RK_PER];
  double lane = 0.0;
  if (ntiles) fg_rk_store(tile[0], v, fg_rk_load(v, d, begin, m, 0, vec, tid), tid);
  __syncthreads();
  for (unsigned k = 0; k < ntiles; k++) {
    bool layout16 = false;
    if (k + 1 < ntiles) layout16 = fg_rk_load(v, d, begin, m, k + 1, vec, tid);
    if (tid < FG_REDUCE_LANES) {
      const size_t s0 = (size_t)k * FG_RK_STRIDES;
      const unsigned ns = nstr > s0 ? (unsigned)(nstr - s0 < FG_RK_STRIDES ? nstr - s0 : FG_RK_STRIDES) : 0u;
      const float *p = tile[k & 1] + tid;
#pragma unroll 8
      for (unsigned i = 0; i < ns; i++) lane = fg_reduce_step(OP, lane, p[i * FG_REDUCE_LANES]);
    }
    if (k + 1 < ntiles) fg_rk_store(tile[(k + 1) & 1], v, layout16, tid);
    __syncthreads();
  }
  if (tid < FG_REDUCE_LANES) lanes[tid] = lane;
  __syncthreads();
  if (tid == 0) {
    const size_t whole = nstr * FG_REDUCE_LANES;
    // The values after the last whole stride lie in the last tile (tiles are whole strides).
    const float *rest = ntiles ? tile[(ntiles - 1) & 1] + (whole - (size_t)(ntiles - 1) * FG_RK_TILE) : tile[0];
    a.part[g] = fg_reduce_chunk_end(OP, lanes, rest, (unsigned)(m - whole));
    __threadfence();
    last = atomicAdd(&a.done[t], 1u) == d.nchunks - 1;
    __threadfence();
  }
  __syncthreads();
  if (!last) return;
  double *stage = (double *)&tile[0][0];
  const double acc = fg_rk_serial<OP>(0.0, a.part + d.first, d.nchunks, stage, tid);
  if (tid == 0) {
    const double res = fg_reduce_canonical(acc);
    if (a.per_tensor) a.per_tensor[t] = res;
    a.pt[t] = res;
    __threadfence();
    last = atomicAdd(&a.done[a.count], 1u) == a.count - 1;
    __threadfence();
  }
  __syncthreads();
  if (!last || !a.total) return;
  const double tot = fg_rk_serial<OP>(0.0, a.pt, a.count, stage, tid);
  if (tid == 0) *a.total = fg_reduce_canonical(tot);
}

extern "C" int fg_cuda_launch_reduce(int op, const fg_cuda_red_args *a, void *stream) {
  if (a->nchunks == 0) return 0;
  const cudaStream_t st = (cudaStream_t)stream;
  switch (op) {
    case FG_REDUCE_SUM: fg_reduce_kernel<FG_REDUCE_SUM><<<a->nchunks, FG_RK_THREADS, 0, st>>>(*a); break;
    case FG_REDUCE_SUMSQ: fg_reduce_kernel<FG_REDUCE_SUMSQ><<<a->nchunks, FG_RK_THREADS, 0, st>>>(*a); break;
    case FG_REDUCE_MAXABS: fg_reduce_kernel<FG_REDUCE_MAXABS><<<a->nchunks, FG_RK_THREADS, 0, st>>>(*a); break;
    default: return -1;
  }
  return (int)cudaGetLastError();
}
