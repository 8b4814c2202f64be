/* State dicts over host memory: checks, the one-frame writer and the transactional
 * loader (forgia/state_dict.h). The bytes are the safetensors writer's and parser's. */
#include <stdlib.h>
#include <string.h>

#include "core/name_table.h"
#include "formats/safetensors_internal.h"
#include "forgia/state_dict.h"

static bool sd_dtype_ok(fg_dtype d) { return d == FG_F32 || d == FG_F16 || d == FG_BF16 || d == FG_I64; }

static fg_status sd_check_one(const char *what, size_t i, const char *name, fg_dtype dtype, int ndim,
                              const uint64_t *shape, const void *data, uint64_t nbytes) {
  if (!name || !*name) return fg_fail(FG_ERR_INVALID_ARG, "state dict: %s %zu: empty name", what, i);
  size_t len = strlen(name), bad = 0;
  if (!st_utf8_valid((const uint8_t *)name, len, &bad))
    return fg_fail(FG_ERR_INVALID_ARG, "state dict: %s %zu (\"%.64s\"): name is not UTF-8 (byte %zu)", what, i,
                   name, bad);
  if (strcmp(name, "__metadata__") == 0)
    return fg_fail(FG_ERR_INVALID_ARG, "state dict: %s %zu: \"__metadata__\" is not a tensor name", what, i);
  if (!sd_dtype_ok(dtype))
    return fg_fail(FG_ERR_INVALID_ARG, "state dict: \"%s\": dtype %s; expected F32, F16, BF16 or I64", name,
                   fg_dtype_name(dtype));
  if (ndim < 0 || (ndim > 0 && !shape))
    return fg_fail(FG_ERR_INVALID_ARG, "state dict: \"%s\": ndim %d without a shape", name, ndim);
  uint64_t numel = 0, want = 0;
  if (fg_shape_numel(shape, ndim, &numel) || fg_dtype_nbytes(dtype, numel, &want))
    return fg_fail(FG_ERR_INVALID_ARG, "state dict: \"%s\": shape size overflows", name);
  if (want != nbytes)
    return fg_fail(FG_ERR_INVALID_ARG, "state dict: \"%s\": nbytes %llu; expected %llu (%s x shape)", name,
                   (unsigned long long)nbytes, (unsigned long long)want, fg_dtype_name(dtype));
  if (nbytes && !data) return fg_fail(FG_ERR_INVALID_ARG, "state dict: \"%s\": NULL data", name);
  return FG_OK;
}

typedef struct sd_names {
  const void *base;
  size_t stride;             /* the name pointer is the first field of each record */
} sd_names;

static fg_name sd_name_at(const void *ctx, uint64_t i) {
  const sd_names *s = ctx;
  const char *name = *(const char *const *)((const char *)s->base + i * s->stride);
  fg_name r = {name, strlen(name)};
  return r;
}

/* Indexes names (each record starts with its name pointer); a repeated name is refused. */
static fg_status sd_index(fg_name_table *t, const sd_names *s, size_t n, const char *what) {
  fg_status st = fg_name_table_reset(t, n);
  if (st) return st;
  for (size_t i = 0; i < n; i++) {
    fg_name nm = sd_name_at(s, i);
    int64_t dup = -1;
    st = fg_name_table_insert(t, nm.ptr, nm.len, i, sd_name_at, s, &dup);
    if (st) return st;
    if (dup >= 0)
      return fg_fail(FG_ERR_DUPLICATE, "state dict: %s %lld and %zu are both named \"%s\"", what, (long long)dup,
                     i, nm.ptr);
  }
  return FG_OK;
}

FG_API fg_status fg_state_dict_check(const fg_state_dict_entry *entries, size_t n) {
  if (n && !entries) return fg_fail(FG_ERR_INVALID_ARG, "state dict: NULL entries");
  for (size_t i = 0; i < n; i++) {
    const fg_state_dict_entry *e = &entries[i];
    fg_status st = sd_check_one("entry", i, e->name, e->dtype, e->ndim, e->shape, e->data, e->nbytes);
    if (st) return st;
  }
  fg_name_table t = {0};
  sd_names s = {entries, sizeof *entries};
  fg_status st = sd_index(&t, &s, n, "entries");
  fg_name_table_free(&t);
  return st;
}

/* The safetensors writer's records for checked entries (free the result). */
static fg_status sd_to_st(const fg_state_dict_entry *entries, size_t n, fg_st_write_tensor **out) {
  fg_status st = fg_state_dict_check(entries, n);
  if (st) return st;
  *out = calloc(n ? n : 1, sizeof **out);
  if (!*out) return fg_fail(FG_ERR_NOMEM, "state dict: %zu entries", n);
  for (size_t i = 0; i < n; i++) {
    fg_st_write_tensor w = {entries[i].name, entries[i].dtype, entries[i].ndim, entries[i].shape,
                            entries[i].data, entries[i].nbytes};
    (*out)[i] = w;
  }
  return FG_OK;
}

FG_API fg_status fg_state_dict_serialize(const fg_state_dict_entry *entries, size_t n, uint8_t **out,
                                         size_t *out_len) {
  fg_st_write_tensor *w = NULL;
  fg_status st = sd_to_st(entries, n, &w);
  if (!st) st = fg_st_serialize(w, n, NULL, 0, out, out_len);
  free(w);
  return st;
}

FG_API fg_status fg_state_dict_write_frame(FILE *stream, const fg_state_dict_entry *entries, size_t n) {
  fg_st_write_tensor *w = NULL;
  fg_status st = sd_to_st(entries, n, &w);
  if (!st) st = fg_st_write_frame(stream, w, n, NULL, 0);
  free(w);
  return st;
}

FG_API fg_status fg_state_dict_save(const char *path, const fg_state_dict_entry *entries, size_t n) {
  fg_st_write_tensor *w = NULL;
  fg_status st = sd_to_st(entries, n, &w);
  if (!st) st = fg_st_save(path, w, n, NULL, 0);
  free(w);
  return st;
}

/* ---------------------------------------------------------------- loading */

static const char *sd_remap(const fg_st_tensor *t, const fg_state_dict_load_opts *o, size_t *len) {
  *len = t->name_len;
  for (size_t a = 0; a < o->naliases; a++) {
    const char *old = o->aliases[a].old_name;
    if (strlen(old) == t->name_len && memcmp(old, t->name, t->name_len) == 0) {
      *len = strlen(o->aliases[a].new_name);
      return o->aliases[a].new_name;
    }
  }
  return t->name;
}

static void sd_shape_str(char *buf, size_t cap, const uint64_t *shape, int ndim) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < ndim && k < cap; d++)
    k += (size_t)snprintf(buf + k, cap - k, "%s%llu", d ? ", " : "", (unsigned long long)shape[d]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

static fg_status sd_match(const fg_st_file *src, const fg_state_dict_dest *d, const fg_st_tensor *t) {
  const char *where = fg_st_source(src);
  if (t->dtype != d->dtype)
    return fg_fail(FG_ERR_BAD_DTYPE, "%s: tensor \"%s\" (destination \"%s\"): dtype %s; expected %s", where,
                   t->name, d->name, fg_dtype_name(t->dtype), fg_dtype_name(d->dtype));
  bool same = t->ndim == d->ndim;
  for (int k = 0; same && k < d->ndim; k++) same = t->shape[k] == d->shape[k];
  if (!same || t->nbytes != d->nbytes) {
    char a[160], b[160];
    sd_shape_str(a, sizeof a, t->shape, t->ndim);
    sd_shape_str(b, sizeof b, d->shape, d->ndim);
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor \"%s\" (destination \"%s\"): shape %s; expected %s", where,
                   t->name, d->name, a, b);
  }
  return FG_OK;
}

/* Pass 1 fills src_of[i] (the stream tensor for destination i) and touches nothing else. */
static fg_status sd_plan(const fg_st_file *src, const fg_state_dict_dest *dests, size_t n,
                         const fg_state_dict_load_opts *o, const fg_name_table *t, const sd_names *s,
                         const fg_st_tensor **src_of) {
  const char *where = fg_st_source(src);
  for (size_t k = 0; k < fg_st_count(src); k++) {
    const fg_st_tensor *st = fg_st_tensor_at(src, k);
    size_t len;
    const char *name = sd_remap(st, o, &len);
    int64_t i = fg_name_table_find(t, name, len, sd_name_at, s);
    if (i < 0) {
      if (!o->non_strict)
        return fg_fail(FG_ERR_NOT_FOUND,
                       "%s: tensor \"%s\" has no destination (strict load; expected only the %zu named "
                       "destinations)", where, st->name, n);
      continue;
    }
    if (src_of[i])
      return fg_fail(FG_ERR_DUPLICATE, "%s: tensors \"%s\" and \"%s\" both load into \"%s\"", where,
                     src_of[i]->name, st->name, dests[i].name);
    fg_status e = sd_match(src, &dests[i], st);
    if (e) return e;
    src_of[i] = st;
  }
  if (!o->non_strict)
    for (size_t i = 0; i < n; i++)
      if (!src_of[i])
        return fg_fail(FG_ERR_NOT_FOUND, "%s: destination \"%s\" is missing from the stream (strict load)", where,
                       dests[i].name);
  return FG_OK;
}

static fg_status sd_check_dests(const fg_state_dict_dest *dests, size_t n, const fg_state_dict_load_opts *o,
                                fg_name_table *t, const sd_names *s) {
  if (n && !dests) return fg_fail(FG_ERR_INVALID_ARG, "state dict: NULL destinations");
  for (size_t i = 0; i < n; i++) {
    const fg_state_dict_dest *d = &dests[i];
    fg_status st = sd_check_one("destination", i, d->name, d->dtype, d->ndim, d->shape, d->data, d->nbytes);
    if (st) return st;
  }
  fg_status st = sd_index(t, s, n, "destinations");
  if (st) return st;
  if (o->naliases && !o->aliases) return fg_fail(FG_ERR_INVALID_ARG, "state dict: NULL aliases");
  for (size_t a = 0; a < o->naliases; a++) {
    const fg_state_dict_alias *al = &o->aliases[a];
    if (!al->old_name || !al->new_name)
      return fg_fail(FG_ERR_INVALID_ARG, "state dict: alias %zu has a NULL name", a);
    if (fg_name_table_find(t, al->new_name, strlen(al->new_name), sd_name_at, s) < 0)
      return fg_fail(FG_ERR_INVALID_ARG, "state dict: alias \"%s\" -> \"%s\": no destination is named \"%s\"",
                     al->old_name, al->new_name, al->new_name);
  }
  return FG_OK;
}

FG_API fg_status fg_state_dict_load(const fg_st_file *src, const fg_state_dict_dest *dests, size_t n,
                                    const fg_state_dict_load_opts *opts, bool *loaded) {
  static const fg_state_dict_load_opts strict = {0};
  const fg_state_dict_load_opts *o = opts ? opts : &strict;
  if (!src) return fg_fail(FG_ERR_INVALID_ARG, "state dict: NULL source");
  fg_name_table t = {0};
  sd_names s = {dests, sizeof *dests};
  const fg_st_tensor **src_of = NULL;
  fg_status st = sd_check_dests(dests, n, o, &t, &s);
  if (!st) {
    src_of = calloc(n ? n : 1, sizeof *src_of);
    st = src_of ? sd_plan(src, dests, n, o, &t, &s, src_of) : fg_fail(FG_ERR_NOMEM, "state dict: %zu entries", n);
  }
  if (!st)
    for (size_t i = 0; i < n; i++) {
      if (src_of[i] && src_of[i]->nbytes) memcpy(dests[i].data, src_of[i]->data, src_of[i]->nbytes);
      if (loaded) loaded[i] = src_of[i] != NULL;
    }
  free(src_of);
  fg_name_table_free(&t);
  return st;
}

FG_API fg_status fg_state_dict_load_bytes(const void *bytes, size_t len, const char *source,
                                          const fg_state_dict_dest *dests, size_t n,
                                          const fg_state_dict_load_opts *opts, bool *loaded) {
  fg_st_file *f = NULL;
  fg_status st = fg_st_parse(bytes, len, source, &f);
  if (!st) st = fg_state_dict_load(f, dests, n, opts, loaded);
  fg_st_close(f);
  return st;
}

FG_API fg_status fg_state_dict_load_file(const char *path, const fg_state_dict_dest *dests, size_t n,
                                         const fg_state_dict_load_opts *opts, bool *loaded) {
  fg_st_file *f = NULL;
  fg_status st = fg_st_open(path, FG_MAP_READ, &f);
  if (!st) st = fg_state_dict_load(f, dests, n, opts, loaded);
  fg_st_close(f);
  return st;
}
