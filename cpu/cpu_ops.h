/* CPU launchers: OpenMP loops over the elem/ functions. Also used directly by host code
 * (the loader converts straight from a mapping with these). */
#ifndef FORGIA_CPU_OPS_H
#define FORGIA_CPU_OPS_H

#include <stddef.h>

#include "device/backend.h"
#include "forgia/dtype.h"
#include "forgia/elem/op_params.h"
#include "forgia/elem/reduce.h"

/* memcpy split over threads for large sizes (one thread cannot saturate memory bandwidth). */
void fg_cpu_memcpy(void *dst, const void *src, size_t bytes);
/* f32 -> f16/bf16/f32 and f16/bf16 -> f32; FG_ERR_UNSUPPORTED for other pairs. */
fg_status fg_cpu_convert(void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n);
/* The kernel families' launchers (fg_cpu_<family>) are declared by device/family_table.h. */
/* A span of the op layer: elements [lo, hi) of one tensor of the list. */
typedef void (*fg_cpu_span_fn)(const fg_op_params *, const fg_op_args *, size_t, size_t);
/* The ops whose CPU loop is written by hand (cpu/cpu_es.c: the fast-gaussian ops, blocked
 * so that the noise vectorises); NULL for the others, which take the generic loop. */
fg_cpu_span_fn fg_cpu_span_override(int op);

#endif
