/* Cancelling long writes, without a signal handler in the library.
 *
 * forgia installs no handler for cancellation and never touches SIGINT, SIGTERM or their
 * dispositions. (The one handler the library installs is the SIGBUS/SIGSEGV guard of
 * forgia/mapping.h, put in the first time forgia reads mapped bytes under a guard; it turns
 * a fault reading a file truncated underneath into a status and passes every other fault on
 * to the handler it replaced.) A program that wants Ctrl-C or SIGTERM to stop a write cleanly
 * installs its own handler that only sets a flag (a volatile sig_atomic_t), and gives forgia
 * a hook that reads it:
 *
 *   static volatile sig_atomic_t stop;
 *   static void on_signal(int sig) { stop = sig; }
 *   static bool stop_requested(void *user) { (void)user; return stop != 0; }
 *   ...
 *   sigaction(SIGINT, ...on_signal...); sigaction(SIGTERM, ...);
 *   fg_cancel_set(stop_requested, NULL);
 *   fg_status s = fg_st_save(...);          // or fg_export_run, fg_gguf_writer_finish, ...
 *   if (stop) exit(stop == SIGINT ? 130 : 143);  // the temporary file is already gone
 *
 * Every file forgia writes goes through one writer (temporary file beside the destination,
 * then rename). On the calling thread it asks the hook before creating the temporary file,
 * before each slice of at most 64 MiB written, and before the rename. When the hook returns
 * true the write stops: the call fails with FG_ERR_STATE ("...: write cancelled"), the
 * temporary file is removed and the destination is left as it was. A multi-file write
 * (fg_st_save_sharded) keeps the files it had already renamed into place.
 *
 * The hook runs in normal context, never in a signal handler, so it may do anything; it is
 * called often and should be cheap. A process killed outright (SIGKILL, a crash) leaves its
 * temporary file; the next write to the same destination removes it (see the writer's
 * temporary names in fg_st_save / fg_gguf_writer_begin).
 *
 * Thread safety: the hook is per thread (like fg_last_error); set it on each thread that
 * writes. fg_export_run's progress callback can cancel too, independently. */
#ifndef FORGIA_CANCEL_H
#define FORGIA_CANCEL_H

#include <stdbool.h>

#include "forgia/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns true to cancel the write in progress. */
typedef bool (*fg_cancel_fn)(void *user);

/* Sets this thread's hook (NULL: writes are never cancelled, the default). */
FG_API void fg_cancel_set(fg_cancel_fn fn, void *user);
/* Asks this thread's hook; false without one. */
FG_API bool fg_cancel_requested(void);

#ifdef __cplusplus
}
#endif
#endif
