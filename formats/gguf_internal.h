/* Internals shared by the gguf_*.c files: the parsed-file layout, little-endian field
 * access, the name hash table and the tensor size rule. Not installed. */
#ifndef FORGIA_FORMATS_GGUF_INTERNAL_H
#define FORGIA_FORMATS_GGUF_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "forgia/elem/bytes.h"
#include "forgia/gguf.h"

/* Smallest possible encodings, used to reject header counts that the remaining bytes
 * cannot hold before anything is allocated. A KV: key length (8), a 1-byte key, the type
 * (4) and a 1-byte value. A tensor info: name length (8), a 1-byte name, n_dims (4), one
 * dim (8), type (4), offset (8). */
#define FG_GGUF_MIN_KV_BYTES 14u
#define FG_GGUF_MIN_TENSOR_BYTES 33u
#define FG_GGUF_KEY_ALIGNMENT "general.alignment"

/* Open-addressing table from names to indices; the names themselves live elsewhere and
 * are fetched through a callback, so the table is shared by parser and writer. */
typedef fg_gguf_str (*fg_gguf_name_at)(const void *ctx, uint64_t i);
typedef struct fg_gguf_hash {
  uint64_t *hashes; /* per slot; unused when idx1 is 0 */
  uint64_t *idx1;   /* index + 1; 0 marks an empty slot */
  uint64_t cap;     /* power of two, or 0 */
  uint64_t used;
} fg_gguf_hash;

uint64_t fg_gguf_hash_bytes(const void *s, size_t n);
void fg_gguf_hash_free(fg_gguf_hash *h);
/* Sizes the table for n names (clears it). */
fg_status fg_gguf_hash_reset(fg_gguf_hash *h, uint64_t n);
/* Index of the name, or -1. */
int64_t fg_gguf_hash_find(const fg_gguf_hash *h, const char *s, size_t n, fg_gguf_name_at at, const void *ctx);
/* Inserts idx under name (grows as needed); when the name is present already, stores
 * nothing and sets *dup to the existing index (else -1). */
fg_status fg_gguf_hash_insert(fg_gguf_hash *h, const char *s, size_t n, uint64_t idx,
                              fg_gguf_name_at at, const void *ctx, int64_t *dup);

/* One parsed KV; every pointer borrows from the part-1 mapping. */
typedef struct fg_gguf_kvrec {
  const uint8_t *wire;   /* the whole KV as on the wire */
  uint64_t wire_len;
  const char *key;
  uint64_t key_len;
  uint32_t type;
  uint32_t elem_type;    /* arrays only */
  uint64_t count;        /* arrays: elements; 1 otherwise */
  const uint8_t *val;    /* scalar bytes; string bytes (after the length); array elements */
  uint64_t val_len;
  const uint8_t *val_wire; /* value after the type code (string: from its length prefix) */
  uint64_t val_wire_len;
  uint64_t *str_offs;    /* string arrays: owned offsets of each element's length prefix */
} fg_gguf_kvrec;

typedef struct fg_gguf_part {
  fg_mapping *map;       /* owned reference */
  uint64_t data_offset;
  uint32_t alignment;
  uint32_t version;
} fg_gguf_part;

struct fg_gguf_file {
  fg_gguf_part *parts;
  uint32_t n_parts;
  fg_gguf_kvrec *kvs;
  uint64_t n_kv;
  fg_gguf_tensor *tensors;
  uint64_t n_tensors;
  fg_gguf_hash kv_index;
  fg_gguf_hash tensor_index;
};

fg_gguf_str fg_gguf_kv_name_at(const void *file, uint64_t i);
fg_gguf_str fg_gguf_tensor_name_at(const void *file, uint64_t i);
/* Frees everything a (possibly half-built) file owns. */
void fg_gguf_file_destroy(fg_gguf_file *f);

/* Byte size of a tensor with validation shared by parser and writer: ndim 1..4, every
 * dim < 2^63, element count and byte size below 2^63, ne[0] a whole number of blocks.
 * Fails with FG_ERR_BAD_SHAPE / FG_ERR_BAD_DTYPE; the message starts with what. */
fg_status fg_gguf_tensor_nbytes(const char *what, fg_dtype dtype, uint32_t ndim,
                                const uint64_t *ne, uint64_t *nbytes);

/* Power-of-two padding: round x up to a multiple of a. */
static inline uint64_t fg_gguf_pad(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* Widening reads of one scalar element of a metadata type. */
int64_t fg_gguf_scalar_int(uint32_t type, const uint8_t *p);
double fg_gguf_scalar_float(uint32_t type, const uint8_t *p);
static inline int fg_gguf_type_is_int(uint32_t t) {
  return t <= FG_GGUF_INT32 || t == FG_GGUF_UINT64 || t == FG_GGUF_INT64;
}

#endif
