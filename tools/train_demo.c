/* The training part of forgia demo (train_demo.h). */
#define _GNU_SOURCE
#include "train_demo.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "forgia/ckpt_dir.h"
#include "forgia/export.h"
#include "forgia/safetensors.h"
#include "train_spirals.h"
#include "util_file.h"
#include "util_report.h"

extern char **environ;

static int fail(const char *what) {
  fg_cli_report("demo", what);
  return 1;
}

/* Runs this program again (/proc/self/exe) with args, stdout into log; its exit status, or
 * -1 with fg_last_error() set when it could not run. */
static int run_self(char *const args[], const char *log) {
  fflush(stdout);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int e = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e) {
    fg_fail(FG_ERR_IO, "/proc/self/exe: cannot start: %s", strerror(e));
    return -1;
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) {
      fg_fail(FG_ERR_IO, "waitpid: %s", strerror(errno));
      return -1;
    }
  if (!WIFEXITED(st)) {
    fg_fail(FG_ERR_STATE, "%s: the child process was killed by signal %d", args[1], WTERMSIG(st));
    return -1;
  }
  return WEXITSTATUS(st);
}

/* 0 when both files exist and hold the same bytes. */
static int same_file(const char *a, const char *b) {
  size_t la = 0, lb = 0;
  uint8_t *x = NULL, *y = NULL;
  if (fg_cli_read_file(a, 0, &x, &la) == FG_OK) fg_cli_read_file(b, 0, &y, &lb);
  int rc = x && y && la == lb && memcmp(x, y, la) == 0 ? 0 : 1;
  if (rc) fg_fail(FG_ERR_STATE, "%s and %s differ (%zu and %zu bytes)", a, b, la, lb);
  free(x);
  free(y);
  return rc;
}

/* The model's state dict re-written as a plain safetensors file with __metadata__ (what a
 * Hugging Face tool expects), and that exported to GGUF by the library's exporter (the
 * metadata becomes safetensors.metadata.* keys); each read back and compared tensor by
 * tensor with the checkpoint's bytes. */
static int export_model(const char *model, const char *st_out, const char *gguf_out) {
  fg_ckpt *src = NULL, *a = NULL, *b = NULL;
  fg_export_plan *plan = NULL;
  fg_st_write_tensor *w = NULL;
  int rc = 1;
  if (fg_ckpt_open(model, &src)) goto out;
  const size_t n = fg_ckpt_count(src);
  w = calloc(n ? n : 1, sizeof *w);
  if (!w) goto out;
  for (size_t i = 0; i < n; i++) {
    const fg_ckpt_tensor *t = fg_ckpt_tensor_at(src, i);
    w[i] = (fg_st_write_tensor){t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes};
  }
  const fg_st_kv meta[] = {{"format", "pt"}, {"source", "forgia train spirals"}};
  fg_export_options o;
  memset(&o, 0, sizeof o);
  if (fg_st_save(st_out, w, n, meta, 2) || fg_ckpt_open(st_out, &a) || fg_export_plan_create(a, &o, &plan) ||
      fg_export_run(plan, gguf_out, NULL, NULL) || fg_ckpt_open(gguf_out, &b))
    goto out;
  for (size_t i = 0; i < n; i++) {
    const fg_ckpt_tensor *t = fg_ckpt_tensor_at(src, i);
    const fg_ckpt_tensor *ta = fg_ckpt_find(a, t->name), *tb = fg_ckpt_find(b, t->name);
    if (!ta || !tb || ta->nbytes != t->nbytes || tb->nbytes != t->nbytes || memcmp(ta->data, t->data, t->nbytes) ||
        memcmp(tb->data, t->data, t->nbytes)) {
      fg_fail(FG_ERR_STATE, "tensor %s differs after the export", t->name);
      goto out;
    }
  }
  printf("  export: %s (safetensors, __metadata__ format=pt) and %s (GGUF, f32 kept), %zu tensors each, "
         "bytes equal to the checkpoint's\n", st_out, gguf_out, n);
  rc = 0;
out:
  free(w);
  fg_export_plan_free(plan);
  fg_ckpt_close(src);
  fg_ckpt_close(a);
  fg_ckpt_close(b);
  return rc;
}

/* `forgia inspect PATH` in a child; shows the first line of what it printed. */
static int inspect(const char *path, const char *log, const char *want) {
  char *args[] = {"forgia", "inspect", (char *)path, NULL};
  int st = run_self(args, log);
  if (st < 0) return 1;
  uint8_t *raw = NULL;
  size_t raw_len = 0;
  char *text = fg_cli_read_file(log, 0, &raw, &raw_len) == FG_OK ? (char *)raw : NULL;
  int rc = st == 0 && text && strstr(text, want) ? 0 : 1;
  if (rc) fg_fail(FG_ERR_STATE, "forgia inspect %s: exit status %d, expected '%s' in %s", path, st, want, log);
  else {
    const char *nl = strchr(text, '\n');
    printf("  inspect: %.*s (full listing in %s)\n", (int)(nl ? nl - text : (long)strlen(text)), text, log);
  }
  free(text);
  return rc;
}

int fg_cli_demo_train(fg_device *dev, const char *dir) {
  char tdir[1024], full[1100], half[1100], resumed[1100], p1[1200], p2[1200], log[1200];
  snprintf(tdir, sizeof tdir, "%s/train", dir);
  snprintf(full, sizeof full, "%s/full", tdir);
  snprintf(half, sizeof half, "%s/half", tdir);
  snprintf(resumed, sizeof resumed, "%s/resumed", tdir);
  if ((mkdir(dir, 0755) && errno != EEXIST) || (mkdir(tdir, 0755) && errno != EEXIST)) {
    fg_fail(FG_ERR_IO, "%s: cannot create: %s", tdir, strerror(errno));
    return fail(NULL);
  }
  printf("\nforgia demo, training: AdamW on %s, two spirals, %d steps, checkpoint at %d, in %s\n",
         fg_device_spec(dev), DEMO_TRAIN_STEPS, DEMO_TRAIN_STEPS / 2, tdir);
  spirals_opts o = {.kind = FG_OPTIM_ADAMW, .steps = DEMO_TRAIN_STEPS, .seed = SPIRALS_DEFAULT_SEED,
                    .save_dir = full, .snapshot_step = DEMO_TRAIN_STEPS / 2, .snapshot_dir = half, .quiet = true};
  spirals_result r;
  if (spirals_train(dev, &o, &r)) return fail(NULL);
  printf("  trained: step %llu, loss %.4f, accuracy %.3f (%u/%u); checkpoints %s (step %d) and %s\n",
         (unsigned long long)r.step, r.loss, r.correct / (double)r.total, r.correct, r.total, half,
         DEMO_TRAIN_STEPS / 2, full);
  if (r.correct * 20 < r.total * 19) {
    fg_cli_fail("demo", NULL, "accuracy %.3f is below 0.95", r.correct / (double)r.total);
    return 1;
  }
  printf("  inference twin: %u/%u predictions equal, logits %s\n", r.twin_equal, r.total,
         r.twin_bits_equal ? "bit-identical" : "differ");
  if (r.twin_equal != r.total) {
    fg_cli_fail("demo", NULL, "the inference twin disagrees on %u points", r.total - r.twin_equal);
    return 1;
  }
  char steps[32];
  snprintf(steps, sizeof steps, "%d", DEMO_TRAIN_STEPS);
  char *args[] = {"forgia", "train", "spirals", "--optim", "adamw", "--steps", steps, "--device",
                  (char *)fg_device_spec(dev), "--resume", half, "--save", resumed, NULL};
  snprintf(log, sizeof log, "%s/resume.log", tdir);
  int st = run_self(args, log);
  if (st != 0) {
    if (st > 0) fg_fail(FG_ERR_STATE, "forgia train spirals --resume %s: exit status %d (its output: %s)", half, st, log);
    return fail(NULL);
  }
  static const char *const files[] = {FG_CKPT_DIR_MODEL_FILE, FG_CKPT_DIR_OPTIMIZER_FILE, FG_TRAINER_STATE_FILE};
  for (int i = 0; i < 3; i++) {
    snprintf(p1, sizeof p1, "%s/%s", full, files[i]);
    snprintf(p2, sizeof p2, "%s/%s", resumed, files[i]);
    if (same_file(p1, p2)) return fail(NULL);
  }
  printf("  resume: a fresh process (forgia train spirals --resume %s) ran steps %d..%d; its %s, %s and %s are "
         "memcmp-equal to the uninterrupted run's\n",
         half, DEMO_TRAIN_STEPS / 2, DEMO_TRAIN_STEPS, files[0], files[1], files[2]);
  snprintf(p1, sizeof p1, "%s/spirals.safetensors", tdir);
  snprintf(p2, sizeof p2, "%s/spirals.gguf", tdir);
  char model[1200];
  snprintf(model, sizeof model, "%s/%s", full, FG_CKPT_DIR_MODEL_FILE);
  if (export_model(model, p1, p2)) return fail(NULL);
  snprintf(log, sizeof log, "%s/inspect-safetensors.txt", tdir);
  if (inspect(p1, log, "6 tensors")) return fail(NULL);
  snprintf(log, sizeof log, "%s/inspect-gguf.txt", tdir);
  if (inspect(p2, log, "6 tensors")) return fail(NULL);
  snprintf(log, sizeof log, "%s/inspect-checkpoint.txt", tdir);
  if (inspect(full, log, "training checkpoint, committed")) return fail(NULL);
  printf("forgia demo, training: every check passed\n");
  return 0;
}
