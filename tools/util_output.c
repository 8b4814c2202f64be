#include "util_output.h"

#include <string.h>
#include <sys/stat.h>

#include "forgia/ckpt_dir.h"
#include "forgia/output.h"
#include "util_report.h"

static int report(const char *cmd, const char *path, fg_status s) {
  fg_cli_report(cmd, path);
  return s == FG_ERR_INVALID_ARG ? 2 : 1;
}

static bool same_dir(const char *a, const char *b) {
  struct stat sa, sb;
  return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int fg_cli_output_check(const char *cmd, const char *out, const char *const *inputs, size_t n) {
  fg_status s = fg_output_check(out, inputs, n);
  return s ? report(cmd, out, s) : 0;
}

int fg_cli_outputs_differ(const char *cmd, const char *a_opt, const char *a, const char *b_opt, const char *b) {
  struct stat sa, sb;
  const bool same = stat(a, &sa) == 0 && stat(b, &sb) == 0 ? sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
                                                             : strcmp(a, b) == 0;
  if (!same) return 0;
  fg_cli_fail(cmd, b, "%s and %s name the same file; one would replace the other", a_opt, b_opt);
  return 2;
}

int fg_cli_save_dir_check(const char *cmd, const char *dir, const char *const *inputs, size_t n, bool force,
                          const char *resume) {
  /* resume is an input too, unless it is the directory itself: a run may continue and save
   * its own checkpoint, which it has read whole before the first save */
  const char *all[9];
  if (n > 8) n = 8;
  if (n) memcpy(all, inputs, n * sizeof *all);
  all[n] = same_dir(dir, resume) ? NULL : resume;
  fg_status s = fg_output_check_dir(dir, all, n + 1);
  if (s) return report(cmd, dir, s);
  fg_ckpt_dir_info info;
  if (force || fg_ckpt_dir_inspect(dir, &info) != FG_OK || !info.committed || same_dir(dir, resume)) return 0;
  /* the step, when the trainer state reads; the refusal stands either way */
  fg_ckpt_dir *d = NULL;
  if (fg_ckpt_dir_open(dir, &d) == FG_OK) {
    fg_cli_fail(cmd, dir, "holds a committed checkpoint (step %llu); refusing to replace it (--force replaces it, "
                "--resume %s continues it)", (unsigned long long)fg_ckpt_dir_trainer_state(d)->step, dir);
    fg_ckpt_dir_close(d);
  } else {
    fg_cli_fail(cmd, dir, "holds a committed checkpoint; refusing to replace it (--force replaces it)");
  }
  return 2;
}
