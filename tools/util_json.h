/* CLI helper: cJSON values that keep what doubles and C strings would lose. */
#ifndef FORGIA_TOOLS_UTIL_JSON_H
#define FORGIA_TOOLS_UTIL_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Integers beyond 2^53 are emitted as exact digits (raw), smaller ones as numbers. */
cJSON *fg_cli_json_u64(uint64_t v);
cJSON *fg_cli_json_i64(int64_t v);
/* A double as cJSON prints it, except negative zero, which keeps its sign as -0.0. */
cJSON *fg_cli_json_f64(double v);
/* A string of len bytes: NUL and control bytes escaped, invalid UTF-8 bytes replaced by
 * U+FFFD, so the output stays valid JSON whatever the file holds. */
cJSON *fg_cli_json_bytes(const char *s, size_t len);

/* A JSON object whose keys are arbitrary bytes, escaped like fg_cli_json_bytes (cJSON
 * copies key bytes as they are and stops at a NUL). It becomes one raw item laid out as
 * cJSON_Print lays out an object that is a member of the root (depth 1). */
typedef struct fg_cli_json_obj {
  char *buf;
  size_t len, cap, n;
  bool failed;
} fg_cli_json_obj;

/* Adds key -> value and deletes value (NULL marks the object failed). */
void fg_cli_json_obj_add(fg_cli_json_obj *o, const char *key, size_t key_len, cJSON *value);
/* The object as a raw item, or NULL when out of memory; releases the builder either way. */
cJSON *fg_cli_json_obj_finish(fg_cli_json_obj *o);

/* Prints root (NULL: the build ran out of memory) to stdout with a newline and deletes it;
 * 0, or 1 after reporting the failure as cmd's error about path. */
int fg_cli_json_print(const char *cmd, const char *path, cJSON *root);

#endif
