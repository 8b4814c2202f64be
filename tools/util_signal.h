/* CLI helper: SIGINT and SIGTERM as a request to stop. The handler only records the signal.
 * Long operations see it through their progress callbacks (which return false) and through
 * the write hook of forgia/cancel.h: the library cancels, removes its temporary files and
 * frees everything. Commands check it between steps, remove what they created themselves,
 * and exit 128 + the signal number. */
#ifndef FORGIA_TOOLS_UTIL_SIGNAL_H
#define FORGIA_TOOLS_UTIL_SIGNAL_H

/* Installs the handlers (sigaction, SA_RESTART so that no read or write fails with EINTR). */
void fg_cli_signals_catch(void);
/* The signal received (SIGINT or SIGTERM), or 0. */
int fg_cli_signal_caught(void);
/* From now on only a further signal cancels the library's writes: for the final checkpoint
 * a training command saves after it stopped at a consistent step. */
void fg_cli_signals_grace(void);
/* "SIGINT" or "SIGTERM": the signal caught (SIGINT when none). */
const char *fg_cli_signal_name(void);
/* Reports "forgia CMD: WHAT: interrupted by SIGxxx" and returns the exit status 128 + signo. */
int fg_cli_interrupted(const char *cmd, const char *what);

#endif
