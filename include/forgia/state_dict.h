/* State dicts: named tensors in host memory, saved as one safetensors frame and loaded
 * back by name (Fucina's src/state_dict.zig, the wire format of model.safetensors and
 * adapters.safetensors in a training checkpoint directory, forgia/ckpt_dir.h).
 *
 *   uint64_t shape[2] = {2, 3};
 *   fg_state_dict_entry e[] = {{"layers.0.weight", FG_F32, 2, shape, w, sizeof w}};
 *   fg_state_dict_save("model.safetensors", e, 1);
 *   fg_state_dict_dest d[] = {{"layers.0.weight", FG_F32, 2, shape, w, sizeof w}};
 *   fg_state_dict_load_file("model.safetensors", d, 1, NULL, NULL);   // strict
 *
 * Saving: exactly one safetensors frame without __metadata__, in the safetensors writer's
 * layout (forgia/safetensors.h), which is Fucina's byte for byte. Entries: names non-empty,
 * UTF-8, unique, not "__metadata__" (NUL-free by being C strings); dtypes F32, F16, BF16 or
 * I64 only; nbytes == dtype x shape. Everything is checked before anything is produced.
 *
 * Loading matches stream tensors to destinations by name, in any order; an alias
 * {old, new} makes a stream tensor named old load into the destination named new (the
 * first alias whose old matches wins). Shape and dtype must equal the destination's.
 * Strict (the default): every stream tensor has a destination and every destination is
 * loaded. Not strict: stream tensors without a destination are skipped and destinations
 * absent from the stream keep their bytes (`loaded` says which were written).
 * Transactional: everything is validated first, then copied, so a failed load changes no
 * destination byte. A __metadata__ in the stream is ignored, as Fucina does.
 * Statuses: FG_ERR_INVALID_ARG (a bad entry name, an unsupported dtype, nbytes not
 * dtype x shape, or an alias whose new names no destination), FG_ERR_DUPLICATE (two entries or
 * destinations of one name, or two stream tensors reaching one destination),
 * FG_ERR_NOT_FOUND (strict: a stream tensor without a destination, a destination missing
 * from the stream), FG_ERR_BAD_DTYPE and FG_ERR_BAD_SHAPE (a stream tensor unlike its
 * destination); the safetensors parser's own statuses for a damaged stream. Messages name
 * the tensor and what was expected versus found.
 *
 * Thread safety: no shared state; loads into disjoint destinations may run at once. */
#ifndef FORGIA_STATE_DICT_H
#define FORGIA_STATE_DICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "forgia/api.h"
#include "forgia/dtype.h"
#include "forgia/safetensors.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor to save. Everything is borrowed for the call. */
typedef struct fg_state_dict_entry {
  const char *name;
  fg_dtype dtype;            /* FG_F32, FG_F16, FG_BF16 or FG_I64 */
  int ndim;                  /* 0 for a scalar */
  const uint64_t *shape;     /* row-major, ndim entries */
  const void *data;          /* little-endian, row-major; may be NULL when nbytes is 0 */
  uint64_t nbytes;           /* must equal dtype x shape */
} fg_state_dict_entry;

/* A buffer to load into: the same fields, writable. */
typedef struct fg_state_dict_dest {
  const char *name;
  fg_dtype dtype;
  int ndim;
  const uint64_t *shape;
  void *data;
  uint64_t nbytes;
} fg_state_dict_dest;

typedef struct fg_state_dict_alias {
  const char *old_name;      /* a name in the stream */
  const char *new_name;      /* the destination it loads into */
} fg_state_dict_alias;

typedef struct fg_state_dict_load_opts {
  bool non_strict;           /* false (zero-initialised): strict */
  const fg_state_dict_alias *aliases;
  size_t naliases;
} fg_state_dict_load_opts;

/* Checks entries as the writers do, producing nothing. */
FG_API fg_status fg_state_dict_check(const fg_state_dict_entry *entries, size_t n);
/* The frame in memory (free(*out)). */
FG_API fg_status fg_state_dict_serialize(const fg_state_dict_entry *entries, size_t n, uint8_t **out,
                                         size_t *out_len);
/* The frame at a stream's position (frames may follow one another). */
FG_API fg_status fg_state_dict_write_frame(FILE *stream, const fg_state_dict_entry *entries, size_t n);
/* The frame as a whole file, written atomically (fg_st_save). */
FG_API fg_status fg_state_dict_save(const char *path, const fg_state_dict_entry *entries, size_t n);

/* Loads from a parsed frame (fg_st_parse, fg_st_open, fg_st_read_frame, fg_ckpt's
 * fg_ckpt_st... files). opts NULL: strict, no aliases. loaded (NULL or n entries) is set
 * on success to whether each destination was written. */
FG_API fg_status fg_state_dict_load(const fg_st_file *src, const fg_state_dict_dest *dests, size_t n,
                                    const fg_state_dict_load_opts *opts, bool *loaded);
/* The same from bytes in memory or a file (read into memory: a file truncated meanwhile
 * is an error, not a SIGBUS). */
FG_API fg_status fg_state_dict_load_bytes(const void *bytes, size_t len, const char *source,
                                          const fg_state_dict_dest *dests, size_t n,
                                          const fg_state_dict_load_opts *opts, bool *loaded);
FG_API fg_status fg_state_dict_load_file(const char *path, const fg_state_dict_dest *dests, size_t n,
                                         const fg_state_dict_load_opts *opts, bool *loaded);

#ifdef __cplusplus
}
#endif
#endif
