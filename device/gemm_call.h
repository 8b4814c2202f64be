/* A validated GEMM as device/gemm.c hands it to a backend's gemm slot (internal). */
#ifndef FORGIA_DEVICE_GEMM_CALL_H
#define FORGIA_DEVICE_GEMM_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/gemm.h"

/* Row-major, as in forgia/gemm.h. Invariants the backends rely on: m, n > 0; mode is FAST,
 * FAST_TF32 or EXACT (never DEFAULT); k == 0 means no product term (also set when alpha was
 * 0): a and b are then NULL and the backend writes C = beta * C with the exact mode's
 * elements, whatever the mode. With k > 0, a_type and b_type are FG_F32 or FG_BF16, lda/ldb
 * cover the stored rows, every element offset fits in size_t and in a ptrdiff_t of bytes,
 * and in the fast modes m, n, k and the leading dimensions are <= INT_MAX. */
struct fg_gemm_call {
  fg_gemm_mode mode;
  bool trans_a, trans_b;
  size_t m, n, k;
  float alpha, beta;
  const void *a;
  fg_dtype a_type;
  size_t lda;
  const void *b;
  fg_dtype b_type;
  size_t ldb;
  float *c;
  size_t ldc;
};

#endif
