/* Checkpoints: open a model checkpoint of any supported container by its path and see one
 * list of tensors, whatever the format. Export, the loader and the CLI all open through here.
 *
 *   fg_ckpt *c;
 *   if (fg_ckpt_open("model-00001-of-00004.gguf", &c)) { fprintf(stderr, "%s\n", fg_last_error()); ... }
 *   const fg_ckpt_tensor *t = fg_ckpt_find(c, "blk.0.attn_q.weight");
 *   if (t) use(t->data, t->nbytes);     // borrowed from the file mapping
 *   fg_ckpt_close(c);
 *
 * What the path may be. The format is decided here, once:
 *   - a directory: a Hugging Face folder (model.safetensors.index.json, model.safetensors or
 *     exactly one *.safetensors file; see fg_st_dir_open);
 *   - a regular file starting with "GGUF": GGUF. Part 1 of a split,
 *     NAME-00001-of-0000N.gguf, opens every part as one view, checked to be one set
 *     (see fg_gguf_open_auto);
 *   - a regular file named *.index.json: a safetensors index, every shard it names;
 *   - any other regular file: one safetensors file.
 * A part of a model is never opened as if it were the model. Refused with
 * FG_ERR_INVALID_ARG and a message naming what to open instead:
 *   - a GGUF part other than part 1 ("m-00002-of-00003.gguf: part 2 of a 3-part split; open
 *     m-00001-of-00003.gguf ..."), also when renamed: the split.no / split.count keys
 *     inside decide, and a renamed part 1 is refused too (its siblings cannot be found);
 *   - a safetensors shard given alone while an index beside it (any
 *     *.safetensors.index.json in its folder) lists it in its weight_map, or, when that
 *     index cannot be read, a file named PREFIX-0000k-of-0000N.safetensors (N > 1) beside
 *     model.safetensors.index.json or PREFIX.safetensors.index.json: the message names the
 *     index and the folder, either of which opens every shard. A shard with no index beside
 *     it cannot be told from a model and opens as one file.
 * Parsing one part or shard on its own stays possible with fg_gguf_open / fg_st_open.
 * Statuses: a missing path is FG_ERR_NOT_FOUND. A path that is neither a regular file nor a
 * directory (a FIFO, socket or device) is FG_ERR_IO naming it, and so is a split part or a
 * shard that is not a regular file: each is checked with stat(2) before it is opened, so
 * opening never blocks on a FIFO (a config.json that is not a regular file counts as
 * absent). A file that is neither GGUF nor safetensors is FG_ERR_BAD_MAGIC naming the path,
 * its first bytes and the safetensors parser's complaint; a file named *.safetensors or
 * *.json claims to be safetensors and gets that parser's own status instead. Every other
 * failure is the parser's, unchanged (gguf.h, safetensors.h).
 *
 * Files are memory-mapped read-only (MAP_PRIVATE); opening reads header pages only.
 *
 * Lifetime: everything a checkpoint hands out (tensor records, names, shapes, paths, the
 * parsed GGUF file or safetensors folder) is borrowed and valid until fg_ckpt_close. Tensor
 * data may outlive it: hold fg_ckpt_retain_mapping of its file.
 *
 * Tensor data is the file's mapping: a file truncated by another program makes a plain read
 * of it raise SIGBUS. Where that can happen, read with fg_mapping_copy(fg_ckpt_file_at(c,
 * t->file)->map, dst, t->offset + off, n), which returns FG_ERR_TRUNCATED instead
 * (forgia/mapping.h); export, the loader and `forgia cat` do.
 *
 * Threads: an opened checkpoint is immutable. Every function here but fg_ckpt_close may be
 * called on the same checkpoint from many threads at once. */
#ifndef FORGIA_CKPT_H
#define FORGIA_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/dtype.h"
#include "forgia/gguf.h"
#include "forgia/mapping.h"
#include "forgia/safetensors.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_ckpt_format {
  FG_CKPT_GGUF = 1,         /* a GGUF file or a split GGUF model */
  FG_CKPT_SAFETENSORS = 2,  /* a .safetensors file, an index, or a Hugging Face folder */
} fg_ckpt_format;

/* "gguf" / "safetensors"; "invalid" for other values. */
FG_API const char *fg_ckpt_format_name(fg_ckpt_format f);

/* One tensor. Every pointer is borrowed from the checkpoint. */
typedef struct fg_ckpt_tensor {
  const char *name;         /* NUL-terminated; a safetensors name may hold a NUL (\u0000) */
  size_t name_len;          /* bytes of name, without the terminator */
  fg_dtype dtype;           /* as stored */
  int ndim;                 /* as stored: GGUF 1..4; safetensors 0 (a scalar) or more */
  const uint64_t *shape;    /* row-major, outermost first, ndim entries (NULL when ndim is 0) */
  uint64_t ne[4];           /* GGUF order, innermost first: ne[i] = shape[ndim-1-i], 1 past
                               ndim (a scalar is {1,1,1,1}); all 0 when ndim > 4 */
  uint64_t numel;           /* product of shape (1 for a scalar, 0 when a dimension is 0) */
  uint64_t nbytes;          /* exact byte size of the stored data */
  const uint8_t *data;      /* nbytes at offset in its file's mapping; NULL when nbytes is 0 */
  size_t file;              /* index in the file list: split part or shard, 0-based */
  uint64_t offset;          /* absolute byte offset of the data in that file */
} fg_ckpt_tensor;

/* One file of the checkpoint: the GGUF file or a split part (in part order), or a
 * safetensors shard (in the index's order). */
typedef struct fg_ckpt_file {
  const char *path;         /* as opened (directory joined with the shard name) */
  const fg_mapping *map;    /* the whole file; see fg_ckpt_retain_mapping */
  const uint8_t *data;      /* fg_mapping_data(map); NULL for an empty file */
  uint64_t size;            /* bytes */
} fg_ckpt_file;

typedef struct fg_ckpt fg_ckpt;

/* Opens path (see the top of this file). On failure *out is NULL and nothing stays open. */
FG_API fg_status fg_ckpt_open(const char *path, fg_ckpt **out);
/* NULL-safe. Invalidates everything borrowed from c except retained mappings. */
FG_API void fg_ckpt_close(fg_ckpt *c);

FG_API fg_ckpt_format fg_ckpt_format_of(const fg_ckpt *c);
FG_API const char *fg_ckpt_path(const fg_ckpt *c);   /* the path given to fg_ckpt_open */

/* ---- tensors --------------------------------------------------------------------------- */

/* Tensors in file order: file by file, then GGUF directory order or safetensors header
 * order. They are one array: fg_ckpt_tensor_at(c, i) == fg_ckpt_tensor_at(c, 0) + i. */
FG_API size_t fg_ckpt_count(const fg_ckpt *c);
FG_API const fg_ckpt_tensor *fg_ckpt_tensor_at(const fg_ckpt *c, size_t i); /* NULL past the end */
/* Lookup by exact name (O(log n)); NULL when absent. _n takes a length (names with NULs). */
FG_API const fg_ckpt_tensor *fg_ckpt_find(const fg_ckpt *c, const char *name);
FG_API const fg_ckpt_tensor *fg_ckpt_find_n(const fg_ckpt *c, const char *name, size_t len);
/* The same lookup as a status: FG_ERR_NOT_FOUND with a message naming the path and tensor. */
FG_API fg_status fg_ckpt_get(const fg_ckpt *c, const char *name, const fg_ckpt_tensor **out);

/* ---- files ----------------------------------------------------------------------------- */

FG_API size_t fg_ckpt_file_count(const fg_ckpt *c);
FG_API const fg_ckpt_file *fg_ckpt_file_at(const fg_ckpt *c, size_t i); /* NULL past the end */
/* A new reference to file i's mapping: data borrowed from that file stays valid after
 * fg_ckpt_close until fg_mapping_release. NULL past the end. */
FG_API fg_mapping *fg_ckpt_retain_mapping(const fg_ckpt *c, size_t i);

/* ---- format-specific metadata ---------------------------------------------------------- */

/* The parsed GGUF file (merged view of a split) for KVs, version and alignment; NULL when
 * the checkpoint is not GGUF. Borrowed. */
FG_API const fg_gguf_file *fg_ckpt_gguf(const fg_ckpt *c);
/* The safetensors view (shards, __metadata__, index, config.json); NULL when the
 * checkpoint is not safetensors. Borrowed. */
FG_API const fg_st_dir *fg_ckpt_safetensors(const fg_ckpt *c);

#ifdef __cplusplus
}
#endif
#endif
