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
#include "forgia/export.h"

static bool same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static fg_status is_input(const char *out, const char *in) {
  if (strcmp(out, in) == 0)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: an input of this export; refusing to overwrite it", out);
  return fg_fail(FG_ERR_INVALID_ARG, "%s: the same file as %s, an input of this export; refusing to overwrite it", out,
                 in);
}

/* out (canonical, absolute, symbolic links resolved) against the input folder dir: every
 * ancestor of out is compared by identity, which sees through bind mounts and "..". */
static fg_status inside(const char *given, const char *canonical, const char *in, const struct stat *dir) {
  char *p = strdup(canonical);
  if (!p) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", given);
  fg_status s = FG_OK;
  for (char *slash; !s && (slash = strrchr(p, '/')) != NULL;) {
    slash[slash == p ? 1 : 0] = '\0'; /* keep "/" itself */
    struct stat st;
    if (stat(p, &st) == 0 && same_file(&st, dir))
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: inside %s, the input folder of this export; refusing to write into it",
                  given, in);
    if (slash == p) break;
  }
  free(p);
  return s;
}

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

static fg_status not_an_input(const fg_ckpt *src, const char *given, const char *canonical) {
  struct stat out;
  const bool exists = stat(canonical, &out) == 0;
  struct stat st;
  for (size_t i = 0; exists && i < fg_ckpt_file_count(src); i++) {
    const char *in = fg_ckpt_file_at(src, i)->path;
    if (stat(in, &st) == 0 && same_file(&st, &out)) return is_input(given, in);
  }
  const char *path = fg_ckpt_path(src);
  if (stat(path, &st) != 0) return FG_OK; /* gone since it was opened: nothing left to protect */
  const bool is_dir = S_ISDIR(st.st_mode);
  if (is_dir) {
    fg_status s = inside(given, canonical, path, &st);
    if (s) return s;
  } else if (exists && same_file(&st, &out)) {
    return is_input(given, path); /* an index file, or the one file */
  }
  if (exists && fg_ckpt_safetensors(src) && fg_st_dir_config_text(fg_ckpt_safetensors(src), NULL)) {
    char *cfg = config_path(path, is_dir);
    if (!cfg) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", given);
    fg_status s = stat(cfg, &st) == 0 && same_file(&st, &out) ? is_input(given, cfg) : FG_OK;
    free(cfg);
    return s;
  }
  return FG_OK;
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
