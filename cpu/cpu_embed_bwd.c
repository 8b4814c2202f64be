/* The embedding gradient on the CPU (forgia/embed.h): OpenMP over chunks of columns, each
 * thread walking every token in order and adding its row into the table gradient's row by
 * elem/embed.h's step. An element is only ever touched by the thread that owns its column,
 * always with t ascending, so repeated ids sum in token order and the bits do not depend on
 * the thread count (and equal CUDA's). */
#include <omp.h>

#include "device/backend.h"
#include "forgia/elem/embed.h"

/* Chunk edges fall on multiples of this many columns (a 64-byte line of each row). */
#define FG_CPU_EB_ALIGN 16

static void fg_cpu_eb_cols(const fg_embed_bwd_call *c, size_t c0, size_t c1) {
  const float scale = c->scale;
  for (size_t t = 0; t < c->n_ids; t++) {
    float *restrict d = fg_embed_bwd_row(c, t);
    if (!d) continue;
    const float *restrict g = c->dy + t * c->n_cols;
    for (size_t k = c0; k < c1; k++) d[k] = fg_embed_bwd_step(d[k], g[k], scale);
  }
}

fg_status fg_cpu_embed_bwd(fg_device *dev, const fg_embed_bwd_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  const size_t units = (c->n_cols + FG_CPU_EB_ALIGN - 1) / FG_CPU_EB_ALIGN;
  const int nth = c->n_ids * c->n_cols > 65536 ? omp_get_max_threads() : 1;
  const long long chunks = (long long)((size_t)nth < units ? (size_t)nth : units);
  /* One chunk per thread, of whole units: every thread walks every token once. */
#pragma omp parallel for schedule(static) num_threads(nth)
  for (long long k = 0; k < chunks; k++) {
    const size_t c0 = (size_t)k * units / (size_t)chunks * FG_CPU_EB_ALIGN,
                 c1 = (size_t)(k + 1) * units / (size_t)chunks * FG_CPU_EB_ALIGN;
    fg_cpu_eb_cols(c, c0, c1 < c->n_cols ? c1 : c->n_cols);
  }
  return FG_OK;
}
