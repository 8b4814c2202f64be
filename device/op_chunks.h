/* The chunk table of the op layer (internal): a list of tensors cut into work items of at
 * most chunk elements, so that many small tensors share one launch and a large one is
 * split (apex's multi-tensor apply). Both launchers use it; the values do not depend on
 * the cut, because every element is computed alone. */
#ifndef FORGIA_DEVICE_OP_CHUNKS_H
#define FORGIA_DEVICE_OP_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/op_params.h"

/* One validated op-layer call (device/op.c), as the op family's launchers take it. */
typedef struct fg_op_call {
  int op;                 /* fg_op_kind */
  const fg_op_params *p;  /* host memory */
  const fg_op_args *list; /* count entries in host memory */
  size_t count;
} fg_op_call;

typedef struct fg_op_chunk {
  uint64_t t;     /* index in the list */
  uint64_t start; /* first element */
  uint64_t len;   /* elements, 1..chunk */
} fg_op_chunk;

static inline size_t fg_op_chunk_count(const fg_op_args *list, size_t count, size_t chunk) {
  size_t total = 0;
  for (size_t t = 0; t < count; t++) total += (list[t].n + chunk - 1) / chunk;
  return total;
}

static inline void fg_op_chunk_fill(const fg_op_args *list, size_t count, size_t chunk, fg_op_chunk *out) {
  size_t k = 0;
  for (size_t t = 0; t < count; t++)
    for (size_t s = 0; s < list[t].n; s += chunk)
      out[k++] = (fg_op_chunk){t, s, list[t].n - s < chunk ? list[t].n - s : chunk};
}

#endif
