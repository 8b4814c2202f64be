/* Private to formats/safetensors_*.c: the file object and the strict JSON helpers. */
#ifndef FORGIA_SAFETENSORS_INTERNAL_H
#define FORGIA_SAFETENSORS_INTERNAL_H

#include <cjson/cJSON.h>

#include "forgia/safetensors.h"

struct fg_st_file {
  fg_mapping *map;           /* holds the bytes the tensors point into */
  char *source;
  uint64_t header_size, data_start, data_size;
  size_t n;
  fg_st_tensor *tensors;     /* header order; names and shapes individually owned */
  size_t *by_offset;         /* indices sorted by (begin, end, header order) */
  size_t *slots;             /* name hash table: index + 1, 0 = empty; cap is a power of 2 */
  size_t slot_cap;
  bool has_meta;
  size_t nmeta;
  char **meta_keys, **meta_vals;
};

/* ---- strict JSON (safetensors_json.c) ----
 * cJSON gives the tree, but it parses numbers as doubles, stops strings at \u0000, skips
 * a BOM and any byte <= 0x20 as whitespace, and keeps duplicate keys. So the text is first
 * lexed here: UTF-8 checked, whitespace limited to JSON's four, strings decoded exactly
 * (length kept), numbers kept as their source text and checked against the JSON grammar.
 * Each cJSON string or number node is then tied to its lexed token (document order is
 * the same in both), and the schema code reads the exact token. */

typedef struct st_tok {
  uint32_t pos;              /* byte position in the JSON text */
  uint32_t len;              /* raw length (numbers) */
  char *str;                 /* decoded string, NUL-terminated (NULL for numbers) */
  size_t str_len;
  const char *raw;           /* number text (not terminated) */
} st_tok;

typedef struct st_json {
  cJSON *root;
  st_tok *toks;
  size_t ntoks;
  char *text;                /* the NUL-terminated copy cJSON parsed */
} st_json;

/* Checks that s[0..n) is UTF-8 as Rust's str::from_utf8 defines it; on failure *bad is
 * the offset of the first invalid byte. */
bool st_utf8_valid(const uint8_t *s, size_t n, size_t *bad);

/* Parses text (not NUL-terminated) as strict JSON. `where` prefixes messages; `base` is
 * added to positions reported in messages (8 for a safetensors header). */
fg_status st_json_parse(const char *text, size_t n, const char *where, uint64_t base, st_json *out);
void st_json_free(st_json *j);

/* Token of a string or number node, of an object member's key. */
const st_tok *st_json_value_tok(const st_json *j, const cJSON *node);
const st_tok *st_json_key_tok(const st_json *j, const cJSON *node);
/* Parses a number token as a non-negative integer without fraction/exponent/sign that
 * fits in u64. */
bool st_tok_u64(const st_tok *t, uint64_t *out);

/* serde_json's escaping: appends "s" (quoted) to a growing buffer. ascii_only selects
 * Python json.dumps' default (\uXXXX for non-ASCII) instead. */
typedef struct st_buf {
  char *p;
  size_t len, cap;
  bool failed;
} st_buf;
void st_buf_put(st_buf *b, const void *s, size_t n);
void st_buf_puts(st_buf *b, const char *s);
void st_buf_printf(st_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void st_buf_json_string(st_buf *b, const char *s, size_t n, bool ascii_only);

/* ---- shared between parse and write ---- */

/* Bits per element of a safetensors dtype (4 for F4, 6 for F6_*), 0 when none. */
unsigned st_dtype_bits(fg_dtype d);
/* Upstream declaration index (BOOL 0 ... U64 21), -1 when not a safetensors type. */
int st_dtype_rank(fg_dtype d);
/* Byte length with the upstream overflow order; status and message on failure. */
fg_status st_tensor_bytes(fg_dtype d, const uint64_t *shape, int ndim, uint64_t *out,
                          const char *where, const char *name, size_t name_len);

/* Writes a whole buffer to a temp file next to path and renames it over path. */
fg_status st_write_atomic(const char *path, const void *head, size_t head_len,
                          const fg_st_write_tensor *const *order, size_t n);

#endif
