/* The CUDA backend's GEMM family (cuda/cuda_gemm.c: fg_cuda_gemm, cuBLAS and dispatch;
 * cuda/kernels/gemm_exact.cu: the exact mode's kernel). Internal. */
#ifndef FORGIA_CUDA_GEMM_H
#define FORGIA_CUDA_GEMM_H

#include "device/backend.h"
#include "device/gemm_call.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Destroys dev's cuBLAS handle, if one was created (the backend's close). */
void fg_cuda_blas_release(fg_device *dev);
/* The exact mode (and, for k == 0, C = beta * C in every mode) on stream; returns the
 * launch's cudaError_t as int. */
int fg_cuda_launch_gemm_exact(const struct fg_gemm_call *g, void *stream);

#ifdef __cplusplus
}
#endif
#endif
