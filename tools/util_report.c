#include "util_report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util_text.h"

#define LINE_MAX_BYTES 2048

static void emit(const char *cmd, const char *what, const char *problem) {
  char w[LINE_MAX_BYTES / 2], p[LINE_MAX_BYTES];
  if (what) fg_cli_escape_into(w, sizeof w, what, strlen(what));
  fg_cli_escape_into(p, sizeof p, problem, strlen(problem));
  /* no command yet (a bad or missing command name): plain "forgia: " */
  fprintf(stderr, "forgia%s%s: ", *cmd ? " " : "", cmd);
  if (what) fprintf(stderr, "%s: ", w);
  fprintf(stderr, "%s\n", p);
  fflush(stderr);
}

static bool word_end(char c) { return c == '\0' || c == ':' || c == ' ' || c == '\'' || c == '"' || c == ')' || c == ','; }
static bool word_start(char c) { return c == ' ' || c == '\'' || c == '"' || c == '(' || c == '`'; }

/* True when msg names path as a word of its own, not inside a longer word. */
static bool names(const char *msg, const char *path) {
  size_t n = strlen(path);
  if (!n) return true;
  for (const char *p = strstr(msg, path); p; p = strstr(p + 1, path))
    if ((p == msg || word_start(p[-1])) && word_end(p[n])) return true;
  return false;
}

void fg_cli_report(const char *cmd, const char *path) {
  const char *msg = fg_last_error();
  size_t cl = strlen(cmd);
  while (strncmp(msg, cmd, cl) == 0 && msg[cl] == ':' && msg[cl + 1] == ' ') msg += cl + 2;
  if (!*msg) msg = "failed (no message)";
  emit(cmd, path && !names(msg, path) ? path : NULL, msg);
}

void fg_cli_fail(const char *cmd, const char *what, const char *fmt, ...) {
  char problem[LINE_MAX_BYTES];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(problem, sizeof problem, fmt, ap);
  va_end(ap);
  emit(cmd, what, problem);
}

int fg_cli_close_stdout(const char *cmd, int rc) {
  int err = 0;
  errno = 0;
  if (fflush(stdout) != 0) err = errno ? errno : EIO;
  /* ferror also catches a write that failed earlier while the buffer is now empty */
  if (!err && ferror(stdout)) err = EIO;
  errno = 0;
  if (fclose(stdout) != 0 && !err) err = errno ? errno : EIO;
  if (!err) return rc;
  if (rc == 0) fg_cli_fail(cmd, "stdout", "write failed: %s", strerror(err));
  return rc ? rc : 1;
}
