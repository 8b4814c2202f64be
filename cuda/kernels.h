/* Launchers for the kernels in cuda/kernels/, callable from C. Each returns a
 * cudaError_t as int (0 = success). Internal. */
#ifndef FORGIA_CUDA_KERNELS_H
#define FORGIA_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/device.h"
#include "forgia/dtype.h"
#include "device/op_chunks.h"
#include "forgia/elem/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For the family launchers (device/family_table.h) that live in .cu files: makes dev the
 * current device (FG_ERR_DEVICE naming dev and family when that fails), and turns a launch's
 * cudaError_t (as int) into a status naming dev and family. */
fg_status fg_cuda_use(fg_device *dev, const char *family);
fg_status fg_cuda_launch_status(fg_device *dev, const char *family, int err);

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
/* The op layer: list and chunks in device memory; -1 for an unknown op. */
int fg_cuda_launch_op(int op, const fg_op_params *p, const fg_op_args *list, const fg_op_chunk *chunks, size_t nchunks,
                      void *stream);

#ifdef __cplusplus
}
#endif
#endif
