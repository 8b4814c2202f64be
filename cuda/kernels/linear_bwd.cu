// The linear layer's input gradient on CUDA (forgia/linear.h: fg_linear_backward_x). Built
// with --fmad=false, and the exact step uses the _rn intrinsics, so the exact mode's bits are
// the CPU launcher's.
//   exact  a thread block per (column tile, token tile): the tile's slice of FG_LB_CU_OC rows
//          of W at a time is decoded into shared memory (one thread per block of W), then
//          each thread steps its column's accumulators, one per token it owns, through those
//          rows in order. A tile is cw columns: the smallest whole number of W's blocks of
//          at least 64 (cw <= FG_LINEAR_MAX_BLOCK's 256 whenever a block is).
//   fast   up to FG_LB_CU_EXACT_TOK tokens: the exact kernel; more: tiles of W's rows
//          decoded to f32 in the stream's scratch and handed to cuBLAS through the gemm
//          family's fast path (cuda/cuda_gemm.c), dx accumulating tile after tile.
#include <cuda_runtime.h>
#include <limits.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "device/gemm_call.h"
#include "device/scratch.h"
#include "forgia/elem/linear.h"

#define FG_LB_CU_THREADS 256
#define FG_LB_CU_OC 32  // rows of W per shared-memory chunk
#define FG_LB_CU_TK 8   // tokens per thread
#define FG_LB_CU_EXACT_TOK 8
// The decoded f32 tile the cuBLAS path works on, at most.
#define FG_LB_CU_TILE_BYTES ((size_t)64 << 20)

static unsigned fg_lb_cu_clamp(size_t b, size_t most) { return (unsigned)(b > most ? most : b < 1 ? 1 : b); }

__global__ void fg_lb_exact_kernel(fg_linear_bwd_call c, unsigned cw) {
  __shared__ float sm[FG_LB_CU_OC * FG_LINEAR_MAX_BLOCK];
  const unsigned lanes = blockDim.x / cw, tx = threadIdx.x % cw, ty = threadIdx.x / cw;
  const size_t be = c.block_elems, col_tiles = (c.n_in + cw - 1) / cw, per_tile = (size_t)lanes * FG_LB_CU_TK;
  const size_t tok_tiles = (c.n_tok + per_tile - 1) / per_tile;
  // Every thread of a block walks the same tiles and chunks: the barriers are uniform.
  for (size_t ct = blockIdx.x; ct < col_tiles; ct += gridDim.x)
    for (size_t tt = blockIdx.y; tt < tok_tiles; tt += gridDim.y) {
      const size_t i0 = ct * cw, i = i0 + tx, t0 = tt * per_tile + ty;
      const size_t nbl = (c.n_in - i0 < cw ? c.n_in - i0 : cw) / be;
      const bool mine = ty < lanes && i < c.n_in;
      float acc[FG_LB_CU_TK];
      for (unsigned k = 0; k < FG_LB_CU_TK; k++) acc[k] = 0.0f;
      for (size_t o0 = 0; o0 < c.n_out; o0 += FG_LB_CU_OC) {
        const size_t kc = c.n_out - o0 < FG_LB_CU_OC ? c.n_out - o0 : FG_LB_CU_OC;
        __syncthreads();
        for (size_t q = threadIdx.x; q < kc * nbl; q += blockDim.x) {
          const size_t p = q / nbl, b = q % nbl;
          fg_dequant_block(c.w_type, (const uint8_t *)c.w + (o0 + p) * c.row_bytes + (i0 / be + b) * c.block_bytes,
                           sm + p * cw + b * be);
        }
        __syncthreads();
        if (!mine) continue;
        for (size_t p = 0; p < kc; p++) {
          const float w = sm[p * cw + tx];
          for (unsigned k = 0; k < FG_LB_CU_TK; k++) {
            const size_t t = t0 + (size_t)k * lanes;
            if (t < c.n_tok) acc[k] = fg_gemm_exact_step(acc[k], c.dy[t * c.n_out + o0 + p], w);
          }
        }
      }
      for (unsigned k = 0; mine && k < FG_LB_CU_TK; k++) {
        const size_t t = t0 + (size_t)k * lanes;
        if (t >= c.n_tok) break;
        float *dx = c.dx + t * c.n_in + i;
        *dx = fg_linear_out(acc[k], c.accumulate, c.accumulate ? *dx : 0.0f);
      }
    }
}

static fg_status fg_lb_cu_exact(fg_device *dev, const fg_linear_bwd_call *c, cudaStream_t st) {
  unsigned cw = c->block_elems;
  while (cw < 64) cw += c->block_elems;
  const size_t per_tile = (size_t)(FG_LB_CU_THREADS / cw) * FG_LB_CU_TK;
  const dim3 grid(fg_lb_cu_clamp((c->n_in + cw - 1) / cw, 1u << 30), fg_lb_cu_clamp((c->n_tok + per_tile - 1) / per_tile, 65535));
  fg_lb_exact_kernel<<<grid, FG_LB_CU_THREADS, 0, st>>>(*c, cw);
  return fg_cuda_launch_status(dev, "linear_bwd", (int)cudaGetLastError());
}

// Rows [o0, o0 + rows) of W decoded to f32 (rows x n_in at out): one thread per block.
__global__ void fg_lb_decode_kernel(fg_linear_bwd_call c, size_t o0, size_t rows, float *out) {
  const size_t per_row = c.n_in / c.block_elems, total = rows * per_row;
  const uint8_t *w = (const uint8_t *)c.w + o0 * c.row_bytes;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
    fg_dequant_block(c.w_type, w + (i / per_row) * c.row_bytes + (i % per_row) * c.block_bytes,
                     out + i * c.block_elems);
}

// dx (+)= dy[:, o0 .. o0 + on) tile, tile after tile: every tile is queued on the stream, so
// reusing one scratch block is ordered.
static fg_status fg_lb_cu_blas(fg_device *dev, const fg_linear_bwd_call *c, fg_stream *stream) {
  const bool direct = c->w_type == FG_F32;
  size_t rows = direct ? c->n_out : FG_LB_CU_TILE_BYTES / (c->n_in * 4);
  if (rows < 1) rows = 1;
  if (rows > c->n_out) rows = c->n_out;
  float *tile = NULL;
  if (!direct) {
    void *p;
    fg_status s = fg_stream_scratch(stream, rows * c->n_in * 4, &p);
    if (s) return s;
    tile = (float *)p;
  }
  cudaStream_t st = (cudaStream_t)stream->impl;
  for (size_t o0 = 0; o0 < c->n_out; o0 += rows) {
    const size_t on = c->n_out - o0 < rows ? c->n_out - o0 : rows;
    const float *b = (const float *)c->w + o0 * c->n_in;
    if (!direct) {
      const size_t blocks = (on * (c->n_in / c->block_elems) + 255) / 256;
      fg_lb_decode_kernel<<<fg_lb_cu_clamp(blocks, 65535), 256, 0, st>>>(*c, o0, on, tile);
      fg_status s = fg_cuda_launch_status(dev, "linear_bwd", (int)cudaGetLastError());
      if (s) return s;
      b = tile;
    }
    struct fg_gemm_call g = {};
    g.mode = (fg_gemm_mode)c->mode;
    g.trans_a = false;
    g.trans_b = false;
    g.m = c->n_tok;
    g.n = c->n_in;
    g.k = on;
    g.alpha = 1.0f;
    g.beta = o0 > 0 || c->accumulate ? 1.0f : 0.0f;
    g.a = c->dy + o0;
    g.a_type = FG_F32;
    g.lda = c->n_out;
    g.b = b;
    g.b_type = FG_F32;
    g.ldb = c->n_in;
    g.c = c->dx;
    g.ldc = c->n_in;
    fg_status s = fg_cuda_gemm(dev, &g, stream);
    if (s) return s;
  }
  return FG_OK;
}

extern "C" fg_status fg_cuda_linear_bwd(fg_device *dev, const fg_linear_bwd_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "linear_bwd");
  if (s) return s;
  cudaStream_t st = (cudaStream_t)stream->impl;
  const bool fits = c->n_tok <= INT_MAX && c->n_in <= INT_MAX && c->n_out <= INT_MAX;
  // n_out == 0 has no product term: the exact kernel writes the +0 sums.
  if (c->mode == FG_GEMM_EXACT || c->n_out == 0 || c->n_tok <= FG_LB_CU_EXACT_TOK || !fits)
    return fg_lb_cu_exact(dev, c, st);
  return fg_lb_cu_blas(dev, c, stream);
}
