/* The muon ops of the op table (elem/op_table.h includes this header and expands FG_OP_TABLE_MUON
 * at the end of FG_OP_TABLE). Same rules as there. Each is Fucina's element (its src/optim.zig,
 * Muon and newtonSchulz5), every product and sum rounded to f32 on its own. The value rows are
 * spelled float (*)[FG_OP_MAX_STREAMS] because fg_op_vals is declared after this header. */
#ifndef FORGIA_ELEM_OP_MUON_H
#define FORGIA_ELEM_OP_MUON_H

#include <math.h>

#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"
#include "forgia/elem/op_params.h"

/* muon_momentum: s0 u (written, f32), s1 grad (f32), s2 momentum buffer; f[0] beta,
 * f[1] w = 1 - beta (f32), u[0] nesterov. ATen's lerp switches forms at weight 0.5, and
 * Fucina mirrors both: m = m + w*(g - m) when w < 0.5, else g - (g - m)*beta; the nesterov
 * blend lerp(g, m, beta) likewise, from the new (pre-narrowing) buffer value. */
static inline FG_HD void fg_op_muon_momentum(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  const float beta = P->f[0], w = P->f[1], g = v[0][1], m0 = v[0][2];
  const float m = w < 0.5f ? m0 + w * (g - m0) : g - (g - m0) * beta;
  v[0][2] = m;
  if (P->u[0]) v[0][0] = beta < 0.5f ? g + beta * (m - g) : m - (m - g) * w;
  else v[0][0] = m;
}

/* muon_normalize: s0 = s0 * f32(1 / (sqrt(*dscalar) + 1e-7)), the inverse computed in f64 from
 * the sum of squares a reduction left in device memory (Newton-Schulz's first step). */
static inline FG_HD void fg_op_muon_normalize(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  const float inv = (float)(1.0 / (sqrt(*P->dscalar) + 1e-7));
  v[0][0] = v[0][0] * inv;
}

/* muon_ns_comb: s0 = f[0] * s1 + f[1] * s0 (Newton-Schulz's B = b*A + c*A*A, s0 holding A*A
 * and s1 A). */
static inline FG_HD void fg_op_muon_ns_comb(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = P->f[0] * v[0][1] + P->f[1] * v[0][0];
}

/* muon_eye: s0 = 1 where the counter is a multiple of u[0], else 0 (an identity matrix of
 * side u[0] - 1, for an exact transposition through the GEMM). */
static inline FG_HD void fg_op_muon_eye(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)seed;
  v[0][0] = c % P->u[0] == 0 ? 1.0f : 0.0f;
}

/* muon_apply: s0 param, s1 the orthogonalised update O (f32); s0 = s0 * f[0] - f[1] * s1 with
 * f[0] keep = f32(1 - lr*wd) from the base lr (1 when wd = 0) and f[1] lr_eff. The _master
 * form steps the f32 master (s0) and stores it narrowed into the parameter (s4). */
static inline FG_HD void fg_op_muon_apply(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  (void)seed, (void)c;
  v[0][0] = v[0][0] * P->f[0] - P->f[1] * v[0][1];
}
static inline FG_HD void fg_op_muon_apply_master(const fg_op_params *P, float (*v)[FG_OP_MAX_STREAMS], uint64_t seed, uint64_t c) {
  fg_op_muon_apply(P, v, seed, c);
  v[0][4] = v[0][0];
}

/* X(ENUM, number, name, W, streams, read mask, write mask, dtype sets of the streams) */
#define FG_OP_TABLE_MUON(X)                                                                                  \
  X(MUON_MOMENTUM, 16, muon_momentum, 1, 3, 0x6u, 0x5u,                                                      \
    FG_OP_DTS(FG_OP_DT_F32, FG_OP_DT_F32, FG_OP_DT_FLOAT, 0u, 0u, 0u))                                       \
  X(MUON_NORMALIZE, 17, muon_normalize, 1, 1, 0x1u, 0x1u, FG_OP_DTS(FG_OP_DT_F32, 0u, 0u, 0u, 0u, 0u))       \
  X(MUON_NS_COMB, 18, muon_ns_comb, 1, 2, 0x3u, 0x1u, FG_OP_DTS(FG_OP_DT_F32, FG_OP_DT_F32, 0u, 0u, 0u, 0u)) \
  X(MUON_EYE, 19, muon_eye, 1, 1, 0x0u, 0x1u, FG_OP_DTS(FG_OP_DT_F32, 0u, 0u, 0u, 0u, 0u))                   \
  X(MUON_APPLY, 20, muon_apply, 1, 2, 0x3u, 0x1u, FG_OP_DTS(FG_OP_DT_FLOAT, FG_OP_DT_F32, 0u, 0u, 0u, 0u))   \
  X(MUON_APPLY_MASTER, 21, muon_apply_master, 1, 5, 0x3u, 0x11u,                                             \
    FG_OP_DTS(FG_OP_DT_F32, FG_OP_DT_F32, 0u, 0u, FG_OP_DT_FLOAT, 0u))

#endif
