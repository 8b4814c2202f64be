/* The embedding gather on the CPU (forgia/embed.h): OpenMP over tokens, each row decoded
 * straight into its output row by elem/embed.h, then scaled. Rows are independent, so the
 * bits do not depend on the thread count and equal CUDA's. */
#include "device/backend.h"
#include "forgia/elem/embed.h"

fg_status fg_cpu_embed(fg_device *dev, const fg_embed_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  const long long n = (long long)c->n_ids;
  const size_t blocks = c->n_cols / c->block_elems;
#pragma omp parallel for schedule(static) if (c->n_ids * c->n_cols > 65536)
  for (long long t = 0; t < n; t++) {
    float *y = c->out + (size_t)t * c->n_cols;
    const uint8_t *row = fg_embed_row(c, (size_t)t);
    if (!row) {
      fg_embed_nan(y, c->n_cols);
      continue;
    }
    fg_embed_decode(c, row, 0, blocks, y);
    fg_embed_scale(c, y, c->n_cols);
  }
  return FG_OK;
}
