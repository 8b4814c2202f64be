/* The CPU launcher of the op layer: OpenMP over the chunk table (device/op_chunks.h), each
 * chunk a loop calling the op's elem/ function per element (per pair for W = 2). Every
 * element is computed alone, so the bits do not depend on the thread count or the cut.
 *
 * Each op gets its own loop (the FG_OP_TABLE expansion below) so that the compiler inlines
 * the elem function and vectorises the all-f32 case; the AVX2 clone runs the same IEEE
 * operations lane by lane (no FMA: -ffp-contract=off), so it gives the same bits. */
#include <stdbool.h>
#include <stdint.h>

#include "cpu/cpu_ops.h"
#include "device/backend.h"
#include "device/op_chunks.h"
#include "device/scratch.h"
#include "forgia/ops.h"

/* Elements per work item: large enough to amortise the loop set-up, small enough that
 * 1,000 small tensors spread over all threads. */
#define FG_CPU_OP_CHUNK 32768

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FG_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define FG_CPU_CLONES
#endif

#define FG_ALWAYS_INLINE inline __attribute__((always_inline))

typedef void (*fg_op_fn)(const fg_op_params *, fg_op_vals *, uint64_t, uint64_t);

/* One element (W = 1) or the pair whose even counter is c (W = 2); lanes outside
 * [lo, hi) are neither loaded nor stored. All-f32 lists take the f32 branch, which the
 * compiler vectorises after inlining. */
static FG_ALWAYS_INLINE void fg_cpu_group(fg_op_fn fn, unsigned W, unsigned ns, unsigned rm, unsigned wm, bool f32,
                                          const fg_op_params *P, const fg_op_args *a, size_t i0, size_t lo, size_t hi) {
  fg_op_vals v[2] = {{0}};
#pragma GCC unroll 2
  for (unsigned w = 0; w < W; w++) {
    const size_t i = i0 + w;
    if (i < lo || i >= hi) continue;
#pragma GCC unroll 4
    for (unsigned k = 0; k < ns; k++)
      if (rm >> k & 1u) v[w][k] = f32 ? ((const float *)a->ptr[k])[i] : fg_op_load(a->ptr[k], a->dtype[k], i);
  }
  fn(P, v, a->seed, a->index0 + i0);
#pragma GCC unroll 2
  for (unsigned w = 0; w < W; w++) {
    const size_t i = i0 + w;
    if (i < lo || i >= hi) continue;
#pragma GCC unroll 4
    for (unsigned k = 0; k < ns; k++)
      if (wm >> k & 1u) {
        if (f32)
          ((float *)a->ptr[k])[i] = fg_op_canonical(v[w][k]);
        else
          fg_op_store(a->ptr[k], a->dtype[k], i, v[w][k]);
      }
  }
}

/* The all-f32 loop: parameters, seed and stream pointers in locals, so that no store can
 * alias them and the compiler vectorises the loop (for W = 2 too, where the pair's two
 * halves are loaded and stored directly). */
static FG_ALWAYS_INLINE void fg_cpu_span_f32(fg_op_fn fn, unsigned W, unsigned ns, unsigned rm, unsigned wm,
                                             const fg_op_params *P, const fg_op_args *a, size_t i, size_t hi) {
  const fg_op_params Pl = *P;
  const uint64_t seed = a->seed, index0 = a->index0;
  float *p[FG_OP_MAX_STREAMS];
#pragma GCC unroll 4
  for (unsigned k = 0; k < ns; k++) p[k] = (float *)a->ptr[k];
  for (; i + W <= hi; i += W) {
    fg_op_vals v[2] = {{0}};
#pragma GCC unroll 2
    for (unsigned w = 0; w < W; w++)
#pragma GCC unroll 4
      for (unsigned k = 0; k < ns; k++)
        if (rm >> k & 1u) v[w][k] = p[k][i + w];
    fn(&Pl, v, seed, index0 + i);
#pragma GCC unroll 2
    for (unsigned w = 0; w < W; w++)
#pragma GCC unroll 4
      for (unsigned k = 0; k < ns; k++)
        if (wm >> k & 1u) p[k][i + w] = fg_op_canonical(v[w][k]);
  }
}

static FG_ALWAYS_INLINE void fg_cpu_span(fg_op_fn fn, unsigned W, unsigned ns, unsigned rm, unsigned wm,
                                         const fg_op_params *P, const fg_op_args *a, size_t lo, size_t hi) {
  bool f32 = true;
#pragma GCC unroll 4
  for (unsigned k = 0; k < ns; k++) f32 = f32 && a->dtype[k] == FG_F32;
  /* W = 2: pairs are aligned on even counters, so with an odd index0 the first and last
   * elements of a span may belong to pairs that straddle it; those are computed whole and
   * stored in part. The middle runs over full pairs only. */
  size_t i = lo;
  if (W == 2 && i < hi && ((a->index0 + i) & 1u)) {
    fg_cpu_group(fn, 2, ns, rm, wm, f32, P, a, i - 1, lo, hi);
    i++;
  }
  if (f32) {
    fg_cpu_span_f32(fn, W, ns, rm, wm, P, a, i, hi);
    i += (hi - i) / W * W;
  } else {
    for (; i + W <= hi; i += W) fg_cpu_group(fn, W, ns, rm, wm, false, P, a, i, i, i + W);
  }
  if (i < hi) fg_cpu_group(fn, W, ns, rm, wm, f32, P, a, i, lo, hi);
}


#define FG_CPU_OP_SPAN_(E, id, name, W, ns, rm, wm, dts)                                              \
  FG_CPU_CLONES static void fg_cpu_span_##name(const fg_op_params *P, const fg_op_args *a, size_t lo, \
                                               size_t hi) {                                        \
    fg_cpu_span(fg_op_##name, W, ns, rm, wm, P, a, lo, hi);                                        \
  }
FG_OP_TABLE(FG_CPU_OP_SPAN_)
#undef FG_CPU_OP_SPAN_

static const fg_cpu_span_fn fg_cpu_spans[FG_OP_KIND_COUNT] = {
#define FG_CPU_OP_PTR_(E, id, name, W, ns, rm, wm, dts) [id] = fg_cpu_span_##name,
    FG_OP_TABLE(FG_CPU_OP_PTR_)
#undef FG_CPU_OP_PTR_
};

fg_status fg_cpu_op(fg_device *dev, const fg_op_call *call, fg_stream *stream) {
  (void)dev;
  const int op = call->op;
  const fg_op_params *p = call->p;
  const fg_op_args *list = call->list;
  const size_t count = call->count;
  const size_t nchunks = fg_op_chunk_count(list, count, FG_CPU_OP_CHUNK);
  void *mem;
  fg_status st = fg_stream_scratch(stream, nchunks * sizeof(fg_op_chunk), &mem);
  if (st) return st;
  fg_op_chunk *ch = mem;
  fg_op_chunk_fill(list, count, FG_CPU_OP_CHUNK, ch);
  const fg_cpu_span_fn over = fg_cpu_span_override(op);
  const fg_cpu_span_fn span = over ? over : fg_cpu_spans[op];
  /* A single short chunk is not worth waking the thread team. */
#pragma omp parallel for schedule(static) if (nchunks > 1)
  for (long c = 0; c < (long)nchunks; c++)
    span(p, &list[ch[c].t], (size_t)ch[c].start, (size_t)(ch[c].start + ch[c].len));
  return FG_OK;
}
