/* forgia inspect DIR for a training checkpoint directory (inspect_dir.h). Everything is read
 * and checked first, so a damaged file gives its one error line and no partial report. */
#define _GNU_SOURCE
#include "inspect_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/ckpt_dir.h"
#include "forgia/forgia.h"
#include "forgia/optim_frame.h"
#include "forgia/trainer_state.h"
#include "inspect_frame.h"
#include "inspect_shape.h"
#include "util_file.h"
#include "util_json.h"
#include "util_report.h"
#include "util_text.h"

/* Readable output lists at most this many tensors per list without --full. */
#define LIST_LIMIT 64

typedef struct dir_view {
  const char *path;
  fg_ckpt_dir_info info;
  bool has_state;
  fg_trainer_state state;
  fg_ckpt *weights[2];      /* model, adapters (NULL when absent) */
  uint64_t opt_bytes;
  fg_oframe *frame;         /* optimizer.fucina parsed (NULL when absent) */
} dir_view;

static const char *const weights_files[2] = {FG_CKPT_DIR_MODEL_FILE, FG_CKPT_DIR_ADAPTERS_FILE};

static char *join(const char *dir, const char *name) {
  char *p = NULL;
  return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

static bool exists(const char *dir, const char *name) {
  char *p = join(dir, name);
  struct stat st;
  bool ok = p && stat(p, &st) == 0;
  free(p);
  return ok;
}

bool fg_cli_is_train_dir(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  return exists(path, FG_TRAINER_STATE_FILE) || exists(path, FG_CKPT_DIR_OPTIMIZER_FILE) ||
         exists(path, FG_CKPT_DIR_ADAPTERS_FILE);
}

static void view_free(dir_view *v) {
  for (int i = 0; i < 2; i++) fg_ckpt_close(v->weights[i]);
  fg_optim_frame_free(v->frame);
}

/* Reads what the directory holds; on failure, the path of the file at fault in *bad. */
static fg_status view_read(dir_view *v, char **bad) {
  fg_status s = fg_ckpt_dir_inspect(v->path, &v->info);
  if (s) return s;
  if (v->info.committed) {
    *bad = join(v->path, FG_TRAINER_STATE_FILE);
    s = *bad ? fg_trainer_state_load(*bad, &v->state) : fg_fail(FG_ERR_NOMEM, "out of memory");
    if (s) return s;
    v->has_state = true;
    free(*bad);
  }
  for (int i = 0; i < 2; i++) {
    *bad = NULL;
    if (!(v->info.weights & (1u << i))) continue;
    *bad = join(v->path, weights_files[i]);
    s = *bad ? fg_ckpt_open(*bad, &v->weights[i]) : fg_fail(FG_ERR_NOMEM, "out of memory");
    if (s) return s;
    free(*bad);
  }
  *bad = NULL;
  if (v->info.has_optimizer) {
    *bad = join(v->path, FG_CKPT_DIR_OPTIMIZER_FILE);
    uint8_t *bytes = NULL;
    size_t len = 0;
    s = *bad ? fg_cli_read_file(*bad, 0, &bytes, &len) : fg_fail(FG_ERR_NOMEM, "out of memory");
    if (!s) s = fg_optim_frame_parse(bytes, len, &v->frame);
    free(bytes);
    if (s) return s;
    v->opt_bytes = len;
    free(*bad);
    *bad = NULL;
  }
  return FG_OK;
}

/* ---------------------------------------------------------------- the directory */

static cJSON *view_json(const dir_view *v, bool ne) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "training_checkpoint");
  cJSON_AddItemToObject(root, "path", fg_cli_json_bytes(v->path, strlen(v->path)));
  cJSON_AddBoolToObject(root, "committed", v->info.committed);
  if (v->has_state) cJSON_AddItemToObject(root, "trainer_state", fg_cli_trainer_state_json(&v->state));
  else cJSON_AddNullToObject(root, "trainer_state");
  for (int i = 0; i < 2; i++) {
    if (!v->weights[i]) continue;
    cJSON *w = cJSON_AddObjectToObject(root, i ? "adapters" : "model");
    cJSON_AddStringToObject(w, "file", weights_files[i]);
    cJSON *ts = cJSON_AddArrayToObject(w, "tensors");
    for (size_t k = 0; k < fg_ckpt_count(v->weights[i]); k++) {
      const fg_ckpt_tensor *t = fg_ckpt_tensor_at(v->weights[i], k);
      cJSON *o = cJSON_CreateObject();
      cJSON_AddItemToObject(o, "name", fg_cli_json_bytes(t->name, t->name_len));
      const char *tag = fg_dtype_info(t->dtype)->st_tag;
      cJSON_AddStringToObject(o, "dtype", tag ? tag : fg_dtype_name(t->dtype));
      cJSON_AddItemToObject(o, "shape", fg_cli_shape_json(t->shape, t->ndim, false));
      if (ne) cJSON_AddItemToObject(o, "ne", fg_cli_shape_json(t->shape, t->ndim, true));
      cJSON_AddItemToArray(ts, o);
    }
  }
  if (v->frame) {
    cJSON *o = cJSON_AddObjectToObject(root, "optimizer");
    cJSON_AddStringToObject(o, "file", FG_CKPT_DIR_OPTIMIZER_FILE);
    cJSON_AddItemToObject(o, "bytes", fg_cli_json_u64(v->opt_bytes));
    cJSON_AddItemToObject(o, "frame", fg_cli_frame_json(v->frame));
  } else {
    cJSON_AddNullToObject(root, "optimizer");
  }
  return root;
}

static void view_print(const dir_view *v, bool full, bool ne) {
  fg_cli_puts_escaped(stdout, v->path, 0);
  printf(": training checkpoint, %s\n",
         v->info.committed ? "committed" : "NOT committed (no trainer_state.json: a save did not finish)");
  if (v->has_state) {
    printf("trainer_state.json:\n");
    fg_cli_trainer_state_print(&v->state);
  }
  for (int i = 0; i < 2; i++) {
    if (!v->weights[i]) continue;
    size_t n = fg_ckpt_count(v->weights[i]);
    printf("%s: %zu tensors (%s)\n", weights_files[i], n, fg_cli_shape_label(ne));
    for (size_t k = 0; k < n; k++) {
      if (!full && k == LIST_LIMIT) {
        printf("  ... %zu more (--full lists them)\n", n - k);
        break;
      }
      const fg_ckpt_tensor *t = fg_ckpt_tensor_at(v->weights[i], k);
      const char *tag = fg_dtype_info(t->dtype)->st_tag;
      printf("  ");
      fg_cli_put_escaped(stdout, t->name, t->name_len, 32);
      printf(" %-5s ", tag ? tag : fg_dtype_name(t->dtype));
      fg_cli_print_shape(stdout, t->shape, t->ndim, ne);
      printf("\n");
    }
  }
  if (v->frame) {
    printf("optimizer.fucina: %llu bytes\n", (unsigned long long)v->opt_bytes);
    fg_cli_frame_print(v->frame, 2, full);
  } else {
    printf("optimizer.fucina: none\n");
  }
}

int fg_cli_inspect_train_dir(const char *path, const fg_cli_inspect_opts *o) {
  dir_view v;
  memset(&v, 0, sizeof v);
  v.path = path;
  char *bad = NULL;
  if (view_read(&v, &bad) != FG_OK) {
    fg_cli_report("inspect", bad ? bad : path);
    free(bad);
    view_free(&v);
    return 1;
  }
  int rc = 0;
  if (o->json) {
    rc = fg_cli_json_print("inspect", path, view_json(&v, o->ne));
  } else {
    view_print(&v, o->full, o->ne);
  }
  if (rc == 0 && !v.info.committed) {
    fg_cli_fail("inspect", path, "not committed: no %s (a save did not finish; loading refuses it)",
                FG_TRAINER_STATE_FILE);
    rc = 1;
  }
  view_free(&v);
  return rc;
}
