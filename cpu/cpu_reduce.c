#include "cpu/cpu_ops.h"

/* Each chunk is computed exactly as one CUDA block computes it (elem/reduce.h), so the
 * partials, and hence the final tree, do not depend on how chunks map to threads. Full
 * chunks walk the lanes side by side (each lane still adds its elements in index order, so
 * the bits are fg_reduce_lane's) because that loop vectorises; the short last chunk uses
 * fg_reduce_lane itself. */
/* One full chunk. Cloned for AVX2: wider vectors run the same IEEE additions and
 * multiplications lane by lane, so every clone gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void fg_reduce_full_chunk(const float *xc, fg_sum2 *lanes) {
  double s[FG_REDUCE_LANES] = {0}, q[FG_REDUCE_LANES] = {0};
  for (size_t k = 0; k < FG_REDUCE_CHUNK; k += FG_REDUCE_LANES) {
    const float *xs = xc + k;
    for (unsigned l = 0; l < FG_REDUCE_LANES; l++) {
      const double v = (double)xs[l];
      s[l] = s[l] + v;
      q[l] = q[l] + v * v;
    }
  }
  for (unsigned l = 0; l < FG_REDUCE_LANES; l++) lanes[l] = (fg_sum2){s[l], q[l]};
}

void fg_cpu_reduce_chunks(const float *x, size_t n, fg_sum2 *out) {
  const long nc = (long)fg_reduce_nchunks(n);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < nc; c++) {
    fg_sum2 lanes[FG_REDUCE_LANES];
    const size_t base = (size_t)c * FG_REDUCE_CHUNK;
    if (base + FG_REDUCE_CHUNK <= n) {
      fg_reduce_full_chunk(x + base, lanes);
    } else {
      for (unsigned l = 0; l < FG_REDUCE_LANES; l++) lanes[l] = fg_reduce_lane(x, n, (size_t)c, l);
    }
    fg_reduce_tree(lanes, FG_REDUCE_LANES);
    out[c] = lanes[0];
  }
}
