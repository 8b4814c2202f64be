/* The source and output checks every `forgia export` mode makes first (transcode, --adapters
 * merge, --ptqtp): the checkpoint opened and of the format the flag named, and the output path
 * usable. */
#ifndef FORGIA_TOOLS_UTIL_EXPORT_OPEN_H
#define FORGIA_TOOLS_UTIL_EXPORT_OPEN_H

#include "forgia/ckpt.h"

/* Opens in as want (other: the flag to use instead, named in the message; NULL names none)
 * and checks out (NULL: a dry run). Returns the exit code: 0 with *src open, 1 for a failure,
 * 2 for a bad --out (a device, FIFO, directory or one of the inputs); reported on stderr. */
int fg_cli_export_open(const char *in, fg_ckpt_format want, const char *other, const char *out, fg_ckpt **src);

#endif
