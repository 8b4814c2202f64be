/* safetensors: the Hugging Face tensor container.
 *
 * Layout: a u64 little-endian header length N, N bytes of UTF-8 JSON, then one data
 * buffer. Every tensor's data_offsets [begin, end) are relative to byte 8 + N, and the
 * tensors must tile that buffer exactly (no holes, no overlaps, no trailing bytes).
 *
 * Validation follows the upstream reader's order, so the same input reports the same
 * class of error (each its own fg_status):
 *   1. fewer than 8 bytes                          FG_ERR_HEADER_TOO_SMALL
 *   2. N > FG_ST_MAX_HEADER_SIZE                   FG_ERR_HEADER_TOO_LARGE
 *   3. 8 + N past the end of the input             FG_ERR_INVALID_HEADER_LENGTH
 *   4. header not UTF-8                            FG_ERR_HEADER_NOT_UTF8
 *   5. not strict JSON / not an object / missing   FG_ERR_INVALID_JSON
 *      or mistyped field; then, walking the header in file order:
 *      a key seen twice (tensor name, __metadata__ FG_ERR_DUPLICATE  (upstream keeps the last;
 *      or a field inside one tensor)                                   forgia refuses)
 *      dtype tag unknown                           FG_ERR_BAD_DTYPE
 *      shape not an array of integers in u64       FG_ERR_BAD_SHAPE
 *      __metadata__ not a string -> string map     FG_ERR_METADATA_NOT_STRING
 *   6. tensors sorted by (begin, end) and walked from offset 0:
 *      begin != running end, or end < begin        FG_ERR_INVALID_OFFSET
 *      shape product or product x bits overflows   FG_ERR_OVERFLOW (multiplied left to right)
 *      bits not a whole number of bytes (F4, F6)   FG_ERR_MISALIGNED_SLICE
 *      end - begin != dtype x shape bytes          FG_ERR_TENSOR_INVALID_INFO
 *   7. last end + 8 + N != input length            FG_ERR_INCOMPLETE_BUFFER
 * Leading and trailing JSON whitespace (space, tab, CR, LF) around the object is accepted;
 * NUL padding, a BOM, comments and trailing commas are not. Unknown fields inside a tensor
 * entry are ignored. The message names the source, the tensor, the byte offset and what
 * was expected versus found.
 *
 * Every upstream dtype is carried as raw bytes, F4 (2 elements a byte) and F6_* (4 elements
 * in 3 bytes) included. Shapes are row-major, outermost first.
 *
 * Thread safety: an opened fg_st_file or fg_st_dir is immutable; every function taking it
 * const (look-ups, metadata, slicing, the config getters and texts) may run on many threads
 * at once, and *_close only when they are done. The writers keep no shared state: calls
 * writing different outputs may run concurrently. */
#ifndef FORGIA_SAFETENSORS_H
#define FORGIA_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "forgia/api.h"
#include "forgia/dtype.h"
#include "forgia/mapping.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_ST_MAX_HEADER_SIZE 100000000ull

/* ---------------------------------------------------------------- reading one file */

typedef struct fg_st_tensor {
  const char *name;        /* owned by the file; NUL-terminated, may hold a NUL (\u0000) */
  size_t name_len;         /* bytes of name, without the terminator */
  fg_dtype dtype;          /* always one with a safetensors tag (fg_dtype_info(d)->st_tag) */
  int ndim;                /* 0 for a scalar */
  const uint64_t *shape;   /* owned by the file; row-major, ndim entries */
  uint64_t begin, end;     /* data_offsets, relative to the data section */
  uint64_t nbytes;         /* end - begin */
  const uint8_t *data;     /* borrowed from the file's mapping; NULL when nbytes is 0 */
} fg_st_tensor;

typedef struct fg_st_file fg_st_file;

/* Parses caller-owned bytes without copying them; they must outlive the file. `source`
 * names the input in messages (NULL: "<memory>"). */
FG_API fg_status fg_st_parse(const void *bytes, size_t len, const char *source, fg_st_file **out);
/* Opens a file: FG_MAP_MMAP maps it read-only (only the header pages are read until a
 * tensor's data is touched), FG_MAP_READ reads it into an owned buffer. */
FG_API fg_status fg_st_open(const char *path, fg_map_mode mode, fg_st_file **out);
/* Parses a mapping; on success the file holds its own reference (the caller keeps its). */
FG_API fg_status fg_st_open_mapping(fg_mapping *m, fg_st_file **out);
/* Reads exactly one safetensors frame (length, header, the data the header describes)
 * from a stream and leaves the stream just after it, so several frames can follow one
 * another. The file owns a copy of the frame. A short data section is
 * FG_ERR_INCOMPLETE_BUFFER; trailing bytes are the next frame's business. */
FG_API fg_status fg_st_read_frame(FILE *stream, const char *source, fg_st_file **out);
FG_API fg_status fg_st_read_frame_fd(int fd, const char *source, fg_st_file **out);
FG_API void fg_st_close(fg_st_file *f); /* NULL-safe */

/* Tensors in header (file) order. */
FG_API size_t fg_st_count(const fg_st_file *f);
FG_API const fg_st_tensor *fg_st_tensor_at(const fg_st_file *f, size_t i); /* NULL when out of range */
/* The same tensors sorted by data offset (the order they tile the buffer in). */
FG_API const fg_st_tensor *fg_st_tensor_by_offset(const fg_st_file *f, size_t i);
/* O(1) lookup; NULL when absent. fg_st_get says FG_ERR_NOT_FOUND with a message. */
FG_API const fg_st_tensor *fg_st_find(const fg_st_file *f, const char *name);
FG_API const fg_st_tensor *fg_st_find_n(const fg_st_file *f, const char *name, size_t len);
FG_API fg_status fg_st_get(const fg_st_file *f, const char *name, const fg_st_tensor **out);

/* __metadata__ in file order. has_metadata is false when the key is absent or null. */
FG_API bool fg_st_has_metadata(const fg_st_file *f);
FG_API size_t fg_st_metadata_count(const fg_st_file *f);
/* Key and value of entry i (owned by the file, NUL-terminated); false when out of range. */
FG_API bool fg_st_metadata_at(const fg_st_file *f, size_t i, const char **key, const char **value);
/* The same with the decoded lengths: keys and values are NUL-terminated but may hold NUL
 * bytes themselves (JSON's \u0000), so the lengths are what tells "a\0b" from "a". Any
 * output pointer may be NULL. */
FG_API bool fg_st_metadata_at_n(const fg_st_file *f, size_t i, const char **key, size_t *key_len,
                                const char **value, size_t *value_len);
/* The value under exactly this key (a key holding a NUL byte is reached only by index). */
FG_API const char *fg_st_metadata_find(const fg_st_file *f, const char *key); /* NULL when absent */

FG_API uint64_t fg_st_header_size(const fg_st_file *f);   /* N */
FG_API uint64_t fg_st_data_start(const fg_st_file *f);    /* 8 + N, from the start of the input */
FG_API uint64_t fg_st_data_size(const fg_st_file *f);     /* bytes of the data section */
FG_API const char *fg_st_source(const fg_st_file *f);     /* path or source name */
/* The mapping the tensors point into (borrowed). fg_mapping_retain it to keep tensor data
 * alive after fg_st_close. */
FG_API fg_mapping *fg_st_mapping(const fg_st_file *f);

/* ---------------------------------------------------------------- writing */

typedef struct fg_st_write_tensor {
  const char *name;        /* non-empty UTF-8, not "__metadata__", unique */
  fg_dtype dtype;          /* must have a safetensors tag */
  int ndim;
  const uint64_t *shape;   /* row-major */
  const void *data;        /* little-endian, row-major; may be NULL when nbytes is 0 */
  uint64_t nbytes;         /* must equal dtype x shape */
} fg_st_write_tensor;

typedef struct fg_st_kv {
  const char *key;         /* UTF-8, unique */
  const char *value;       /* UTF-8 */
} fg_st_kv;

/* The upstream writer's layout, byte for byte: tensors sorted by dtype (U64 first, BOOL
 * last, the upstream declaration order reversed) then by name bytewise; offsets
 * consecutive from 0; compact JSON with __metadata__ first, then each tensor as
 * {"dtype","shape","data_offsets"}; serde_json string escapes; header padded with spaces
 * to a multiple of 8. Metadata keeps the caller's order (upstream's is a hash order, so
 * files with two or more metadata entries match upstream only up to that order).
 * meta == NULL writes no __metadata__; meta != NULL with nmeta == 0 writes an empty one.
 * Everything is validated before anything is produced: a bad name is FG_ERR_INVALID_ARG,
 * a repeated name or key FG_ERR_DUPLICATE, a size mismatch FG_ERR_TENSOR_INVALID_INFO,
 * sub-byte counts FG_ERR_MISALIGNED_SLICE, a padded header over the limit
 * FG_ERR_HEADER_TOO_LARGE. */
FG_API fg_status fg_st_serialize(const fg_st_write_tensor *tensors, size_t n, const fg_st_kv *meta,
                          size_t nmeta, uint8_t **out, size_t *out_len); /* free(*out) */
/* Size of the output of fg_st_serialize without producing it. */
FG_API fg_status fg_st_serialized_size(const fg_st_write_tensor *tensors, size_t n, const fg_st_kv *meta,
                                size_t nmeta, uint64_t *out);
/* Writes one frame at the stream's position (frames may follow one another). */
FG_API fg_status fg_st_write_frame(FILE *stream, const fg_st_write_tensor *tensors, size_t n,
                            const fg_st_kv *meta, size_t nmeta);
/* Atomic save: writes a temporary file ".<name>.<hash>.fgtmp.<pid>.<n>" in the same
 * directory, fsyncs, renames over path (a regular file, keeping its mode, or a symbolic
 * link to one, replacing the file it names; anything else is FG_ERR_INVALID_ARG), fsyncs the
 * directory. A live mapping of the old file stays intact; on failure or cancellation
 * (forgia/cancel.h) the temporary file is removed and path is untouched. Temporary files
 * that killed writers left beside path are removed. */
FG_API fg_status fg_st_save(const char *path, const fg_st_write_tensor *tensors, size_t n,
                     const fg_st_kv *meta, size_t nmeta);

/* ---------------------------------------------------------------- slicing */

typedef struct fg_st_range {
  uint64_t start, stop;    /* [start, stop) along one axis; start <= stop <= dim */
} fg_st_range;

/* The row-major sub-block of t selected by ranges on its leading nranges axes (the other
 * axes are taken whole; nranges == 0 copies the tensor). More ranges than dims is
 * FG_ERR_INVALID_ARG, a range outside its dim FG_ERR_RANGE; for F4/F6 a run that does
 * not start and end on a byte boundary is FG_ERR_MISALIGNED_SLICE. */
FG_API fg_status fg_st_slice_shape(const fg_st_tensor *t, const fg_st_range *ranges, int nranges,
                            uint64_t *shape_out /* t->ndim entries */, uint64_t *nbytes_out);
FG_API fg_status fg_st_slice_copy(const fg_st_tensor *t, const fg_st_range *ranges, int nranges,
                           void *dst, uint64_t dst_size);

/* ---------------------------------------------------------------- sharded directories */

#define FG_ST_INDEX_NAME "model.safetensors.index.json"
#define FG_ST_SINGLE_NAME "model.safetensors"
#define FG_ST_DEFAULT_MAX_SHARD 5000000000ull /* huggingface_hub's "5GB" */

typedef struct fg_st_dir fg_st_dir;

/* Opens one view over a checkpoint. path may be
 *   - a directory holding model.safetensors.index.json (every shard it names is opened),
 *     or model.safetensors, or exactly one *.safetensors file;
 *   - an index file (*.safetensors.index.json);
 *   - a single .safetensors file.
 * The index must be a JSON object with an object "weight_map" of tensor -> shard file
 * name (plain names in the same directory: no '/', no ".."); every mapped tensor must be
 * in its shard and every shard tensor in the map (FG_ERR_INVALID_JSON / FG_ERR_NOT_FOUND
 * naming the tensor). A tensor name present in two shards is FG_ERR_DUPLICATE.
 * config.json beside it is parsed when present (a malformed one is FG_ERR_INVALID_JSON). */
FG_API fg_status fg_st_dir_open(const char *path, fg_map_mode mode, fg_st_dir **out);
FG_API void fg_st_dir_close(fg_st_dir *d); /* NULL-safe */

/* Tensors in shard order, then header order inside each shard. */
FG_API size_t fg_st_dir_count(const fg_st_dir *d);
FG_API const fg_st_tensor *fg_st_dir_tensor_at(const fg_st_dir *d, size_t i, size_t *shard);
FG_API const fg_st_tensor *fg_st_dir_find(const fg_st_dir *d, const char *name, size_t *shard);
FG_API size_t fg_st_dir_shard_count(const fg_st_dir *d);
FG_API const fg_st_file *fg_st_dir_shard(const fg_st_dir *d, size_t i);
FG_API const char *fg_st_dir_shard_name(const fg_st_dir *d, size_t i); /* file name, no directory */
FG_API bool fg_st_dir_is_sharded(const fg_st_dir *d);   /* opened through an index */
/* metadata.total_size from the index, or the sum of tensor bytes without one. */
FG_API uint64_t fg_st_dir_total_size(const fg_st_dir *d);
/* The text of the index file (NULL without one) and of config.json (NULL when absent), as
 * read at open; NUL-terminated, *len (may be NULL) gets the bytes without the terminator.
 * Borrowed until fg_st_dir_close. Parse them with any JSON reader. */
FG_API const char *fg_st_dir_index_text(const fg_st_dir *d, size_t *len);
FG_API const char *fg_st_dir_config_text(const fg_st_dir *d, size_t *len);
/* Top-level config.json values. FG_ERR_NOT_FOUND without config or key, FG_ERR_TYPE when
 * the value has another type (an integer getter refuses fractions). */
FG_API fg_status fg_st_dir_config_int(const fg_st_dir *d, const char *key, int64_t *out);
FG_API fg_status fg_st_dir_config_float(const fg_st_dir *d, const char *key, double *out);
FG_API fg_status fg_st_dir_config_string(const fg_st_dir *d, const char *key, const char **out);

/* Writes tensors into dir (created if missing) split greedily in the given order: a
 * tensor larger than max_shard_bytes gets a shard of its own, otherwise a shard is closed
 * when the next tensor would take it past the limit (tensor bytes only, no headers).
 * One shard is written as model.safetensors with no index; n shards as
 * model-00001-of-0000n.safetensors plus model.safetensors.index.json (2-space indent,
 * sorted keys, ASCII escapes, trailing newline: the transformers layout) written last.
 * meta goes into every shard. Each file is saved atomically. max_shard_bytes == 0 means
 * FG_ST_DEFAULT_MAX_SHARD. *nshards (may be NULL) receives the shard count. */
FG_API fg_status fg_st_save_sharded(const char *dir, const fg_st_write_tensor *tensors, size_t n,
                             const fg_st_kv *meta, size_t nmeta, uint64_t max_shard_bytes,
                             size_t *nshards);

#ifdef __cplusplus
}
#endif
#endif
