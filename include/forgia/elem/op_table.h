/* The op table: every elementwise op of the op layer, written once (docs/design.md,
 * Numerics contract, rule 1).
 *
 * An op is an FG_HD function fg_op_<name>(P, v, seed, c) over W consecutive elements:
 * v[w][k] holds stream k of element w widened to f32 (streams the op reads are loaded;
 * the others are 0), c is the stream counter of v[0] (index0 + element index; even for
 * W = 2), and the op leaves the results of the streams it writes in v. The launchers
 * (cpu/cpu_op.c, cuda/kernels/op.cu) load, call and narrow back (f16: RNE; bf16: Fucina's
 * rule, elem/half.h), so an op computes on its pre-narrowing values within an element,
 * as Fucina does with bf16 optimizer state. A NaN result is stored as the canonical quiet
 * NaN (0x7fc00000): CPUs and GPUs give NaN results different payloads, and the numerics
 * contract compares bits. Adding an op: its function here, one line of FG_OP_TABLE, and its
 * tests: tests/util/family_cases.h makes a case of every row, which the CPU suite checks
 * against a scalar loop over this function and the CUDA suite against the CPU; hand-made
 * cases with chosen parameters go in tests/util/op_harness.h.
 *
 * Each row carries the op's number, its fg_op_kind value. The numbers are part of the ABI:
 * a new op takes the next one (FG_OP_KIND_COUNT before it), wherever its row goes, and no
 * number ever changes. They run 0..FG_OP_KIND_COUNT-1 without gaps; device/op.c checks at
 * compile time that they are unique and in range, and tests/cpu/test_api_stable.cpp pins them. */
#ifndef FORGIA_ELEM_OP_TABLE_H
#define FORGIA_ELEM_OP_TABLE_H

#include <math.h>

#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"
#include "forgia/elem/op_params.h"
#include "forgia/elem/rng.h"

/* Per stream, the dtypes it may hold; FG_OP_DTS packs one set per stream, 4 bits each. */
#define FG_OP_DT_NONE 0u
#define FG_OP_DT_FLOAT 1u /* f32, f16, bf16 */
#define FG_OP_DT_F32 2u   /* f32 only (gradients, master weights) */
#define FG_OP_DT_MASK 3u  /* u8 or bool: 0 or 1 */
#define FG_OP_DTS(a, b, c, d, e, f) \
  ((a) | ((b) << 4) | ((c) << 8) | ((d) << 12) | ((e) << 16) | ((f) << 20))
#define FG_OP_DT_OF(dts, k) (((dts) >> (4 * (k))) & 0xFu)
#define FG_OP_DT1(a) FG_OP_DTS(a, 0u, 0u, 0u, 0u, 0u)
#define FG_OP_DT2(a, b) FG_OP_DTS(a, b, 0u, 0u, 0u, 0u)

/* What the launchers store for a result v. */
static inline FG_HD float fg_op_canonical(float v) { return v != v ? fg_bits_f32(0x7fc00000u) : v; }

/* Element i of a stream widened to f32, and a result narrowed into one (both launchers). */
static inline FG_HD float fg_op_load(const void *p, fg_dtype d, size_t i) {
  switch (d) {
    case FG_F32: return ((const float *)p)[i];
    case FG_F16: return fg_f16_to_f32(((const uint16_t *)p)[i]);
    case FG_BF16: return fg_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return (float)((const uint8_t *)p)[i];
  }
}

static inline FG_HD void fg_op_store(void *p, fg_dtype d, size_t i, float v) {
  v = fg_op_canonical(v);
  switch (d) {
    case FG_F32: ((float *)p)[i] = v; break;
    case FG_F16: ((uint16_t *)p)[i] = fg_f32_to_f16(v); break;
    case FG_BF16: ((uint16_t *)p)[i] = fg_f32_to_bf16(v); break;
    default: ((uint8_t *)p)[i] = v != 0.0f; break;
  }
}

/* fill: s0 = f[0]. */
static inline FG_HD void fg_op_fill(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = P->f[0];
}

/* scale: s0 = s0 * f[0]. */
static inline FG_HD void fg_op_scale(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = v[0][0] * P->f[0];
}

/* axpy: s0 = s0 + f[0] * s1 (mul, then add: no FMA). s0 and s1 may alias. */
static inline FG_HD void fg_op_axpy(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = v[0][0] + P->f[0] * v[0][1];
}

/* clip_scale: Fucina's clipGradNorm applied from a device-resident sum of squares, so a
 * clip needs no host round trip: total = f32(sqrt(*dscalar)), coef = f[0] / (total + 1e-6)
 * (f[0] = max_norm), s0 = s0 * coef only when coef < 1. */
static inline FG_HD void fg_op_clip_scale(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  const float total = (float)sqrt(*P->dscalar);
  const float coef = P->f[0] / (total + 1e-6f);
  if (coef < 1.0f) v[0][0] = v[0][0] * coef;
}

/* The optimizers (Fucina's elements, src/optim.zig; scalars prepared on the host in f64 and
 * rounded once, by training/optim_*.c: docs/design.md, Numerics contract, rule 7). The
 * _master forms step an f32 master copy of a 16-bit parameter and store it narrowed into the
 * parameter: stream 4 (write-only). */

/* adam and adamw share the moment and the update; pd is the (decayed) parameter. */
static inline FG_HD float fg_op_adam_core(const fg_op_params *P, fg_op_vals *v, float pd, float g) {
  const float m = v[0][2] + P->f[1] * (g - v[0][2]);
  const float s = P->f[2] * v[0][3] + (P->f[3] * g) * g;
  v[0][2] = m;
  v[0][3] = s;
  return pd - P->f[4] * (m / (sqrtf(s) / P->f[5] + P->f[6]));
}

/* adamw: s0 param, s1 grad (f32), s2 m, s3 v; decoupled decay before the moments:
 * f[0] keep = f32(1 - lr*wd) (1 when wd = 0), f[1] omb1 = f32(1 - beta1), f[2] beta2,
 * f[3] omb2, f[4] step_size = f32(lr / bc1), f[5] bc2s = f32(sqrt(bc2)), f[6] eps. */
static inline FG_HD void fg_op_adamw(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = fg_op_adam_core(P, v, v[0][0] * P->f[0], v[0][1]);
}
static inline FG_HD void fg_op_adamw_master(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  fg_op_adamw(P, v, seed, c);
  v[0][4] = v[0][0];
}

/* adam: the same slots; f[7] wd, coupled into the gradient (g + wd*p) when nonzero. */
static inline FG_HD void fg_op_adam(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  const float p = v[0][0];
  const float g = P->f[7] != 0.0f ? v[0][1] + P->f[7] * p : v[0][1];
  v[0][0] = fg_op_adam_core(P, v, p, g);
}
static inline FG_HD void fg_op_adam_master(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  fg_op_adam(P, v, seed, c);
  v[0][4] = v[0][0];
}

/* sgd: s0 param, s1 grad; f[0] lr, f[1] wd (coupled when nonzero). */
static inline FG_HD float fg_op_sgd_grad(const fg_op_params *P, fg_op_vals *v) {
  return P->f[1] != 0.0f ? v[0][1] + P->f[1] * v[0][0] : v[0][1];
}
static inline FG_HD void fg_op_sgd(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = v[0][0] - P->f[0] * fg_op_sgd_grad(P, v);
}
static inline FG_HD void fg_op_sgd_master(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  fg_op_sgd(P, v, seed, c);
  v[0][4] = v[0][0];
}

/* sgd_momentum: s0 param, s1 grad, s2 momentum buffer; f[2] momentum, f[3] one_minus_damp =
 * f32(1 - dampening); u[0] bit 0 nesterov, bit 1 first step (the buffer becomes the decayed
 * gradient, torch's clone). */
static inline FG_HD void fg_op_sgd_momentum(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  const float g = fg_op_sgd_grad(P, v);
  const float b = (P->u[0] & 2u) ? g : P->f[2] * v[0][2] + P->f[3] * g;
  v[0][2] = b;
  const float d = (P->u[0] & 1u) ? g + P->f[2] * b : b;
  v[0][0] = v[0][0] - P->f[0] * d;
}
static inline FG_HD void fg_op_sgd_momentum_master(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  fg_op_sgd_momentum(P, v, seed, c);
  v[0][4] = v[0][0];
}

/* rng_uniform: s0 = uniformFill's value of counter c: d[0] lo64, d[1] span, f[0] hi,
 * f[1] the largest f32 below hi (fg_rng_uniform_params). Kaiming-uniform is this with
 * lo = -bound, hi = bound. */
static inline FG_HD void fg_op_rng_uniform(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  const fg_rng_uniform_params u = {P->d[0], P->d[1], P->f[0], P->f[1]};
  v[0][0] = fg_rng_uniform_value(&u, fg_rng_at(seed, c));
}

/* rng_gauss_fast (W = 2): gaussianFillAtFast, one pair per call; f[0] scale. */
static inline FG_HD void fg_op_rng_gauss_fast(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  float e, o;
  fg_rng_gauss_fast_pair(seed, c, &e, &o);
  v[0][0] = e * P->f[0];
  v[1][0] = o * P->f[0];
}

/* rng_keep_mask: s0 = 1 when inverted dropout keeps counter c (u[0] = keep cutoff), else 0. */
static inline FG_HD void fg_op_rng_keep_mask(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  v[0][0] = fg_rng_keep(fg_rng_at(seed, c), P->u[0]) ? 1.0f : 0.0f;
}

/* dropout: s0 = s1 * f[0] where kept (u[0] cutoff, f[0] = f32(1 / (1 - p))), else 0.
 * s0 and s1 may alias; the backward pass runs the same op on the gradient. */
static inline FG_HD void fg_op_dropout(const fg_op_params *P, fg_op_vals *v, uint64_t seed, uint64_t c) {
  v[0][0] = fg_rng_keep(fg_rng_at(seed, c), P->u[0]) ? v[0][1] * P->f[0] : 0.0f;
}

/* The ops of the optimizers and examples, in headers of their own; they may use everything
 * above (fg_op_canonical, the loads and stores). */
#include "forgia/elem/op_muon.h"
#include "forgia/elem/op_apollo.h"
#include "forgia/elem/op_nn.h"
#include "forgia/elem/op_es.h"
#include "forgia/elem/op_lora.h"

/* X(ENUM, number, name, W, streams, read mask, write mask, dtype sets of the streams) */
#define FG_OP_F FG_OP_DT_FLOAT
#define FG_OP_G FG_OP_DT_F32
#define FG_OP_TABLE(X)                                                                                  \
  X(FILL, 0, fill, 1, 1, 0x0u, 0x1u, FG_OP_DT1(FG_OP_F))                                                \
  X(SCALE, 1, scale, 1, 1, 0x1u, 0x1u, FG_OP_DT1(FG_OP_F))                                              \
  X(AXPY, 2, axpy, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_F, FG_OP_F))                                       \
  X(CLIP_SCALE, 3, clip_scale, 1, 1, 0x1u, 0x1u, FG_OP_DT1(FG_OP_F))                                    \
  X(ADAMW, 4, adamw, 1, 4, 0xFu, 0xDu, FG_OP_DTS(FG_OP_F, FG_OP_G, FG_OP_F, FG_OP_F, 0u, 0u))           \
  X(RNG_UNIFORM, 5, rng_uniform, 1, 1, 0x0u, 0x1u, FG_OP_DT1(FG_OP_F))                                  \
  X(RNG_GAUSS_FAST, 6, rng_gauss_fast, 2, 1, 0x0u, 0x1u, FG_OP_DT1(FG_OP_F))                            \
  X(RNG_KEEP_MASK, 7, rng_keep_mask, 1, 1, 0x0u, 0x1u, FG_OP_DT1(FG_OP_DT_MASK))                        \
  X(DROPOUT, 8, dropout, 1, 2, 0x2u, 0x1u, FG_OP_DT2(FG_OP_F, FG_OP_F))                                 \
  X(ADAMW_MASTER, 9, adamw_master, 1, 5, 0xFu, 0x1Du,                                                   \
    FG_OP_DTS(FG_OP_G, FG_OP_G, FG_OP_F, FG_OP_F, FG_OP_F, 0u))                                         \
  X(ADAM, 10, adam, 1, 4, 0xFu, 0xDu, FG_OP_DTS(FG_OP_F, FG_OP_G, FG_OP_F, FG_OP_F, 0u, 0u))            \
  X(ADAM_MASTER, 11, adam_master, 1, 5, 0xFu, 0x1Du,                                                    \
    FG_OP_DTS(FG_OP_G, FG_OP_G, FG_OP_F, FG_OP_F, FG_OP_F, 0u))                                         \
  X(SGD, 12, sgd, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_F, FG_OP_G))                                        \
  X(SGD_MASTER, 13, sgd_master, 1, 5, 0x3u, 0x11u, FG_OP_DTS(FG_OP_G, FG_OP_G, 0u, 0u, FG_OP_F, 0u))    \
  X(SGD_MOMENTUM, 14, sgd_momentum, 1, 3, 0x7u, 0x5u, FG_OP_DTS(FG_OP_F, FG_OP_G, FG_OP_F, 0u, 0u, 0u)) \
  X(SGD_MOMENTUM_MASTER, 15, sgd_momentum_master, 1, 5, 0x7u, 0x15u,                                    \
    FG_OP_DTS(FG_OP_G, FG_OP_G, FG_OP_F, 0u, FG_OP_F, 0u))                                              \
  FG_OP_TABLE_MUON(X)                                                                                   \
  FG_OP_TABLE_APOLLO(X)                                                                                 \
  FG_OP_TABLE_NN(X)                                                                                     \
  FG_OP_TABLE_ES(X)                                                                                     \
  FG_OP_TABLE_LORA(X)

#endif
