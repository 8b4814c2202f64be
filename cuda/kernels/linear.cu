// The linear layer on CUDA (forgia/linear.h, elem/linear.h). Built with --fmad=false, and
// the exact step uses the _rn intrinsics, so the exact mode's bits are the CPU launcher's.
//   exact  one thread per output (t, o): W's row o decoded block by block into registers /
//          local memory and summed in input order.
//   fast   up to FG_LIN_CU_GEMV_TOK tokens per launch: one warp per row of W, each lane
//          decoding every 32nd block and dotting it with the tokens, then a shuffle sum;
//          more tokens: tiles of W decoded to f32 in the stream's scratch and handed to
//          cuBLAS through the gemm family's fast path (cuda/cuda_gemm.c).
#include <cuda_runtime.h>
#include <limits.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "device/gemm_call.h"
#include "device/scratch.h"
#include "forgia/elem/linear.h"

#define FG_LIN_CU_GEMV_TOK 8
#define FG_LIN_CU_WARPS 8
// The decoded f32 tile the cuBLAS path works on, at most.
#define FG_LIN_CU_TILE_BYTES ((size_t)64 << 20)

static unsigned fg_lin_cu_blocks(size_t items, size_t per_block) {
  size_t b = (items + per_block - 1) / per_block;
  return (unsigned)(b > 65535 ? 65535 : b < 1 ? 1 : b);
}

__global__ void fg_lin_exact_kernel(fg_linear_call c) {
  const size_t total = c.n_tok * c.n_out, nb = c.n_in / c.block_elems;
  for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (size_t)gridDim.x * blockDim.x) {
    const size_t t = idx / c.n_out, o = idx % c.n_out;
    const uint8_t *row = (const uint8_t *)c.w + o * c.row_bytes;
    const float *x = c.x + t * c.n_in;
    float buf[FG_LINEAR_MAX_BLOCK];
    float acc = 0.0f;
    for (size_t b = 0; b < nb; b++) {
      fg_dequant_block(c.w_type, row + b * c.block_bytes, buf);
      for (unsigned j = 0; j < c.block_elems; j++) acc = fg_gemm_exact_step(acc, x[b * c.block_elems + j], buf[j]);
    }
    float *y = c.y + t * c.n_out + o;
    *y = fg_linear_out(acc, c.accumulate, c.accumulate ? *y : 0.0f);
  }
}

// Tokens [t0, t0 + nt), nt <= FG_LIN_CU_GEMV_TOK.
__global__ void fg_lin_gemv_kernel(fg_linear_call c, size_t t0, unsigned nt) {
  const unsigned lane = threadIdx.x & 31u;
  const size_t nb = c.n_in / c.block_elems, step = (size_t)gridDim.x * FG_LIN_CU_WARPS;
  for (size_t o = (size_t)blockIdx.x * FG_LIN_CU_WARPS + threadIdx.x / 32; o < c.n_out; o += step) {
    const uint8_t *row = (const uint8_t *)c.w + o * c.row_bytes;
    float acc[FG_LIN_CU_GEMV_TOK];
    for (unsigned t = 0; t < FG_LIN_CU_GEMV_TOK; t++) acc[t] = 0.0f;
    float buf[FG_LINEAR_MAX_BLOCK];
    for (size_t b = lane; b < nb; b += 32) {
      fg_dequant_block(c.w_type, row + b * c.block_bytes, buf);
      for (unsigned t = 0; t < nt; t++) {
        const float *x = c.x + (t0 + t) * c.n_in + b * c.block_elems;
        for (unsigned j = 0; j < c.block_elems; j++) acc[t] += x[j] * buf[j];
      }
    }
    for (unsigned t = 0; t < nt; t++) {
      float s = acc[t];
      for (unsigned h = 16; h >= 1; h /= 2) s += __shfl_down_sync(0xffffffffu, s, h);
      if (lane == 0) {
        float *y = c.y + (t0 + t) * c.n_out + o;
        *y = c.accumulate ? *y + s : s;
      }
    }
  }
}

// Rows [o0, o0 + rows) of W decoded to f32 (rows x n_in at out): one thread per block.
__global__ void fg_lin_decode_kernel(fg_linear_call c, size_t o0, size_t rows, float *out) {
  const size_t per_row = c.n_in / c.block_elems, total = rows * per_row;
  const uint8_t *w = (const uint8_t *)c.w + o0 * c.row_bytes;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
    fg_dequant_block(c.w_type, w + (i / per_row) * c.row_bytes + (i % per_row) * c.block_bytes,
                     out + i * c.block_elems);
}

static fg_status fg_lin_cu_gemv(fg_device *dev, const fg_linear_call *c, cudaStream_t st) {
  for (size_t t0 = 0; t0 < c->n_tok; t0 += FG_LIN_CU_GEMV_TOK) {
    const unsigned nt = (unsigned)(c->n_tok - t0 < FG_LIN_CU_GEMV_TOK ? c->n_tok - t0 : FG_LIN_CU_GEMV_TOK);
    fg_lin_gemv_kernel<<<fg_lin_cu_blocks(c->n_out, FG_LIN_CU_WARPS), 32 * FG_LIN_CU_WARPS, 0, st>>>(*c, t0, nt);
    fg_status s = fg_cuda_launch_status(dev, "linear", (int)cudaGetLastError());
    if (s) return s;
  }
  return FG_OK;
}

// Decoded tiles of W through the gemm family's fast path: y[:, o0 .. o0 + on) = x tile^T
// (+ y). Every tile is queued on the stream, so reusing one scratch block is ordered.
static fg_status fg_lin_cu_blas(fg_device *dev, const fg_linear_call *c, fg_stream *stream) {
  const bool direct = c->w_type == FG_F32;
  size_t rows = FG_LIN_CU_TILE_BYTES / (c->n_in * 4);
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
      fg_lin_decode_kernel<<<fg_lin_cu_blocks(on * (c->n_in / c->block_elems), 256), 256, 0, st>>>(*c, o0, on, tile);
      fg_status s = fg_cuda_launch_status(dev, "linear", (int)cudaGetLastError());
      if (s) return s;
      b = tile;
    }
    struct fg_gemm_call g = {};
    g.mode = (fg_gemm_mode)c->mode;
    g.trans_a = false;
    g.trans_b = true;
    g.m = c->n_tok;
    g.n = on;
    g.k = c->n_in;
    g.alpha = 1.0f;
    g.beta = c->accumulate ? 1.0f : 0.0f;
    g.a = c->x;
    g.a_type = FG_F32;
    g.lda = c->n_in;
    g.b = b;
    g.b_type = FG_F32;
    g.ldb = c->n_in;
    g.c = c->y + o0;
    g.ldc = c->n_out;
    fg_status s = fg_cuda_gemm(dev, &g, stream);
    if (s) return s;
  }
  return FG_OK;
}

extern "C" fg_status fg_cuda_linear(fg_device *dev, const fg_linear_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "linear");
  if (s) return s;
  cudaStream_t st = (cudaStream_t)stream->impl;
  if (c->mode == FG_GEMM_EXACT || c->n_in == 0) {
    fg_lin_exact_kernel<<<fg_lin_cu_blocks(c->n_tok * c->n_out, 256), 256, 0, st>>>(*c);
    return fg_cuda_launch_status(dev, "linear", (int)cudaGetLastError());
  }
  const bool fits = c->n_tok <= INT_MAX && c->n_in <= INT_MAX && c->n_out <= INT_MAX;
  if (c->n_tok <= FG_LIN_CU_GEMV_TOK || !fits) return fg_lin_cu_gemv(dev, c, st);
  return fg_lin_cu_blas(dev, c, stream);
}
