/* Loads cuBLAS once, on the first fast GEMM: the path the build found first (so a toolkit
 * outside the loader's search path still works), then the soname. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "cuda/cublas_lazy.h"

static fg_cublas_api fg_cublas_loaded;
static const fg_cublas_api *fg_cublas_ok;
static char fg_cublas_why[512];
static pthread_once_t fg_cublas_once = PTHREAD_ONCE_INIT;

static void fg_cublas_load(void) {
  static const char *const paths[] = {FORGIA_CUBLAS_PATH, FORGIA_CUBLAS_SONAME, "libcublas.so"};
  void *h = NULL;
  for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !h; i++)
    if (paths[i][0]) h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(fg_cublas_why, sizeof fg_cublas_why, "cannot load cuBLAS (%s): %s", FORGIA_CUBLAS_SONAME, dlerror());
    return;
  }
  fg_cublas_api *a = &fg_cublas_loaded;
  *(void **)&a->create = dlsym(h, "cublasCreate_v2");
  *(void **)&a->destroy = dlsym(h, "cublasDestroy_v2");
  *(void **)&a->set_stream = dlsym(h, "cublasSetStream_v2");
  *(void **)&a->set_math_mode = dlsym(h, "cublasSetMathMode");
  *(void **)&a->gemm_ex = dlsym(h, "cublasGemmEx");
  *(void **)&a->status_string = dlsym(h, "cublasGetStatusString");
  if (!a->create || !a->destroy || !a->set_stream || !a->set_math_mode || !a->gemm_ex) {
    snprintf(fg_cublas_why, sizeof fg_cublas_why, "cuBLAS (%s) lacks a function forgia needs", FORGIA_CUBLAS_SONAME);
    return;
  }
  fg_cublas_ok = a; /* the handle stays open for the life of the process */
}

const fg_cublas_api *fg_cublas(void) {
  pthread_once(&fg_cublas_once, fg_cublas_load);
  if (!fg_cublas_ok) fg_fail(FG_ERR_UNSUPPORTED, "%s", fg_cublas_why);
  return fg_cublas_ok;
}

const char *fg_cublas_status(cublasStatus_t st) {
  static __thread char buf[32];
  if (fg_cublas_ok && fg_cublas_ok->status_string) return fg_cublas_ok->status_string(st);
  snprintf(buf, sizeof buf, "cuBLAS status %d", (int)st);
  return buf;
}
