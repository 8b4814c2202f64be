/* Launchers for the kernels in cuda/kernels/, callable from C. Each returns a
 * cudaError_t as int (0 = success). Internal. */
#ifndef FORGIA_CUDA_KERNELS_H
#define FORGIA_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/dtype.h"
#include "device/op_chunks.h"
#include "forgia/elem/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns -1 for an unsupported pair, else the launch's cudaError_t. */
int fg_cuda_launch_convert(void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n, void *stream);
/* Dequantizes n elements of block type st to f32; -1 when elem/ has no decoder for st. */
int fg_cuda_launch_dequant(float *dst, const void *src, fg_dtype st, size_t n, void *stream);
/* The reductions of elem/reduce.h over a list (cuda/kernels/reduce.cu), one block per
 * chunk; every table in device memory. */
typedef struct fg_cuda_red_desc {
  const void *x;
  uint64_t n;
  uint64_t first;   /* the tensor's first chunk in the list */
  uint32_t nchunks; /* fg_reduce_nchunks(n) */
  uint32_t dtype;   /* f32, f16 or bf16 */
} fg_cuda_red_desc;
typedef struct fg_cuda_red_args {
  const fg_cuda_red_desc *desc; /* count entries */
  const uint32_t *map;          /* nchunks entries: chunk -> tensor */
  uint32_t *done;               /* count + 1 counters, zero at launch */
  double *part;                 /* nchunks partials */
  double *pt;                   /* count per-tensor results */
  double *per_tensor, *total;   /* the caller's results; either may be NULL */
  uint32_t count, nchunks;
} fg_cuda_red_args;
/* -1 for an unknown op. */
int fg_cuda_launch_reduce(int op, const fg_cuda_red_args *a, void *stream);
/* *out = ((0 + x[0]) + x[1]) + ... in one thread (n is a handful of totals). */
int fg_cuda_launch_sum_f64(const double *x, size_t n, double *out, void *stream);
/* The trit calls of forgia/es_trits.h (cuda/kernels/es_trits.cu), pointers in device memory. */
struct fg_es_trits_call;
int fg_cuda_launch_es_trits(const struct fg_es_trits_call *c, void *stream);
/* The op layer: list and chunks in device memory; -1 for an unknown op. */
int fg_cuda_launch_op(int op, const fg_op_params *p, const fg_op_args *list, const fg_op_chunk *chunks, size_t nchunks,
                      void *stream);

#ifdef __cplusplus
}
#endif
#endif
