/* Whether two byte ranges of one address space overlap (empty ranges never do): the
 * "output must not alias an input" checks of the fronts (device/gemm.c, device/rmsnorm.c).
 * Internal. */
#ifndef FORGIA_DEVICE_OVERLAP_H
#define FORGIA_DEVICE_OVERLAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool fg_bytes_overlap(const void *x, size_t xb, const void *y, size_t yb) {
  const uintptr_t a = (uintptr_t)x, b = (uintptr_t)y;
  return x && y && xb && yb && a < b + yb && b < a + xb;
}

#endif
