#include "cpu/cpu_ops.h"

/* Each chunk is computed exactly as one CUDA block computes it (elem/reduce.h), so the
 * partials, and hence the final tree, do not depend on how chunks map to threads. */
void fg_cpu_reduce_chunks(const float *x, size_t n, fg_sum2 *out) {
  const long nc = (long)fg_reduce_nchunks(n);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < nc; c++) {
    fg_sum2 lanes[FG_REDUCE_LANES];
    for (unsigned l = 0; l < FG_REDUCE_LANES; l++) lanes[l] = fg_reduce_lane(x, n, (size_t)c, l);
    fg_reduce_tree(lanes, FG_REDUCE_LANES);
    out[c] = lanes[0];
  }
}
