/* The evolution-strategies ops of the op table (elem/op_table.h includes this header and
 * expands FG_OP_TABLE_ES at the end of FG_OP_TABLE). Same rules as there. Each is Fucina's
 * element (Fucina's src/es.zig: perturb, restore, update, anchored decay), every product and sum
 * rounded to f32 on its own; eps is element c of gaussianFillAtFast(seed, ., 1).
 *
 * Fucina narrows intermediate terms to the parameter's dtype (t = N(sigma * eps) before the
 * add, the update's delta, the anchor differences). The launcher narrows only the final
 * store, so these ops round the intermediates themselves: u[1] names the dtype of the
 * list's parameters (a list holds one parameter dtype; training/es_apply.c groups slots). */
#ifndef FORGIA_ELEM_OP_ES_H
#define FORGIA_ELEM_OP_ES_H

#include <math.h>
#include <stdint.h>

#include "forgia/elem/dtype_enum.h"
#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"
#include "forgia/elem/op_params.h"
#include "forgia/elem/rng.h"

/* v rounded to the dtype d and widened back (identity for f32). */
static inline FG_HD float fg_es_round(uint64_t d, float v) {
  if (d == (uint64_t)FG_F16) return fg_f16_to_f32(fg_f32_to_f16(v));
  if (d == (uint64_t)FG_BF16) return fg_bf16_to_f32(fg_f32_to_bf16(v));
  return v;
}

/* The three element steps every ES op is made of; the CPU's blocked loops (cpu/cpu_es.c)
 * call these same functions. */
/* x + N(scaled * eps): a perturbation, a regenerate-restore or a replica's value. */
static inline FG_HD float fg_es_add_noise(uint64_t d, float x, float scaled, float eps) {
  return x + fg_es_round(d, scaled * eps);
}
/* One stream's term of the update's accumulator: acc + coef * eps (mul, then add). */
static inline FG_HD float fg_es_acc(float acc, float coef, float eps) { return acc + coef * eps; }
/* The update's apply: p + N(scale * acc). */
static inline FG_HD float fg_es_apply(uint64_t d, float p, float scale, float acc) {
  return p + fg_es_round(d, scale * acc);
}

/* The update's stream table (params.dtable): coef[S] (f32), padded to 8 bytes, then for each
 * row r (a slot of the list: fg_op_args.seed = r) the S stream seeds of that slot. */
static inline FG_HD const float *fg_es_table_coef(const void *t) { return (const float *)t; }
static inline FG_HD const uint64_t *fg_es_table_seeds(const void *t, uint64_t S, uint64_t row) {
  return (const uint64_t *)t + (S + 1) / 2 + row * S;
}
/* Bytes of a table of S streams and rows rows. */
static inline FG_HD uint64_t fg_es_table_bytes(uint64_t S, uint64_t rows) { return 8u * ((S + 1) / 2 + rows * S); }

/* es_perturb (W = 2): s0 param; the stream seed is the slot's; f[0] the signed scale
 * (sign * noise sign) * sigma, u[1] the param dtype. p = p + N(f[0] * eps). A restore by
 * regeneration is the same op with the scale negated. */
static inline FG_HD void fg_op_es_perturb(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                          uint64_t c) {
  float e, o;
  fg_rng_gauss_fast_pair(seed, c, &e, &o);
  v[0][0] = fg_es_add_noise(P->u[1], v[0][0], P->f[0], e);
  v[1][0] = fg_es_add_noise(P->u[1], v[1][0], P->f[0], o);
}

/* es_perturb_cached: s0 param, s1 the cached noise (f32); the same element as es_perturb. */
static inline FG_HD void fg_op_es_perturb_cached(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                                 uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = fg_es_add_noise(P->u[1], v[0][0], P->f[0], v[0][1]);
}

/* es_materialize (W = 2): s0 the replica (written), s1 the shared parameter (read);
 * s0 = s1 + N(f[0] * eps). The _cached form reads the noise from s2. */
static inline FG_HD void fg_op_es_materialize(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                              uint64_t c) {
  float e, o;
  fg_rng_gauss_fast_pair(seed, c, &e, &o);
  v[0][0] = fg_es_add_noise(P->u[1], v[0][1], P->f[0], e);
  v[1][0] = fg_es_add_noise(P->u[1], v[1][1], P->f[0], o);
}
static inline FG_HD void fg_op_es_materialize_cached(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS],
                                                     uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = fg_es_add_noise(P->u[1], v[0][1], P->f[0], v[0][2]);
}

/* es_update (W = 2): s0 param; dtable the stream table, u[0] S streams, the row in the
 * tensor's seed, f[0] scale = f32(alpha / population), u[1] the param dtype.
 * acc = sum over s in order of coef[s] * eps_s (mul, then add, from 0); p = p + N(f[0] * acc).
 * The CPU launcher runs this op through a blocked loop of its own (cpu/cpu_es.c) with the
 * same operations in the same order per element. */
static inline FG_HD void fg_op_es_update(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t row,
                                         uint64_t c) {
  const uint64_t S = P->u[0];
  const float *coef = fg_es_table_coef(P->dtable);
  const uint64_t *seeds = fg_es_table_seeds(P->dtable, S, row);
  float ae = 0.0f, ao = 0.0f;
  for (uint64_t s = 0; s < S; s++) {
    float e, o;
    fg_rng_gauss_fast_pair(seeds[s], c, &e, &o);
    ae = fg_es_acc(ae, coef[s], e);
    ao = fg_es_acc(ao, coef[s], o);
  }
  v[0][0] = fg_es_apply(P->u[1], v[0][0], P->f[0], ae);
  v[1][0] = fg_es_apply(P->u[1], v[1][0], P->f[0], ao);
}

/* es_acc_cached: s0 acc (f32), s1 the cached noise of one stream; s0 = s0 + f[0] * s1 (the
 * update with cached streams: one call per stream in order, then es_apply). */
static inline FG_HD void fg_op_es_acc_cached(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                             uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = fg_es_acc(v[0][0], P->f[0], v[0][1]);
}

/* es_apply: s0 param, s1 acc (f32); p = p + N(f[0] * acc). */
static inline FG_HD void fg_op_es_apply(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                        uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = fg_es_apply(P->u[1], v[0][0], P->f[0], v[0][1]);
}

/* Anchored weight decay (after the update): s0 param, s1 its anchor (same dtype), u[1] the dtype.
 * l2: f[0] keep = f32(1 - alpha * lambda); d = N(p - a), kept = N(d * keep), p = kept + a.
 * l1: f[0] decay_step = f32(alpha * lambda); d = N(p - a), th = N(|d| - step),
 * c = max(th, 0), p = (d < 0 ? -c : c) + a (soft threshold: exact zeros). */
static inline FG_HD void fg_op_es_anchor_l2(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                            uint64_t c) {
  (void)seed, (void)c;
  const float a = v[0][1];
  const float d = fg_es_round(P->u[1], v[0][0] - a);
  const float kept = fg_es_round(P->u[1], d * P->f[0]);
  v[0][0] = kept + a;
}
static inline FG_HD void fg_op_es_anchor_l1(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed,
                                            uint64_t c) {
  (void)seed, (void)c;
  const float a = v[0][1];
  const float d = fg_es_round(P->u[1], v[0][0] - a);
  const float th = fg_es_round(P->u[1], fabsf(d) - P->f[0]);
  const float cl = th > 0.0f ? th : 0.0f;
  v[0][0] = (d < 0.0f ? -cl : cl) + a;
}

/* X(ENUM, number, name, W, streams, read mask, write mask, dtype sets of the streams) */
#define FG_OP_TABLE_ES(X)                                                                                \
  X(ES_PERTURB, 29, es_perturb, 2, 1, 0x1u, 0x1u, FG_OP_DT1(FG_OP_DT_FLOAT))                             \
  X(ES_PERTURB_CACHED, 30, es_perturb_cached, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_F32)) \
  X(ES_MATERIALIZE, 31, es_materialize, 2, 2, 0x2u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT))     \
  X(ES_MATERIALIZE_CACHED, 32, es_materialize_cached, 1, 3, 0x6u, 0x1u,                                  \
    FG_OP_DTS(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT, FG_OP_DT_F32, 0u, 0u, 0u))                                 \
  X(ES_UPDATE, 33, es_update, 2, 1, 0x1u, 0x1u, FG_OP_DT1(FG_OP_DT_FLOAT))                               \
  X(ES_ACC_CACHED, 34, es_acc_cached, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_DT_F32, FG_OP_DT_F32))           \
  X(ES_APPLY, 35, es_apply, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_F32))                   \
  X(ES_ANCHOR_L2, 36, es_anchor_l2, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT))         \
  X(ES_ANCHOR_L1, 37, es_anchor_l1, 1, 2, 0x3u, 0x1u, FG_OP_DT2(FG_OP_DT_FLOAT, FG_OP_DT_FLOAT))

#endif
