/* libFuzzer target for the GGUF reader (and, for every input it accepts, the writer).
 *
 * Parses the input with fg_gguf_open_bytes and calls every accessor on what it accepts;
 * then re-emits the file with the writer and requires that the output parses again with
 * the same directory (any parsed file must be re-emittable). Build with
 * -DFORGIA_FUZZ=ON and clang; seeds come from tests/data/gen_gguf_corpus.py:
 *
 *   python3 tests/data/gen_gguf_corpus.py seeds && rm seeds/MANIFEST
 *   ./fuzz_gguf -max_total_time=60 corpus seeds
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/gguf.h"

static volatile uint64_t sink;

static void walk(const fg_gguf_file *f) {
  uint64_t acc = fg_gguf_version(f) + fg_gguf_alignment(f) + fg_gguf_data_offset(f, 0);
  for (uint64_t i = 0; i < fg_gguf_kv_count(f); i++) {
    fg_gguf_str k = fg_gguf_kv_key(f, i);
    if (fg_gguf_key_index_n(f, k.ptr, k.len) != (int64_t)i) __builtin_trap();
    int64_t v;
    double d;
    bool b;
    fg_gguf_str s;
    fg_gguf_array a;
    const uint8_t *raw;
    uint64_t n;
    if (fg_gguf_kv_int(f, i, &v) == FG_OK) acc += (uint64_t)v;
    if (fg_gguf_kv_float(f, i, &d) == FG_OK) acc += d != d;
    if (fg_gguf_kv_bool(f, i, &b) == FG_OK) acc += b;
    if (fg_gguf_kv_str(f, i, &s) == FG_OK && s.len) acc += (uint8_t)s.ptr[s.len - 1];
    if (fg_gguf_kv_raw(f, i, &raw, &n) == FG_OK) acc += raw[n - 1];
    if (fg_gguf_kv_value_raw(f, i, &raw, &n) == FG_OK && n) acc += raw[n - 1];
    if (fg_gguf_kv_array(f, i, &a) == FG_OK) {
      for (uint64_t j = 0; j < a.len; j++) {
        if (fg_gguf_array_int(&a, j, &v) == FG_OK) acc += (uint64_t)v;
        if (fg_gguf_array_float(&a, j, &d) == FG_OK) acc += d != d;
        if (fg_gguf_array_bool(&a, j, &b) == FG_OK) acc += b;
        if (fg_gguf_array_str(&a, j, &s) == FG_OK && s.len) acc += (uint8_t)s.ptr[0] + (uint8_t)s.ptr[s.len - 1];
      }
    }
  }
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    if (fg_gguf_find_tensor_n(f, t->name, t->name_len) != t) __builtin_trap();
    if (t->nbytes) acc += t->data[0] + t->data[t->nbytes - 1];
    acc += fg_gguf_tensor_numel(t);
    fg_gguf_tensor_prefetch(f, t);
  }
  sink = acc;
}

/* Re-emits f; the output must parse with the same counts. */
static void reemit(const fg_gguf_file *f) {
  /* n_dims 0 and empty names are read (as ggml reads them) but not written (ggml's writer
   * writes neither): such a file cannot be re-emitted, which is not a finding. */
  for (size_t i = 0; i < fg_gguf_tensor_count(f); i++)
    if (fg_gguf_tensor_at(f, i)->ndim == 0 || fg_gguf_tensor_at(f, i)->name_len == 0) return;
  fg_gguf_writer *w = NULL;
  if (fg_gguf_writer_create(&w) != FG_OK) return;
  if (fg_gguf_writer_set_version(w, fg_gguf_version(f)) != FG_OK) __builtin_trap();
  if (fg_gguf_writer_copy_all_kv(w, f, NULL, 0) != FG_OK) __builtin_trap();
  for (uint64_t i = 0; i < fg_gguf_tensor_count(f); i++) {
    const fg_gguf_tensor *t = fg_gguf_tensor_at(f, i);
    if (fg_gguf_writer_add_tensor(w, t->name, t->dtype, t->ndim, t->ne, t->data, t->nbytes) != FG_OK) __builtin_trap();
  }
  void *out = NULL;
  size_t len = 0;
  fg_status s = fg_gguf_writer_finish_mem(w, &out, &len);
  fg_gguf_writer_free(w);
  if (s == FG_ERR_NOMEM) return;  /* a huge zero-filled data section: not a finding */
  if (s != FG_OK) __builtin_trap();
  fg_gguf_file *g = NULL;
  if (fg_gguf_open_bytes(out, len, &g) != FG_OK) __builtin_trap();
  if (fg_gguf_kv_count(g) != fg_gguf_kv_count(f) || fg_gguf_tensor_count(g) != fg_gguf_tensor_count(f) ||
      fg_gguf_alignment(g) != fg_gguf_alignment(f))
    __builtin_trap();
  fg_gguf_close(g);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fg_gguf_file *f = NULL;
  if (fg_gguf_open_bytes(size ? data : NULL, size, &f) != FG_OK) {
    if (f) __builtin_trap(); /* failure must leave no file behind */
    return 0;
  }
  walk(f);
  reemit(f);
  fg_gguf_close(f);
  return 0;
}
