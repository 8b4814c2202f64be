/* Writer state shared by gguf_write.c (collecting KVs and tensors) and gguf_write_out.c
 * (serialising, temporary files, streaming). Not installed. */
#ifndef FORGIA_FORMATS_GGUF_WRITER_INTERNAL_H
#define FORGIA_FORMATS_GGUF_WRITER_INTERNAL_H

#include "core/atomic_file.h"
#include "formats/gguf_internal.h"

typedef struct fg_gguf_wkv {
  uint8_t *wire;          /* the whole KV as it will be written (owned) */
  uint64_t wire_len;
  uint64_t key_len;       /* the key is at wire + 8 */
} fg_gguf_wkv;

typedef struct fg_gguf_wtensor {
  char name[FG_GGUF_MAX_NAME];
  uint32_t name_len;
  fg_dtype dtype;
  uint32_t ndim;
  uint64_t ne[4];
  uint64_t nbytes;
  const void *data;       /* borrowed; NULL for declared tensors */
  int has_data;
} fg_gguf_wtensor;

struct fg_gguf_writer {
  uint32_t version;
  uint32_t alignment;     /* from general.alignment, else 32 */
  fg_gguf_wkv *kvs;
  uint64_t n_kv, cap_kv;
  fg_gguf_wtensor *tensors;
  uint64_t n_tensors, cap_tensors;
  fg_name_table kv_index, tensor_index;
  /* streaming state (out.fd >= 0 while a stream is open) */
  fg_atomic_file out;
  uint64_t cur;           /* tensor whose bytes are expected */
  uint64_t cur_done;      /* bytes of it written so far */
};

fg_name fg_gguf_wkv_name_at(const void *w, uint64_t i);

/* A KV with a key of key_len bytes (NUL bytes allowed, as GGUF keys carry a length) and a
 * value given as its wire bytes (what follows the type code), copied. Replaces an existing
 * key in place, as the typed setters do. */
fg_status fg_gguf_writer_set_wire_n(fg_gguf_writer *w, const char *key, size_t key_len, fg_gguf_type type,
                                    const void *value, uint64_t value_len);

#endif
