/* CLI helper: the output checks every writing command makes before any work (forgia/output.h),
 * reported the one way: a bad output is bad usage (exit 2), a folder that cannot be written a
 * failure (exit 1), one line either way. */
#ifndef FORGIA_TOOLS_UTIL_OUTPUT_H
#define FORGIA_TOOLS_UTIL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

/* out (a file) against the inputs (NULL entries skipped). 0: go; else the exit status,
 * after the report. */
int fg_cli_output_check(const char *cmd, const char *out, const char *const *inputs, size_t n);

/* Two outputs of one run must differ (by identity when they exist, else by path): 0, or 2
 * after the report naming both options. */
int fg_cli_outputs_differ(const char *cmd, const char *a_opt, const char *a, const char *b_opt, const char *b);

/* dir (a training checkpoint directory to save into) against the inputs (at most 8) and the
 * resume directory (NULL: none), and the rule that a committed checkpoint is replaced only
 * when force is set or resume names that same directory (a run continuing its own
 * checkpoint). 0: go; else the exit status, after the report. */
int fg_cli_save_dir_check(const char *cmd, const char *dir, const char *const *inputs, size_t n, bool force,
                          const char *resume);

#endif
