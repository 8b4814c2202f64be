/* The argument blocks of the op layer (include/forgia/ops.h), shared by host code, the
 * CPU launcher and the CUDA kernels. Plain data: no pointers to host memory reach a device
 * except dscalar, which must point to memory on the device that runs the op. */
#ifndef FORGIA_ELEM_OP_PARAMS_H
#define FORGIA_ELEM_OP_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/dtype_enum.h"

#define FG_OP_MAX_STREAMS 6
/* The widened values of an op's streams for one element (elem/op_table.h). */
typedef float fg_op_vals[FG_OP_MAX_STREAMS];

/* Scalars for one call, prepared once on the host (f64 where the rule says so, rounded once).
 * Each op in elem/op_table.h says which slots it reads. */
typedef struct fg_op_params {
  float f[8];
  double d[4];
  uint64_t u[4];
  const double *dscalar; /* a scalar in device memory (a reduction's result), or NULL */
  const void *dtable;    /* a table in device memory that an op reads (ES's streams), or NULL */
} fg_op_params;

/* One tensor's streams: stream k of element i is ((T *)ptr[k])[i], T given by dtype[k]. */
typedef struct fg_op_args {
  void *ptr[FG_OP_MAX_STREAMS]; /* device memory, borrowed; may alias only where the op says */
  fg_dtype dtype[FG_OP_MAX_STREAMS];
  size_t n;                     /* elements */
  uint64_t seed;                /* this tensor's random stream (RNG ops) */
  uint64_t index0;              /* the stream counter of element 0 (RNG ops: a window) */
} fg_op_args;

#endif
