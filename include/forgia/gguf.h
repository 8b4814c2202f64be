/* GGUF v2/v3 containers (the llama.cpp model format): a strict zero-copy reader and a writer
 * whose output is byte-identical to llama.cpp's.
 *
 * Reading. A parsed fg_gguf_file borrows everything from a read-only mapping of the file:
 * key and string pointers, array payloads and tensor data all point into it and stay valid
 * until fg_gguf_close (or for as long as a mapping obtained with fg_gguf_retain_mapping is
 * held). Parsing touches only the header pages: tensor data is bounds-checked, never read.
 * A parsed file is immutable and may be read from many threads.
 *
 * Thread safety: every function taking a const fg_gguf_file (getters, look-ups, the
 * prefetch/evict hints) may run on many threads at once; fg_gguf_close only when they are
 * done. A writer is not locked: use each fg_gguf_writer from one thread at a time (a writer
 * may copy KVs from a file other threads are reading). Different writers are independent.
 *
 * What the parser rejects (each with its status and a message naming the file, the key or
 * tensor, the byte offset and expected versus found):
 *   FG_ERR_TRUNCATED       the input ends inside a field, a header or array count announces
 *                          more entries than the remaining bytes can hold, or a tensor's data
 *                          runs past EOF (the message names the tensor and the shortfall)
 *   FG_ERR_BAD_MAGIC       the first four bytes are not "GGUF"
 *   FG_ERR_BAD_VERSION     version other than 2 or 3 (a byte-swapped, big-endian file included)
 *   FG_ERR_BAD_STRING      empty key; key, string or tensor name whose length runs past EOF or
 *                          is over 1 GiB; tensor name of 64 bytes or more (ggml's
 *                          GGML_MAX_NAME) or holding a NUL byte
 *   FG_ERR_BAD_VALUE_TYPE  value or array element type outside 0..12, arrays of arrays
 *   FG_ERR_RANGE           an array of more than 2^30 elements
 *   FG_ERR_DUPLICATE       a key or a tensor name that appears twice (two empty tensor names
 *                          included; across split parts too)
 *   FG_ERR_BAD_ALIGNMENT   general.alignment not of wire type UINT32, zero, not a power of
 *                          two, or above 2^20
 *   FG_ERR_BAD_SHAPE       n_dims above 4, a negative dim, an element count or byte size
 *                          that overflows int64, ne[0] not a whole number of blocks
 *   FG_ERR_BAD_DTYPE       unknown or removed ggml type code
 *   FG_ERR_BAD_OFFSET      a tensor offset other than the running padded total ggml requires
 *                          (first tensor at 0, each next at prev + pad(nbytes, alignment)), or
 *                          a running total that overflows
 * Accepted, as ggml accepts them: empty arrays and strings, bool bytes other than 0/1
 * (non-zero is true), UINT64 values of 2^63 and above (kept exact: see the _uint getters),
 * n_dims 0 (one element: ndim 0, no shape entries, ne all 1), an empty tensor name (found
 * by fg_gguf_find_tensor(f, "")), zero-element tensors, alignment 1, trailing bytes after
 * the data, a file whose last tensor lacks its final padding. Strings and keys are not
 * checked for UTF-8, keys may hold NUL bytes. (The writer below emits neither n_dims 0 nor
 * an empty name, as ggml's writer does not.)
 *
 * Where this parser stays stricter than ggml, by decision:
 *   - A NUL byte inside a tensor name. ggml accepts it and cuts the name at the NUL
 *     (ggml_set_name copies a C string), so "a\0b" is loaded as "a" and two names that
 *     differ after the NUL collide. Here names are handed out NUL-terminated in
 *     fg_gguf_tensor.name and looked up by length: a NUL would make one name read two ways.
 *   - general.alignment above 2^20 (ggml takes any power-of-two UINT32, up to 2^31). No
 *     writer emits more than a page; the cap bounds the padding arithmetic and the zero
 *     padding a writer copying the file must produce (up to 2 GiB per tensor otherwise).
 *
 * Writing. fg_gguf_writer collects KVs (exact wire types) and tensors, then writes the
 * layout of ggml's writer: header, KVs in insertion order, tensor infos in declaration
 * order, zero padding to the alignment, each tensor's data zero-padded to the alignment
 * (the last one too); offsets are the running padded total. The writer adds no key of its
 * own (not even general.alignment). Files go to a temporary name in
 * the destination directory and are renamed into place on success; on failure the temporary
 * file is removed and the destination is untouched. */
#ifndef FORGIA_GGUF_H
#define FORGIA_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/dtype.h"
#include "forgia/mapping.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_GGUF_DEFAULT_ALIGNMENT 32u
#define FG_GGUF_MAX_ALIGNMENT (1u << 20)
#define FG_GGUF_MAX_NAME 64u              /* tensor names are at most 63 bytes */
#define FG_GGUF_MAX_STRING (1ull << 30)   /* bytes in one string */
#define FG_GGUF_MAX_ARRAY (1ull << 30)    /* elements in one array */
#define FG_GGUF_MAX_DIMS 4

/* Metadata value types; the values are the wire codes. */
typedef enum fg_gguf_type {
  FG_GGUF_UINT8 = 0, FG_GGUF_INT8 = 1, FG_GGUF_UINT16 = 2, FG_GGUF_INT16 = 3,
  FG_GGUF_UINT32 = 4, FG_GGUF_INT32 = 5, FG_GGUF_FLOAT32 = 6, FG_GGUF_BOOL = 7,
  FG_GGUF_STRING = 8, FG_GGUF_ARRAY = 9, FG_GGUF_UINT64 = 10, FG_GGUF_INT64 = 11,
  FG_GGUF_FLOAT64 = 12,
  FG_GGUF_TYPE_COUNT = 13
} fg_gguf_type;

/* "UINT8" ... "FLOAT64" (gguf-py's GGUFValueType names); "invalid" outside 0..12. */
FG_API const char *fg_gguf_type_name(fg_gguf_type t);
/* Bytes of one scalar of type t; 0 for STRING, ARRAY and invalid codes. */
FG_API size_t fg_gguf_type_size(fg_gguf_type t);

/* A string borrowed from the file: len bytes at ptr, NOT NUL-terminated. */
typedef struct fg_gguf_str {
  const char *ptr;
  uint64_t len;
} fg_gguf_str;

/* An array value borrowed from the file. */
typedef struct fg_gguf_array {
  fg_gguf_type elem_type;      /* never ARRAY */
  uint64_t len;                /* elements */
  const uint8_t *data;         /* wire bytes of all elements (strings length-prefixed) */
  uint64_t nbytes;
  const uint64_t *str_offsets; /* STRING arrays: offset in data of element j's length prefix
                                  (owned by the file); NULL for other element types */
} fg_gguf_array;

/* Element j of an array. FG_ERR_RANGE when j >= len, FG_ERR_TYPE when the element type does
 * not fit the getter. What each getter takes:
 *   _int    every integer type, widened to int64; FG_ERR_RANGE for a UINT64 >= 2^63
 *   _uint   every integer type, widened to uint64; FG_ERR_RANGE for a negative value
 *   _float  FLOAT32 and FLOAT64, and every integer type (converted to the nearest double)
 *   _bool   BOOL, and every integer type (non-zero is true)
 *   _str    STRING (O(1))
 * *out is written only on FG_OK. */
FG_API fg_status fg_gguf_array_int(const fg_gguf_array *a, uint64_t j, int64_t *out);
FG_API fg_status fg_gguf_array_uint(const fg_gguf_array *a, uint64_t j, uint64_t *out);
FG_API fg_status fg_gguf_array_float(const fg_gguf_array *a, uint64_t j, double *out);
FG_API fg_status fg_gguf_array_bool(const fg_gguf_array *a, uint64_t j, bool *out);
FG_API fg_status fg_gguf_array_str(const fg_gguf_array *a, uint64_t j, fg_gguf_str *out);

/* One tensor of the directory. All fields are read-only; data is borrowed from the mapping
 * of part `part` and is nbytes long. */
typedef struct fg_gguf_tensor {
  char name[FG_GGUF_MAX_NAME]; /* NUL-terminated copy of the wire name */
  uint32_t name_len;
  fg_dtype dtype;              /* equals the ggml wire code */
  int ndim;                    /* n_dims as in the file, 0..4 (0: one element) */
  uint64_t ne[4];              /* GGUF order: ne[0] is the innermost (row) dimension;
                                  dims past ndim are 1 */
  uint64_t shape[4];           /* row-major, outermost first: shape[i] = ne[ndim-1-i];
                                  entries past ndim are 0 */
  uint64_t offset;             /* from the start of its part's data section */
  uint64_t nbytes;             /* exact byte size, without padding */
  size_t part;                 /* split part holding the tensor, 0-based (0 when not split) */
  const uint8_t *data;         /* borrowed; NULL when nbytes is 0 */
} fg_gguf_tensor;

typedef struct fg_gguf_file fg_gguf_file;

/* ---- opening --------------------------------------------------------------------------- */

/* Opens one GGUF file, read into memory (FG_MAP_READ) or memory-mapped (FG_MAP_MMAP). */
FG_API fg_status fg_gguf_open(const char *path, fg_map_mode mode, fg_gguf_file **out);
/* Parses caller-owned bytes without copying; they must outlive the file. */
FG_API fg_status fg_gguf_open_bytes(const void *data, size_t len, fg_gguf_file **out);
/* Parses an existing mapping; the file takes its own reference (the caller keeps theirs). */
FG_API fg_status fg_gguf_open_mapping(fg_mapping *m, fg_gguf_file **out);
/* Opens a model by path. For NAME-00001-of-0000N.gguf (5 digits each), maps all N parts
 * and returns one merged view: metadata of part 1, the union of the parts' tensors in part
 * order, each tagged with its part. The parts must be one set: each carries every split key
 * part 1 carries (split.no, split.count: UINT16; split.tensors.count: INT32), split.no ==
 * its 0-based index, split.count == N and split.tensors.count == the total in every part;
 * mismatches are FG_ERR_RANGE, a missing part FG_ERR_NOT_FOUND, a tensor name in two parts
 * FG_ERR_DUPLICATE. Any other path is opened like fg_gguf_open(path, FG_MAP_MMAP), but a
 * file that is one part of a split it cannot open whole is FG_ERR_INVALID_ARG naming what
 * to open: a part k > 1 (by its name, or by split.no / split.count > 1 when renamed), or a
 * part 1 whose name no longer follows the pattern (its siblings cannot be found). Use
 * fg_gguf_open to parse one part on its own. */
FG_API fg_status fg_gguf_open_auto(const char *path, fg_gguf_file **out);
/* NULL-safe. Invalidates every pointer handed out unless a mapping was retained. */
FG_API void fg_gguf_close(fg_gguf_file *f);

/* Recognises NAME-%05d-of-%05d.gguf; on a match stores the 1-based part number and the
 * count (either may be NULL) and returns true. */
FG_API bool fg_gguf_split_name(const char *path, uint32_t *part_no, uint32_t *part_count);

FG_API uint32_t fg_gguf_version(const fg_gguf_file *f);     /* 2 or 3 (part 1 for a split) */
FG_API uint32_t fg_gguf_alignment(const fg_gguf_file *f);   /* general.alignment or 32 (part 1) */
FG_API const char *fg_gguf_path(const fg_gguf_file *f);     /* part 1's path, "<memory>" for bytes */
FG_API size_t fg_gguf_part_count(const fg_gguf_file *f);  /* 1 unless opened as a split */
/* Absolute offset of a part's data section: pad(end of tensor infos, alignment). */
FG_API uint64_t fg_gguf_data_offset(const fg_gguf_file *f, size_t part);
/* The part's mapping, borrowed (valid until close). NULL when part is out of range. */
FG_API const fg_mapping *fg_gguf_mapping(const fg_gguf_file *f, size_t part);
/* A new reference to the part's mapping: borrowed pointers into that part (tensor data,
 * strings) stay valid after fg_gguf_close until fg_mapping_release. NULL when out of range. */
FG_API fg_mapping *fg_gguf_retain_mapping(const fg_gguf_file *f, size_t part);

/* ---- metadata -------------------------------------------------------------------------- */

FG_API size_t fg_gguf_kv_count(const fg_gguf_file *f);
/* Index of a key (O(1) hash lookup), or -1 when absent. key_n takes a length. */
FG_API int64_t fg_gguf_key_index(const fg_gguf_file *f, const char *key);
FG_API int64_t fg_gguf_key_index_n(const fg_gguf_file *f, const char *key, size_t len);

/* Accessors by index; i must be < fg_gguf_kv_count (out-of-range: empty string, -1 type). */
FG_API fg_gguf_str fg_gguf_kv_key(const fg_gguf_file *f, size_t i);
FG_API fg_gguf_type fg_gguf_kv_type(const fg_gguf_file *f, size_t i);   /* wire type */
/* Typed values, taking the wire types the array getters take (_int, _uint, _float, _bool,
 * _str) and ARRAY (_array): FG_ERR_TYPE when the wire type does not fit, FG_ERR_RANGE when
 * i is out of range or the value does not fit (_int: UINT64 >= 2^63; _uint: a negative
 * value), with a message naming the file, key and value. _str and _array borrow from the
 * file. */
FG_API fg_status fg_gguf_kv_int(const fg_gguf_file *f, size_t i, int64_t *out);
FG_API fg_status fg_gguf_kv_uint(const fg_gguf_file *f, size_t i, uint64_t *out);
FG_API fg_status fg_gguf_kv_float(const fg_gguf_file *f, size_t i, double *out);
FG_API fg_status fg_gguf_kv_bool(const fg_gguf_file *f, size_t i, bool *out);
FG_API fg_status fg_gguf_kv_str(const fg_gguf_file *f, size_t i, fg_gguf_str *out);
FG_API fg_status fg_gguf_kv_array(const fg_gguf_file *f, size_t i, fg_gguf_array *out);
/* The KV exactly as on the wire (key length, key, type code, value), borrowed. */
FG_API fg_status fg_gguf_kv_raw(const fg_gguf_file *f, size_t i, const uint8_t **bytes, uint64_t *len);
/* The value part alone (after the type code; for arrays after element type and count). */
FG_API fg_status fg_gguf_kv_value_raw(const fg_gguf_file *f, size_t i, const uint8_t **bytes, uint64_t *len);

/* The same getters by key: FG_ERR_NOT_FOUND when absent, otherwise as by index. */
FG_API fg_status fg_gguf_get_int(const fg_gguf_file *f, const char *key, int64_t *out);
FG_API fg_status fg_gguf_get_uint(const fg_gguf_file *f, const char *key, uint64_t *out);
FG_API fg_status fg_gguf_get_float(const fg_gguf_file *f, const char *key, double *out);
FG_API fg_status fg_gguf_get_bool(const fg_gguf_file *f, const char *key, bool *out);
FG_API fg_status fg_gguf_get_str(const fg_gguf_file *f, const char *key, fg_gguf_str *out);
FG_API fg_status fg_gguf_get_array(const fg_gguf_file *f, const char *key, fg_gguf_array *out);

/* ---- tensor directory ------------------------------------------------------------------ */

FG_API size_t fg_gguf_tensor_count(const fg_gguf_file *f);
/* i-th tensor in file order (part order for splits); NULL when out of range. */
FG_API const fg_gguf_tensor *fg_gguf_tensor_at(const fg_gguf_file *f, size_t i);
/* O(1) lookup; NULL when absent. */
FG_API const fg_gguf_tensor *fg_gguf_find_tensor(const fg_gguf_file *f, const char *name);
FG_API const fg_gguf_tensor *fg_gguf_find_tensor_n(const fg_gguf_file *f, const char *name, size_t len);
/* Lookup that fails with FG_ERR_NOT_FOUND and a message naming the file and tensor. */
FG_API fg_status fg_gguf_get_tensor(const fg_gguf_file *f, const char *name, const fg_gguf_tensor **out);
/* Element count: the product of ne (0 when a dimension is 0). */
FG_API uint64_t fg_gguf_tensor_numel(const fg_gguf_tensor *t);

/* Paging hints for a tensor's bytes (madvise WILLNEED / DONTNEED on mmapped files, no-ops
 * otherwise). Release only what you are done reading: a later touch re-reads from disk. */
FG_API void fg_gguf_tensor_prefetch(const fg_gguf_file *f, const fg_gguf_tensor *t);
FG_API void fg_gguf_tensor_evict(const fg_gguf_file *f, const fg_gguf_tensor *t);

/* ---- writer ---------------------------------------------------------------------------- */

typedef struct fg_gguf_writer fg_gguf_writer;

FG_API fg_status fg_gguf_writer_create(fg_gguf_writer **out);
/* NULL-safe; removes the temporary file of an unfinished streaming write. */
FG_API void fg_gguf_writer_free(fg_gguf_writer *w);
/* Version written in the header: 3 (default) or 2 (the layouts are identical). */
FG_API fg_status fg_gguf_writer_set_version(fg_gguf_writer *w, uint32_t version);

/* Metadata. Keys are copied (non-empty). Setting an existing key replaces its value in
 * place (the key keeps its position). general.alignment must be set with set_u32 to a power
 * of two <= 2^20 (FG_ERR_BAD_ALIGNMENT otherwise) and sets the padding of the output. */
FG_API fg_status fg_gguf_writer_set_u8(fg_gguf_writer *w, const char *key, uint8_t v);
FG_API fg_status fg_gguf_writer_set_i8(fg_gguf_writer *w, const char *key, int8_t v);
FG_API fg_status fg_gguf_writer_set_u16(fg_gguf_writer *w, const char *key, uint16_t v);
FG_API fg_status fg_gguf_writer_set_i16(fg_gguf_writer *w, const char *key, int16_t v);
FG_API fg_status fg_gguf_writer_set_u32(fg_gguf_writer *w, const char *key, uint32_t v);
FG_API fg_status fg_gguf_writer_set_i32(fg_gguf_writer *w, const char *key, int32_t v);
FG_API fg_status fg_gguf_writer_set_u64(fg_gguf_writer *w, const char *key, uint64_t v); /* any value, as ggml */
FG_API fg_status fg_gguf_writer_set_i64(fg_gguf_writer *w, const char *key, int64_t v);
FG_API fg_status fg_gguf_writer_set_f32(fg_gguf_writer *w, const char *key, float v);
FG_API fg_status fg_gguf_writer_set_f64(fg_gguf_writer *w, const char *key, double v);
FG_API fg_status fg_gguf_writer_set_bool(fg_gguf_writer *w, const char *key, bool v);
/* len bytes of value (copied); NUL bytes are kept. */
FG_API fg_status fg_gguf_writer_set_str(fg_gguf_writer *w, const char *key, const char *value, uint64_t len);
/* An array of a scalar element type: count elements, little-endian, packed (copied). */
FG_API fg_status fg_gguf_writer_set_array(fg_gguf_writer *w, const char *key, fg_gguf_type elem_type,
                                   const void *elems, uint64_t count);
/* A string array; lens may be NULL (then every string is NUL-terminated). */
FG_API fg_status fg_gguf_writer_set_str_array(fg_gguf_writer *w, const char *key,
                                       const char *const *strs, const uint64_t *lens, uint64_t count);
/* Copies KVs byte-verbatim (exact wire type) from a parsed file: one by key
 * (FG_ERR_NOT_FOUND when absent), or all in file order except the n_skip keys in skip. */
FG_API fg_status fg_gguf_writer_copy_kv(fg_gguf_writer *w, const fg_gguf_file *from, const char *key);
FG_API fg_status fg_gguf_writer_copy_all_kv(fg_gguf_writer *w, const fg_gguf_file *from,
                                     const char *const *skip, size_t n_skip);
/* Removes a key; FG_ERR_NOT_FOUND when absent. */
FG_API fg_status fg_gguf_writer_remove_kv(fg_gguf_writer *w, const char *key);
FG_API size_t fg_gguf_writer_kv_count(const fg_gguf_writer *w);

/* Tensors, in output order. ne is GGUF order (innermost first), ndim 1..4, written as
 * given (trailing 1s are kept). The name (1..63 bytes, unique) is copied. add_tensor
 * borrows data (nbytes must equal the size of ne x dtype) until the file is written;
 * declare_tensor records the tensor without data, to be streamed. */
FG_API fg_status fg_gguf_writer_add_tensor(fg_gguf_writer *w, const char *name, fg_dtype dtype,
                                    int ndim, const uint64_t *ne,
                                    const void *data, uint64_t nbytes);
FG_API fg_status fg_gguf_writer_declare_tensor(fg_gguf_writer *w, const char *name, fg_dtype dtype,
                                        int ndim, const uint64_t *ne);
FG_API size_t fg_gguf_writer_tensor_count(const fg_gguf_writer *w);

/* One-pass output: every tensor must have data (FG_ERR_STATE otherwise). The writer stays
 * usable; both may be called repeatedly. finish_mem returns a malloc'd buffer (free()). */
FG_API fg_status fg_gguf_writer_finish(fg_gguf_writer *w, const char *path);
FG_API fg_status fg_gguf_writer_finish_mem(fg_gguf_writer *w, void **out, size_t *len);

/* Streaming output for files larger than memory: begin writes the header to a temporary
 * file beside path; then feed every tensor's bytes in declaration order with write_data
 * (any chunking; a tensor's padding follows its last byte; tensors added with data must be
 * fed too); commit checks that every byte arrived and renames into place. Metadata and
 * tensors are frozen between begin and commit (FG_ERR_STATE). Errors leave no file. To
 * cancel a stream, stop feeding it and free the writer: the temporary file is removed. The
 * thread's cancel hook (forgia/cancel.h) also stops finish, write_data and commit, at least
 * every 64 MiB written (FG_ERR_STATE, no file). path may be what fg_st_save accepts. */
FG_API fg_status fg_gguf_writer_begin(fg_gguf_writer *w, const char *path);
/* Name of the tensor whose bytes are expected next, NULL when all were written. */
FG_API const char *fg_gguf_writer_next_tensor(const fg_gguf_writer *w);
/* FG_ERR_RANGE when data would run past the current tensor or past the last one. */
FG_API fg_status fg_gguf_writer_write_data(fg_gguf_writer *w, const void *data, uint64_t len);
FG_API fg_status fg_gguf_writer_commit(fg_gguf_writer *w);

#ifdef __cplusplus
}
#endif
#endif
