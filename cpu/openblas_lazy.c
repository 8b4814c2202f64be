/* Loads OpenBLAS once, with a core chosen from the CPU's features (cpu/openblas_lazy.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/openblas_lazy.h"

static fg_openblas_api fg_openblas_loaded;
static const fg_openblas_api *fg_openblas_ok;
static char fg_openblas_why[512];
static pthread_once_t fg_openblas_once = PTHREAD_ONCE_INIT;

const char *fg_openblas_core_for_cpu(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return NULL;
}

static void fg_openblas_load(void) {
  static const char *const paths[] = {FORGIA_OPENBLAS_PATH, FORGIA_OPENBLAS_SONAME, "libopenblas.so"};
  const char *core = getenv("OPENBLAS_CORETYPE") ? NULL : fg_openblas_core_for_cpu();
  /* setenv before the load, unsetenv after: the variable is read by OpenBLAS's constructor
   * only, and the process's environment is left as it was found. */
  if (core) setenv("OPENBLAS_CORETYPE", core, 0);
  /* One thread: forgia cuts its GEMMs over its OpenMP team (cpu/cpu_gemm.c); without this
   * OpenBLAS would also start a worker per core at load. */
  const bool threads_unset = !getenv("OPENBLAS_NUM_THREADS");
  if (threads_unset) setenv("OPENBLAS_NUM_THREADS", "1", 0);
  void *h = NULL;
  for (size_t i = 0; i < sizeof paths / sizeof paths[0] && !h; i++)
    if (paths[i][0]) h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
  if (core) unsetenv("OPENBLAS_CORETYPE");
  if (threads_unset) unsetenv("OPENBLAS_NUM_THREADS");
  if (!h) {
    snprintf(fg_openblas_why, sizeof fg_openblas_why, "cannot load OpenBLAS (%s): %s", FORGIA_OPENBLAS_SONAME,
             dlerror());
    return;
  }
  fg_openblas_api *a = &fg_openblas_loaded;
  *(void **)&a->sgemm = dlsym(h, "cblas_sgemm");
  void (*set_threads)(int) = NULL;
  *(void **)&set_threads = dlsym(h, "openblas_set_num_threads");
  if (set_threads) set_threads(1);
  char *(*corename)(void) = NULL;
  *(void **)&corename = dlsym(h, "openblas_get_corename");
  a->core = corename ? corename() : "unknown";
  if (!a->sgemm) {
    snprintf(fg_openblas_why, sizeof fg_openblas_why, "OpenBLAS (%s) has no cblas_sgemm", FORGIA_OPENBLAS_SONAME);
    return;
  }
  fg_openblas_ok = a; /* the handle stays open for the life of the process */
}

const fg_openblas_api *fg_openblas(void) {
  pthread_once(&fg_openblas_once, fg_openblas_load);
  if (!fg_openblas_ok) fg_fail(FG_ERR_UNSUPPORTED, "%s", fg_openblas_why);
  return fg_openblas_ok;
}
