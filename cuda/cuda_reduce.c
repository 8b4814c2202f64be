/* Reductions on CUDA: the list's tables (tensor descriptors, chunk -> tensor map, zeroed
 * completion counters) go to the stream's scratch in one copy from a pinned staging buffer,
 * then one kernel (cuda/kernels/reduce.cu) computes the partials and both serial combines
 * and writes the results in device memory. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "device/reduce_call.h"
#include "device/scratch.h"

static size_t fg_round16(size_t b) { return (b + 15) / 16 * 16; }

fg_status fg_cuda_reduce(fg_device *dev, const struct fg_reduce_call *r, fg_stream *s) {
  cudaError_t e = cudaSetDevice(dev->index);
  if (e != cudaSuccess) return fg_fail(FG_ERR_DEVICE, "%s: cudaSetDevice failed: %s", dev->spec, cudaGetErrorString(e));
  if (r->count == 0) {
    e = r->total ? cudaMemsetAsync(r->total, 0, sizeof(double), (cudaStream_t)s->impl) : cudaSuccess; /* +0.0 */
    return e == cudaSuccess ? FG_OK
                            : fg_fail(FG_ERR_DEVICE, "%s: reduce: cudaMemsetAsync failed: %s", dev->spec,
                                      cudaGetErrorString(e));
  }
  /* One block per chunk: the grid's x dimension and the u32 tables bound the list. */
  if (r->nchunks > 0x7fffffffu || r->count > 0x7fffffffu)
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: reduce: %zu chunks of %u values (%zu tensors) exceed one launch",
                   dev->spec, r->nchunks, FG_REDUCE_CHUNK, r->count);
  const size_t desc_b = fg_round16(r->count * sizeof(fg_cuda_red_desc));
  const size_t map_b = fg_round16(r->nchunks * sizeof(uint32_t));
  const size_t done_b = fg_round16((r->count + 1) * sizeof(uint32_t));
  const size_t up_b = desc_b + map_b + done_b;
  const size_t part_b = r->nchunks * sizeof(double), pt_b = r->count * sizeof(double);
  void *host, *mem;
  fg_status st = fg_stream_scratch(s, up_b + part_b + pt_b, &mem);
  if (st == FG_OK) st = fg_stream_stage(s, up_b, &host);
  if (st) return st;
  fg_cuda_red_desc *desc = host;
  uint32_t *map = (uint32_t *)((char *)host + desc_b);
  size_t g = 0;
  for (size_t t = 0; t < r->count; t++) {
    const void *x;
    fg_dtype dt;
    size_t n;
    fg_reduce_call_at(r, t, &x, &dt, &n);
    const size_t nc = fg_reduce_nchunks(n);
    desc[t] = (fg_cuda_red_desc){x, n, g, (uint32_t)nc, (uint32_t)dt};
    for (size_t c = 0; c < nc; c++) map[g++] = (uint32_t)t;
  }
  memset((char *)host + desc_b + map_b, 0, done_b);
  st = fg_stream_stage_copy(s, mem, host, up_b);
  if (st) return st;
  char *base = mem;
  const fg_cuda_red_args a = {
      .desc = (const fg_cuda_red_desc *)base,
      .map = (const uint32_t *)(base + desc_b),
      .done = (uint32_t *)(base + desc_b + map_b),
      .part = (double *)(base + up_b),
      .pt = (double *)(base + up_b + part_b),
      .per_tensor = r->per_tensor,
      .total = r->total,
      .count = (uint32_t)r->count,
      .nchunks = (uint32_t)r->nchunks,
  };
  int k = fg_cuda_launch_reduce(r->op, &a, s->impl);
  if (k < 0) return fg_fail(FG_ERR_UNSUPPORTED, "%s: reduce op %d has no CUDA kernel", dev->spec, r->op);
  if (k)
    return fg_fail(FG_ERR_DEVICE, "%s: reduce kernel launch failed: %s", dev->spec, cudaGetErrorString((cudaError_t)k));
  return FG_OK;
}
