/* Where an export may write: checked before any work, so that a mistyped --out fails at
 * once and an export can never replace, or write into, the checkpoint it reads. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "core/atomic_file.h"
#include "core/output_identity.h"
#include "forgia/export.h"

/* config.json is read from the checkpoint's folder (safetensors_dir.c: the path itself when
 * it is a folder, else the part before its last '/') whenever it is there, and export copies
 * it into the output. */
static char *config_path(const char *ckpt_path, bool is_dir) {
  const char *slash = strrchr(ckpt_path, '/');
  int dl = is_dir ? (int)strlen(ckpt_path) : slash ? (int)(slash - ckpt_path) : 1;
  const char *dir = is_dir || slash ? ckpt_path : ".";
  size_t cap = (size_t)dl + sizeof "/config.json";
  char *p = malloc(cap);
  if (p) snprintf(p, cap, "%.*s/config.json", dl, dir);
  return p;
}

/* Every file the export reads: the checkpoint's files (each GGUF split part or safetensors
 * shard), the path it was opened from (the one file, an index file, or the folder, inside
 * which nothing may be written), and config.json when it was read. */
static fg_status not_an_input(const fg_ckpt *src, const char *given, const char *canonical) {
  static const char whose[] = "this export";
  fg_status s = FG_OK;
  for (size_t i = 0; !s && i < fg_ckpt_file_count(src); i++)
    s = fg_output_vs_input(given, canonical, fg_ckpt_file_at(src, i)->path, whose);
  const char *path = fg_ckpt_path(src);
  struct stat st;
  if (s || stat(path, &st) != 0) return s; /* gone since it was opened: nothing left to protect */
  s = fg_output_vs_input(given, canonical, path, whose);
  if (!s && fg_ckpt_safetensors(src) && fg_st_dir_config_text(fg_ckpt_safetensors(src), NULL)) {
    char *cfg = config_path(path, S_ISDIR(st.st_mode));
    s = cfg ? fg_output_vs_input(given, canonical, cfg, whose) : fg_fail(FG_ERR_NOMEM, "%s: out of memory", given);
    free(cfg);
  }
  return s;
}

fg_status fg_export_check_output(const fg_ckpt *src, const char *out_path) {
  if (!out_path) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_check_output: NULL output path");
  char *canonical = NULL;
  fg_status s = fg_atomic_file_check(out_path, &canonical);
  if (!s && src) s = not_an_input(src, out_path, canonical);
  free(canonical);
  return s;
}

/* A folder output is written under a temporary name beside it and renamed over it, which
 * POSIX allows only over an empty folder; whatever is inside is checked as a file there. */
fg_status fg_export_check_output_folder(const fg_ckpt *src, const char *dir) {
  if (!dir || !*dir) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_check_output_folder: NULL or empty path");
  struct stat st;
  if (lstat(dir, &st) != 0) return fg_export_check_output(src, dir); /* its parent, and not inside an input */
  if (!S_ISDIR(st.st_mode))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: not a folder; a sharded safetensors output is a folder (absent or "
                   "empty)", dir);
  DIR *d = opendir(dir);
  if (!d) return fg_fail(FG_ERR_IO, "%s: cannot read the folder: %s", dir, strerror(errno));
  const struct dirent *e;
  bool empty = true;
  while (empty && (e = readdir(d)) != NULL) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(d);
  if (!empty)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: a folder that is not empty; a sharded safetensors output goes into a "
                   "new or empty folder", dir);
  const size_t n = strlen(dir) + sizeof "/model.safetensors.index.json";
  char *probe = malloc(n);
  if (!probe) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", dir);
  snprintf(probe, n, "%s/model.safetensors.index.json", dir);
  fg_status s = fg_export_check_output(src, probe);
  free(probe);
  return s;
}
