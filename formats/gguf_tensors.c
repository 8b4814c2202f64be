/* Tensor directory of a parsed GGUF file: access by index, O(1) lookup by name, paging
 * hints over the tensor's bytes. */
#include "formats/gguf_internal.h"

#include <inttypes.h>

size_t fg_gguf_tensor_count(const fg_gguf_file *f) { return f ? f->n_tensors : 0; }

const fg_gguf_tensor *fg_gguf_tensor_at(const fg_gguf_file *f, size_t i) {
  return f && i < f->n_tensors ? &f->tensors[i] : NULL;
}

const fg_gguf_tensor *fg_gguf_find_tensor_n(const fg_gguf_file *f, const char *name, size_t len) {
  if (!f || !name) return NULL;
  int64_t i = fg_name_table_find(&f->tensor_index, name, len, fg_gguf_tensor_name_at, f);
  return i < 0 ? NULL : &f->tensors[i];
}

const fg_gguf_tensor *fg_gguf_find_tensor(const fg_gguf_file *f, const char *name) {
  return name ? fg_gguf_find_tensor_n(f, name, strlen(name)) : NULL;
}

fg_status fg_gguf_get_tensor(const fg_gguf_file *f, const char *name, const fg_gguf_tensor **out) {
  if (!f || !name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_get_tensor: NULL argument");
  const fg_gguf_tensor *t = fg_gguf_find_tensor(f, name);
  if (!t) return fg_fail(FG_ERR_NOT_FOUND, "%s: no tensor '%s'", fg_gguf_path(f), name);
  *out = t;
  return FG_OK;
}

uint64_t fg_gguf_tensor_numel(const fg_gguf_tensor *t) {
  if (!t) return 0;
  /* Validated at parse time: the product fits in int64 unless a dim is 0. */
  for (int d = 0; d < t->ndim; d++)
    if (t->ne[d] == 0) return 0;
  return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

static void advise(const fg_gguf_file *f, const fg_gguf_tensor *t, int prefetch) {
  if (!f || !t || t->part >= f->n_parts || !t->nbytes) return;
  const fg_gguf_part *p = &f->parts[t->part];
  uint64_t off = p->data_offset + t->offset;
  if (prefetch)
    fg_mapping_prefetch(p->map, off, t->nbytes);
  else
    fg_mapping_evict(p->map, off, t->nbytes);
}

void fg_gguf_tensor_prefetch(const fg_gguf_file *f, const fg_gguf_tensor *t) { advise(f, t, 1); }
void fg_gguf_tensor_evict(const fg_gguf_file *f, const fg_gguf_tensor *t) { advise(f, t, 0); }
