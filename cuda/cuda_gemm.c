/* CUDA GEMM: cuBLAS for the fast modes, cuda/kernels/gemm_exact.cu for the exact one.
 *
 * One cuBLAS handle per device, created on first use under dev->blas_lock with the default
 * math mode, so f32 inputs are not rounded to TF32 unless a call asks (FG_GEMM_FAST_TF32 picks
 * CUBLAS_COMPUTE_32F_FAST_TF32). The lock is held from cublasSetStream to the enqueue, so
 * threads sharing the handle each get their own stream. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <limits.h>
#include <pthread.h>

#include "cuda/cublas_lazy.h"
#include "cuda/cuda_gemm.h"
#include "cuda/kernels.h"
#include "device/scratch.h"

static fg_status cu_gemm_fail(fg_device *dev, cublasStatus_t st, const char *what) {
  return fg_fail(st == CUBLAS_STATUS_ALLOC_FAILED ? FG_ERR_DEVICE_NOMEM : FG_ERR_DEVICE, "%s: %s failed: %s",
                 dev->spec, what, fg_cublas_status(st));
}

void fg_cuda_blas_release(fg_device *dev) {
  if (!dev->blas) return;
  const fg_cublas_api *api = fg_cublas(); /* loaded: a handle exists */
  if (api && cudaSetDevice(dev->index) == cudaSuccess) api->destroy((cublasHandle_t)dev->blas);
  dev->blas = NULL;
}

/* Called with dev->blas_lock held. */
static fg_status cu_blas_handle(fg_device *dev, const fg_cublas_api *api, cublasHandle_t *out) {
  if (!dev->blas) {
    cublasHandle_t h;
    cublasStatus_t st = api->create(&h);
    if (st != CUBLAS_STATUS_SUCCESS) return cu_gemm_fail(dev, st, "cublasCreate");
    st = api->set_math_mode(h, CUBLAS_DEFAULT_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) {
      api->destroy(h);
      return cu_gemm_fail(dev, st, "cublasSetMathMode");
    }
    dev->blas = h;
  }
  *out = (cublasHandle_t)dev->blas;
  return FG_OK;
}

/* A bf16 operand as f32 in scratch, leading dimension kept (the span between rows lies in
 * the caller's buffer, so converting it whole reads nothing out of bounds). */
static fg_status cu_widen(fg_device *dev, fg_stream *stream, const void *src, size_t rows, size_t cols, size_t ld,
                          const void **out) {
  size_t span = (rows - 1) * ld + cols;
  void *p;
  fg_status s = fg_stream_scratch(stream, span * 4, &p);
  if (s) return s;
  int e = fg_cuda_launch_convert(p, FG_F32, src, FG_BF16, span, stream->impl);
  if (e) return fg_fail(FG_ERR_DEVICE, "%s: gemm: widening bf16 failed: %s", dev->spec, cudaGetErrorString((cudaError_t)e));
  *out = p;
  return FG_OK;
}

static fg_status cu_gemm_fast(fg_device *dev, const struct fg_gemm_call *g, fg_stream *stream) {
  const void *a = g->a, *b = g->b;
  bool abf = g->a_type == FG_BF16, bbf = g->b_type == FG_BF16;
  /* cuBLAS takes bf16 x bf16 with f32 output and compute; a mixed pair goes through f32. */
  if (abf != bbf) {
    fg_status s = abf ? cu_widen(dev, stream, g->a, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, g->lda, &a)
                      : cu_widen(dev, stream, g->b, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, g->ldb, &b);
    if (s) return s;
    abf = bbf = false;
  }
  const cudaDataType_t t = abf ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute =
      (g->mode == FG_GEMM_FAST_TF32 && !abf) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same buffers with
   * the operands swapped and the transposes kept. */
  const fg_cublas_api *api = fg_cublas();
  if (!api) return fg_fail_prefix(FG_ERR_UNSUPPORTED, "%s: fast gemm: ", dev->spec);
  pthread_mutex_lock(&dev->blas_lock);
  cublasHandle_t h = NULL;
  fg_status s = cu_blas_handle(dev, api, &h);
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  const char *what = "cublasSetStream";
  if (s == FG_OK) st = api->set_stream(h, (cudaStream_t)stream->impl);
  if (s == FG_OK && st == CUBLAS_STATUS_SUCCESS) {
    what = "cublasGemmEx";
    st = api->gemm_ex(h, g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)g->n,
                      (int)g->m, (int)g->k, &g->alpha, b, t, (int)g->ldb, a, t, (int)g->lda, &g->beta, g->c,
                      CUDA_R_32F, (int)g->ldc, compute, CUBLAS_GEMM_DEFAULT);
  }
  pthread_mutex_unlock(&dev->blas_lock);
  if (s) return s;
  return st == CUBLAS_STATUS_SUCCESS ? FG_OK : cu_gemm_fail(dev, st, what);
}

fg_status fg_cuda_gemm(fg_device *dev, const struct fg_gemm_call *g, fg_stream *stream) {
  cudaError_t e = cudaSetDevice(dev->index);
  if (e != cudaSuccess) return fg_fail(FG_ERR_DEVICE, "%s: cudaSetDevice failed: %s", dev->spec, cudaGetErrorString(e));
  if (g->k > 0 && g->mode != FG_GEMM_EXACT) return cu_gemm_fast(dev, g, stream);
  int k = fg_cuda_launch_gemm_exact(g, stream->impl);
  if (k) return fg_fail(FG_ERR_DEVICE, "%s: exact gemm kernel: %s", dev->spec, cudaGetErrorString((cudaError_t)k));
  return FG_OK;
}
