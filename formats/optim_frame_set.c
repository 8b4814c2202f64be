/* Optimizer frames: the set container FZO3 (member frames back to back, no lengths) and
 * the positional f32 tensor list FZT1, read and written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/optim_frame_internal.h"

/* The smallest member frame is a magic and a u32; the smallest FZT1 entry a u32 rank 0
 * and its one f32 value. */
#define OF_MIN_MEMBER 8u
#define OF_MIN_TENSOR 8u

/* A u32 count of entries that each take at least min_each bytes, checked against what
 * remains before anything is allocated for them. */
static fg_status of_get_count(of_rd *r, unsigned min_each, const char *what, uint32_t *n, size_t *at) {
  char need[64];
  snprintf(need, sizeof need, "the %s count", what);
  fg_status st = of_need(r, 4, need);
  if (st) return st;
  *at = r->off;
  *n = of_get_u32(r);
  if (*n > (r->len - r->off) / min_each)
    return of_rd_fail(r, FG_ERR_TRUNCATED, *at, "%u %ss need at least %u bytes each, %zu remain", *n, what, min_each,
                      r->len - r->off);
  return FG_OK;
}

fg_status of_parse_set(of_rd *r, fg_oframe *f) {
  size_t at;
  uint32_t n;
  fg_status st = of_get_count(r, OF_MIN_MEMBER, "member", &n, &at);
  if (st) return st;
  f->members = n ? calloc(n, sizeof *f->members) : NULL;
  if (n && !f->members) return of_rd_fail(r, FG_ERR_NOMEM, at, "allocating %u members", n);
  f->n_members = n;
  for (uint32_t i = 0; i < n; i++) {
    size_t member_at = r->off;
    st = of_parse_frame(r, &f->members[i], false);
    if (!st && f->members[i].kind == FG_OFRAME_KIND_TENSORS) {
      r->magic = "FZO3";
      st = of_rd_fail(r, FG_ERR_BAD_MAGIC, member_at, "member %u is a tensor list (FZT1), expected an optimizer "
                      "frame", i);
    }
    if (st) return fg_fail_prefix(st, "optimizer set member %u: ", i);
    r->magic = "FZO3";
  }
  return FG_OK;
}

fg_status of_parse_tensors(of_rd *r, fg_oframe *f) {
  size_t at;
  uint32_t n;
  fg_status st = of_get_count(r, OF_MIN_TENSOR, "tensor", &n, &at);
  if (st) return st;
  f->tensors = n ? calloc(n, sizeof *f->tensors) : NULL;
  if (n && !f->tensors) return of_rd_fail(r, FG_ERR_NOMEM, at, "allocating %u tensors", n);
  f->n_tensors = n;
  r->list = "tensor";
  r->name = NULL;
  for (uint32_t i = 0; i < n; i++) {
    fg_oframe_tensor *t = &f->tensors[i];
    r->idx = i;
    if ((st = of_need(r, 4, "the rank"))) return st;
    t->rank = of_get_u32(r);
    if ((st = of_need(r, (uint64_t)t->rank * 8, "the dims"))) return st;
    size_t dims_at = r->off;
    if (t->rank) {
      t->dims = malloc((size_t)t->rank * sizeof *t->dims);
      if (!t->dims) return of_rd_fail(r, FG_ERR_NOMEM, dims_at, "allocating %u dims", t->rank);
    }
    uint64_t count = 1;
    bool overflow = false;
    for (uint32_t d = 0; d < t->rank; d++) {
      t->dims[d] = of_get_u64(r);
      overflow |= __builtin_mul_overflow(count, t->dims[d], &count);
    }
    uint64_t bytes;
    if (overflow || __builtin_mul_overflow(count, 4, &bytes))
      return of_rd_fail(r, FG_ERR_BAD_SHAPE, dims_at, "the product of %u dims overflows", t->rank);
    if ((st = of_need(r, bytes, "the f32 data"))) return st;
    t->count = count;
    if (bytes) {
      t->data = malloc((size_t)bytes);
      if (!t->data) return of_rd_fail(r, FG_ERR_NOMEM, r->off, "allocating %llu bytes", (unsigned long long)bytes);
      memcpy(t->data, r->p + r->off, (size_t)bytes);
      r->off += (size_t)bytes;
    }
  }
  r->list = NULL;
  return FG_OK;
}

fg_status of_validate_tensors(const fg_oframe *f) {
  if (f->n_tensors > UINT32_MAX || (f->n_tensors && !f->tensors))
    return fg_fail(FG_ERR_INVALID_ARG, "tensor list: %zu tensors (u32 count) without an array", f->n_tensors);
  for (size_t i = 0; i < f->n_tensors; i++) {
    const fg_oframe_tensor *t = &f->tensors[i];
    uint64_t count = 1, bytes;
    bool overflow = t->rank && !t->dims;
    for (uint32_t d = 0; !overflow && d < t->rank; d++) overflow = __builtin_mul_overflow(count, t->dims[d], &count);
    if (overflow || __builtin_mul_overflow(count, 4, &bytes) || bytes > SIZE_MAX)
      return fg_fail(FG_ERR_INVALID_ARG, "tensor list: tensor %zu: dims missing or their product overflows", i);
    if (t->count != count || (count && !t->data))
      return fg_fail(FG_ERR_INVALID_ARG, "tensor list: tensor %zu holds %llu values%s, its dims give %llu", i,
                     (unsigned long long)t->count, count && !t->data ? " (no data)" : "", (unsigned long long)count);
  }
  return FG_OK;
}

void of_emit_set(of_out *o, const fg_oframe *f) {
  of_put(o, "FZO3", 4);
  of_u32(o, (uint32_t)f->n_members);
  for (size_t i = 0; i < f->n_members; i++) of_emit(o, &f->members[i]);
}

void of_emit_tensors(of_out *o, const fg_oframe *f) {
  of_put(o, "FZT1", 4);
  of_u32(o, (uint32_t)f->n_tensors);
  for (size_t i = 0; i < f->n_tensors; i++) {
    const fg_oframe_tensor *t = &f->tensors[i];
    of_u32(o, t->rank);
    for (uint32_t d = 0; d < t->rank; d++) of_u64(o, t->dims[d]);
    of_put(o, t->data, (size_t)(t->count * 4));
  }
}
