#include "util_export_open.h"

#include <stddef.h>

#include "forgia/export.h"
#include "util_report.h"

int fg_cli_export_open(const char *in, fg_ckpt_format want, const char *other, const char *out, fg_ckpt **src) {
  *src = NULL;
  fg_status st = fg_ckpt_open(in, src);
  if (!st && fg_ckpt_format_of(*src) != want)
    st = fg_fail(FG_ERR_BAD_MAGIC, "%s: a %s checkpoint, not %s%s%s%s", in, fg_ckpt_format_name(fg_ckpt_format_of(*src)),
                 fg_ckpt_format_name(want), other ? " (use " : "", other ? other : "", other ? ")" : "");
  if (st) {
    fg_cli_report("export", in);
    fg_ckpt_close(*src);
    *src = NULL;
    return 1;
  }
  /* where the output goes is checked before any work: a device, FIFO or directory, or one
   * of the inputs, is a bad --out (exit 2); a missing or unwritable folder a failure (1) */
  if (out && (st = fg_export_check_output(*src, out)) != FG_OK) {
    fg_cli_report("export", out);
    fg_ckpt_close(*src);
    *src = NULL;
    return st == FG_ERR_INVALID_ARG ? 2 : 1;
  }
  return 0;
}
