/* CLI helper: progress of a long job counted in items and bytes, on stderr (stdout carries
 * results). On a terminal one line is redrawn in place, at most 10 times a second; on
 * anything else (a pipe, a log file) a plain line is printed at most once a second, plus
 * one for the last item, so a million tensors make a few lines, not a million. */
#ifndef FORGIA_TOOLS_UTIL_PROGRESS_H
#define FORGIA_TOOLS_UTIL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct fg_cli_progress {
  FILE *out;
  bool tty;
  bool quiet;                  /* counts only: nothing is printed */
  double t0, last_draw;        /* seconds, monotonic */
  uint64_t items_total, bytes_total;
  const char *unit;            /* what an item is, plural ("tensors") */
  bool drawn;                  /* a bar is on screen (needs clearing before other output) */
  bool final_done;             /* the line for the last item was printed */
} fg_cli_progress;

/* Progress to stderr; quiet prints nothing (the timer still runs). */
void fg_cli_progress_init(fg_cli_progress *p, bool quiet, const char *unit, uint64_t items_total,
                          uint64_t bytes_total);
/* Updates with the counts so far. name (name_len bytes, escaped when shown) is the item in
 * progress or just finished; detail is appended to its plain line (may be NULL). */
void fg_cli_progress_update(fg_cli_progress *p, uint64_t items_done, uint64_t bytes_done, const char *name,
                            size_t name_len, const char *detail);
/* Removes a bar from the screen (before printing an error or a summary). */
void fg_cli_progress_clear(fg_cli_progress *p);
/* Seconds since init. */
double fg_cli_progress_elapsed(const fg_cli_progress *p);

/* "1.5 GiB", "12.0 MiB", "512 B" into buf. */
const char *fg_cli_human_bytes(uint64_t n, char *buf, size_t cap);
/* Peak resident set size of this process in bytes (getrusage ru_maxrss). */
uint64_t fg_cli_peak_rss(void);

#endif
