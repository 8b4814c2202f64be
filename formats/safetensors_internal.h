/* Private to formats/safetensors_*.c: the file object and the strict JSON helpers. */
#ifndef FORGIA_SAFETENSORS_INTERNAL_H
#define FORGIA_SAFETENSORS_INTERNAL_H

#include <cjson/cJSON.h>

#include "core/name_table.h"
#include "forgia/safetensors.h"

/* One __metadata__ entry: key and value are the decoded strings at strs + off
 * (NUL-terminated, and possibly holding NUL bytes themselves). */
typedef struct st_meta {
  uint32_t key_off, key_len, val_off, val_len;
} st_meta;

struct fg_st_file {
  fg_mapping *map;           /* holds the bytes the tensors point into */
  char *source;
  uint64_t header_size, data_start, data_size;
  size_t n;
  fg_st_tensor *tensors;     /* header order; names point into strs, shapes into dims */
  size_t *by_offset;         /* indices sorted by (begin, end, header order) */
  fg_name_table names;       /* tensor name -> index */
  char *strs;                /* the header's decoded strings (names, metadata) */
  uint64_t *dims;            /* every tensor's shape, one block */
  bool has_meta;
  size_t nmeta;
  st_meta *meta;             /* __metadata__ entries in file order */
};

/* ---- strict JSON (safetensors_json.c) ----
 * One pass over the text validates it whole and builds a flat tree (a "tape": each value
 * is one node, its children follow it, `next` skips its subtree) of the part a reader
 * walks: the root and the members of objects up to a depth. Every string is decoded
 * exactly (length kept, \u0000 included) in place: the string whose opening quote is at
 * byte p lies at strs + p + 1, NUL-terminated, so nodes hold no pointers. Numbers stay
 * source text. Arrays never put their elements on the tape (st_iter walks them in the
 * text) and objects deeper than the depth asked for are kept as one node, so the tape of
 * a hostile header holds at most one node per 5 bytes (an object member takes at least
 * `"":0,`), whatever the numbers, arrays and nesting inside it.
 *
 * It accepts exactly what the reference check accepts: UTF-8 as Rust's str::from_utf8,
 * JSON's four whitespace bytes only, the JSON number grammar, cJSON's nesting limit. When
 * the text is refused, the reference check (a lexer, then cJSON over the lexed text) runs
 * to give the message, so errors keep their class, order and byte offsets. */

enum { ST_NULL, ST_FALSE, ST_TRUE, ST_NUM, ST_STR, ST_ARR, ST_OBJ };

typedef struct st_node {
  uint32_t pos;              /* byte of the value's first character (a string's quote) */
  uint32_t len;              /* ST_STR: decoded bytes; ST_NUM: raw bytes; ST_ARR/ST_OBJ: elements */
  uint32_t next;             /* index of the node after this value and its subtree */
  uint32_t key_pos;          /* object members: byte of the key's opening quote */
  uint32_t key_len;          /* object members: decoded key bytes */
  uint8_t kind;
  bool tree;                 /* ST_OBJ whose members follow it on the tape (st_first) */
} st_node;

typedef struct st_json {
  st_node *nodes;            /* nodes[0] is the root */
  size_t nnodes;
  const char *text;          /* the parsed text (borrowed: it must outlive the tree) */
  char *strs;                /* n + 1 bytes holding the decoded strings (see above); the caller
                                may keep it after st_json_free by setting this to NULL */
} st_json;

/* Checks that s[0..n) is UTF-8 as Rust's str::from_utf8 defines it; on failure *bad is
 * the offset of the first invalid byte. */
bool st_utf8_valid(const uint8_t *s, size_t n, size_t *bad);

/* Parses text (not NUL-terminated) as strict JSON. `where` prefixes messages; `base` is
 * added to positions reported in messages (8 for a safetensors header). st_json_parse
 * puts the members of the root and of its object members on the tape (what safetensors
 * headers and index files need); st_json_parse_depth those of objects at depth < depth
 * (the root is at depth 0). */
fg_status st_json_parse(const char *text, size_t n, const char *where, uint64_t base, st_json *out);
fg_status st_json_parse_depth(const char *text, size_t n, const char *where, uint64_t base, int depth,
                              st_json *out);
void st_json_free(st_json *j);

/* Decoded string of an ST_STR node, raw text of an ST_NUM node, key of a member. */
static inline const char *st_str(const st_json *j, const st_node *v) {
  return v->kind == ST_NUM ? j->text + v->pos : j->strs + v->pos + 1;
}
static inline const char *st_key(const st_json *j, const st_node *v) { return j->strs + v->key_pos + 1; }

/* Members of a tree object: for (c = st_first(v), k = 0; k < v->len; k++, c = st_after(j, c)) */
static inline const st_node *st_first(const st_node *v) { return v + 1; }
static inline const st_node *st_after(const st_json *j, const st_node *c) { return j->nodes + c->next; }

/* Elements of an array, read from the text: kind, pos and len as on a node (len 0 for
 * arrays and objects, which are skipped whole). */
typedef struct st_iter {
  const st_json *j;
  size_t at;                 /* text position of the next element or of the closing bracket */
  uint32_t left;
} st_iter;
void st_iter_init(st_iter *it, const st_json *j, const st_node *arr);
bool st_iter_next(st_iter *it, st_node *out);

/* Parses a number node as a non-negative integer without fraction/exponent/sign that fits
 * in u64. */
bool st_num_u64(const st_json *j, const st_node *v, uint64_t *out);

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
/* The header of fg_st_serialize (8-byte length, JSON padded with spaces to 8), after
 * checking every tensor and key; *order (free it) gets the tensors in file order, *total the
 * file size. with_data false: the data pointers are not looked at (a streaming writer). */
fg_status st_header_build(const fg_st_write_tensor *ts, size_t n, const fg_st_kv *meta, size_t nmeta, bool with_data,
                          st_buf *out, const fg_st_write_tensor ***order, uint64_t *total);
fg_status st_write_atomic(const char *path, const void *head, size_t head_len,
                          const fg_st_write_tensor *const *order, size_t n);

/* Position of a tensor in fg_st_dir_tensor_at order (the folder's own name table), or
 * SIZE_MAX when absent: fg_ckpt finds by name through it instead of indexing again. */
size_t st_dir_index_of(const fg_st_dir *d, const char *name, size_t len);

#endif
