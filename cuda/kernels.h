/* Launchers for the kernels in cuda/kernels/, callable from C. Each returns a
 * cudaError_t as int (0 = success). Internal. */
#ifndef FORGIA_CUDA_KERNELS_H
#define FORGIA_CUDA_KERNELS_H

#include <stddef.h>

#include "forgia/dtype.h"
#include "forgia/elem/reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns -1 for an unsupported pair, else the launch's cudaError_t. */
int fg_cuda_launch_convert(void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n, void *stream);
/* Dequantizes n elements of block type st to f32; -1 when elem/ has no decoder for st. */
int fg_cuda_launch_dequant(float *dst, const void *src, fg_dtype st, size_t n, void *stream);
/* Writes nchunks partials into device memory part[]. */
int fg_cuda_launch_reduce_chunks(const float *x, size_t n, fg_sum2 *part, void *stream);

#ifdef __cplusplus
}
#endif
#endif
