// The trit calls of forgia/es_trits.h on CUDA, through elem/es_trits.h. Flips and the undo
// replay run on a single thread: each flip reads the code the ones before it left, so their
// order is the result. Moves touch distinct elements, one thread each; four elements share
// a byte, so a move rewrites its byte inside an atomicCAS on the aligned 16-bit word that
// holds it (blocks are 66 bytes and 2-byte aligned, so the word never leaves the genome),
// which makes the result independent of how the threads interleave.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "device/es_trits_call.h"
#include "forgia/elem/es_trits.h"

__global__ void fg_es_trits_flip_kernel(fg_es_trits_call c) {
  fg_trit_flips(c.blocks, c.len, c.seed, c.count, c.mirrored, c.log_idx, c.log_code);
}

__global__ void fg_es_trits_undo_kernel(fg_es_trits_call c) { fg_trit_undo(c.blocks, c.len, c.idx, c.code, c.count); }

__global__ void fg_es_trits_move_kernel(fg_es_trits_call c) {
  const uint64_t step = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < c.count; j += step) {
    const uint64_t e = c.idx[j];
    if (e >= c.len) continue;
    const uint64_t off = fg_trit_byte(e);
    unsigned short *word = (unsigned short *)(c.blocks + (off & ~(uint64_t)1));
    const unsigned sh = (unsigned)(off & 1u) * 8u; // little-endian: the odd byte is the high half
    unsigned short seen = *word, want;
    do {
      want = seen;
      const uint8_t moved = fg_trit_moved_byte((uint8_t)(want >> sh), e, c.dir[j]);
      const unsigned short next = (unsigned short)((want & ~(0xFFu << sh)) | ((unsigned)moved << sh));
      seen = atomicCAS(word, want, next);
    } while (seen != want);
  }
}

extern "C" fg_status fg_cuda_es_trits(fg_device *dev, const fg_es_trits_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "es_trits");
  if (s) return s;
  cudaStream_t st = (cudaStream_t)stream->impl;
  if (c->kernel == FG_ES_TRITS_FLIP) {
    fg_es_trits_flip_kernel<<<1, 1, 0, st>>>(*c);
  } else if (c->kernel == FG_ES_TRITS_UNDO) {
    fg_es_trits_undo_kernel<<<1, 1, 0, st>>>(*c);
  } else {
    uint64_t blocks = (c->count + 255) / 256;
    if (blocks > 65535) blocks = 65535;
    fg_es_trits_move_kernel<<<(unsigned)blocks, 256, 0, st>>>(*c);
  }
  return fg_cuda_launch_status(dev, "es_trits", (int)cudaGetLastError());
}
