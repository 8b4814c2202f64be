/* CLI helper: one-line failure reports (checkpoints are opened with fg_ckpt_open). */
#ifndef FORGIA_TOOLS_UTIL_CKPT_H
#define FORGIA_TOOLS_UTIL_CKPT_H

#include "forgia/status.h"

/* Prints "forgia CMD: MESSAGE" on one line, naming path when the message does not. */
void fg_cli_report(const char *cmd, const char *path);

#endif
