/* The op layer on CUDA: the argument list and its chunk table go to the device in one copy
 * from a pinned staging buffer, then one launch runs the whole list. */
#include <cuda_runtime_api.h>
#include <string.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "device/op_chunks.h"
#include "device/scratch.h"

/* Elements per block: apex's order of magnitude; a 4K-element tensor is one block. */
#define FG_CUDA_OP_CHUNK 32768

fg_status fg_cuda_op(fg_device *dev, const fg_op_call *call, fg_stream *stream) {
  const int op = call->op;
  const fg_op_params *p = call->p;
  const fg_op_args *list = call->list;
  const size_t count = call->count;
  cudaError_t e = cudaSetDevice(dev->index);
  if (e != cudaSuccess) return fg_fail(FG_ERR_DEVICE, "%s: cudaSetDevice failed: %s", dev->spec, cudaGetErrorString(e));
  const size_t nchunks = fg_op_chunk_count(list, count, FG_CUDA_OP_CHUNK);
  const size_t list_bytes = (count * sizeof *list + 15) / 16 * 16;
  const size_t bytes = list_bytes + nchunks * sizeof(fg_op_chunk);
  void *host, *devmem;
  fg_status st = fg_stream_scratch(stream, bytes, &devmem);
  if (st == FG_OK) st = fg_stream_stage(stream, bytes, &host);
  if (st) return st;
  memcpy(host, list, count * sizeof *list);
  fg_op_chunk_fill(list, count, FG_CUDA_OP_CHUNK, (fg_op_chunk *)((char *)host + list_bytes));
  st = fg_stream_stage_copy(stream, devmem, host, bytes);
  if (st) return st;
  int k = fg_cuda_launch_op(op, p, (const fg_op_args *)devmem, (const fg_op_chunk *)((char *)devmem + list_bytes),
                            nchunks, stream->impl);
  if (k < 0) return fg_fail(FG_ERR_UNSUPPORTED, "%s: op %d has no CUDA kernel", dev->spec, op);
  if (k) return fg_fail(FG_ERR_DEVICE, "%s: op kernel launch failed: %s", dev->spec, cudaGetErrorString((cudaError_t)k));
  return FG_OK;
}
