#define _POSIX_C_SOURCE 200809L
#include "util_signal.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "forgia/cancel.h"
#include "util_report.h"

static volatile sig_atomic_t caught;

static void on_signal(int sig) {
  if (!caught) caught = sig;
}

static bool stop_requested(void *user) {
  (void)user;
  return caught != 0;
}

void fg_cli_signals_catch(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  /* every file forgia writes on this thread asks the hook between slices (forgia/cancel.h) */
  fg_cancel_set(stop_requested, NULL);
}

int fg_cli_signal_caught(void) { return caught; }

int fg_cli_interrupted(const char *cmd, const char *what) {
  int sig = caught ? caught : SIGINT;
  fg_cli_fail(cmd, what, "interrupted by %s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  return 128 + sig;
}
