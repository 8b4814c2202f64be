/* Internals shared by the gguf_*.c files: the parsed-file layout, little-endian field
 * access, the name hash table and the tensor size rule. Not installed. */
#ifndef FORGIA_FORMATS_GGUF_INTERNAL_H
#define FORGIA_FORMATS_GGUF_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "core/name_table.h"
#include "forgia/elem/bytes.h"
#include "forgia/gguf.h"

/* Smallest possible encodings, used to reject header counts that the remaining bytes
 * cannot hold before anything is allocated. A KV: key length (8), a 1-byte key, the type
 * (4) and a 1-byte value. A tensor info: name length (8), an empty name, n_dims (4) of 0,
 * type (4), offset (8). */
#define FG_GGUF_MIN_KV_BYTES 14u
#define FG_GGUF_MIN_TENSOR_BYTES 24u
#define FG_GGUF_KEY_ALIGNMENT "general.alignment"

/* Names -> indices: the shared table of core/name_table.h; these return the name of
 * KV / tensor i for it. */
typedef fg_name (*fg_gguf_name_at)(const void *ctx, uint64_t i);

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
  fg_name_table kv_index;
  fg_name_table tensor_index;
};

fg_name fg_gguf_kv_name_at(const void *file, uint64_t i);
fg_name fg_gguf_tensor_name_at(const void *file, uint64_t i);
/* Frees everything a (possibly half-built) file owns. */
void fg_gguf_file_destroy(fg_gguf_file *f);

/* Byte size of a tensor with validation shared by parser and writer: ndim 1..4, every
 * dim < 2^63, element count and byte size below 2^63, ne[0] a whole number of blocks.
 * Fails with FG_ERR_BAD_SHAPE / FG_ERR_BAD_DTYPE; the message starts with what. */
fg_status fg_gguf_tensor_nbytes(const char *what, fg_dtype dtype, uint32_t ndim,
                                const uint64_t *ne, uint64_t *nbytes);

/* Power-of-two padding: round x up to a multiple of a. */
static inline uint64_t fg_gguf_pad(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

/* Reads of one scalar element of a metadata type. For an integer type, _int and _u64 give
 * the value as int64 / uint64 (a UINT64 >= 2^63 wraps in _int, a negative value in _u64:
 * fg_gguf_scalar_sign tells which fits); _float takes the float types and converts integer
 * types to the nearest double. */
int64_t fg_gguf_scalar_int(uint32_t type, const uint8_t *p);
uint64_t fg_gguf_scalar_u64(uint32_t type, const uint8_t *p);
double fg_gguf_scalar_float(uint32_t type, const uint8_t *p);
/* For an integer type: -1 when the value is negative, +1 when it is >= 2^63 (UINT64 only),
 * 0 otherwise (it fits both int64 and uint64). */
int fg_gguf_scalar_sign(uint32_t type, const uint8_t *p);
static inline int fg_gguf_type_is_int(uint32_t t) {
  return t <= FG_GGUF_INT32 || t == FG_GGUF_UINT64 || t == FG_GGUF_INT64;
}

#endif
