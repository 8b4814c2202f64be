/* Reductions on the CPU: OpenMP over the chunks of every tensor of the list (partials in
 * the stream's scratch), then the serial combine of elem/reduce.h on the calling thread.
 * Each chunk is computed alone by the elem/ functions, so the bits do not depend on how
 * chunks map to threads. */
#include <string.h>

#include "cpu/cpu_ops.h"
#include "device/reduce_call.h"
#include "device/scratch.h"

#define FG_CPU_RED_TILE 2048 /* f16/bf16 values widened per step (8 KiB of f32 on the stack) */

/* Step 1 of the grid with the op a constant, so that the 16 lanes stay in vector registers.
 * Cloned for AVX2: wider vectors run the same IEEE operations lane by lane, so every clone
 * gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FG_CPU_RED_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FG_CPU_RED_CLONES
#endif
#define FG_CPU_RED_STRIDES(NAME, OP)                                          \
  FG_CPU_RED_CLONES static void NAME(double *io, const float *x, size_t ns) { \
    double lane[FG_REDUCE_LANES];                                             \
    memcpy(lane, io, sizeof lane);                                            \
    fg_reduce_strides(OP, lane, x, ns);                                       \
    memcpy(io, lane, sizeof lane);                                            \
  }
FG_CPU_RED_STRIDES(fg_cpu_strides_sum, FG_REDUCE_SUM)
FG_CPU_RED_STRIDES(fg_cpu_strides_sumsq, FG_REDUCE_SUMSQ)
FG_CPU_RED_STRIDES(fg_cpu_strides_maxabs, FG_REDUCE_MAXABS)

static void fg_cpu_strides(int op, double *lane, const float *x, size_t ns) {
  if (op == FG_REDUCE_SUMSQ) fg_cpu_strides_sumsq(lane, x, ns);
  else if (op == FG_REDUCE_MAXABS) fg_cpu_strides_maxabs(lane, x, ns);
  else fg_cpu_strides_sum(lane, x, ns);
}

static void fg_cpu_widen(float *dst, const void *x, fg_dtype t, size_t begin, size_t n) {
  const uint16_t *h = (const uint16_t *)x + begin;
  if (t == FG_F16)
    for (size_t i = 0; i < n; i++) dst[i] = fg_f16_to_f32(h[i]);
  else
    for (size_t i = 0; i < n; i++) dst[i] = fg_bf16_to_f32(h[i]);
}

/* Chunk c of a tensor of n values. */
static double fg_cpu_chunk(int op, const void *x, fg_dtype t, size_t n, size_t c) {
  const size_t begin = c * FG_REDUCE_CHUNK;
  const size_t m = n > begin ? (n - begin < FG_REDUCE_CHUNK ? n - begin : FG_REDUCE_CHUNK) : 0;
  if (!m) return 0.0; /* the empty chunk of an empty tensor (x may be NULL) */
  const size_t ns = m / FG_REDUCE_LANES, whole = ns * FG_REDUCE_LANES;
  double lane[FG_REDUCE_LANES] = {0};
  if (t == FG_F32) {
    const float *xf = (const float *)x + begin;
    fg_cpu_strides(op, lane, xf, ns);
    return fg_reduce_chunk_end(op, lane, xf + whole, (unsigned)(m - whole));
  }
  float buf[FG_CPU_RED_TILE];
  for (size_t k = 0; k < whole; k += FG_CPU_RED_TILE) {
    const size_t len = whole - k < FG_CPU_RED_TILE ? whole - k : FG_CPU_RED_TILE;
    fg_cpu_widen(buf, x, t, begin + k, len);
    fg_cpu_strides(op, lane, buf, len / FG_REDUCE_LANES);
  }
  fg_cpu_widen(buf, x, t, begin + whole, m - whole);
  return fg_reduce_chunk_end(op, lane, buf, (unsigned)(m - whole));
}

/* Synchronous like every CPU stream operation. */
fg_status fg_cpu_sum_f64(fg_device *dev, const fg_sum_f64_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  double t = 0.0;
  for (size_t i = 0; i < c->n; i++) t = t + c->x[i];
  *c->out = t;
  return FG_OK;
}

fg_status fg_cpu_reduce(fg_device *dev, const struct fg_reduce_call *r, fg_stream *s) {
  (void)dev;
  const int op = r->op;
  if (r->count == 0) {
    if (r->total) *r->total = 0.0;
    return FG_OK;
  }
  if (r->count >= SIZE_MAX / sizeof(size_t) - 1 || r->nchunks > (SIZE_MAX - (r->count + 1) * sizeof(size_t)) / 8)
    return fg_fail(FG_ERR_INVALID_ARG, "reduce: a list of %zu tensors and %zu chunks is too large", r->count,
                   r->nchunks);
  void *mem;
  fg_status st = fg_stream_scratch(s, (r->count + 1) * sizeof(size_t) + r->nchunks * sizeof(double), &mem);
  if (st) return st;
  size_t *first = mem; /* first[t]: the index of tensor t's first chunk; first[count] = nchunks */
  double *part = (double *)(first + r->count + 1);
  first[0] = 0;
  for (size_t t = 0; t < r->count; t++) {
    const void *x;
    fg_dtype dt;
    size_t n;
    fg_reduce_call_at(r, t, &x, &dt, &n);
    first[t + 1] = first[t] + fg_reduce_nchunks(n);
  }
  const long nc = (long)r->nchunks;
#pragma omp parallel for schedule(static) if (nc > 1)
  for (long g = 0; g < nc; g++) {
    size_t lo = 0, hi = r->count; /* the last t with first[t] <= g */
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      if (first[mid] <= (size_t)g) lo = mid;
      else hi = mid;
    }
    const void *x;
    fg_dtype dt;
    size_t n;
    fg_reduce_call_at(r, lo, &x, &dt, &n);
    part[g] = fg_cpu_chunk(op, x, dt, n, (size_t)g - first[lo]);
  }
  double total = 0.0;
  for (size_t t = 0; t < r->count; t++) {
    double acc = 0.0;
    for (size_t g = first[t]; g < first[t + 1]; g++) acc = fg_reduce_join(op, acc, part[g]);
    acc = fg_reduce_canonical(acc);
    if (r->per_tensor) r->per_tensor[t] = acc;
    total = fg_reduce_join(op, total, acc);
  }
  if (r->total) *r->total = fg_reduce_canonical(total);
  return FG_OK;
}
