/* Read-only views of files: memory-mapped (MAP_PRIVATE) or read into memory.
 *
 * A mapping is reference counted so that parsed files can hand out borrowed pointers
 * that outlive the parser (fg_mapping_retain before closing the parser, release later).
 *
 * Thread safety: a mapping never changes once opened (its file may: see the guarded reads
 * below); its getters, the prefetch/evict hints and the guarded reads may be called from
 * many threads. The reference count is atomic, so references may
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

/* ---- reading bytes of a file that may change underneath -------------------------------
 *
 * Another process may truncate or rewrite a file while it is mapped. A plain read of a page
 * the file no longer backs raises SIGBUS, which kills the process. The two functions below
 * read under a guard instead: such a fault ends the read with FG_ERR_TRUNCATED (the file is
 * now shorter) or FG_ERR_IO (a read error, or a file that shrank and grew back), and a
 * message that names the file, its size then and now, and the offset that could not be read.
 *
 * The guard is a SIGBUS and SIGSEGV handler (SA_SIGINFO | SA_ONSTACK) that forgia installs,
 * once per process, the first time a guarded read runs on bytes the mapping does not own
 * (an mmapped file, wrapped memory, or m == NULL), whether called by the program or inside
 * a forgia call that reads a file (parsing, loading, exporting), and leaves in place for the
 * life of the process. It is the only signal handler forgia installs (cancelling a write
 * needs none: forgia/cancel.h). It acts only on a fault of a thread inside a guarded read:
 * SIGBUS there, or SIGSEGV at an address inside the mapping being read. Any other fault
 * goes on to the handler installed before forgia's (the default action, the program's own
 * handler, a sanitizer's), called as it asked to be (SA_SIGINFO, its sa_mask, SA_RESETHAND).
 * A program that installs its own SIGBUS/SIGSEGV handler after forgia's keeps guarded reads
 * working only if its handler passes the faults it does not handle to the one it replaced
 * (the handler sigaction returned as the old action). Where the handler cannot go in (a
 * sanitizer that keeps these signals to itself, such as ASan with allow_user_segv_handler=0;
 * ASan's default lets it in and gets every other fault), fg_mapping_copy still returns a
 * status (the kernel copies: process_vm_readv), but fg_mapping_access runs fn unguarded.
 *
 * A guarded read costs a system call or two (the signal mask is saved): guard chunks, not
 * bytes. Bytes owned by the mapping (FG_MAP_READ, fg_mapping_adopt) cannot fault and are
 * read without a guard. */

/* Copies [off, off+len) of m into dst; FG_ERR_RANGE when the range is not inside m. On a
 * fault dst holds an unspecified part of the range. */
FG_API fg_status fg_mapping_copy(const fg_mapping *m, void *dst, uint64_t off, uint64_t len);

/* Runs fn(user), which reads m's bytes in place (a parser, a decoder), under the guard, and
 * returns fn's status, or the guard's when a fault ends fn. The end is a siglongjmp out of
 * the faulting read, so while reading m, fn must not hold a lock, keep memory that only its
 * own later code would free, leave shared state half-updated, run other threads (OpenMP
 * included: a jump cannot leave a parallel region; guard each thread's own work instead) or
 * run C++ code that needs its destructors. Guards nest; the innermost one gets the fault.
 * m may be NULL (bytes of a file mapped elsewhere): then SIGBUS alone is caught. */
typedef fg_status (*fg_mapping_fn)(void *user);
FG_API fg_status fg_mapping_access(const fg_mapping *m, fg_mapping_fn fn, void *user);

/* FG_OK while the file m was mapped from still has the size and modification time it had
 * when it was opened; FG_ERR_TRUNCATED when it is shorter, FG_ERR_IO when it was modified,
 * naming the file and both sizes. A file replaced (renamed over) or removed since is FG_OK:
 * the mapping holds the old file, whose bytes did not change. Also FG_OK for memory and
 * FG_MAP_READ mappings, whose bytes are a copy. Reads of mapped bytes that must be
 * consistent (an export, a checksum) call this once they are done. */
FG_API fg_status fg_mapping_check(const fg_mapping *m);

#ifdef __cplusplus
}
#endif
#endif
