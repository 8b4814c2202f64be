/* CLI helper: a whole file in memory (configurations, optimizer frames, logs). */
#ifndef FORGIA_TOOLS_UTIL_FILE_H
#define FORGIA_TOOLS_UTIL_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/status.h"

/* The bytes of the file at path into *out (malloc'd; free()), *len its length, followed by
 * one NUL that *len does not count, so text can be used as a C string. A file over max bytes
 * is refused before it is read whole (max 0: no limit); errors name the path. */
fg_status fg_cli_read_file(const char *path, size_t max, uint8_t **out, size_t *len);
/* The same, where path "-" is standard input (read to its end; errors name "standard input"). */
fg_status fg_cli_read_input(const char *path, size_t max, uint8_t **out, size_t *len);

#endif
