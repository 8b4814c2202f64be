/* One validated APOLLO kernel call (forgia/apollo.h), as device/apollo.c hands it to a
 * backend's apollo slot. Internal. */
#ifndef FORGIA_DEVICE_APOLLO_CALL_H
#define FORGIA_DEVICE_APOLLO_CALL_H

#include <stddef.h>

enum { FG_APOLLO_KERNEL_SCALING = 0, FG_APOLLO_KERNEL_BUILD = 1, FG_APOLLO_KERNEL_LIMIT = 2 };

typedef struct fg_apollo_call {
  int kernel, layout;
  size_t rows, cols, rank;
  const float *m, *v, *r, *g;
  float eps, front;
  float *scaling;        /* SCALING: written */
  const float *factors;  /* BUILD: the scaling factors read */
  float *u;
  const double *sumsq;
  float *prev_norm;
  double *limiter;
} fg_apollo_call;

/* Channels of a layout. */
static inline size_t fg_apollo_call_channels(const fg_apollo_call *c) {
  return c->layout == 0 ? c->rows : c->layout == 1 ? c->cols : 1;
}

#endif
