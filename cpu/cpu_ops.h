/* CPU launchers: OpenMP loops over the elem/ functions. Also used directly by host code
 * (the loader converts straight from a mapping with these). */
#ifndef FORGIA_CPU_OPS_H
#define FORGIA_CPU_OPS_H

#include <stddef.h>

#include "forgia/dtype.h"
#include "forgia/elem/reduce.h"

/* memcpy split over threads for large sizes (one thread cannot saturate memory bandwidth). */
void fg_cpu_memcpy(void *dst, const void *src, size_t bytes);
/* f32 -> f16/bf16/f32 and f16/bf16 -> f32; FG_ERR_UNSUPPORTED for other pairs. */
fg_status fg_cpu_convert(void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n);
/* out[c] for every chunk c of elem/reduce.h. */
void fg_cpu_reduce_chunks(const float *x, size_t n, fg_sum2 *out);

#endif
