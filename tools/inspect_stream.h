/* forgia inspect: a JSON object whose last member is a long array, printed one element at a
 * time, so that a file of a million tensors never has its whole report in memory. */
#ifndef FORGIA_TOOLS_INSPECT_STREAM_H
#define FORGIA_TOOLS_INSPECT_STREAM_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Element i of the array (a new item the printer deletes), or NULL when out of memory. */
typedef cJSON *(*fg_cli_json_item_fn)(void *ctx, size_t i);

/* Prints root with one more member, key (plain ASCII) -> [item(ctx, 0), ..., item(ctx,
 * n-1)], to stdout with a newline, byte for byte as fg_cli_json_print would print root had
 * the array been added to it last; deletes root. Returns 0, or 1 after reporting a failure
 * as cmd's error about path (the output is then cut short). NULL root: out of memory. */
int fg_cli_json_print_streamed(const char *cmd, const char *path, cJSON *root, const char *key, size_t n,
                               fg_cli_json_item_fn item, void *ctx);

#endif
