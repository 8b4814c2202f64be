/* LoRA adapters on a language model of forgia/lm.h: one fg_lora (forgia/lora.h) per chosen
 * projection of every layer, over a frozen base in whatever dtype its file holds (quantized
 * included: the adapters only read the projection's input and add to its output). They train
 * through fg_lm_grad's hooks (forgia/lm_grad.h) and run at inference through the model's
 * projection hook.
 *
 *   fg_lm_adapters_config c = {.targets = FG_LM_ADAPTERS_ALL, .lora = {8, 16.0f, 0.0f}, .seed = 42};
 *   fg_lm_adapters *ad;
 *   fg_lm_adapters_create(lm, &c, &ad);
 *   fg_lm_adapters_register(ad, opt);                   // "layers.<l>.<target>.lora_a" / "lora_b"
 *   fg_lm_adapters_grad(ad, &batch, 1.0f / n, &step_seed, &nll, &n);
 *   fg_optim_step(opt, NULL);
 *   fg_lm_adapters_save(ad, "run/adapters.safetensors");
 *
 * Adapter (layer l, target t) is slot l * 7 + t's place in the (layer, target) order of the
 * chosen ones; its A is drawn from fg_rng_at(seed, l * 7 + t), and its dropout mask of a pass
 * from fg_rng_at(dropout_seed, l * 7 + t), so the bits follow from the seeds alone. */
#ifndef FORGIA_LM_ADAPTERS_H
#define FORGIA_LM_ADAPTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/lm.h"
#include "forgia/lm_grad.h"
#include "forgia/lora.h"
#include "forgia/optim.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_LM_ADAPTERS_ALL 0x7Fu /* every projection: q, k, v, o, gate, up, down */

typedef struct fg_lm_adapters_config {
  uint32_t targets;          /* bit (1u << fg_lora_target) per adapted projection, in every layer */
  fg_lora_config lora;       /* rank (at most the projection's smaller side), alpha, dropout */
  uint64_t seed;             /* the A matrices' draws */
  fg_gemm_mode mode;         /* the adapters' GEMMs (FG_GEMM_DEFAULT: the device's) */
} fg_lm_adapters_config;

typedef struct fg_lm_adapters fg_lm_adapters;

/* Adapters on lm's device; lm must outlive them. FG_ERR_INVALID_ARG for no target or an
 * unknown target bit, and fg_lora_create's errors (naming the layer and target). */
FG_API fg_status fg_lm_adapters_create(fg_lm *lm, const fg_lm_adapters_config *c, fg_lm_adapters **out);
FG_API void fg_lm_adapters_free(fg_lm_adapters *a); /* NULL-safe; detaches them first */

/* The adapters in (layer, target) order, for fg_lora_save / fg_lora_load and inspection. */
FG_API size_t fg_lm_adapters_slots(const fg_lm_adapters *a, const fg_lora_slot **slots);
/* Every adapter's A and B with o, as "layers.<l>.<target>" (fg_lora_register). */
FG_API fg_status fg_lm_adapters_register(fg_lm_adapters *a, fg_optim *o);
/* adapters.safetensors (fg_lora_save / fg_lora_load: strict, all or nothing). */
FG_API fg_status fg_lm_adapters_save(const fg_lm_adapters *a, const char *path);
FG_API fg_status fg_lm_adapters_load(fg_lm_adapters *a, const char *path);

/* Attaches the adapters to lm's forward passes (its projection hook; no dropout), or detaches
 * them: fg_lm_forward and fg_lm_nll then run the adapted model. */
FG_API void fg_lm_adapters_attach(fg_lm_adapters *a, bool on);

/* fg_lm_grad with the adapters on its hooks: their A and B gradients get the gradient of
 * loss_scale * nll_sum ADDED. dropout_seed: this pass's masks (NULL: none). */
FG_API fg_status fg_lm_adapters_grad(fg_lm_adapters *a, const fg_lm_train_batch *b, float loss_scale,
                                     const uint64_t *dropout_seed, double *nll_sum, size_t *n_pred);

#ifdef __cplusplus
}
#endif

#endif
