/* The linear layer's AVX2 kernels (cpu/cpu_linear_x86.c; internal). Every function returns
 * false, doing nothing, for a type it has no kernel for (the caller then takes its portable
 * path); call them only when fg_lin_x86_usable() (AVX2, FMA and F16C). */
#ifndef FORGIA_CPU_LINEAR_X86_H
#define FORGIA_CPU_LINEAR_X86_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/dtype_enum.h"

bool fg_lin_x86_usable(void);

/* nb Q4_0 / Q4_1 / Q8_0 / Q4_K blocks at p decoded to out: fg_dequant_block's floats. Needs AVX2
 * and F16C. */
bool fg_lin_x86_decode(fg_dtype t, const uint8_t *p, size_t nb, float *out);

/* rows (<= 8) rows of src, ld floats apart, x kc columns transposed into dst[p][r] (rows
 * ld_dst floats apart). */
void fg_lin_x86_transpose8(const float *src, size_t ld, size_t rows, size_t kc, float *dst, size_t ld_dst);

/* out[t] = the fast mode's dot product of the row of W at row (n_in values of Q4_0, Q4_1,
 * Q8_0, Q4_K or F16) with token t of x (rows ldx floats apart), for t < nt. */
bool fg_lin_x86_gemv(fg_dtype t, const uint8_t *row, size_t n_in, const float *x, size_t ldx, size_t nt, float *out);

#endif
