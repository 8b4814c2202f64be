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
 * into a regular file.
 *
 * Temporary names. ".<first bytes of the name>.<hash of the name>.fgtmp.<pid>.<n>" in the
 * destination's directory: at most about 90 bytes whatever the destination's name, so any
 * legal name (up to NAME_MAX) can be written; hidden; and the part before the pid is the
 * same for every write of one destination. That is how leftovers are found: begin removes
 * the temporary files of earlier writes to the same destination whose process is gone
 * (kill(pid, 0) fails with ESRCH) and whose lock is free. A writer holds flock(LOCK_EX) on
 * its temporary file while it writes, so a live writer whose pid is not visible here (another
 * pid namespace on the same file system) keeps its file; this process's own temporary files
 * (another thread's write) are never touched. A recycled pid only delays the cleanup.
 *
 * Cancellation: the thread's hook (forgia/cancel.h) is asked at begin, before every slice
 * of at most FG_ATOMIC_FILE_SLICE bytes written, and before the rename; a yes aborts the
 * write with FG_ERR_STATE. No signal handlers: a process killed mid-write leaves its
 * temporary file to the cleanup above. */
#ifndef FORGIA_CORE_ATOMIC_FILE_H
#define FORGIA_CORE_ATOMIC_FILE_H

#include <stdint.h>

#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes written between two looks at the cancel hook (and the cap of one write()). */
#define FG_ATOMIC_FILE_SLICE (64u << 20)

typedef struct fg_atomic_file {
  int fd;            /* the temporary file; -1 when no write is in progress */
  char *path;        /* the file that will be replaced (symbolic links resolved) */
  char *tmp;         /* the temporary file beside it */
  unsigned mode;     /* permission bits to give the new file, or ~0u for the creation default */
  uint64_t written;  /* bytes appended so far */
  uint64_t flushed;  /* bytes whose writeback has been started */
} fg_atomic_file;

/* An idle handle (fd -1); fg_atomic_file_abort on it is a no-op. */
#define FG_ATOMIC_FILE_INIT {-1, NULL, NULL, ~0u, 0, 0}

/* Writeback of the bytes written is started every this many bytes (sync_file_range), so
 * that the disk works while the caller computes the rest and commit's fsync waits for the
 * last few MiB rather than the whole file. */
#define FG_ATOMIC_FILE_FLUSH (16u << 20)

/* Everything begin would check, without creating anything: the destination is of a kind
 * that may be replaced (above), names a file (not "dir/"), and its directory exists, is a
 * directory, and lets this process create files. On success, when canonical is not NULL,
 * *canonical (malloc'd) is the absolute path of the file that would be replaced, with every
 * symbolic link resolved (for a new file: the resolved directory joined with the name). */
fg_status fg_atomic_file_check(const char *path, char **canonical);

/* Checks the destination, removes stale temporary files of it (above) and creates the
 * temporary file. On failure nothing is left. */
fg_status fg_atomic_file_begin(fg_atomic_file *f, const char *path);
/* Appends n bytes (any size; interrupted and partial writes are resumed). On failure or
 * cancellation the write is aborted: the temporary file is removed. */
fg_status fg_atomic_file_write(fg_atomic_file *f, const void *data, uint64_t n);
fg_status fg_atomic_file_write_zeros(fg_atomic_file *f, uint64_t n);
/* fsync, close, rename over the destination, fsync the directory. On failure (or
 * cancellation) before the rename the destination is untouched and the temporary file
 * removed. */
fg_status fg_atomic_file_commit(fg_atomic_file *f);
/* Removes the temporary file of a write in progress and frees the names. NULL-safe. */
void fg_atomic_file_abort(fg_atomic_file *f);
/* True while a write is in progress. */
static inline int fg_atomic_file_open(const fg_atomic_file *f) { return f->fd >= 0; }

#ifdef __cplusplus
}
#endif
#endif
