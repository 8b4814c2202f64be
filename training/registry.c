/* The parameter registry: a checked copy of the caller's table, host snapshots for saving,
 * and loads staged in host memory so that validation finishes before any upload. */
#include <stdlib.h>
#include <string.h>

#include "forgia/registry.h"
#include "training/optim_apollo_internal.h"
#include "training/optim_internal.h"

struct fg_registry {
  fg_registry_entry *e; /* names owned */
  size_t n;
};

static bool rg_dtype_ok(fg_dtype d, bool trainable) {
  return d == FG_F32 || d == FG_F16 || d == FG_BF16 || (d == FG_I64 && !trainable);
}

/* The entries as a state dict whose data pointers are base + the running offset (base NULL:
 * the tensors' own pointers, for checks that only test data for NULL). */
static fg_state_dict_entry *rg_entries(const fg_registry *r, bool trainable_only, uint8_t *base, size_t *n_out,
                                       size_t *bytes_out) {
  fg_state_dict_entry *es = calloc(r->n ? r->n : 1, sizeof *es);
  if (!es) return NULL;
  size_t n = 0, off = 0;
  for (size_t i = 0; i < r->n; i++) {
    const fg_registry_entry *x = &r->e[i];
    if (trainable_only && !x->trainable) continue;
    const fg_tensor *t = x->tensor;
    es[n++] = (fg_state_dict_entry){x->name, t->dtype, t->ndim, t->shape, base ? base + off : t->data, t->nbytes};
    off += (size_t)t->nbytes;
  }
  *n_out = n;
  *bytes_out = off;
  return es;
}

void fg_registry_free(fg_registry *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) free((char *)r->e[i].name);
  free(r->e);
  free(r);
}

fg_status fg_registry_create(const fg_registry_entry *table, size_t n, fg_registry **out) {
  if (!out || (n && !table)) return fg_fail(FG_ERR_INVALID_ARG, "fg_registry_create: NULL argument");
  *out = NULL;
  for (size_t i = 0; i < n; i++) {
    const fg_tensor *t = table[i].tensor;
    if (!t) return fg_fail(FG_ERR_INVALID_ARG, "registry: entry %zu has no tensor", i);
    const char *name = table[i].name ? table[i].name : t->name;
    if (!rg_dtype_ok(t->dtype, table[i].trainable))
      return fg_fail(FG_ERR_TYPE, "registry: entry %zu \"%s\" is %s; expected f32, f16 or bf16%s", i, name,
                     fg_dtype_name(t->dtype), table[i].trainable ? " (i64 only when frozen)" : " or i64");
    for (size_t j = 0; j < i; j++)
      if (table[j].tensor == t)
        return fg_fail(FG_ERR_DUPLICATE, "registry: entries %zu and %zu are the same tensor", j, i);
  }
  fg_registry *r = calloc(1, sizeof *r);
  if (r) r->e = calloc(n ? n : 1, sizeof *r->e);
  if (!r || !r->e) {
    free(r);
    return fg_fail(FG_ERR_NOMEM, "registry: out of memory");
  }
  for (size_t i = 0; i < n; i++, r->n++) {
    r->e[i] = table[i];
    r->e[i].name = strdup(table[i].name ? table[i].name : table[i].tensor->name);
    if (!r->e[i].name) {
      fg_registry_free(r);
      return fg_fail(FG_ERR_NOMEM, "registry: out of memory");
    }
  }
  /* The state-dict rules for names (non-empty, UTF-8, unique, not __metadata__). */
  size_t cnt = 0, bytes = 0;
  fg_state_dict_entry *es = rg_entries(r, false, NULL, &cnt, &bytes);
  fg_status s = es ? fg_state_dict_check(es, cnt) : fg_fail(FG_ERR_NOMEM, "registry: out of memory");
  free(es);
  if (s) {
    fg_registry_free(r);
    return fg_fail_prefix(s, "registry: ");
  }
  *out = r;
  return FG_OK;
}

size_t fg_registry_count(const fg_registry *r) { return r ? r->n : 0; }

const fg_registry_entry *fg_registry_entry_at(const fg_registry *r, size_t i) {
  return r && i < r->n ? &r->e[i] : NULL;
}

const fg_registry_entry *fg_registry_find(const fg_registry *r, const char *name) {
  for (size_t i = 0; r && name && i < r->n; i++)
    if (strcmp(r->e[i].name, name) == 0) return &r->e[i];
  return NULL;
}

/* A slot list's claim on t or name, as an error; FG_OK when neither is taken. */
static fg_status rg_taken(const fg_optim_slot *sl, size_t n, const fg_tensor *t, const char *name, const char *space) {
  for (size_t i = 0; i < n; i++) {
    if (sl[i].t == t)
      return fg_fail(FG_ERR_DUPLICATE, "registry: \"%s\" is already in the optimizer (%s) as '%s'", name, space,
                     sl[i].name);
    if (strcmp(sl[i].name, name) == 0)
      return fg_fail(FG_ERR_DUPLICATE, "registry: the optimizer's %s already has a parameter named '%s'", space,
                     name);
  }
  return FG_OK;
}

fg_status fg_registry_add_to_optim(const fg_registry *r, fg_optim *o) {
  if (!r || !o) return fg_fail(FG_ERR_INVALID_ARG, "fg_registry_add_to_optim: NULL argument");
  for (size_t i = 0; i < r->n; i++) {
    const fg_registry_entry *x = &r->e[i];
    if (!x->trainable) continue;
    const fg_tensor *t = x->tensor;
    if (t->dev != o->dev)
      return fg_fail(FG_ERR_INVALID_ARG, "registry: \"%s\" is on %s, the optimizer on %s", x->name,
                     fg_device_spec(t->dev), fg_device_spec(o->dev));
    if (t->readonly) return fg_fail(FG_ERR_STATE, "registry: \"%s\" is read-only and cannot be trained", x->name);
    fg_status s = rg_taken(o->slots, o->n, t, x->name, "slots");
    if (!s && o->fallback) s = rg_taken(o->fallback->slots, o->fallback->n, t, x->name, "fallback");
    if (!s && o->apollo) s = rg_taken(o->apollo->fb, o->apollo->nfb, t, x->name, "fallback");
    if (s) return s;
  }
  /* Past the checks only an allocation can fail. */
  for (size_t i = 0; i < r->n; i++) {
    if (!r->e[i].trainable) continue;
    fg_status s = fg_optim_add(o, r->e[i].tensor, r->e[i].name);
    if (s) return fg_fail_prefix(s, "registry: \"%s\": ", r->e[i].name);
  }
  return FG_OK;
}

void fg_registry_snapshot_free(fg_registry_snapshot *s) {
  if (!s) return;
  free(s->entries);
  free(s->data);
  memset(s, 0, sizeof *s);
}

fg_status fg_registry_snapshot_take(const fg_registry *r, bool trainable_only, fg_registry_snapshot *out) {
  if (!r || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_registry_snapshot_take: NULL argument");
  memset(out, 0, sizeof *out);
  size_t bytes = 0;
  for (size_t i = 0; i < r->n; i++)
    if (!trainable_only || r->e[i].trainable) bytes += (size_t)r->e[i].tensor->nbytes;
  out->data = malloc(bytes ? bytes : 1);
  if (out->data) out->entries = rg_entries(r, trainable_only, out->data, &out->n, &bytes);
  if (!out->data || !out->entries) {
    fg_registry_snapshot_free(out);
    return fg_fail(FG_ERR_NOMEM, "registry: out of memory for a %zu-byte snapshot", bytes);
  }
  fg_status s = FG_OK;
  for (size_t i = 0, k = 0; i < r->n && s == FG_OK; i++) {
    if (trainable_only && !r->e[i].trainable) continue;
    const fg_tensor *t = r->e[i].tensor;
    if (t->nbytes) s = fg_tensor_download(t, (void *)out->entries[k].data, (size_t)t->nbytes, NULL);
    k++;
  }
  if (s) fg_registry_snapshot_free(out);
  return s;
}

fg_status fg_registry_serialize(const fg_registry *r, uint8_t **out, size_t *out_len) {
  if (!r || !out || !out_len) return fg_fail(FG_ERR_INVALID_ARG, "fg_registry_serialize: NULL argument");
  fg_registry_snapshot snap;
  fg_status s = fg_registry_snapshot_take(r, false, &snap);
  if (s == FG_OK) s = fg_state_dict_serialize(snap.entries, snap.n, out, out_len);
  fg_registry_snapshot_free(&snap);
  return s;
}

fg_status fg_registry_save(const fg_registry *r, const char *path) {
  if (!r || !path) return fg_fail(FG_ERR_INVALID_ARG, "fg_registry_save: NULL argument");
  fg_registry_snapshot snap;
  fg_status s = fg_registry_snapshot_take(r, false, &snap);
  if (s == FG_OK) s = fg_state_dict_save(path, snap.entries, snap.n);
  fg_registry_snapshot_free(&snap);
  return s;
}

/* Loads through a staging copy: from bytes (path NULL) or a file. */
static fg_status rg_load(const fg_registry *r, const void *bytes, size_t len, const char *source, const char *path,
                         const fg_state_dict_load_opts *opts, bool *loaded_out) {
  size_t total = 0;
  for (size_t i = 0; i < r->n; i++) total += (size_t)r->e[i].tensor->nbytes;
  uint8_t *stage = malloc(total ? total : 1);
  fg_state_dict_dest *d = calloc(r->n ? r->n : 1, sizeof *d);
  bool *loaded = calloc(r->n ? r->n : 1, sizeof *loaded);
  fg_status s = stage && d && loaded ? FG_OK : fg_fail(FG_ERR_NOMEM, "registry: out of memory for a %zu-byte load", total);
  for (size_t i = 0, off = 0; i < r->n && s == FG_OK; i++) {
    const fg_tensor *t = r->e[i].tensor;
    d[i] = (fg_state_dict_dest){r->e[i].name, t->dtype, t->ndim, t->shape, stage + off, t->nbytes};
    off += (size_t)t->nbytes;
  }
  if (s == FG_OK)
    s = path ? fg_state_dict_load_file(path, d, r->n, opts, loaded)
             : fg_state_dict_load_bytes(bytes, len, source, d, r->n, opts, loaded);
  for (size_t i = 0; i < r->n && s == FG_OK; i++)
    if (loaded[i] && r->e[i].tensor->readonly)
      s = fg_fail(FG_ERR_STATE, "registry: \"%s\" is read-only (a file-mapping view) and cannot be loaded into",
                  r->e[i].name);
  /* Validated: the uploads can fail only for a device reason. */
  for (size_t i = 0; i < r->n && s == FG_OK; i++)
    if (loaded[i] && d[i].nbytes) s = fg_tensor_upload(r->e[i].tensor, d[i].data, (size_t)d[i].nbytes, NULL);
  if (s == FG_OK && loaded_out) memcpy(loaded_out, loaded, r->n * sizeof *loaded);
  free(stage);
  free(d);
  free(loaded);
  return s;
}

fg_status fg_registry_load_bytes(const fg_registry *r, const void *bytes, size_t len, const char *source,
                                 const fg_state_dict_load_opts *opts, bool *loaded) {
  if (!r || (len && !bytes)) return fg_fail(FG_ERR_INVALID_ARG, "fg_registry_load_bytes: NULL argument");
  return rg_load(r, bytes, len, source ? source : "state dict", NULL, opts, loaded);
}

fg_status fg_registry_load_file(const fg_registry *r, const char *path, const fg_state_dict_load_opts *opts,
                                bool *loaded) {
  if (!r || !path) return fg_fail(FG_ERR_INVALID_ARG, "fg_registry_load_file: NULL argument");
  return rg_load(r, NULL, 0, NULL, path, opts, loaded);
}
