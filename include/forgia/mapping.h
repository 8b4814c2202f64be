/* Read-only views of files: memory-mapped (MAP_PRIVATE) or read into memory.
 *
 * A mapping is reference counted so that parsed files can hand out borrowed pointers
 * that outlive the parser (fg_mapping_retain before closing the parser, release later).
 *
 * Thread safety: a mapping never changes once opened; its getters and the prefetch/evict
 * hints may be called from many threads. The reference count is atomic, so references may
 * be taken and dropped on any thread; a thread must not touch the data after its own
 * release. */
#ifndef FORGIA_MAPPING_H
#define FORGIA_MAPPING_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_map_mode {
  FG_MAP_MMAP = 0,   /* mmap the whole file read-only (pages read on demand) */
  FG_MAP_READ = 1,   /* read the whole file into an owned buffer */
} fg_map_mode;

typedef struct fg_mapping fg_mapping;

/* Opens path. An empty file gives a mapping of size 0 with data == NULL. Anything but a
 * regular file (a directory, a FIFO) is FG_ERR_IO without being opened, so this never blocks. */
FG_API fg_status fg_mapping_open(const char *path, fg_map_mode mode, fg_mapping **out);
/* Wraps caller-owned bytes without copying; the caller keeps them alive. */
FG_API fg_status fg_mapping_wrap(const void *data, size_t size, fg_mapping **out);

/* Takes ownership of a malloc'd buffer (freed when the last reference goes); on failure
 * the buffer is still the caller's. name is copied ("<memory>" when NULL). */
FG_API fg_status fg_mapping_adopt(void *data, size_t size, const char *name, fg_mapping **out);

FG_API const uint8_t *fg_mapping_data(const fg_mapping *m);   /* borrowed; NULL when size is 0 */
FG_API size_t fg_mapping_size(const fg_mapping *m);
FG_API const char *fg_mapping_path(const fg_mapping *m);      /* "<memory>" for wrapped bytes */

/* Reference counting: open/wrap return a count of 1; release at 0 unmaps. NULL-safe. */
FG_API fg_mapping *fg_mapping_retain(fg_mapping *m);
FG_API void fg_mapping_release(fg_mapping *m);

/* Paging hints for [off, off+len) clamped to the mapping; no-ops for read/wrapped
 * mappings. Errors are ignored: hints never fail a load. */
FG_API void fg_mapping_prefetch(const fg_mapping *m, uint64_t off, uint64_t len);  /* MADV_WILLNEED */
FG_API void fg_mapping_evict(const fg_mapping *m, uint64_t off, uint64_t len); /* MADV_DONTNEED */

#ifdef __cplusplus
}
#endif
#endif
