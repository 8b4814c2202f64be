/* The embedding gather's arithmetic (forgia/embed.h), shared by the CPU launcher
 * (cpu/cpu_embed.c), the CUDA kernel (cuda/kernels/embed.cu) and the tests' scalar
 * reference. Each block of a gathered row is decoded by fg_dequant_block (elem/
 * quant_decode.h), then, for scale != 1, multiplied by scale with a NaN stored as the
 * canonical quiet NaN (CPUs and GPUs give a NaN product different payloads). scale 1 leaves
 * the decoded bits as they are. */
#ifndef FORGIA_ELEM_EMBED_H
#define FORGIA_ELEM_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/elem/dtype_enum.h"
#include "forgia/elem/gemm_exact.h"
#include "forgia/elem/hd.h"
#include "forgia/elem/quant_decode.h"

/* One validated call (device/embed.c builds it). */
typedef struct fg_embed_call {
  const uint8_t *table;
  fg_dtype dtype;
  unsigned block_elems, block_bytes; /* the dtype's; 1 and its size for f32, f16, bf16 */
  size_t n_rows, n_cols, row_bytes;
  const int32_t *ids;
  size_t n_ids;
  float scale;
  float *out;
} fg_embed_call;

/* Token t's table row, NULL when its id is outside [0, n_rows). */
static inline FG_HD const uint8_t *fg_embed_row(const fg_embed_call *c, size_t t) {
  const int32_t id = c->ids[t];
  if (id < 0 || (uint64_t)id >= (uint64_t)c->n_rows) return 0;
  return c->table + (size_t)id * c->row_bytes;
}

/* Decodes count blocks of row from block first into y (count * block_elems floats). The
 * scalar types call the decoder with a constant type, so the switch folds away and the loop
 * is a plain widening loop. */
static inline FG_HD void fg_embed_decode(const fg_embed_call *c, const uint8_t *row, size_t first, size_t count,
                                         float *y) {
  const uint8_t *b = row + first * c->block_bytes;
  switch (c->dtype) {
    case FG_F32:
      for (size_t k = 0; k < count; k++) fg_dequant_block(FG_F32, b + 4 * k, y + k);
      break;
    case FG_F16:
      for (size_t k = 0; k < count; k++) fg_dequant_block(FG_F16, b + 2 * k, y + k);
      break;
    case FG_BF16:
      for (size_t k = 0; k < count; k++) fg_dequant_block(FG_BF16, b + 2 * k, y + k);
      break;
    default:
      for (size_t k = 0; k < count; k++) fg_dequant_block(c->dtype, b + k * c->block_bytes, y + k * c->block_elems);
      break;
  }
}

/* Applies the call's scale to n decoded values in place. */
static inline FG_HD void fg_embed_scale(const fg_embed_call *c, float *y, size_t n) {
  if (c->scale == 1.0f) return;
  for (size_t i = 0; i < n; i++) {
    const float v = y[i] * c->scale;
    y[i] = v != v ? fg_bits_f32(0x7fc00000u) : v;
  }
}

/* What an out-of-range id writes. */
static inline FG_HD void fg_embed_nan(float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = fg_bits_f32(0x7fc00000u);
}

/* One validated call of the gradient (device/embed.c builds it): n_ids > 0, n_cols > 0. */
typedef struct fg_embed_bwd_call {
  const float *dy; /* n_ids x n_cols */
  const int32_t *ids;
  size_t n_ids, n_rows, n_cols;
  float scale;
  float *dtable; /* n_rows x n_cols */
} fg_embed_bwd_call;

/* Token t's gradient row, NULL when its id is outside [0, n_rows) (it adds nothing). */
static inline FG_HD float *fg_embed_bwd_row(const fg_embed_bwd_call *c, size_t t) {
  const int32_t id = c->ids[t];
  if (id < 0 || (uint64_t)id >= (uint64_t)c->n_rows) return 0;
  return c->dtable + (size_t)id * c->n_cols;
}

/* One token's step on one element: d + f32(scale * g), neither operation fused, a NaN
 * stored as the canonical quiet NaN (CPUs keep an operand's payload, GPUs do not). */
static inline FG_HD float fg_embed_bwd_step(float d, float g, float scale) {
  return fg_gemm_exact_canonical(fg_gemm_exact_add(d, fg_gemm_exact_mul(scale, g)));
}

#endif
