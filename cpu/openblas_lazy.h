/* OpenBLAS, loaded on the first fast CPU GEMM (internal).
 *
 * Why not linked: OpenBLAS picks its kernels once, in its load-time constructor, from the
 * CPU's model number, and on CPUs it does not know (virtual machines that report a generic
 * "Intel Xeon Processor" among them) it falls back to its Prescott (SSE3) kernels: 5-6x
 * slower SGEMM than its AVX-512 kernels on the same machine (bench_gemm: 17 vs 98 GFLOP/s at
 * 1024, 2 threads). Its only switch is the OPENBLAS_CORETYPE environment variable, read in
 * that constructor, so forgia must set it before the library loads: when the user has not
 * set it, forgia names the core from the CPU's features (AVX-512 F/CD/BW/DQ/VL: SkylakeX;
 * AVX2 and FMA: Haswell; otherwise none, leaving OpenBLAS's own choice), loads OpenBLAS, and
 * restores the environment. If OpenBLAS is already in the process (loaded by another
 * library), its kernels stay as they were chosen. OpenBLAS is set to one thread (forgia cuts each
 * GEMM over its own OpenMP team, cpu/cpu_gemm.c): a second thread pool next to OpenMP's
 * lost its cores to libgomp's spinning workers. */
#ifndef FORGIA_CPU_OPENBLAS_LAZY_H
#define FORGIA_CPU_OPENBLAS_LAZY_H

#include <cblas.h>

#include "forgia/status.h"

typedef void (*fg_sgemm_fn)(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, blasint m,
                            blasint n, blasint k, float alpha, const float *a, blasint lda, const float *b,
                            blasint ldb, float beta, float *c, blasint ldc);

typedef struct fg_openblas_api {
  fg_sgemm_fn sgemm;
  const char *core; /* the core OpenBLAS runs ("SkylakeX", ...), or "unknown" */
} fg_openblas_api;

/* The loaded API, or NULL with fg_last_error set (the library or cblas_sgemm is missing). */
const fg_openblas_api *fg_openblas(void);
/* The core forgia asks OpenBLAS for on this CPU, or NULL (see above). */
const char *fg_openblas_core_for_cpu(void);

#endif
