/* The neural-network ops of the op table (activations and their backward passes, used by
 * the training examples). elem/op_table.h includes this header and expands FG_OP_TABLE_NN
 * at the end of FG_OP_TABLE. Same rules as there.
 *
 * ReLU rather than tanh or a sigmoid: a comparison and a select are exact in IEEE
 * arithmetic, so the CPU and CUDA launchers give the same bits without a libm of our own
 * (tanhf and expf differ between glibc and CUDA in the last place). */
#ifndef FORGIA_ELEM_OP_NN_H
#define FORGIA_ELEM_OP_NN_H

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

/* X(ENUM, number, name, W, streams, read mask, write mask, dtype sets), as FG_OP_TABLE. */
#define FG_OP_TABLE_NN(X)                                                        \
  X(RELU, 27, relu, 1, 2, 0x2u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT)) \
  X(RELU_BACKWARD, 28, relu_backward, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT))

#endif
