/* APOLLO's kernels on the CPU (forgia/apollo.h): OpenMP over channels or elements, each value
 * computed alone by elem/op_apollo.h, so the bits do not depend on the thread count.
 * Synchronous like every CPU stream operation. */
#include "cpu/cpu_ops.h"
#include "device/apollo_call.h"
#include "forgia/elem/op_apollo.h"

fg_status fg_cpu_apollo(fg_device *dev, const struct fg_apollo_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  if (c->kernel == FG_APOLLO_KERNEL_SCALING) {
    const long long nch = (long long)fg_apollo_call_channels(c);
#pragma omp parallel for schedule(static) if (nch > 64)
    for (long long ch = 0; ch < nch; ch++) {
      size_t first, count, stride;
      fg_apollo_channel_span(c->layout, c->rows, c->cols, c->rank, (size_t)ch, &first, &count, &stride);
      c->scaling[ch] = fg_apollo_channel_factor(c->m, c->v, c->r, first, count, stride, c->eps);
    }
  } else if (c->kernel == FG_APOLLO_KERNEL_BUILD) {
    const long long n = (long long)(c->rows * c->cols);
#pragma omp parallel for schedule(static) if (n > (1 << 17))
    for (long long i = 0; i < n; i++) c->u[i] = fg_apollo_build_at(c->layout, c->g, c->factors, c->cols, (size_t)i, c->front);
  } else {
    *c->limiter = (double)fg_apollo_limit_eval(*c->sumsq, c->prev_norm);
  }
  return FG_OK;
}
