/* Gradients of a language model of forgia/lm.h: one forward and one backward pass over a batch
 * of training sequences, the next-token cross-entropy as the loss.
 *
 * What trains is whatever the caller hangs on the projections through two hooks, the model's
 * own weights through a third (fg_lm_weight_grad_fn: full fine-tuning, forgia/lm_full.h); the
 * base may be in any dtype its file holds (quantized included) when only the hooks train. The forward hook
 * (fg_lm_proj_hook) adds a projection's extra output, as at inference; the gradient hook gets
 * the projection's input x and output gradient dy, adds its share of the input gradient into dx
 * and keeps its own parameters' gradients. LoRA (forgia/lm_adapters.h) is one such pair. A
 * weight's gradient is dW += dy^T x for a projection (one fg_gemm, in the model's mode), the
 * row sum of dy for a bias, RMSNorm's dw for a norm, fg_embed_backward for the embedding.
 *
 * The backward pass is the forward's blocks in reverse: the output projection and final norm,
 * then per layer the gated MLP (fg_linear_backward_x, the SwiGLU/GeGLU backward ops, RMSNorm's
 * backward) and the attention (fg_attention_backward, RoPE's inverse rotation, the Q/K norms),
 * the residual stream's gradient summed in a fixed order. Activations are recomputed: the
 * forward keeps only each layer's input (n_layer + 1 rows of n_embd floats per token) and the
 * keys and values, and the backward re-runs one layer at a time, so memory grows with the
 * batch's tokens, not with tokens x layers x widths; when every layer's internals fit the
 * model's budget (fg_lm_grad_set_keep_bytes, default 1 GiB) they are kept instead and the
 * second forward pass is skipped, with the same bits. In FG_GEMM_EXACT every kernel is the same
 * bits on every device and for any thread count, so the gradients are too. */
#ifndef FORGIA_LM_GRAD_H
#define FORGIA_LM_GRAD_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/lm.h"
#include "forgia/lm_weights.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The backward of projection `which` of `layer`, y = x W^T: x (n_tok x n_in) as the forward
 * saw it, dy (n_tok x n_out) the gradient of y. The base's part dy W is already in dx
 * (n_tok x n_in); the hook adds its own part there (dx NULL: nobody needs it) and accumulates
 * its parameters' gradients. Runs on the pass's stream s; a failure fails the pass. */
typedef fg_status (*fg_lm_proj_grad_hook)(void *user, size_t layer, fg_lm_proj which, const float *x, size_t n_tok,
                                          size_t n_in, size_t n_out, const float *dy, float *dx, fg_stream *s);

/* Where the gradient of the model's own weight `which` of `layer` (forgia/lm_weights.h) goes:
 * an f32 buffer on the model's device, rows x cols as fg_lm_weight_find gives them, that the
 * pass adds its gradient to; NULL leaves that weight frozen. With an output tied to the
 * embedding, the output projection's gradient is added to FG_LM_W_TOK_EMBD's buffer (after
 * nothing else; the embedding's own gradient is added last). */
typedef float *(*fg_lm_weight_grad_fn)(void *user, size_t layer, fg_lm_weight which);

typedef struct fg_lm_grad_hooks {
  fg_lm_proj_hook forward;          /* NULL: none */
  fg_lm_proj_grad_hook backward;    /* NULL: none */
  fg_lm_weight_grad_fn weight_grad; /* NULL: every weight frozen */
  void *user;
} fg_lm_grad_hooks;

/* n_seq sequences laid end to end in ids (host memory), len[i] tokens each (1 or more). A
 * target is a token predicted from the tokens before it in its sequence: predict[t] nonzero
 * makes token t one (never a sequence's first token). predict NULL: every token but each
 * sequence's first. */
typedef struct fg_lm_train_batch {
  size_t n_seq;
  const size_t *len;
  const int32_t *ids;
  const uint8_t *predict;
} fg_lm_train_batch;

/* Device memory fg_lm_grad may spend keeping every layer's internals rather than recomputing
 * them (0: always recompute). */
FG_API void fg_lm_grad_set_keep_bytes(fg_lm *lm, size_t bytes);

/* Targets of a batch (what fg_lm_grad's n_pred will be), for the caller's loss scale. */
FG_API size_t fg_lm_train_batch_targets(const fg_lm_train_batch *b);

/* One forward and backward pass over b: *nll_sum, the sum in f64 over the targets (in token
 * order) of their negative log-likelihoods, each the bits fg_lm_nll gives in exact mode;
 * *n_pred, the number of targets; and the gradient of loss_scale * nll_sum sent through the
 * hooks (loss_scale 1 / n_pred: the mean). The model's own projection hook is not called.
 * Errors: a token id outside the vocabulary (FG_ERR_RANGE), an empty sequence, a predicted
 * first token or a batch without targets (FG_ERR_INVALID_ARG), each naming the token or sequence;
 * nothing is sent through the hooks' backward before every check has passed. */
FG_API fg_status fg_lm_grad(fg_lm *lm, const fg_lm_train_batch *b, float loss_scale, const fg_lm_grad_hooks *hooks,
                            double *nll_sum, size_t *n_pred);

#ifdef __cplusplus
}
#endif

#endif
