/* Row-major sub-block copies: ranges on the leading axes, the rest taken whole. The
 * copy is a sequence of contiguous runs, one per index of all but the last ranged axis. */
#include <string.h>

#include "formats/safetensors_internal.h"

typedef struct slice_plan {
  uint64_t out_elems;
  uint64_t run_elems;      /* contiguous elements per run */
  uint64_t inner;          /* elements per step of the last ranged axis */
  unsigned bits;
} slice_plan;

static fg_status plan(const fg_st_tensor *t, const fg_st_range *r, int nr, uint64_t *shape_out, slice_plan *p) {
  if (!t || (nr > 0 && !r) || nr < 0) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_slice: NULL argument");
  if (nr > t->ndim)
    return fg_fail(FG_ERR_INVALID_ARG, "tensor '%.200s': %d slicing ranges for %d dimensions", t->name, nr,
                   t->ndim);
  for (int i = 0; i < nr; i++) {
    if (r[i].start > r[i].stop || r[i].stop > t->shape[i])
      return fg_fail(FG_ERR_RANGE, "tensor '%.200s': range [%llu, %llu) out of bounds for dimension #%d of size %llu",
                     t->name, (unsigned long long)r[i].start, (unsigned long long)r[i].stop, i,
                     (unsigned long long)t->shape[i]);
  }
  /* every product below is bounded by the element count, which the parser checked */
  uint64_t out = 1, inner = 1;
  for (int i = 0; i < t->ndim; i++) {
    uint64_t d = i < nr ? r[i].stop - r[i].start : t->shape[i];
    if (shape_out) shape_out[i] = d;
    out *= d;
    if (i >= nr) inner *= t->shape[i];
  }
  p->out_elems = out;
  p->inner = inner;
  p->run_elems = nr ? (r[nr - 1].stop - r[nr - 1].start) * inner : out;
  p->bits = st_dtype_bits(t->dtype);
  if (p->bits == 0) return fg_fail(FG_ERR_BAD_DTYPE, "tensor '%.200s': not a safetensors dtype", t->name);
  return FG_OK;
}

fg_status fg_st_slice_shape(const fg_st_tensor *t, const fg_st_range *ranges, int nranges, uint64_t *shape_out,
                            uint64_t *nbytes_out) {
  slice_plan p;
  fg_status s = plan(t, ranges, nranges, shape_out, &p);
  if (s) return s;
  if (p.out_elems * p.bits % 8 != 0)
    return fg_fail(FG_ERR_MISALIGNED_SLICE, "tensor '%.200s': the slice holds %llu bits, not whole bytes", t->name,
                   (unsigned long long)(p.out_elems * p.bits));
  if (nbytes_out) *nbytes_out = p.out_elems * p.bits / 8;
  return FG_OK;
}

/* The copy itself, once everything is checked: contiguous runs out of the mapping. */
typedef struct slice_job {
  const fg_st_tensor *t;
  const fg_st_range *r;
  int nr;
  const uint64_t *stride;
  uint64_t *idx;
  unsigned bits;
  uint64_t base;             /* bytes into the tensor added to every run's start */
  uint64_t run_bytes;
  uint8_t *o;
} slice_job;

static fg_status copy_runs(void *user) {
  slice_job *j = user;
  for (;;) {
    uint64_t first = 0;
    for (int i = 0; i < j->nr; i++) first += j->idx[i] * j->stride[i];
    memcpy(j->o, j->t->data + j->base + first * j->bits / 8, (size_t)j->run_bytes);
    j->o += j->run_bytes;
    int k = j->nr - 2;
    while (k >= 0 && ++j->idx[k] == j->r[k].stop) {
      j->idx[k] = j->r[k].start;
      k--;
    }
    if (k < 0) return FG_OK;
  }
}

/* Runs the copy under a guard: the file may have been truncated since it was parsed, and a
 * page it no longer backs must be a status, not SIGBUS. The tensor does not know its
 * mapping, so the guard catches SIGBUS at any address. */
static fg_status guarded(const fg_st_tensor *t, slice_job *j) {
  fg_status s = fg_mapping_access(NULL, copy_runs, j);
  return s ? fg_fail_prefix(s, "tensor '%.200s': ", t->name) : FG_OK;
}

fg_status fg_st_slice_copy(const fg_st_tensor *t, const fg_st_range *r, int nr, void *dst, uint64_t dst_size) {
  uint64_t nbytes;
  fg_status s = fg_st_slice_shape(t, r, nr, NULL, &nbytes);
  if (s) return s;
  if (dst_size < nbytes)
    return fg_fail(FG_ERR_RANGE, "tensor '%.200s': slice needs %llu bytes, the buffer has %llu", t->name,
                   (unsigned long long)nbytes, (unsigned long long)dst_size);
  if (nbytes == 0) return FG_OK;
  if (!dst) return fg_fail(FG_ERR_INVALID_ARG, "fg_st_slice_copy: NULL destination");
  slice_plan p;
  plan(t, r, nr, NULL, &p);
  uint8_t *o = dst;
  if (nr <= 1) {
    uint64_t first = nr ? r[0].start * p.inner : 0;
    if (first * p.bits % 8)
      return fg_fail(FG_ERR_MISALIGNED_SLICE, "tensor '%.200s': the slice starts inside a byte", t->name);
    uint64_t zero = 0, at = 0; /* one run: the loop ends after it */
    slice_job j = {t, NULL, 1, &zero, &at, p.bits, first * p.bits / 8, nbytes, o};
    return guarded(t, &j);
  }
  /* strides in elements of the ranged axes */
  uint64_t stride[64];
  uint64_t idx[64];
  if (nr > 64) return fg_fail(FG_ERR_UNSUPPORTED, "tensor '%.200s': more than 64 ranged axes", t->name);
  stride[nr - 1] = p.inner;
  for (int i = nr - 2; i >= 0; i--) stride[i] = stride[i + 1] * t->shape[i + 1];
  for (int i = 0; i < nr; i++) idx[i] = r[i].start;
  uint64_t run_bits = p.run_elems * p.bits;
  if (run_bits % 8)
    return fg_fail(FG_ERR_MISALIGNED_SLICE, "tensor '%.200s': a contiguous run of %llu elements is not whole bytes",
                   t->name, (unsigned long long)p.run_elems);
  /* Run starts differ by multiples of the outer strides: checking those and the first
   * start up front keeps a refused slice from writing anything. */
  uint64_t first = 0;
  for (int i = 0; i < nr; i++) first += idx[i] * stride[i];
  bool aligned = first * p.bits % 8 == 0;
  for (int i = 0; i + 1 < nr; i++) aligned = aligned && stride[i] * p.bits % 8 == 0;
  if (!aligned)
    return fg_fail(FG_ERR_MISALIGNED_SLICE, "tensor '%.200s': a contiguous run starts inside a byte", t->name);
  slice_job j = {t, r, nr, stride, idx, p.bits, 0, run_bits / 8, o};
  return guarded(t, &j);
}
