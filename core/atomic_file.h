/* The one way forgia writes a file: a temporary file in the destination's directory,
 * written, fsynced, renamed over the destination, and the directory fsynced, so that
 * after a crash the destination is either the old file or the whole new one, never a
 * prefix. Every writer (GGUF, safetensors, and the checkpoint files to come) uses it.
 * Internal.
 *
 * What the destination may be: absent (created with mode 0666 & ~umask), a regular file
 * (replaced; its permission bits are kept), or a symbolic link to a regular file (the
 * file it points to is replaced; the link stays). Anything else (a device node such as
 * /dev/null, a FIFO, a socket, a directory, a dangling link) is refused with
 * FG_ERR_INVALID_ARG before anything is created: renaming over it would silently turn it
 * into a regular file. */
#ifndef FORGIA_CORE_ATOMIC_FILE_H
#define FORGIA_CORE_ATOMIC_FILE_H

#include <stdint.h>

#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_atomic_file {
  int fd;            /* the temporary file; -1 when no write is in progress */
  char *path;        /* the file that will be replaced (symbolic links resolved) */
  char *tmp;         /* the temporary file beside it */
  unsigned mode;     /* permission bits to give the new file, or ~0u for the creation default */
} fg_atomic_file;

/* An idle handle (fd -1); fg_atomic_file_abort on it is a no-op. */
#define FG_ATOMIC_FILE_INIT {-1, NULL, NULL, ~0u}

/* Checks the destination and creates the temporary file. On failure nothing is left. */
fg_status fg_atomic_file_begin(fg_atomic_file *f, const char *path);
/* Appends n bytes (any size; interrupted and partial writes are resumed). On failure the
 * write is aborted: the temporary file is removed. */
fg_status fg_atomic_file_write(fg_atomic_file *f, const void *data, uint64_t n);
fg_status fg_atomic_file_write_zeros(fg_atomic_file *f, uint64_t n);
/* fsync, close, rename over the destination, fsync the directory. On failure before the
 * rename the destination is untouched and the temporary file removed. */
fg_status fg_atomic_file_commit(fg_atomic_file *f);
/* Removes the temporary file of a write in progress and frees the names. NULL-safe. */
void fg_atomic_file_abort(fg_atomic_file *f);
/* True while a write is in progress. */
static inline int fg_atomic_file_open(const fg_atomic_file *f) { return f->fd >= 0; }

#ifdef __cplusplus
}
#endif
#endif
