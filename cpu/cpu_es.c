/* The CPU loops of the op layer's fast-gaussian ops (rng_gauss_fast, es_perturb,
 * es_materialize, es_update): a block of elements at a time, the noise of the block generated
 * by one loop the compiler vectorises (8 or 16 lanes of splitmix64 and the f32 polynomials),
 * then applied by a second. The generic launcher calls the op per pair, which GCC does not
 * vectorise, and is about ten times slower. Per element the operations and their order are
 * the op's (elem/op_es.h, elem/op_table.h): es_update's acc = 0; acc = acc + coef[s] * eps_s
 * for s in order; p + N(scale * acc). The cut into blocks therefore changes no bit. */
#include <stdint.h>

#include "cpu/cpu_ops.h"
#include "forgia/ops.h"

/* Elements per block: the accumulator stays in L1 (8 KiB). Even, so blocks hold whole pairs. */
#define FG_CPU_ES_BLOCK 2048

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FG_CPU_ES_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define FG_CPU_ES_CLONES
#endif

/* One element whose pair straddles the span's edge: computed alone (both halves of its pair
 * are generated; the other half is not stored). */
static void fg_cpu_es_update_one(const fg_op_params *P, const fg_op_args *a, size_t i) {
  const uint64_t S = P->u[0];
  const float *coef = fg_es_table_coef(P->dtable);
  const uint64_t *seeds = fg_es_table_seeds(P->dtable, S, a->seed);
  const uint64_t c = a->index0 + i;
  float acc = 0.0f;
  for (uint64_t s = 0; s < S; s++) acc = fg_es_acc(acc, coef[s], fg_rng_gauss_fast_at(seeds[s], c, 1.0f));
  const float p = fg_op_load(a->ptr[0], a->dtype[0], i);
  fg_op_store(a->ptr[0], a->dtype[0], i, fg_es_apply(P->u[1], p, P->f[0], acc));
}

FG_CPU_ES_CLONES static void fg_cpu_es_block(const float *coef, const uint64_t *seeds, uint64_t S, uint64_t c0,
                                             size_t n, float *restrict acc) {
  for (size_t k = 0; k < n; k++) acc[k] = 0.0f;
  for (uint64_t s = 0; s < S; s++) {
    const uint64_t seed = seeds[s];
    const float C = coef[s];
    for (size_t k = 0; k < n; k += 2) {
      float e, o;
      fg_rng_gauss_fast_pair(seed, c0 + k, &e, &o);
      acc[k] = fg_es_acc(acc[k], C, e);
      acc[k + 1] = fg_es_acc(acc[k + 1], C, o);
    }
  }
}

/* eps of counters c0 .. c0 + n - 1, c0 even, n even. */
FG_CPU_ES_CLONES static void fg_cpu_es_noise(uint64_t seed, uint64_t c0, size_t n, float *restrict eps) {
  for (size_t k = 0; k < n; k += 2) {
    float e, o;
    fg_rng_gauss_fast_pair(seed, c0 + k, &e, &o);
    eps[k] = e;
    eps[k + 1] = o;
  }
}

/* dst = eps * scale (the fill itself). */
FG_CPU_ES_CLONES static void fg_cpu_es_scale_f32(float *restrict dst, const float *restrict eps, size_t n,
                                                 float scale) {
  for (size_t k = 0; k < n; k++) dst[k] = fg_op_canonical(eps[k] * scale);
}

/* dst = src + N(scaled * eps) (perturb: dst == src; materialize: a replica). */
FG_CPU_ES_CLONES static void fg_cpu_es_add_f32(float *dst, const float *src, const float *restrict eps, size_t n,
                                               float scaled) {
  for (size_t k = 0; k < n; k++) dst[k] = fg_op_canonical(fg_es_add_noise(FG_F32, src[k], scaled, eps[k]));
}

FG_CPU_ES_CLONES static void fg_cpu_es_apply_f32(float *restrict p, const float *restrict acc, size_t n, float scale) {
  for (size_t k = 0; k < n; k++) p[k] = fg_op_canonical(fg_es_apply(FG_F32, p[k], scale, acc[k]));
}

static void fg_cpu_es_update_span(const fg_op_params *P, const fg_op_args *a, size_t lo, size_t hi) {
  const uint64_t S = P->u[0];
  const float *coef = fg_es_table_coef(P->dtable);
  const uint64_t *seeds = fg_es_table_seeds(P->dtable, S, a->seed);
  size_t i = lo;
  if (i < hi && ((a->index0 + i) & 1u)) fg_cpu_es_update_one(P, a, i++);
  size_t end = hi;
  if (end > i && ((end - i) & 1u)) end--; /* the last element, alone, after the pairs */
  float acc[FG_CPU_ES_BLOCK];
  for (size_t b = i; b < end; b += FG_CPU_ES_BLOCK) {
    const size_t n = end - b < FG_CPU_ES_BLOCK ? end - b : FG_CPU_ES_BLOCK;
    fg_cpu_es_block(coef, seeds, S, a->index0 + b, n, acc);
    if (a->dtype[0] == FG_F32) {
      fg_cpu_es_apply_f32((float *)a->ptr[0] + b, acc, n, P->f[0]);
    } else {
      for (size_t k = 0; k < n; k++) {
        const float p = fg_op_load(a->ptr[0], a->dtype[0], b + k);
        fg_op_store(a->ptr[0], a->dtype[0], b + k, fg_es_apply(P->u[1], p, P->f[0], acc[k]));
      }
    }
  }
  if (end < hi) fg_cpu_es_update_one(P, a, end);
}

/* The element ops of the other three, for edges whose pair straddles the span: the op
 * itself on a whole pair, one half stored. */
static void fg_cpu_es_edge(int op, const fg_op_params *P, const fg_op_args *a, size_t i) {
  const uint64_t c = a->index0 + i, pc = c & ~(uint64_t)1;
  fg_op_vals v[2] = {{0}};
  const unsigned w = (unsigned)(c & 1u);
  if (op == FG_OP_ES_PERTURB) v[w][0] = fg_op_load(a->ptr[0], a->dtype[0], i);
  if (op == FG_OP_ES_MATERIALIZE) v[w][1] = fg_op_load(a->ptr[1], a->dtype[1], i);
  if (op == FG_OP_RNG_GAUSS_FAST) fg_op_rng_gauss_fast(P, v, a->seed, pc);
  if (op == FG_OP_ES_PERTURB) fg_op_es_perturb(P, v, a->seed, pc);
  if (op == FG_OP_ES_MATERIALIZE) fg_op_es_materialize(P, v, a->seed, pc);
  fg_op_store(a->ptr[0], a->dtype[0], i, v[w][0]);
}

/* rng_gauss_fast (s0 = f[0] * eps), es_perturb (s0 += N(f[0] * eps)) and es_materialize
 * (s0 = s1 + N(f[0] * eps)) over [lo, hi). */
static void fg_cpu_es_noise_span(int op, const fg_op_params *P, const fg_op_args *a, size_t lo, size_t hi) {
  size_t i = lo;
  if (i < hi && ((a->index0 + i) & 1u)) fg_cpu_es_edge(op, P, a, i++);
  size_t end = hi;
  if (end > i && ((end - i) & 1u)) end--;
  const fg_dtype dt = a->dtype[0];
  const float f = P->f[0];
  float eps[FG_CPU_ES_BLOCK];
  for (size_t b = i; b < end; b += FG_CPU_ES_BLOCK) {
    const size_t n = end - b < FG_CPU_ES_BLOCK ? end - b : FG_CPU_ES_BLOCK;
    fg_cpu_es_noise(a->seed, a->index0 + b, n, eps);
    if (op == FG_OP_RNG_GAUSS_FAST && dt == FG_F32) {
      fg_cpu_es_scale_f32((float *)a->ptr[0] + b, eps, n, f);
    } else if (op == FG_OP_RNG_GAUSS_FAST) {
      for (size_t k = 0; k < n; k++) fg_op_store(a->ptr[0], dt, b + k, eps[k] * f);
    } else if (dt == FG_F32 && (op == FG_OP_ES_PERTURB || a->dtype[1] == FG_F32)) {
      float *dst = (float *)a->ptr[0] + b;
      const float *src = op == FG_OP_ES_PERTURB ? dst : (const float *)a->ptr[1] + b;
      fg_cpu_es_add_f32(dst, src, eps, n, f);
    } else {
      const int from = op == FG_OP_ES_PERTURB ? 0 : 1;
      for (size_t k = 0; k < n; k++) {
        const float x = fg_op_load(a->ptr[from], a->dtype[from], b + k);
        fg_op_store(a->ptr[0], dt, b + k, fg_es_add_noise(P->u[1], x, f, eps[k]));
      }
    }
  }
  if (end < hi) fg_cpu_es_edge(op, P, a, end);
}

static void fg_cpu_span_gauss(const fg_op_params *P, const fg_op_args *a, size_t lo, size_t hi) {
  fg_cpu_es_noise_span(FG_OP_RNG_GAUSS_FAST, P, a, lo, hi);
}
static void fg_cpu_span_perturb(const fg_op_params *P, const fg_op_args *a, size_t lo, size_t hi) {
  fg_cpu_es_noise_span(FG_OP_ES_PERTURB, P, a, lo, hi);
}
static void fg_cpu_span_materialize(const fg_op_params *P, const fg_op_args *a, size_t lo, size_t hi) {
  fg_cpu_es_noise_span(FG_OP_ES_MATERIALIZE, P, a, lo, hi);
}

fg_cpu_span_fn fg_cpu_span_override(int op) {
  switch (op) {
    case FG_OP_RNG_GAUSS_FAST: return fg_cpu_span_gauss;
    case FG_OP_ES_PERTURB: return fg_cpu_span_perturb;
    case FG_OP_ES_MATERIALIZE: return fg_cpu_span_materialize;
    case FG_OP_ES_UPDATE: return fg_cpu_es_update_span;
    default: return NULL;
  }
}
