/* Causal self-attention over a key/value cache, with grouped-query heads and an optional
 * sliding window: the attention of Llama, Qwen and Gemma blocks (forward; the saved
 * log-sum-exp is what a backward pass needs).
 *
 * Token t (query row q[t], heads h = 0 .. n_head - 1) of sequence seq[t] at position pos[t]
 * attends to the cached rows j of that sequence with lo <= j <= pos[t], lo = 0, or
 * pos[t] - window + 1 when window > 0 and that is larger. Head h reads key/value head
 * h / (n_head / n_kv_head). Per (t, h), each operation rounded to f32 and never fused:
 *
 *   s_j  = scale * dot(q[t,h], k[j])     dot: acc = +0; for d in order: acc = acc + q_d * k_d
 *   m    = max_j s_j
 *   p_j  = fg_exp_f32(s_j - m)           (forgia/elem/fmath.h)
 *   l    = +0; for j ascending: l = l + p_j
 *   o_d  = (+0; for j ascending: o = o + p_j * v[j]_d) / l
 *   lse  = f32(m + fg_log_f64(l))        in f64, rounded once
 *
 * so every backend gives the same bits for any thread count. The caches are f32, laid out
 * [n_seq][n_kv_head][n_ctx][head_dim]; the caller writes the batch's own keys and values into
 * them before the call (a token sees itself and the tokens before it). */
#ifndef FORGIA_ATTENTION_H
#define FORGIA_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_attention_args {
  size_t n_tok, n_head, n_kv_head, head_dim;
  size_t n_seq, n_ctx;      /* cache geometry */
  const float *q;           /* n_tok x n_head x head_dim */
  const float *k, *v;       /* n_seq x n_kv_head x n_ctx x head_dim */
  const int32_t *seq;       /* n_tok sequence ids in [0, n_seq); NULL: every token in sequence 0 */
  const int32_t *pos;       /* n_tok positions in [0, n_ctx) */
  size_t window;            /* 0: none */
  float scale;              /* finite; usually 1 / sqrt(head_dim) */
  float *out;               /* n_tok x n_head x head_dim; must not overlap the inputs */
  float *lse;               /* n_tok x n_head, or NULL */
} fg_attention_args;

/* All pointers are device memory of dev. n_head a positive multiple of n_kv_head. A token
 * whose seq or pos is out of range gets out rows of canonical NaN (0x7fc00000) and lse NaN,
 * never a read outside the caches. n_tok == 0 does nothing. */
FG_API fg_status fg_attention_forward(fg_device *dev, const fg_attention_args *a, fg_stream *s);

/* The gradients of fg_attention_forward, for the arguments of the forward call (its q, k, v,
 * seq, pos, window, scale, and out and lse as it wrote them; lse must not be NULL). With
 * p_j = fg_exp_f32(s_j - lse) (s_j as the forward computes it), per (t, h), each operation
 * rounded to f32 and never fused:
 *
 *   D     = +0; for d in order: D = D + dout_d * out_d
 *   dp_j  = dot(dout[t,h], v[j])         (d in order, from +0)
 *   ds_j  = p_j * (dp_j - D)
 *   dq_d  = scale * (+0; for j ascending: acc = acc + ds_j * k[j]_d)
 *
 * and per cache slot j of (sequence, kv head), over the tokens t that attend to it in
 * ascending order and, for each, the query heads h of its group in ascending order:
 *
 *   dk[j]_d = scale * (+0; acc = acc + ds_{t,h,j} * q[t,h]_d)
 *   dv[j]_d = +0; acc = acc + p_{t,h,j} * dout[t,h]_d
 *
 * Every slot of dk and dv (n_seq x n_kv_head x n_ctx x head_dim) is written: +0 where no
 * token attends. A token whose seq or pos is out of range gets dq rows of canonical NaN and
 * adds nothing to dk, dv. The same bits on every backend and for any thread count. */
typedef struct fg_attention_grads {
  const float *dout;        /* n_tok x n_head x head_dim */
  float *dq;                /* n_tok x n_head x head_dim */
  float *dk, *dv;           /* cache layout; must not overlap each other, dq or the inputs */
} fg_attention_grads;

FG_API fg_status fg_attention_backward(fg_device *dev, const fg_attention_args *a, const fg_attention_grads *g,
                                       fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
