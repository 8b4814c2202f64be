/* The LoRA ops of the op table (elem/op_table.h includes this header and expands
 * FG_OP_TABLE_LORA at the end of FG_OP_TABLE). Same rules as there. They are the
 * elementwise parts of an adapter (training/lora*.c): the GEMMs around them run through
 * forgia/gemm.h, and these steps give the same bits on every backend.
 *
 *   y = base + scale * t        forward, t = dropout(x) A^T B^T (Fucina's delta scales the
 *                               product, then apply adds it: two roundings, mul then add)
 *   w' = w + scale * (B A)      merge: the same element; w' is stored in the base's dtype, so
 *                               an f16/bf16 base is widened, merged and rounded once
 *   g = scale * dy              backward: the gradient of t
 *   dx = dx + dropout(gx)       backward: the adapter's share of dx, masked as the forward
 *                               pass masked x (the keep rule of FG_OP_DROPOUT, elem/rng.h) */
#ifndef FORGIA_ELEM_OP_LORA_H
#define FORGIA_ELEM_OP_LORA_H

#include <stdint.h>

#include "forgia/elem/hd.h"
#include "forgia/elem/op_params.h"
#include "forgia/elem/rng.h"

/* base + scale * t, the product rounded to f32 before the add. */
static inline FG_HD float fg_lora_add_elem(float base, float scale, float t) { return base + scale * t; }

/* Inverted dropout of one value: kept values times inv_keep = f32(1 / (1 - p)), else 0. */
static inline FG_HD float fg_lora_dropout_elem(uint64_t seed, uint64_t c, uint64_t cutoff, float inv_keep, float v) {
  return fg_rng_keep(fg_rng_at(seed, c), cutoff) ? v * inv_keep : 0.0f;
}

/* lora_add: s0 = s1 + f[0] * s2 (s1 the base, s2 the f32 product; s0 may alias s1). */
static inline FG_HD void fg_op_lora_add(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = fg_lora_add_elem(v[0][1], P->f[0], v[0][2]);
}

/* lora_scale: s0 = f[0] * s1, out of place (dy stays the caller's). */
static inline FG_HD void fg_op_lora_scale(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = P->f[0] * v[0][1];
}

/* lora_dropout_add: s0 = s0 + dropout(s1), the mask of counter c under the tensor's seed
 * (u[0] the keep cutoff, f[0] = f32(1 / (1 - p)), as fg_rng_op_params prepares them). With
 * p = 0 every element is kept and times 1, so eval is the same op. */
static inline FG_HD void fg_op_lora_dropout_add(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  v[0][0] = v[0][0] + fg_lora_dropout_elem(seed, c, P->u[0], P->f[0], v[0][1]);
}

/* X(ENUM, number, name, W, streams, read mask, write mask, dtype sets of the streams) */
#define FG_OP_TABLE_LORA(X)                                                                              \
  X(LORA_ADD, 38, lora_add, 1, 3, 0x6u, 0x1u,                                                            \
    FG_OP_DTS(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT, FG_OP_DT_F32, 0u, 0u, 0u))                                 \
  X(LORA_SCALE, 39, lora_scale, 1, 2, 0x2u, 0x1u, FG_OP_DTS(FG_OP_DT_F32, FG_OP_DT_F32, 0u, 0u, 0u, 0u)) \
  X(LORA_DROPOUT_ADD, 40, lora_dropout_add, 1, 2, 0x3u, 0x1u, FG_OP_DTS(FG_OP_DT_F32, FG_OP_DT_F32, 0u, 0u, 0u, 0u))

#endif
