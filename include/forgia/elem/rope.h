/* RoPE's arithmetic (forgia/rope.h), shared by the CPU launcher (cpu/cpu_rope.c), the CUDA
 * kernel (cuda/kernels/rope.cu) and the tests' scalar reference. Each pair of a head is
 * rotated on its own, from two table values; no sums, so any grid gives the same bits. */
#ifndef FORGIA_ELEM_ROPE_H
#define FORGIA_ELEM_ROPE_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/hd.h"

/* One validated call (device/rope.c builds it). layout is fg_rope_layout's value. */
typedef struct fg_rope_call {
  float *x;
  size_t n_tok, n_heads, head_dim, n_dims, n_pos;
  int layout; /* 0 NORM: pairs (2i, 2i + 1); 1 NEOX: pairs (i, i + n_dims / 2) */
  int inverse;
  const int32_t *pos;
  const float *table;
} fg_rope_call;

/* The offsets within a head of pair i's two values. */
static inline FG_HD size_t fg_rope_lo(int layout, size_t i) { return layout ? i : 2 * i; }
static inline FG_HD size_t fg_rope_hi(int layout, size_t n_dims, size_t i) {
  return layout ? i + n_dims / 2 : 2 * i + 1;
}

/* Rotates (*a, *b) by (c, s): each product and the difference/sum rounded to f32. The
 * inverse passes -s (negation is exact). */
static inline FG_HD void fg_rope_rotate(float *a, float *b, float c, float s) {
  const float x = *a, y = *b;
  *a = x * c - y * s;
  *b = x * s + y * c;
}

/* Token t's table row (n_dims floats: cos, sin per pair), NULL when its position is outside
 * [0, n_pos) and the token stays as it is. */
static inline FG_HD const float *fg_rope_row(const fg_rope_call *c, size_t t) {
  const int32_t p = c->pos[t];
  if (p < 0 || (uint64_t)p >= (uint64_t)c->n_pos) return 0;
  return c->table + (size_t)p * c->n_dims;
}

/* Rotates pair i of the head at h (head_dim floats) by row's angles. */
static inline FG_HD void fg_rope_pair(const fg_rope_call *c, float *h, const float *row, size_t i) {
  const float cs = row[2 * i], sn = row[2 * i + 1];
  fg_rope_rotate(h + fg_rope_lo(c->layout, i), h + fg_rope_hi(c->layout, c->n_dims, i), cs, c->inverse ? -sn : sn);
}

#endif
