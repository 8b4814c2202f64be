/* CLI helper: the one line a failing command prints, `forgia CMD: FILE: PROBLEM`, with one
 * prefix, control bytes escaped (util_text.h), and the stdout check every command ends with. */
#ifndef FORGIA_TOOLS_UTIL_REPORT_H
#define FORGIA_TOOLS_UTIL_REPORT_H

#include "forgia/status.h"

/* Reports fg_last_error() for cmd. A leading "CMD: " in the message (the library's own
 * name for the operation) is dropped; path is put in front unless the message already
 * names it (as a whole word: "a.gguf: ...", "... (a.gguf: ...)"). path may be NULL. */
void fg_cli_report(const char *cmd, const char *path);

/* Reports a problem the CLI found itself: "forgia CMD: WHAT: PROBLEM" (WHAT may be NULL). */
void fg_cli_fail(const char *cmd, const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Flushes and closes stdout; a write that failed at any time is reported (once, and only
 * when rc is 0: a failed command has said its line) and turns rc into 1. */
int fg_cli_close_stdout(const char *cmd, int rc);

#endif
