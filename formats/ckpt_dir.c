/* Training checkpoint directories: the sentinel protocol of forgia/ckpt_dir.h over the
 * atomic writer, and the opener. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forgia/ckpt_dir.h"
#include "forgia/mapping.h"
#include "forgia/output.h"

struct fg_ckpt_dir {
  char *path;
  char *weights_path[2];     /* [0] model, [1] adapters; NULL when absent */
  fg_trainer_state state;
  fg_mapping *optimizer;     /* NULL when absent */
};

static char *cd_join(const char *dir, const char *leaf) {
  size_t a = strlen(dir), b = strlen(leaf);
  char *p = malloc(a + b + 2);
  if (!p) return NULL;
  memcpy(p, dir, a);
  size_t k = a;
  if (a && dir[a - 1] != '/') p[k++] = '/';
  memcpy(p + k, leaf, b + 1);
  return p;
}

static const char *cd_leaf(fg_ckpt_dir_weights w) {
  return w == FG_CKPT_DIR_ADAPTERS ? FG_CKPT_DIR_ADAPTERS_FILE : FG_CKPT_DIR_MODEL_FILE;
}

static fg_status cd_mkdir_p(const char *dir) {
  char *p = strdup(dir);
  if (!p) return fg_fail(FG_ERR_NOMEM, "%s: path", dir);
  fg_status st = FG_OK;
  for (char *c = p + 1;; c++) {
    if (*c != '/' && *c) continue;
    char save = *c;
    *c = 0;
    struct stat sb;
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      st = fg_fail(FG_ERR_IO, "%s: mkdir %s: %s", dir, p, strerror(errno));
    } else if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      st = fg_fail(FG_ERR_IO, "%s: %s is not a directory", dir, p);
    }
    *c = save;
    if (st || !save) break;
  }
  free(p);
  return st;
}

/* Removes dir/leaf (absent is fine) and makes the removal durable before anything else
 * is renamed into the directory. */
static fg_status cd_remove(const char *dir, const char *leaf) {
  char *p = cd_join(dir, leaf);
  if (!p) return fg_fail(FG_ERR_NOMEM, "%s: path", dir);
  fg_status st = FG_OK;
  if (unlink(p) != 0 && errno != ENOENT) st = fg_fail(FG_ERR_IO, "unlink %s: %s", p, strerror(errno));
  free(p);
  if (st) return st;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fg_fail(FG_ERR_IO, "open %s: %s", dir, strerror(errno));
  if (fsync(fd) != 0 && errno != EINVAL) st = fg_fail(FG_ERR_IO, "fsync %s: %s", dir, strerror(errno));
  close(fd);
  return st;
}

/* The payloads are written whole under staged names first (".model.safetensors.next",
 * each through the atomic writer), while the previous checkpoint is still committed: a full
 * disk, an I/O error or a cancellation there leaves it as it was. Only then is the sentinel
 * deleted, the staged files renamed into place, a payload this save does not write removed,
 * and the sentinel written last. */
#define CD_STAGED_PREFIX "."
#define CD_STAGED_SUFFIX ".next"

static char *cd_staged(const char *dir, const char *leaf) {
  size_t n = strlen(leaf) + sizeof CD_STAGED_PREFIX + sizeof CD_STAGED_SUFFIX;
  char *name = malloc(n);
  if (!name) return NULL;
  snprintf(name, n, CD_STAGED_PREFIX "%s" CD_STAGED_SUFFIX, leaf);
  char *p = cd_join(dir, name);
  free(name);
  return p;
}

static fg_status cd_publish(const char *staged, const char *final) {
  if (rename(staged, final) != 0) return fg_fail(FG_ERR_IO, "rename %s to %s: %s", staged, final, strerror(errno));
  return FG_OK;
}

FG_API fg_status fg_ckpt_dir_save(const char *dir, fg_ckpt_dir_weights which, const fg_state_dict_entry *entries,
                                  size_t n, const void *optimizer, size_t optimizer_len,
                                  const fg_trainer_state *state) {
  if (!dir || !*dir || !state) return fg_fail(FG_ERR_INVALID_ARG, "checkpoint save: NULL or empty argument");
  if (which != FG_CKPT_DIR_MODEL && which != FG_CKPT_DIR_ADAPTERS)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: weights kind %d; expected FG_CKPT_DIR_MODEL or FG_CKPT_DIR_ADAPTERS", dir,
                   (int)which);
  fg_status st = fg_state_dict_check(entries, n);
  if (st) return st;
  char *text = NULL, *weights = NULL, *opt = NULL, *sentinel = NULL, *weights_next = NULL, *opt_next = NULL;
  size_t text_len = 0;
  st = fg_trainer_state_format(state, &text, &text_len);
  if (st) return st;
  weights = cd_join(dir, cd_leaf(which));
  opt = cd_join(dir, FG_CKPT_DIR_OPTIMIZER_FILE);
  sentinel = cd_join(dir, FG_TRAINER_STATE_FILE);
  weights_next = cd_staged(dir, cd_leaf(which));
  opt_next = cd_staged(dir, FG_CKPT_DIR_OPTIMIZER_FILE);
  if (!weights || !opt || !sentinel || !weights_next || !opt_next) st = fg_fail(FG_ERR_NOMEM, "%s: paths", dir);
  if (!st) st = cd_mkdir_p(dir);
  /* staged while the previous checkpoint stays committed */
  if (!st) st = fg_state_dict_save(weights_next, entries, n);
  if (!st && optimizer) st = fg_output_write(opt_next, optimizer, optimizer_len);
  if (st) {
    unlink(weights_next);
    unlink(opt_next);
  }
  if (!st) st = cd_remove(dir, FG_TRAINER_STATE_FILE);
  /* From here until the last rename the directory is uncommitted. */
  if (!st) st = cd_publish(weights_next, weights);
  if (!st && optimizer) st = cd_publish(opt_next, opt);
  if (!st) st = cd_remove(dir, cd_leaf(which == FG_CKPT_DIR_MODEL ? FG_CKPT_DIR_ADAPTERS : FG_CKPT_DIR_MODEL));
  if (!st && !optimizer) st = cd_remove(dir, FG_CKPT_DIR_OPTIMIZER_FILE);
  if (!st) st = fg_output_write(sentinel, text, text_len);
  free(text);
  free(weights);
  free(opt);
  free(sentinel);
  free(weights_next);
  free(opt_next);
  return st;
}

static bool cd_is_file(const char *dir, const char *leaf, fg_status *err) {
  char *p = cd_join(dir, leaf);
  if (!p) {
    *err = fg_fail(FG_ERR_NOMEM, "%s: path", dir);
    return false;
  }
  struct stat sb;
  bool yes = stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
  free(p);
  return yes;
}

FG_API fg_status fg_ckpt_dir_inspect(const char *dir, fg_ckpt_dir_info *out) {
  if (!dir || !out) return fg_fail(FG_ERR_INVALID_ARG, "checkpoint inspect: NULL argument");
  struct stat sb;
  if (stat(dir, &sb) != 0)
    return fg_fail(errno == ENOENT ? FG_ERR_NOT_FOUND : FG_ERR_IO, "%s: %s", dir, strerror(errno));
  if (!S_ISDIR(sb.st_mode)) return fg_fail(FG_ERR_INVALID_ARG, "%s: not a checkpoint directory", dir);
  fg_status st = FG_OK;
  fg_ckpt_dir_info info = {0};
  info.committed = cd_is_file(dir, FG_TRAINER_STATE_FILE, &st);
  if (cd_is_file(dir, FG_CKPT_DIR_MODEL_FILE, &st)) info.weights |= FG_CKPT_DIR_MODEL;
  if (cd_is_file(dir, FG_CKPT_DIR_ADAPTERS_FILE, &st)) info.weights |= FG_CKPT_DIR_ADAPTERS;
  info.has_optimizer = cd_is_file(dir, FG_CKPT_DIR_OPTIMIZER_FILE, &st);
  if (!st) *out = info;
  return st;
}

FG_API fg_status fg_ckpt_dir_open(const char *dir, fg_ckpt_dir **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "checkpoint open: NULL argument");
  *out = NULL;
  fg_ckpt_dir_info info;
  fg_status st = fg_ckpt_dir_inspect(dir, &info);
  if (st) return st;
  if (!info.committed)
    return fg_fail(FG_ERR_STATE,
                   "%s: incomplete checkpoint: no " FG_TRAINER_STATE_FILE
                   " (the commit sentinel, written last), so a save did not finish", dir);
  fg_ckpt_dir *d = calloc(1, sizeof *d);
  char *sentinel = cd_join(dir, FG_TRAINER_STATE_FILE), *opt = cd_join(dir, FG_CKPT_DIR_OPTIMIZER_FILE);
  if (!d || !sentinel || !opt || !(d->path = strdup(dir))) st = fg_fail(FG_ERR_NOMEM, "%s: open", dir);
  if (!st) st = fg_trainer_state_load(sentinel, &d->state);
  for (int w = 0; w < 2 && !st; w++)
    if (info.weights & (1u << w) && !(d->weights_path[w] = cd_join(dir, cd_leaf((fg_ckpt_dir_weights)(1 << w)))))
      st = fg_fail(FG_ERR_NOMEM, "%s: open", dir);
  if (!st && info.has_optimizer) st = fg_mapping_open(opt, FG_MAP_READ, &d->optimizer);
  free(sentinel);
  free(opt);
  if (st) {
    fg_ckpt_dir_close(d);
    return st;
  }
  *out = d;
  return FG_OK;
}

FG_API void fg_ckpt_dir_close(fg_ckpt_dir *d) {
  if (!d) return;
  fg_mapping_release(d->optimizer);
  free(d->weights_path[0]);
  free(d->weights_path[1]);
  free(d->path);
  free(d);
}

FG_API const char *fg_ckpt_dir_path(const fg_ckpt_dir *d) { return d->path; }
FG_API const fg_trainer_state *fg_ckpt_dir_trainer_state(const fg_ckpt_dir *d) { return &d->state; }

FG_API unsigned fg_ckpt_dir_weights_present(const fg_ckpt_dir *d) {
  return (d->weights_path[0] ? FG_CKPT_DIR_MODEL : 0u) | (d->weights_path[1] ? FG_CKPT_DIR_ADAPTERS : 0u);
}

FG_API const char *fg_ckpt_dir_weights_path(const fg_ckpt_dir *d, fg_ckpt_dir_weights which) {
  if (which == FG_CKPT_DIR_MODEL) return d->weights_path[0];
  if (which == FG_CKPT_DIR_ADAPTERS) return d->weights_path[1];
  return NULL;
}

static fg_status cd_weights(const fg_ckpt_dir *d, fg_ckpt_dir_weights which, const char **path) {
  *path = d ? fg_ckpt_dir_weights_path(d, which) : NULL;
  if (!d) return fg_fail(FG_ERR_INVALID_ARG, "checkpoint: NULL directory");
  if (!*path) return fg_fail(FG_ERR_NOT_FOUND, "%s: no %s", d->path, cd_leaf(which));
  return FG_OK;
}

FG_API fg_status fg_ckpt_dir_open_weights(const fg_ckpt_dir *d, fg_ckpt_dir_weights which, fg_ckpt **out) {
  const char *path;
  fg_status st = cd_weights(d, which, &path);
  return st ? st : fg_ckpt_open(path, out);
}

FG_API fg_status fg_ckpt_dir_load_weights(const fg_ckpt_dir *d, fg_ckpt_dir_weights which,
                                          const fg_state_dict_dest *dests, size_t n,
                                          const fg_state_dict_load_opts *opts, bool *loaded) {
  const char *path;
  fg_status st = cd_weights(d, which, &path);
  return st ? st : fg_state_dict_load_file(path, dests, n, opts, loaded);
}

FG_API fg_status fg_ckpt_dir_optimizer(const fg_ckpt_dir *d, const uint8_t **bytes, size_t *len) {
  if (!d || !bytes || !len) return fg_fail(FG_ERR_INVALID_ARG, "checkpoint optimizer: NULL argument");
  if (!d->optimizer) return fg_fail(FG_ERR_NOT_FOUND, "%s: no " FG_CKPT_DIR_OPTIMIZER_FILE, d->path);
  *bytes = fg_mapping_data(d->optimizer);
  *len = fg_mapping_size(d->optimizer);
  return FG_OK;
}
