/* RoPE on the CPU (forgia/rope.h): OpenMP over tokens, each pair rotated by elem/rope.h.
 * Pairs are independent, so the bits do not depend on the thread count and equal CUDA's. */
#include "device/backend.h"
#include "forgia/elem/rope.h"

fg_status fg_cpu_rope(fg_device *dev, const fg_rope_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  const long long n_tok = (long long)c->n_tok;
  const size_t per_tok = c->n_heads * c->head_dim, half = c->n_dims / 2;
#pragma omp parallel for schedule(static) if (c->n_tok * per_tok > 32768)
  for (long long t = 0; t < n_tok; t++) {
    const float *row = fg_rope_row(c, (size_t)t);
    if (!row) continue;
    float *x = c->x + (size_t)t * per_tok;
    for (size_t h = 0; h < c->n_heads; h++)
      for (size_t i = 0; i < half; i++) fg_rope_pair(c, x + h * c->head_dim, row, i);
  }
  return FG_OK;
}
