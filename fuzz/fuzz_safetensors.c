/* libFuzzer target for the safetensors reader: any bytes either parse or fail with a
 * status; a parsed file is walked (lookups, slices) and re-serialized, and what forgia
 * writes must parse back to the same tensors. Seeds: FORGIA_DUMP_CORPUS=DIR
 * tests/cpu_test_safetensors_parse writes the malformed-input corpus to DIR. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/safetensors.h"

static void walk(const fg_st_file *f) {
  size_t n = fg_st_count(f);
  fg_st_write_tensor *w = calloc(n ? n : 1, sizeof *w);
  bool writable = w != NULL;
  for (size_t i = 0; i < n; i++) {
    const fg_st_tensor *t = fg_st_tensor_at(f, i);
    if (fg_st_find_n(f, t->name, t->name_len) != t) abort();
    if (fg_st_tensor_by_offset(f, i) == NULL) abort();
    volatile uint8_t sink = 0;
    if (t->nbytes) sink ^= t->data[0] ^ t->data[t->nbytes - 1];
    (void)sink;
    /* slice the first half of the leading axis */
    if (t->ndim > 0 && t->nbytes <= (1u << 20)) {
      fg_st_range r = {0, t->shape[0] / 2};
      uint64_t nb = 0;
      if (fg_st_slice_shape(t, &r, 1, NULL, &nb) == FG_OK) {
        void *dst = malloc(nb ? nb : 1);
        if (dst) fg_st_slice_copy(t, &r, 1, dst, nb);
        free(dst);
      }
    }
    if (strlen(t->name) != t->name_len) writable = false;
    if (w) w[i] = (fg_st_write_tensor){t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes};
  }
  size_t nm = fg_st_metadata_count(f);
  fg_st_kv *kv = calloc(nm ? nm : 1, sizeof *kv);
  for (size_t i = 0; kv && i < nm; i++) fg_st_metadata_at(f, i, &kv[i].key, &kv[i].value);
  uint8_t *out = NULL;
  size_t len = 0;
  if (writable && kv &&
      fg_st_serialize(w, n, fg_st_has_metadata(f) ? kv : NULL, nm, &out, &len) == FG_OK) {
    fg_st_file *g = NULL;
    if (fg_st_parse(out, len, "reserialized", &g) != FG_OK) abort();
    if (fg_st_count(g) != n) abort();
    for (size_t i = 0; i < n; i++) {
      const fg_st_tensor *a = fg_st_tensor_at(f, i);
      const fg_st_tensor *b = fg_st_find_n(g, a->name, a->name_len);
      if (!b || b->dtype != a->dtype || b->nbytes != a->nbytes) abort();
      if (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0) abort();
    }
    fg_st_close(g);
    free(out);
  }
  free(kv);
  free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fg_st_file *f = NULL;
  if (fg_st_parse(data, size, "fuzz", &f) == FG_OK) walk(f);
  fg_st_close(f);
  return 0;
}
