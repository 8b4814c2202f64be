/* Rotary position embedding (RoPE) over the heads of a batch of tokens, forward and inverse.
 *
 * The angles come from a table built once on the host (fg_rope_table_fill) and copied to
 * the device: cos and sin in f64, rounded once to f32, so no backend evaluates a
 * transcendental function and CPU and CUDA give the same bits. The rotation of one pair
 * (a, b) by (c, s) is, each operation rounded to f32 (never fused):
 *
 *   a' = a * c - b * s        b' = a * s + b * c            (inverse: s -> -s)
 *
 * Two pairings of the first n_dims values of a head of head_dim:
 *   FG_ROPE_NORM  pairs (2i, 2i + 1): llama.cpp's "normal" RoPE, which GGUF Llama checkpoints
 *                 need (their converter permutes the rows of Q and K to match it);
 *   FG_ROPE_NEOX  pairs (i, i + n_dims / 2): Hugging Face's rotate_half, used by Qwen 2/3,
 *                 Gemma 3 and by Llama checkpoints in Hugging Face folders.
 * Values past n_dims pass through unchanged. */
#ifndef FORGIA_ROPE_H
#define FORGIA_ROPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_rope_layout {
  FG_ROPE_NORM = 0,
  FG_ROPE_NEOX = 1,
} fg_rope_layout;

/* Host memory: table[(p * (n_dims / 2) + i) * 2 + {0, 1}] = cos, sin of
 *   theta(p, i) = p * freq_scale * base^(-2i / n_dims) / (factors ? factors[i] : 1)
 * for p in [0, n_pos), i in [0, n_dims / 2), computed in f64 and rounded once. factors
 * (n_dims / 2 values, may be NULL) are per-frequency divisors (Llama 3's rope_freqs).
 * n_dims even and > 0, base > 0 and finite, freq_scale > 0 and finite, factors finite and
 * > 0. table holds n_pos * n_dims floats. */
FG_API fg_status fg_rope_table_fill(float *table, size_t n_pos, size_t n_dims, double base, double freq_scale,
                                    const float *factors);

/* Rotates x (n_tok x n_heads x head_dim f32, device memory, in place): token t's heads by
 * the angles of position pos[t] (device memory, n_tok int32) from table (device memory,
 * n_pos * n_dims floats as fg_rope_table_fill writes). A position outside [0, n_pos) leaves
 * its token unchanged. n_dims even, 0 < n_dims <= head_dim. inverse rotates by the negative
 * angles (the backward pass of the forward rotation). n_tok == 0 does nothing. */
FG_API fg_status fg_rope_apply(fg_device *dev, float *x, size_t n_tok, size_t n_heads, size_t head_dim, size_t n_dims,
                               fg_rope_layout layout, const int32_t *pos, const float *table, size_t n_pos,
                               bool inverse, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
