#include "inspect_stream.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util_report.h"

/* An element as cJSON_Print lays it out two levels deep (the root's member, then its array):
 * every line after the first indented by two more tabs. */
static int put_item(cJSON *it) {
  char *text = it ? cJSON_Print(it) : NULL;
  cJSON_Delete(it);
  if (!text) return 1;
  for (const char *p = text; *p; p++) {
    const char *nl = strchr(p, '\n');
    if (!nl) {
      fputs(p, stdout);
      break;
    }
    fwrite(p, 1, (size_t)(nl - p + 1), stdout);
    fputs("\t\t", stdout);
    p = nl;
  }
  cJSON_free(text);
  return 0;
}

int fg_cli_json_print_streamed(const char *cmd, const char *path, cJSON *root, const char *key, size_t n,
                               fg_cli_json_item_fn item, void *ctx) {
  char *text = root ? cJSON_Print(root) : NULL;
  const bool empty = root && !root->child;
  cJSON_Delete(root);
  if (!text) {
    fg_cli_fail(cmd, path, "out of memory building JSON");
    return 1;
  }
  /* cJSON ends an object with "\n}"; the array goes in as its last member */
  size_t len = strlen(text);
  fwrite(text, 1, len >= 2 ? len - 2 : 0, stdout);
  cJSON_free(text);
  printf("%s\t\"%s\":\t[", empty ? "\n" : ",\n", key);
  for (size_t i = 0; i < n; i++) {
    if (i) fputs(", ", stdout);
    if (put_item(item(ctx, i))) {
      fputc('\n', stdout);
      fg_cli_fail(cmd, path, "out of memory building JSON (the output stops at element %zu of %s)", i, key);
      return 1;
    }
  }
  fputs("]\n}\n", stdout);
  return 0;
}
