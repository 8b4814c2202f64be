/* cuBLAS, loaded on first use (internal). Linking libcublas would map and relocate a few
 * hundred MB into every process that links forgia (the CLI's inspect went from 5 MB to
 * 220 MB of RSS), although only GEMM needs it; dlopen defers that to the first fast GEMM. */
#ifndef FORGIA_CUDA_CUBLAS_LAZY_H
#define FORGIA_CUDA_CUBLAS_LAZY_H

#include <cublas_v2.h>

#include "forgia/status.h"

typedef struct fg_cublas_api {
  __typeof__(cublasCreate_v2) *create;
  __typeof__(cublasDestroy_v2) *destroy;
  __typeof__(cublasSetStream_v2) *set_stream;
  __typeof__(cublasSetMathMode) *set_math_mode;
  __typeof__(cublasGemmEx) *gemm_ex;
  __typeof__(cublasGetStatusString) *status_string;
} fg_cublas_api;

/* The loaded API, or NULL with fg_last_error set (the library or a symbol is missing). */
const fg_cublas_api *fg_cublas(void);
/* A status in words ("CUBLAS_STATUS_..." or its number when the library cannot say). */
const char *fg_cublas_status(cublasStatus_t st);

#endif
