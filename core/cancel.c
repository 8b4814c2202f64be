/* The per-thread cancel hook (forgia/cancel.h). Per thread so that cancelling one write
 * never stops another thread's, and so that no lock is needed. */
#include "forgia/cancel.h"

#include <stddef.h>

static _Thread_local fg_cancel_fn fg_cancel_hook;
static _Thread_local void *fg_cancel_user;

void fg_cancel_set(fg_cancel_fn fn, void *user) {
  fg_cancel_hook = fn;
  fg_cancel_user = fn ? user : NULL;
}

bool fg_cancel_requested(void) { return fg_cancel_hook && fg_cancel_hook(fg_cancel_user); }
