/* Random number fills (include/forgia/rng.h). rng_prepare is the one place where the
 * arguments are checked and the derived scalars are computed; the host fills and the device
 * fills read the same fg_op_params, and both reach the elem/ functions of the op table. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/elem/half.h"
#include "forgia/rng.h"

/* Host chunk of the scalar gaussian's upload: bounded memory for any n. */
#define FG_RNG_HOST_CHUNK ((size_t)1 << 16)

const char *fg_rng_kind_name(fg_rng_kind kind) {
  switch (kind) {
    case FG_RNG_UNIFORM: return "uniform";
    case FG_RNG_KAIMING: return "kaiming";
    case FG_RNG_GAUSS: return "gauss";
    case FG_RNG_GAUSS_FAST: return "gauss-fast";
    case FG_RNG_KEEP_MASK: return "keep-mask";
  }
  return NULL;
}

static fg_status uniform_setup(const char *what, float lo, float hi, fg_op_params *P) {
  if (!isfinite(lo) || !isfinite(hi))
    return fg_fail(FG_ERR_NONFINITE, "rng %s: bounds [%g, %g) must be finite", what, (double)lo, (double)hi);
  if (!(lo < hi)) return fg_fail(FG_ERR_INVALID_ARG, "rng %s: lo %g must be below hi %g", what, (double)lo, (double)hi);
  P->d[0] = (double)lo;
  P->d[1] = (double)hi - P->d[0];
  P->f[0] = hi;
  P->f[1] = nextafterf(hi, lo);
  return FG_OK;
}

/* Validates r and n (out_null: the destination pointer is NULL) and fills *op and *P. */
static fg_status rng_prepare(const fg_rng_spec *r, size_t n, bool out_null, fg_op_kind *op, fg_op_params *P) {
  memset(P, 0, sizeof *P);
  if (!r) return fg_fail(FG_ERR_INVALID_ARG, "rng: NULL spec");
  const char *name = fg_rng_kind_name(r->kind);
  if (!name) return fg_fail(FG_ERR_INVALID_ARG, "rng: unknown kind %d", (int)r->kind);
  if (n && out_null) return fg_fail(FG_ERR_INVALID_ARG, "rng %s: NULL output for %zu values", name, n);
  if (n && r->first > UINT64_MAX - (uint64_t)(n - 1))
    return fg_fail(FG_ERR_OVERFLOW, "rng %s: %zu values from counter %llu run past counter 2^64-1", name, n,
                   (unsigned long long)r->first);
  switch (r->kind) {
    case FG_RNG_UNIFORM:
      *op = FG_OP_RNG_UNIFORM;
      return uniform_setup(name, r->lo, r->hi, P);
    case FG_RNG_KAIMING: {
      if (r->fan_in == 0) return fg_fail(FG_ERR_INVALID_ARG, "rng kaiming: fan_in is 0, expected >= 1");
      /* Fucina: bound = f32(sqrt_f64(1 / f64(fan_in))) */
      const float bound = (float)sqrt(1.0 / (double)r->fan_in);
      *op = FG_OP_RNG_UNIFORM;
      return uniform_setup(name, -bound, bound, P);
    }
    case FG_RNG_GAUSS:
    case FG_RNG_GAUSS_FAST:
      if (!isfinite(r->scale)) return fg_fail(FG_ERR_NONFINITE, "rng %s: scale %g is not finite", name, (double)r->scale);
      *op = r->kind == FG_RNG_GAUSS ? FG_OP_KIND_COUNT : FG_OP_RNG_GAUSS_FAST;
      P->f[0] = r->scale;
      return FG_OK;
    case FG_RNG_KEEP_MASK:
      if (!(r->p >= 0.0f && r->p < 1.0f))
        return fg_fail(FG_ERR_INVALID_ARG, "rng keep-mask: p %g is outside [0, 1)", (double)r->p);
      *op = FG_OP_RNG_KEEP_MASK;
      /* Fucina: keep iff (at >> 11) < ceil((1 - f64(p)) * 2^53); kept values times
       * 1.0 / (1.0 - p) in f32 */
      P->u[0] = (uint64_t)ceil((1.0 - (double)r->p) * 0x1p53);
      P->f[0] = 1.0f / (1.0f - r->p);
      return FG_OK;
  }
  return FG_ERR_INVALID_ARG; /* unreachable: the kind was named above */
}

fg_status fg_rng_op_params(const fg_rng_spec *r, fg_op_kind *op, fg_op_params *params) {
  if (!params) return fg_fail(FG_ERR_INVALID_ARG, "rng: NULL params");
  fg_op_kind k = FG_OP_KIND_COUNT;
  fg_status st = rng_prepare(r, 0, false, &k, params);
  if (st) return st;
  if (k == FG_OP_KIND_COUNT)
    return fg_fail(FG_ERR_UNSUPPORTED, "rng gauss: the scalar gaussian needs libm and has no device op");
  if (op) *op = k;
  return FG_OK;
}

/* gaussianFill's pair p (even): f64 libm log/cos/sin, one rounding to f32 per value. */
static void gauss_pair(uint64_t seed, uint64_t p, double scale, float *even, float *odd) {
  const double ua = fg_rng_unit53_open0(fg_rng_at(seed, p));
  const double ub = fg_rng_unit53(fg_rng_at(seed, p + 1));
  const double radius = sqrt(-2.0 * log(ua));
  const double angle = 0x1.921fb54442d18p+2 * ub; /* f64(2 pi), multiplied first as Fucina does */
  *even = (float)(radius * cos(angle) * scale);
  *odd = (float)(radius * sin(angle) * scale);
}

/* gaussianFillAtFast over whole pairs: the loop the compiler vectorises (the elem/ code is
 * lane-exact IEEE arithmetic, -ffp-contract=off), with AVX-512 and AVX2 clones where GCC
 * builds them. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FG_RNG_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define FG_RNG_CLONES
#endif
FG_RNG_CLONES static void fast_pairs(uint64_t seed, uint64_t p0, float scale, float *restrict out, size_t npairs) {
  for (size_t k = 0; k < npairs; k++) {
    float e, o;
    fg_rng_gauss_fast_pair(seed, p0 + 2 * k, &e, &o);
    out[2 * k] = e * scale;
    out[2 * k + 1] = o * scale;
  }
}

static void one_pair(bool fast, uint64_t seed, uint64_t p, float scale, float *even, float *odd) {
  if (fast) {
    float e, o;
    fg_rng_gauss_fast_pair(seed, p, &e, &o);
    *even = e * scale;
    *odd = o * scale;
  } else {
    gauss_pair(seed, p, scale, even, odd);
  }
}

/* Elements first .. first+n-1 of a pair stream: a lone sin half at an odd start, whole
 * pairs, then a lone cos half at an odd end. */
static void fill_pairs(bool fast, uint64_t seed, uint64_t first, float scale, float *out, size_t n) {
  size_t k = 0;
  float e, o;
  uint64_t j = first;
  if (n && (j & 1u)) {
    one_pair(fast, seed, j - 1, scale, &e, &o);
    out[k++] = o;
    j++;
  }
  const size_t npairs = (n - k) / 2;
  if (fast) {
    fast_pairs(seed, j, scale, out + k, npairs);
  } else {
    for (size_t q = 0; q < npairs; q++) gauss_pair(seed, j + 2 * q, scale, &out[k + 2 * q], &out[k + 2 * q + 1]);
  }
  k += 2 * npairs;
  j += 2 * npairs;
  if (k < n) {
    one_pair(fast, seed, j, scale, &e, &o);
    out[k] = e;
  }
}

static void fill_host(const fg_rng_spec *r, fg_op_kind op, const fg_op_params *P, void *out, size_t n) {
  const uint64_t seed = r->seed, first = r->first;
  switch (op) {
    case FG_OP_RNG_UNIFORM: {
      float *o = out;
      fg_op_vals v[1];
      for (size_t k = 0; k < n; k++) {
        fg_op_rng_uniform(P, v, seed, first + k);
        o[k] = v[0][0];
      }
      return;
    }
    case FG_OP_RNG_KEEP_MASK: {
      uint8_t *o = out;
      for (size_t k = 0; k < n; k++) o[k] = (uint8_t)fg_rng_keep(fg_rng_at(seed, first + k), P->u[0]);
      return;
    }
    default:
      fill_pairs(op == FG_OP_RNG_GAUSS_FAST, seed, first, P->f[0], out, n);
      return;
  }
}

fg_status fg_rng_fill_host(const fg_rng_spec *r, void *out, size_t n) {
  fg_op_kind op = FG_OP_KIND_COUNT;
  fg_op_params P;
  fg_status st = rng_prepare(r, n, out == NULL, &op, &P);
  if (st) return st;
  fill_host(r, op, &P, out, n);
  return FG_OK;
}

/* The scalar gaussian on a device: computed on the host a chunk at a time, narrowed as the
 * op layer narrows, and copied synchronously (after the work already queued on s). */
static fg_status gauss_upload(fg_device *dev, const fg_rng_spec *r, const fg_op_params *P, void *dst, fg_dtype dtype,
                              size_t n, fg_stream *s) {
  if (s) {
    fg_status st = fg_stream_sync(s);
    if (st) return st;
  }
  const size_t chunk = n < FG_RNG_HOST_CHUNK ? n : FG_RNG_HOST_CHUNK;
  float *vals = malloc(chunk * sizeof *vals);
  uint16_t *half = dtype == FG_F32 ? NULL : malloc(chunk * sizeof *half);
  if (!vals || (dtype != FG_F32 && !half)) {
    free(vals);
    free(half);
    return fg_fail(FG_ERR_NOMEM, "rng gauss: out of memory for a %zu-value host chunk", chunk);
  }
  const size_t esize = dtype == FG_F32 ? 4 : 2;
  fg_status st = FG_OK;
  for (size_t off = 0; off < n && !st; off += chunk) {
    const size_t m = n - off < chunk ? n - off : chunk;
    fill_pairs(false, r->seed, r->first + off, P->f[0], vals, m);
    const void *src = vals;
    if (dtype != FG_F32) {
      for (size_t k = 0; k < m; k++) half[k] = dtype == FG_F16 ? fg_f32_to_f16(vals[k]) : fg_f32_to_bf16(vals[k]);
      src = half;
    }
    st = fg_device_copy(dev, (char *)dst + off * esize, src, m * esize, FG_COPY_H2D);
  }
  free(vals);
  free(half);
  return st;
}

fg_status fg_rng_fill(fg_device *dev, const fg_rng_spec *r, void *dst, fg_dtype dtype, size_t n, fg_stream *s) {
  fg_op_kind op = FG_OP_KIND_COUNT;
  fg_op_params P;
  fg_status st = rng_prepare(r, n, dst == NULL, &op, &P);
  if (st) return st;
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "rng %s: NULL device", fg_rng_kind_name(r->kind));
  const bool mask = r->kind == FG_RNG_KEEP_MASK;
  const bool ok = mask ? dtype == FG_U8 || dtype == FG_BOOL : dtype == FG_F32 || dtype == FG_F16 || dtype == FG_BF16;
  if (!ok)
    return fg_fail(FG_ERR_TYPE, "rng %s: cannot write %s values, expected %s", fg_rng_kind_name(r->kind),
                   fg_dtype_name(dtype) ? fg_dtype_name(dtype) : "(invalid dtype)", mask ? "u8 or bool" : "f32, f16 or bf16");
  if (!n) return FG_OK;
  if (op == FG_OP_KIND_COUNT) return gauss_upload(dev, r, &P, dst, dtype, n, s);
  const fg_op_args a = {.ptr = {dst}, .dtype = {dtype}, .n = n, .seed = r->seed, .index0 = r->first};
  return fg_op_run(dev, op, &P, &a, 1, s);
}

fg_status fg_rng_fill_tensor(fg_tensor *t, const fg_rng_spec *r, fg_stream *s) {
  if (!t) return fg_fail(FG_ERR_INVALID_ARG, "rng: NULL tensor");
  if (t->readonly) return fg_fail(FG_ERR_INVALID_ARG, "rng: tensor '%s' is read-only", t->name ? t->name : "");
  fg_status st = fg_rng_fill(t->dev, r, t->data, t->dtype, (size_t)t->numel, s);
  if (st) return fg_fail_prefix(st, "tensor '%s': ", t->name ? t->name : "");
  return FG_OK;
}
