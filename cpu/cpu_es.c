/* The CPU loop of the op layer's es_update (elem/op_es.h): a block of elements at a time,
 * each stream's noise generated for the whole block and added into an f32 accumulator, so
 * the gaussian vectorises across elements (the generic loop calls the op per pair, whose
 * loop over streams the compiler cannot vectorise). Per element the operations and their
 * order are the op's: acc = 0; acc = acc + coef[s] * eps_s for s in order; p + N(scale * acc).
 * The cut of the span into blocks therefore changes no bit. */
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
  for (uint64_t s = 0; s < S; s++) acc = acc + coef[s] * fg_rng_gauss_fast_at(seeds[s], c, 1.0f);
  const float p = fg_op_load(a->ptr[0], a->dtype[0], i);
  fg_op_store(a->ptr[0], a->dtype[0], i, p + fg_es_round(P->u[1], P->f[0] * acc));
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
      acc[k] = acc[k] + C * e;
      acc[k + 1] = acc[k + 1] + C * o;
    }
  }
}

FG_CPU_ES_CLONES static void fg_cpu_es_apply_f32(float *restrict p, const float *restrict acc, size_t n, float scale) {
  for (size_t k = 0; k < n; k++) p[k] = fg_op_canonical(p[k] + scale * acc[k]);
}

void fg_cpu_es_update_span(const fg_op_params *P, const fg_op_args *a, size_t lo, size_t hi) {
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
        fg_op_store(a->ptr[0], a->dtype[0], b + k, p + fg_es_round(P->u[1], P->f[0] * acc[k]));
      }
    }
  }
  if (end < hi) fg_cpu_es_update_one(P, a, end);
}
