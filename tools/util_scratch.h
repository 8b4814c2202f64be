/* CLI helper: undoing what a command wrote into a folder when it is interrupted. Before
 * writing, the folder is created when missing and its files are remembered (name and inode);
 * undo removes the files it holds now that are new or were replaced (an atomic write gives
 * a new inode), among those the command claims as its own, and removes the folder when the
 * command created it and it is empty again. Files that were there before stay. */
#ifndef FORGIA_TOOLS_UTIL_SCRATCH_H
#define FORGIA_TOOLS_UTIL_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/status.h"

typedef struct fg_cli_scratch_entry fg_cli_scratch_entry;

typedef struct fg_cli_scratch {
  char *dir;
  bool made;                      /* this command created dir */
  fg_cli_scratch_entry *before;   /* files present at begin */
  size_t n;
} fg_cli_scratch;

/* Names a file the command writes (its own outputs, not the user's files). */
typedef bool (*fg_cli_scratch_mine_fn)(const char *name);

/* Creates dir (mode 0755) when missing and remembers its files. FG_ERR_IO naming dir when it
 * cannot be created or read, or is not a directory. */
fg_status fg_cli_scratch_begin(fg_cli_scratch *s, const char *dir);
/* Removes what was written since begin (see above). */
void fg_cli_scratch_undo(const fg_cli_scratch *s, fg_cli_scratch_mine_fn mine);
void fg_cli_scratch_free(fg_cli_scratch *s); /* zeroed or begun; safe to call twice */

#endif
