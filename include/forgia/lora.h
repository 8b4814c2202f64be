/* LoRA adapters (Fucina's src/lora.zig; docs/design.md, Training): a
 * low-rank update learned over a frozen linear weight W [out, in],
 *
 *   y = base(x) + scale * dropout(x) A^T B^T,      scale = f32(alpha) / f32(rank)
 *
 * with A [rank, in] kaiming-uniform from a seed (fg_rng FG_RNG_KAIMING, fan_in = in: the same
 * seed gives the same bits on every device) and B [out, rank] zeros, so a new adapter adds
 * exactly nothing. Only A and B train; W is only read.
 *
 *   fg_lora_config c = {.rank = 8, .alpha = 16.0f, .dropout_p = 0.05f};
 *   fg_lora *l;
 *   fg_lora_create(dev, in, out, &c, 42, &l);
 *   fg_lora_register(l, opt, "layers.0.q");                  // "layers.0.q.lora_a" / ".lora_b"
 *   uint64_t seed = fg_rng_at(step_seed, layer);             // a fresh mask per step
 *   fg_lora_forward(l, w, x, batch, &seed, y, s);            // y = x W^T + delta
 *   fg_lora_backward(l, w, x, batch, &seed, dy, dx, s);      // A->grad, B->grad += ...
 *   fg_optim_step(opt, s);
 *   fg_lora_merge_into(l, w, s);                             // w += scale * B A (f32, frozen)
 *   fg_lora_free(l);
 *
 * The GEMMs run through forgia/gemm.h in the adapter's gemm mode (FG_GEMM_DEFAULT: the
 * device's); the elementwise steps (dropout, the scale, the add of the delta, the merge's
 * add) are ops of the op layer (elem/op_lora.h), so they give the same bits on every backend
 * and, with FG_GEMM_EXACT, so does the whole adapter.
 *
 * Dropout is Fucina's inverted dropout: element i of x (row-major [batch, in]) is kept when
 * fg_rng_keep(fg_rng_at(seed, i), cutoff) (fg_rng_op_params, FG_RNG_KEEP_MASK) and scaled by
 * f32(1 / (1 - p)). A NULL dropout seed is eval: no dropout at all (as is p = 0).
 *
 * Pointers x, y, dy, dx are f32 device memory of the adapter's device. A call with s NULL
 * runs on the device's stream; the adapter's scratch is freed before return, so every call
 * waits for its stream to finish. An adapter is used by one thread at a time. */
#ifndef FORGIA_LORA_H
#define FORGIA_LORA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/gemm.h"
#include "forgia/optim.h"
#include "forgia/registry.h"
#include "forgia/status.h"
#include "forgia/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_lora_config {
  uint32_t rank;    /* 1 .. min(in, out) */
  float alpha;      /* finite; scale = f32(alpha) / f32(rank) */
  float dropout_p;  /* 0 <= p < 1 */
} fg_lora_config;

typedef struct fg_lora {
  fg_device *dev;     /* borrowed */
  uint64_t in, out;
  uint32_t rank;
  float scale;
  float dropout_p;
  fg_tensor *a;       /* [rank, in] f32, owned, f32 gradient allocated */
  fg_tensor *b;       /* [out, rank] f32, owned, f32 gradient allocated */
  fg_gemm_mode gemm;  /* the mode of the adapter's GEMMs; set it freely between calls */
} fg_lora;

/* FG_ERR_INVALID_ARG for a rank outside 1..min(in, out) or a dropout outside [0, 1) (NaN
 * included), FG_ERR_NONFINITE for alpha; the message names the bad value and the range. */
FG_API fg_status fg_lora_create(fg_device *dev, uint64_t in, uint64_t out, const fg_lora_config *c, uint64_t seed,
                                fg_lora **res);
FG_API void fg_lora_free(fg_lora *l); /* NULL-safe */

/* y [batch, out] = base + scale * dropout(x) A^T B^T, x [batch, in].
 * w non-NULL: base = x W^T through the GEMM (W [out, in] on the adapter's device; f32 and
 * bf16 directly, f16 and ggml block types dequantized to f32 scratch first; W only read).
 * w NULL: y already holds the base output (computed by the caller) and the delta is added. */
FG_API fg_status fg_lora_forward(const fg_lora *l, const fg_tensor *w, const float *x, uint64_t batch,
                                 const uint64_t *dropout_seed, float *y, fg_stream *s);

/* The explicit backward pass of fg_lora_forward with the same x and dropout seed (the mask
 * and x A^T are recomputed, nothing is kept between the calls): the gradients of A and B are
 * ADDED into l->a->grad and l->b->grad. dx (may be NULL: not asked): with w, dx = dy W + the
 * adapter's part; without, the adapter's part is added into dx (the caller's base part). */
FG_API fg_status fg_lora_backward(fg_lora *l, const fg_tensor *w, const float *x, uint64_t batch,
                                  const uint64_t *dropout_seed, const float *dy, float *dx, fg_stream *s);

/* ---- names, optimizers, state dicts ------------------------------------------------------ */

#define FG_LORA_NAME_MAX 256

/* "<prefix>.lora_a" and "<prefix>.lora_b" (prefix non-empty, the names under
 * FG_LORA_NAME_MAX bytes). */
FG_API fg_status fg_lora_names(const char *prefix, char a[FG_LORA_NAME_MAX], char b[FG_LORA_NAME_MAX]);

/* Registers A and B with o as "<prefix>.lora_a" / "<prefix>.lora_b" (both or neither: a
 * refused B takes nothing back from o, so check the names first; fg_optim_add's rules). */
FG_API fg_status fg_lora_register(fg_lora *l, fg_optim *o, const char *prefix);

/* The two registry rows (trainable) of the adapter, with names written into names[0] and
 * names[1]: fg_registry_create over them (or a larger table) gives state-dict snapshots,
 * saves and loads. */
FG_API fg_status fg_lora_registry_entries(fg_lora *l, const char *prefix, char names[2][FG_LORA_NAME_MAX],
                                          fg_registry_entry rows[2]);

/* The targets of a transformer block, in Fucina's order and checkpoint names. */
typedef enum fg_lora_target {
  FG_LORA_Q = 0, FG_LORA_K = 1, FG_LORA_V = 2, FG_LORA_O = 3,
  FG_LORA_GATE = 4, FG_LORA_UP = 5, FG_LORA_DOWN = 6,
  FG_LORA_TARGET_COUNT = 7
} fg_lora_target;
/* "q" "k" "v" "o" "gate" "up" "down"; NULL for an unknown target. */
FG_API const char *fg_lora_target_name(fg_lora_target t);

/* One adapter of a set: layers.<layer>.<target>.lora_{a,b} on disk. */
typedef struct fg_lora_slot {
  uint32_t layer;
  fg_lora_target target;
  fg_lora *lora;  /* borrowed */
} fg_lora_slot;

/* adapters.safetensors: every adapter's A and B as one state-dict frame, written atomically
 * (temporary file, fsync, rename). Two slots of one name are FG_ERR_DUPLICATE. */
FG_API fg_status fg_lora_save(const char *path, const fg_lora_slot *set, size_t n);
/* Loads a saved set into adapters of the same shapes, strictly (every tensor of the file has
 * its adapter and every adapter is in the file); a failed load changes no adapter. */
FG_API fg_status fg_lora_load(const char *path, const fg_lora_slot *set, size_t n);

/* ---- merge ------------------------------------------------------------------------------ */

/* w += scale * B A in place, w an f32 [out, in] tensor on the adapter's device. Only a frozen
 * base may be merged: the caller must not have it registered with an optimizer (the merge
 * would be stepped over). A read-only view (a file mapping) is FG_ERR_STATE, a 16-bit base
 * FG_ERR_TYPE (use fg_lora_merge_copy), a block-quantized base FG_ERR_QUANTIZED_BASE. */
FG_API fg_status fg_lora_merge_into(const fg_lora *l, fg_tensor *w, fg_stream *s);

/* A NEW tensor of w's dtype (f32, f16 or bf16) holding w + scale * B A: each element widened
 * to f32, merged and rounded once. w is only read; name NULL takes w's. A block-quantized base
 * is FG_ERR_QUANTIZED_BASE (dequantizing, merging and quantizing again compounds the error:
 * dequantize to f32 yourself and merge into that). */
FG_API fg_status fg_lora_merge_copy(const fg_lora *l, const fg_tensor *w, const char *name, fg_tensor **out,
                                    fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
