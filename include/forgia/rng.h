/* Random numbers: Fucina's streams (its src/rng.zig), bit for bit (docs/design.md, Numerics
 * contract, rules 4 and 8).
 *
 *   fg_rng_spec r = {.kind = FG_RNG_GAUSS_FAST, .seed = stream_seed, .scale = 1.0f};
 *   fg_rng_fill_tensor(noise, &r, s);                  // on the tensor's device
 *   fg_rng_fill_host(&r, host_values, n);              // the same values, on the host
 *
 * Every value is a pure function of (seed, counter): element k of a fill is the stream's
 * element first + k, so any window, chunking, thread count or device gives the same values,
 * and a stream is regenerated from its seed, never stored. fg_rng_at(seed, i) (in
 * elem/rng.h, included here) is the i-th splitmix64 word, and a sub-stream seed is
 * fg_rng_at(base ^ FG_RNG_DOMAIN_*, counter) as Fucina derives it.
 *
 * With first = 0 the kinds are Fucina's functions exactly:
 *   FG_RNG_UNIFORM     uniformFill(seed, out, lo, hi): [lo, hi), lo < hi, both finite
 *   FG_RNG_KAIMING     kaimingUniformFill(seed, out, fan_in): uniform in [-b, b),
 *                      b = f32(sqrt(1 / f64(fan_in))), fan_in >= 1
 *   FG_RNG_GAUSS       gaussianFill / gaussianFillAt(seed, first, out, scale): scalar
 *                      Box-Muller on f64 log/cos/sin (APOLLO's projection, randn). It needs
 *                      libm, so it runs on the host; fg_rng_fill computes it there and
 *                      copies it to the device, synchronously.
 *   FG_RNG_GAUSS_FAST  gaussianFillAtFast(seed, first, out, scale): ES noise, all-f32
 *                      arithmetic, computed on the device itself
 *   FG_RNG_KEEP_MASK   inverted dropout's mask: 1 where element i is kept with
 *                      probability 1 - p, 0 <= p < 1 (Fucina's dropout, as bytes 0/1)
 * Fucina's f64 libm (Zig's compiler_rt) and glibc give f64 log/cos/sin that differ in the
 * last bit now and then; the f32 values of FG_RNG_GAUSS agreed on every one of the values
 * compared (tests/data/fucina_gen/README.md), but a rare 1-ulp difference is possible.
 *
 * Scalars derived from the arguments (the kaiming bound, the uniform's f64 span and the
 * largest f32 below hi, dropout's integer cutoff and 1 / (1 - p)) are computed once, in one
 * place, for the host and the device fills alike; fg_rng_op_params exposes them for callers
 * that run the op layer themselves (dropout applied to activations, say).
 *
 * Thread safety: fg_rng_fill_host and fg_rng_op_params may be called from many threads at
 * once. fg_rng_fill runs on the op layer and keeps its rule (ops.h): a stream is used by one
 * thread at a time; calls with s NULL may come from many threads. */
#ifndef FORGIA_RNG_H
#define FORGIA_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/dtype.h"
#include "forgia/elem/rng.h"
#include "forgia/ops.h"
#include "forgia/status.h"
#include "forgia/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_rng_kind {
  FG_RNG_UNIFORM = 0,
  FG_RNG_KAIMING = 1,
  FG_RNG_GAUSS = 2,
  FG_RNG_GAUSS_FAST = 3,
  FG_RNG_KEEP_MASK = 4,
} fg_rng_kind;

/* One stream and the window of it to produce. Fields a kind does not use are ignored. */
typedef struct fg_rng_spec {
  fg_rng_kind kind;
  uint64_t seed;
  uint64_t first;   /* the stream counter of element 0; first + n - 1 must not pass 2^64 - 1 */
  float lo, hi;     /* FG_RNG_UNIFORM */
  uint64_t fan_in;  /* FG_RNG_KAIMING */
  float scale;      /* FG_RNG_GAUSS, FG_RNG_GAUSS_FAST: each value times scale (1: N(0, 1)) */
  float p;          /* FG_RNG_KEEP_MASK: the drop probability */
} fg_rng_spec;

/* "uniform", "kaiming", "gauss", "gauss-fast", "keep-mask"; NULL for an unknown kind. */
FG_API const char *fg_rng_kind_name(fg_rng_kind kind);

/* n values into host memory: f32 for every kind except FG_RNG_KEEP_MASK, which writes one
 * byte (0 or 1) per element. Validates r first (FG_ERR_INVALID_ARG, FG_ERR_NONFINITE,
 * FG_ERR_OVERFLOW for a window past counter 2^64 - 1) and writes nothing on failure. */
FG_API fg_status fg_rng_fill_host(const fg_rng_spec *r, void *out, size_t n);

/* n values into device memory of dev as dtype: f32, f16 or bf16 (narrowed as the op layer
 * narrows: f16 round-to-nearest-even, bf16 Fucina's rule), or u8/bool for FG_RNG_KEEP_MASK.
 * The same bits as fg_rng_fill_host (after narrowing) on every device. s NULL: synchronous;
 * else queued on s, except FG_RNG_GAUSS, which waits for s, then copies synchronously. */
FG_API fg_status fg_rng_fill(fg_device *dev, const fg_rng_spec *r, void *dst, fg_dtype dtype, size_t n,
                             fg_stream *s);

/* fg_rng_fill over a whole tensor (t->numel elements of t->dtype); a read-only tensor is
 * refused. */
FG_API fg_status fg_rng_fill_tensor(fg_tensor *t, const fg_rng_spec *r, fg_stream *s);

/* The op and parameter block of the op layer that produce r's values (element k of an
 * fg_op_args with .seed = r->seed and .index0 = r->first + k). FG_RNG_KEEP_MASK also sets
 * the slots FG_OP_DROPOUT reads (u[0] the cutoff, f[0] = f32(1) / (f32(1) - p)), so one
 * call prepares a dropout. FG_RNG_GAUSS has no op (FG_ERR_UNSUPPORTED). op may be NULL. */
FG_API fg_status fg_rng_op_params(const fg_rng_spec *r, fg_op_kind *op, fg_op_params *params);

#ifdef __cplusplus
}
#endif
#endif
