/* The neural-network ops of the op table (activations and their backward passes, used by
 * the training examples). elem/op_table.h includes this header and expands FG_OP_TABLE_NN
 * at the end of FG_OP_TABLE. Same rules as there.
 *
 * ReLU rather than tanh or a sigmoid: a comparison and a select are exact in IEEE
 * arithmetic, so the CPU and CUDA launchers give the same bits without a libm of our own
 * (tanhf and expf differ between glibc and CUDA in the last place). The gated units of the
 * transformer runtime below need exp and tanh: they take them from elem/fmath.h, which is
 * that libm. */
#ifndef FORGIA_ELEM_OP_NN_H
#define FORGIA_ELEM_OP_NN_H

#include "forgia/elem/fmath.h"
#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"
#include "forgia/elem/op_params.h"

/* v is fg_op_vals * spelled out: elem/op_table.h includes this header before it declares
 * that type. */

/* relu: s0 = s1 when s1 > 0, else +0; a NaN passes through (torch's relu propagates it).
 * s0 and s1 may alias (in place). */
static inline FG_HD void fg_op_relu(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)P, (void)seed, (void)c;
  const float x = v[0][1];
  v[0][0] = (x > 0.0f || x != x) ? x : 0.0f;
}

/* relu_backward: s0 (the gradient of the output, in place) = s0 where s1 > 0, else +0. s1 is
 * the ReLU's output or its input: both are > 0 at the same elements. */
static inline FG_HD void fg_op_relu_backward(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)P, (void)seed, (void)c;
  v[0][0] = v[0][1] > 0.0f ? v[0][0] : 0.0f;
}

/* The gated feed-forward units of Llama/Qwen (SwiGLU) and Gemma (GeGLU with the tanh GELU):
 * out = act(gate) * up, the activation from elem/fmath.h (the same bits on every backend).
 * The backward passes take the gradient of out and the forward's inputs and give both
 * gradients, the derivatives written with the same functions, each operation rounded to f32:
 *   silu'(g) = s (1 + g (1 - s)),  s = 1 / (1 + e^-g)
 *   gelu'(g) = 0.5 (1 + t) + 0.5 g (1 - t^2) k (1 + 3 c g^2),  t = tanh(k (g + c g^3)),
 *              k = sqrt(2 / pi), c = 0.044715
 * Every finite input gives a finite derivative; an infinite gate gives silu's NaN (as torch)
 * and gelu's limit (1 or 0). */

static inline FG_HD float fg_silu_grad_f32(float g) {
  const float s = 1.0f / (1.0f + fg_exp_f32(-g));
  return s * (1.0f + g * (1.0f - s));
}

static inline FG_HD float fg_gelu_tanh_grad_f32(float g) {
  const float g2 = g * g;
  const float t = fg_tanh_f32(0.7978845608028654f * (g + 0.044715f * (g2 * g)));
  const float lo = 0.5f * (1.0f + t);
  /* Past |inner| > 9 the tanh is exactly +-1 and the second term is 0; skipping it keeps a
   * g whose g^2 overflows from making 0 * inf. */
  if (t == 1.0f || t == -1.0f) return lo;
  const float dinner = 0.7978845608028654f * (1.0f + 0.134145f * g2);
  return lo + ((0.5f * g) * (1.0f - t * t)) * dinner;
}

/* swiglu: s0 = silu(s1) * s2 (s1 gate, s2 up). s0 may alias s1 or s2. */
static inline FG_HD void fg_op_swiglu(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)P, (void)seed, (void)c;
  v[0][0] = fg_silu_f32(v[0][1]) * v[0][2];
}

/* swiglu_backward: s0 = dgate = (s2 * s4) * silu'(s3), s1 = dup = s2 * silu(s3), from s2 the
 * gradient of out, s3 gate, s4 up. s0 may alias s3 and s1 s4 (in place over the inputs). */
static inline FG_HD void fg_op_swiglu_backward(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                               uint64_t c) {
  (void)P, (void)seed, (void)c;
  const float dout = v[0][2], g = v[0][3], u = v[0][4];
  v[0][0] = (dout * u) * fg_silu_grad_f32(g);
  v[0][1] = dout * fg_silu_f32(g);
}

/* geglu: s0 = gelu_tanh(s1) * s2 (s1 gate, s2 up). s0 may alias s1 or s2. */
static inline FG_HD void fg_op_geglu(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)P, (void)seed, (void)c;
  v[0][0] = fg_gelu_tanh_f32(v[0][1]) * v[0][2];
}

/* geglu_backward: as swiglu_backward with gelu_tanh: s0 = (s2 * s4) * gelu'(s3),
 * s1 = s2 * gelu_tanh(s3). */
static inline FG_HD void fg_op_geglu_backward(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                              uint64_t c) {
  (void)P, (void)seed, (void)c;
  const float dout = v[0][2], g = v[0][3], u = v[0][4];
  v[0][0] = (dout * u) * fg_gelu_tanh_grad_f32(g);
  v[0][1] = dout * fg_gelu_tanh_f32(g);
}

/* The dtype sets of the gated units: every stream f32, f16 or bf16. */
#define FG_OP_NN_DT3_ FG_OP_DTS(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT, FG_OP_DT_FLOAT, 0u, 0u, 0u)
#define FG_OP_NN_DT5_ FG_OP_DTS(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT, FG_OP_DT_FLOAT, FG_OP_DT_FLOAT, FG_OP_DT_FLOAT, 0u)

/* X(ENUM, number, name, W, streams, read mask, write mask, dtype sets), as FG_OP_TABLE. */
#define FG_OP_TABLE_NN(X)                                                                         \
  X(RELU, 27, relu, 1, 2, 0x2u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT))                  \
  X(RELU_BACKWARD, 28, relu_backward, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT)) \
  X(SWIGLU, 41, swiglu, 1, 3, 0x6u, 0x1u, FG_OP_NN_DT3_)                                          \
  X(SWIGLU_BACKWARD, 42, swiglu_backward, 1, 5, 0x1Cu, 0x3u, FG_OP_NN_DT5_)                       \
  X(GEGLU, 43, geglu, 1, 3, 0x6u, 0x1u, FG_OP_NN_DT3_)                                            \
  X(GEGLU_BACKWARD, 44, geglu_backward, 1, 5, 0x1Cu, 0x3u, FG_OP_NN_DT5_)

#endif
