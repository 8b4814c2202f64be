/* Where a program may write (forgia/output.h). Every comparison is by (st_dev, st_ino) of
 * existing paths, which sees through links, "..", and bind mounts. */
#define _GNU_SOURCE
#include "forgia/output.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/output_identity.h"

static bool same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Whether some ancestor of the canonical path p (p itself excluded) is the directory dir. */
static bool below(const char *p, const struct stat *dir) {
  char *c = strdup(p);
  if (!c) return false;
  bool hit = false;
  for (char *slash; !hit && (slash = strrchr(c, '/')) != NULL;) {
    slash[slash == c ? 1 : 0] = '\0'; /* keep "/" itself */
    struct stat st;
    hit = stat(c, &st) == 0 && same_file(&st, dir);
    if (slash == c) break;
  }
  free(c);
  return hit;
}

fg_status fg_output_canonical(const char *path, char **out) {
  *out = realpath(path, NULL);
  if (*out) return FG_OK;
  if (errno != ENOENT) return fg_fail(FG_ERR_IO, "%s: cannot resolve: %s", path, strerror(errno));
  /* absent: resolve the part before the last component, then append it */
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  size_t k = n;
  while (k > 0 && path[k - 1] != '/') k--;
  const char *base = path + k;
  const size_t bl = n - k;
  char *parent = NULL;
  fg_status s = FG_OK;
  if (k == 0) {
    parent = getcwd(NULL, 0);
    if (!parent) s = fg_fail(FG_ERR_IO, "%s: cannot resolve the working directory: %s", path, strerror(errno));
  } else {
    char *head = strndup(path, k > 1 ? k - 1 : 1);
    s = head ? fg_output_canonical(head, &parent) : fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
    free(head);
  }
  if (s) return s;
  const size_t pl = strlen(parent);
  char *c = malloc(pl + 1 + bl + 1);
  if (c) snprintf(c, pl + 1 + bl + 1, "%s%s%.*s", parent, pl && parent[pl - 1] == '/' ? "" : "/", (int)bl, base);
  else s = fg_fail(FG_ERR_NOMEM, "%s: out of memory", path);
  free(parent);
  *out = c;
  return s;
}

fg_status fg_output_vs_input(const char *given, const char *canonical, const char *input, const char *whose) {
  struct stat in, out;
  if (!input || stat(input, &in) != 0) return FG_OK;
  if (S_ISDIR(in.st_mode) && below(canonical, &in))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: inside %s, the input folder of %s; refusing to write into it", given, input,
                   whose);
  if (stat(canonical, &out) == 0 && same_file(&in, &out)) {
    if (strcmp(given, input) == 0)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: an input of %s; refusing to overwrite it", given, whose);
    return fg_fail(FG_ERR_INVALID_ARG, "%s: the same file as %s, an input of %s; refusing to overwrite it", given,
                   input, whose);
  }
  return FG_OK;
}

fg_status fg_output_check(const char *out_path, const char *const *inputs, size_t n_inputs) {
  if (!out_path || (n_inputs && !inputs)) return fg_fail(FG_ERR_INVALID_ARG, "fg_output_check: NULL argument");
  char *canonical = NULL;
  fg_status s = fg_atomic_file_check(out_path, &canonical);
  for (size_t i = 0; !s && i < n_inputs; i++) s = fg_output_vs_input(out_path, canonical, inputs[i], "this command");
  free(canonical);
  return s;
}

static const char *kind_of(mode_t m) {
  return S_ISREG(m) ? "a regular file" : S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISFIFO(m) ? "a FIFO"
         : S_ISSOCK(m) ? "a socket" : "not a directory";
}

fg_status fg_output_check_dir(const char *dir, const char *const *inputs, size_t n_inputs) {
  if (!dir || (n_inputs && !inputs)) return fg_fail(FG_ERR_INVALID_ARG, "fg_output_check_dir: NULL argument");
  if (!*dir) return fg_fail(FG_ERR_INVALID_ARG, "an empty output directory");
  struct stat st;
  const bool exists = stat(dir, &st) == 0;
  if (exists && !S_ISDIR(st.st_mode))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %s, not a directory (a checkpoint directory goes here)", dir,
                   kind_of(st.st_mode));
  if (!exists && errno != ENOENT) return fg_fail(FG_ERR_IO, "%s: %s", dir, strerror(errno));
  char *canonical = NULL;
  fg_status s = fg_output_canonical(dir, &canonical);
  for (size_t i = 0; !s && i < n_inputs; i++) {
    struct stat in;
    if (!inputs[i] || stat(inputs[i], &in) != 0) continue;
    if (exists && same_file(&in, &st)) {
      s = strcmp(dir, inputs[i]) == 0
              ? fg_fail(FG_ERR_INVALID_ARG, "%s: an input of this command; refusing to write into it", dir)
              : fg_fail(FG_ERR_INVALID_ARG, "%s: the same directory as %s, an input of this command; refusing to "
                        "write into it", dir, inputs[i]);
      break;
    }
    s = fg_output_vs_input(dir, canonical, inputs[i], "this command");
    if (s || !exists) continue;
    char *ic = realpath(inputs[i], NULL);
    if (ic && below(ic, &st))
      s = fg_fail(FG_ERR_INVALID_ARG, "%s: holds %s, an input of this command; refusing to write into it", dir,
                  inputs[i]);
    free(ic);
  }
  free(canonical);
  return s;
}

fg_status fg_output_write(const char *path, const void *data, size_t len) {
  if (!path || (len && !data)) return fg_fail(FG_ERR_INVALID_ARG, "fg_output_write: NULL argument");
  fg_atomic_file f = FG_ATOMIC_FILE_INIT;
  fg_status s = fg_atomic_file_begin(&f, path);
  if (!s) s = fg_atomic_file_write(&f, data, len);
  if (!s) s = fg_atomic_file_commit(&f);
  fg_atomic_file_abort(&f);
  return s;
}
