/* One validated reduction, as device/reduce.c hands it to a backend's reduce slot. Internal. */
#ifndef FORGIA_DEVICE_REDUCE_CALL_H
#define FORGIA_DEVICE_REDUCE_CALL_H

#include <stddef.h>

#include "forgia/elem/reduce.h"
#include "forgia/tensor.h"

typedef struct fg_reduce_call {
  int op;       /* fg_reduce_op */
  size_t count; /* tensors, >= 1 */
  /* The list, in host memory: either ts (tensors) or xs/dtypes/ns (count entries each). */
  const fg_tensor *const *ts;
  const void *const *xs;
  const fg_dtype *dtypes;
  const size_t *ns;
  size_t nchunks;     /* sum over the list of fg_reduce_nchunks(n) */
  double *per_tensor; /* device memory, count doubles, or NULL */
  double *total;      /* device memory, one double, or NULL (not both NULL) */
} fg_reduce_call;

/* Entry t of the list. */
static inline void fg_reduce_call_at(const fg_reduce_call *r, size_t t, const void **x, fg_dtype *dt, size_t *n) {
  if (r->ts) {
    *x = r->ts[t]->data;
    *dt = r->ts[t]->dtype;
    *n = (size_t)r->ts[t]->numel;
  } else {
    *x = r->xs[t];
    *dt = r->dtypes[t];
    *n = r->ns[t];
  }
}

/* fg_reduce_f64_sum: *out = ((0 + x[0]) + x[1]) + ... over n doubles in device memory. */
typedef struct fg_sum_f64_call {
  const double *x;
  size_t n;
  double *out;
} fg_sum_f64_call;

#endif
