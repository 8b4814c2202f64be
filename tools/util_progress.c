/* CLI progress lines and bars; see util_progress.h. */
#define _POSIX_C_SOURCE 200809L
#include "core/clock.h"
#include "util_progress.h"
#include "util_text.h"

#include <inttypes.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

const char *fg_cli_human_bytes(uint64_t n, char *buf, size_t cap) {
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (n < 1024) {
    snprintf(buf, cap, "%" PRIu64 " B", n);
    return buf;
  }
  double v = (double)n / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, cap, "%.1f %s", v, units[u]);
  return buf;
}

uint64_t fg_cli_peak_rss(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
}

void fg_cli_progress_init(fg_cli_progress *p, bool quiet, const char *unit, uint64_t items_total,
                          uint64_t bytes_total) {
  memset(p, 0, sizeof *p);
  p->out = stderr;
  p->quiet = quiet;
  p->unit = unit ? unit : "items";
  p->tty = isatty(fileno(stderr)) == 1;
  p->t0 = fg_clock_seconds();
  /* off a terminal the first line comes after a second: a short job prints only its last */
  p->last_draw = p->tty ? -1.0 : p->t0;
  p->items_total = items_total;
  p->bytes_total = bytes_total;
}

double fg_cli_progress_elapsed(const fg_cli_progress *p) { return fg_clock_seconds() - p->t0; }

void fg_cli_progress_clear(fg_cli_progress *p) {
  if (!p->drawn) return;
  fprintf(p->out, "\r\033[K");
  fflush(p->out);
  p->drawn = false;
}

void fg_cli_progress_update(fg_cli_progress *p, uint64_t items_done, uint64_t bytes_done, const char *name,
                            size_t name_len, const char *detail) {
  if (p->quiet) return;
  bool last = items_done >= p->items_total;
  if (last && p->final_done) return;
  double t = fg_clock_seconds(), el = t - p->t0;
  if (!last && t - p->last_draw < (p->tty ? 0.1 : 1.0)) return;
  p->last_draw = t;
  p->final_done = last;
  char done[32], total[32], rate[32];
  fg_cli_human_bytes(bytes_done, done, sizeof done);
  fg_cli_human_bytes(p->bytes_total, total, sizeof total);
  fg_cli_human_bytes(el > 0 ? (uint64_t)((double)bytes_done / el) : 0, rate, sizeof rate);
  if (!p->tty) {
    fprintf(p->out, "[%" PRIu64 "/%" PRIu64 "] ", items_done, p->items_total);
    fg_cli_put_escaped(p->out, name, name ? name_len : 0, 0);
    fprintf(p->out, "%s%s", detail ? " " : "", detail ? detail : "");
    /* a job counted in items alone (training steps) has no byte totals to show */
    if (p->bytes_total) fprintf(p->out, " (%s of %s, %s/s)", done, total, rate);
    fputc('\n', p->out);
    fflush(p->out);
    return;
  }
  const int width = 30;
  double frac = p->bytes_total ? (double)bytes_done / (double)p->bytes_total
                               : p->items_total ? (double)items_done / (double)p->items_total : 1.0;
  int fill = (int)(frac * width + 0.5);
  if (fill > width) fill = width;
  char bar[64];
  for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
  bar[width] = 0;
  if (p->bytes_total)
    fprintf(p->out, "\r\033[K[%s] %" PRIu64 "/%" PRIu64 " %s  %s / %s  %s/s", bar, items_done, p->items_total,
            p->unit, done, total, rate);
  else
    fprintf(p->out, "\r\033[K[%s] %" PRIu64 "/%" PRIu64 " %s  %s", bar, items_done, p->items_total, p->unit,
            detail ? detail : "");
  fflush(p->out);
  p->drawn = true;
}
