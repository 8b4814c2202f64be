/* Full fine-tuning of a language model of forgia/lm.h: its own weights (forgia/lm_weights.h)
 * are the parameters, each an fg_tensor over the model's private copy with an f32 gradient,
 * trained by any optimizer of forgia/optim.h. A 16-bit weight is stepped through the f32
 * master its optimizer keeps (optim.h), so the model serves the rounded weight while the
 * training keeps full precision; the optimizer's state (masters included) goes into a
 * checkpoint's optimizer.fucina, the weights into its model.safetensors under the file's
 * own tensor names (forgia export --weights folds them back into the GGUF).
 *
 *   fg_lm_full *f;
 *   fg_lm_full_create(lm, 0, &f);                // every weight; the model must be dense
 *   fg_lm_full_register(f, decay, no_decay);      // matrices, and norms with biases
 *   fg_optim_zero_grad(...); fg_lm_full_grad(f, &batch, 1.0f / n_targets, &nll, &n);
 *   fg_optim_step(...);                           // the next forward pass sees the new weights
 *   fg_lm_full_free(f);                           // the model keeps the trained weights */
#ifndef FORGIA_LM_FULL_H
#define FORGIA_LM_FULL_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/lm.h"
#include "forgia/lm_grad.h"
#include "forgia/lm_weights.h"
#include "forgia/optim.h"
#include "forgia/status.h"
#include "forgia/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_lm_full fg_lm_full;

/* The frozen set's bit of a weight kind. */
#define FG_LM_FULL_FREEZE(kind) (1u << (unsigned)(kind))

/* Makes every weight of lm trainable but the kinds in `frozen` (FG_LM_FULL_FREEZE bits; a
 * frozen embedding stays frozen as the tied output too): fg_lm_weights_own, then one tensor
 * per weight, its f32 gradient allocated by the first fg_lm_full_register or fg_lm_full_grad
 * (gradient-free training, fg_es_add of the parameters, never pays for one). Fails with FG_ERR_QUANTIZED_BASE on a quantized weight and
 * FG_ERR_INVALID_ARG when nothing is left to train. The model must outlive f. */
FG_API fg_status fg_lm_full_create(fg_lm *lm, uint32_t frozen, fg_lm_full **out);
FG_API void fg_lm_full_free(fg_lm_full *f); /* NULL-safe; the model keeps its weights */

/* The parameters in a fixed order (the model-wide weights, then layer by layer in kind order),
 * each named as its tensor in the model's file; *kinds (may be NULL) their weight kinds. */
FG_API size_t fg_lm_full_params(const fg_lm_full *f, fg_tensor *const **params, const fg_lm_weight **kinds);

/* Param groups: the matrices into `matrices`, the vectors (norms and biases) into `vectors`
 * (NULL: `matrices` too), in fg_lm_full_params order. Muon takes the embedding and the output
 * head through its AdamW fallback (fg_optim_add_fallback), as Muon is meant for hidden
 * matrices. */
FG_API fg_status fg_lm_full_register(fg_lm_full *f, fg_optim *matrices, fg_optim *vectors);

/* fg_lm_grad over b with the weights' gradients added to the parameters' gradient buffers. */
FG_API fg_status fg_lm_full_grad(fg_lm_full *f, const fg_lm_train_batch *b, float loss_scale, double *nll_sum,
                                 size_t *n_pred);

#ifdef __cplusplus
}
#endif

#endif
