#include "util_ckpt.h"

#include <stdio.h>
#include <string.h>

void fg_cli_report(const char *cmd, const char *path) {
  const char *msg = fg_last_error();
  /* one line: a message never spans lines, but keep it that way whatever it holds */
  char line[1200];
  snprintf(line, sizeof line, "%s", msg);
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  if (path && !strstr(line, path))
    fprintf(stderr, "forgia %s: %s: %s\n", cmd, path, line);
  else
    fprintf(stderr, "forgia %s: %s\n", cmd, line);
}
