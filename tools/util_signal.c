#define _POSIX_C_SOURCE 200809L
#include "util_signal.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "forgia/cancel.h"
#include "util_report.h"

static volatile sig_atomic_t caught, count, grace;

static void on_signal(int sig) {
  if (!caught) caught = sig;
  if (count < 1000) count++;
}

static bool stop_requested(void *user) {
  (void)user;
  return count > grace;
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

void fg_cli_signals_grace(void) { grace = count; }

const char *fg_cli_signal_name(void) { return caught == SIGTERM ? "SIGTERM" : "SIGINT"; }

int fg_cli_interrupted(const char *cmd, const char *what) {
  int sig = caught ? caught : SIGINT;
  fg_cli_fail(cmd, what, "interrupted by %s", fg_cli_signal_name());
  return 128 + sig;
}
