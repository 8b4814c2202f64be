/* The architectures: each is a row of flags over the shared blocks of the forward pass
 * (runtime/lm_forward.c), not a forward pass of its own. */
#include <string.h>

#include "runtime/lm_internal.h"

/* RoPE pairing: llama.cpp's converter permutes Llama's Q/K rows so the pairwise ("normal")
 * rotation applies to a GGUF; every other architecture, and every Hugging Face folder, uses
 * the half-split ("NeoX") pairing. Gemma stores its norms as w - 1 in Hugging Face folders
 * and llama.cpp's converter adds the 1 back (gemma_norms: offset 1 for folders only). */
static const fg_lm_arch_desc fg_lm_archs[] = {
    {.name = "llama", .arch = FG_LM_LLAMA, .glu = FG_LM_SWIGLU, .gguf_rope = FG_ROPE_NORM, .hf_rope = FG_ROPE_NEOX},
    {.name = "qwen2", .arch = FG_LM_QWEN2, .glu = FG_LM_SWIGLU, .attn_bias = true, .gguf_rope = FG_ROPE_NEOX,
     .hf_rope = FG_ROPE_NEOX},
    {.name = "qwen3", .arch = FG_LM_QWEN3, .glu = FG_LM_SWIGLU, .qk_norm = true, .gguf_rope = FG_ROPE_NEOX,
     .hf_rope = FG_ROPE_NEOX},
    {.name = "gemma3", .arch = FG_LM_GEMMA3, .glu = FG_LM_GEGLU_TANH, .qk_norm = true, .post_norms = true,
     .gemma_norms = true, .embd_scale_sqrt = true, .gguf_rope = FG_ROPE_NEOX, .hf_rope = FG_ROPE_NEOX},
};

const fg_lm_arch_desc *fg_lm_arch_find(const char *name, size_t len) {
  for (size_t i = 0; i < sizeof fg_lm_archs / sizeof fg_lm_archs[0]; i++)
    if (strlen(fg_lm_archs[i].name) == len && memcmp(fg_lm_archs[i].name, name, len) == 0) return &fg_lm_archs[i];
  return NULL;
}
