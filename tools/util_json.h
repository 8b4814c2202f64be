/* CLI helper: cJSON values that keep what doubles and C strings would lose. */
#ifndef FORGIA_TOOLS_UTIL_JSON_H
#define FORGIA_TOOLS_UTIL_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* Integers beyond 2^53 are emitted as exact digits (raw), smaller ones as numbers. */
cJSON *fg_cli_json_u64(uint64_t v);
cJSON *fg_cli_json_i64(int64_t v);
/* A string of len bytes: NUL and control bytes escaped, invalid UTF-8 bytes replaced by
 * U+FFFD, so the output stays valid JSON whatever the file holds. */
cJSON *fg_cli_json_bytes(const char *s, size_t len);

#endif
