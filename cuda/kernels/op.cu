// The CUDA launcher of the op layer: one templated kernel per op (FG_OP_TABLE), one block per
// chunk of the chunk table (device/op_chunks.h), so a list of a thousand small tensors is one
// launch and a large tensor is spread over many blocks. Each thread loads FG_CU_OP_ILP
// elements before computing any, to keep enough loads in flight for memory bandwidth.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/op_chunks.h"
#include "forgia/ops.h"

#define FG_CU_OP_THREADS 256
#define FG_CU_OP_ILP 4

// Elements are addressed by a group g (one element for W = 1, one pair of counters for
// W = 2); a group's lanes outside [lo, hi) of the chunk are neither loaded nor stored.
template <typename Op, unsigned W, unsigned NS, unsigned RM, unsigned WM>
__global__ void __launch_bounds__(FG_CU_OP_THREADS)
    fg_op_kernel(const fg_op_args *__restrict__ list, const fg_op_chunk *__restrict__ chunks, fg_op_params P) {
  const fg_op_chunk ch = chunks[blockIdx.x];
  const fg_op_args a = list[ch.t];
  const size_t lo = ch.start, hi = ch.start + ch.len;
  // W = 2: the first group is the pair holding element lo's counter (index0 + lo).
  const size_t first = W == 2 ? lo - ((a.index0 + lo) & 1u) : lo;
  const size_t ngroups = (hi - first + W - 1) / W;
  for (size_t g0 = threadIdx.x; g0 < ngroups; g0 += (size_t)FG_CU_OP_THREADS * FG_CU_OP_ILP) {
    fg_op_vals v[FG_CU_OP_ILP][W];
#pragma unroll
    for (int u = 0; u < FG_CU_OP_ILP; u++) {
      const size_t g = g0 + (size_t)u * FG_CU_OP_THREADS;
#pragma unroll
      for (unsigned w = 0; w < W; w++) {
#pragma unroll
        for (unsigned k = 0; k < FG_OP_MAX_STREAMS; k++) v[u][w][k] = 0.0f;
        const size_t i = first + g * W + w;
        if (g >= ngroups || i < lo || i >= hi) continue;
#pragma unroll
        for (unsigned k = 0; k < NS; k++)
          if (RM >> k & 1u) v[u][w][k] = fg_op_load(a.ptr[k], a.dtype[k], i);
      }
    }
#pragma unroll
    for (int u = 0; u < FG_CU_OP_ILP; u++) {
      const size_t g = g0 + (size_t)u * FG_CU_OP_THREADS;
      if (g < ngroups) Op::call(&P, v[u], a.seed, a.index0 + first + g * W);
    }
#pragma unroll
    for (int u = 0; u < FG_CU_OP_ILP; u++) {
      const size_t g = g0 + (size_t)u * FG_CU_OP_THREADS;
#pragma unroll
      for (unsigned w = 0; w < W; w++) {
        const size_t i = first + g * W + w;
        if (g >= ngroups || i < lo || i >= hi) continue;
#pragma unroll
        for (unsigned k = 0; k < NS; k++)
          if (WM >> k & 1u) fg_op_store(a.ptr[k], a.dtype[k], i, v[u][w][k]);
      }
    }
  }
}

#define FG_CU_OP_STRUCT_(E, id, name, W, ns, rm, wm, dts)                                           \
  struct fg_cu_op_##name {                                                                          \
    static __device__ __forceinline__ void call(const fg_op_params *P, fg_op_vals *v, uint64_t seed, \
                                                uint64_t c) {                                        \
      fg_op_##name(P, v, seed, c);                                                                  \
    }                                                                                               \
  };
FG_OP_TABLE(FG_CU_OP_STRUCT_)
#undef FG_CU_OP_STRUCT_

extern "C" int fg_cuda_launch_op(int op, const fg_op_params *p, const fg_op_args *list, const fg_op_chunk *chunks,
                                 size_t nchunks, void *stream) {
  if (!nchunks) return 0;
  if (nchunks > 0x7fffffffu) return (int)cudaErrorInvalidValue;
  const dim3 grid((unsigned)nchunks), block(FG_CU_OP_THREADS);
  cudaStream_t st = (cudaStream_t)stream;
  switch (op) {
#define FG_CU_OP_CASE_(E, id, name, W, ns, rm, wm, dts)                                    \
  case FG_OP_##E:                                                                          \
    fg_op_kernel<fg_cu_op_##name, W, ns, rm, wm><<<grid, block, 0, st>>>(list, chunks, *p); \
    break;
    FG_OP_TABLE(FG_CU_OP_CASE_)
#undef FG_CU_OP_CASE_
    default: return -1;
  }
  return (int)cudaGetLastError();
}
