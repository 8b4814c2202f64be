/* The two-spirals example of `forgia train spirals` (and of `forgia demo`): an MLP
 * 2 -> 64 -> 64 -> 2 with ReLU, trained full-batch from scratch, its forward and backward
 * passes written as example code over the library's public GEMM (exact mode, so a run is
 * the same bits on every device and for any thread count) and the op layer, the update by
 * fg_optim, checkpoints through forgia/ckpt_dir.h. Everything follows from the seed: the
 * data and the initial weights come from the library's RNG streams. */
#ifndef FORGIA_TOOLS_TRAIN_SPIRALS_H
#define FORGIA_TOOLS_TRAIN_SPIRALS_H

#include <stdbool.h>
#include <stdint.h>

#include "forgia/forgia.h"
#include "train_spirals_net.h" /* SPIRALS_POINTS_PER_CLASS */

#define SPIRALS_HIDDEN 64
#define SPIRALS_DEFAULT_STEPS 300
#define SPIRALS_DEFAULT_SEED 1

typedef struct spirals_opts {
  fg_optim_kind kind;
  uint64_t steps;           /* the step to train to (a resumed run continues up to it) */
  uint64_t seed;            /* ignored when resuming: the checkpoint's seed is used */
  const char *save_dir;     /* NULL: no checkpoint at the end */
  uint64_t save_every;      /* 0: none; else also a checkpoint into save_dir every K steps */
  const char *resume_dir;   /* NULL: from scratch */
  uint64_t snapshot_step;   /* with snapshot_dir: one extra checkpoint after that step */
  const char *snapshot_dir;
  bool quiet;               /* no progress lines */
  unsigned threads;         /* CPU threads (0: one; see spirals_train) */
} spirals_opts;

typedef struct spirals_result {
  uint64_t first_step;      /* 0, or the step resumed from */
  uint64_t step;            /* the step reached */
  double loss;              /* mean cross-entropy over the data after the last step */
  uint32_t correct, total;  /* predictions after the last step */
  uint32_t twin_equal;      /* predictions of the inference twin equal to the model's */
  bool twin_bits_equal;     /* and its logits the same bits */
  bool interrupted;         /* a signal caught by util_signal.h stopped it after a whole step */
} spirals_result;

/* "sgd", "adam", ... (fg_optim_kind_name's names) to a kind; false when unknown. */
bool spirals_parse_optim(const char *name, fg_optim_kind *out);

/* Trains (or resumes) on dev, printing progress to stdout unless quiet. A signal caught by
 * util_signal.h stops it after the step in progress, which is then saved and checked like
 * the end of the run (r->interrupted). FG_OK with *r filled, or a status with
 * fg_last_error() set. */
fg_status spirals_train(fg_device *dev, const spirals_opts *o, spirals_result *r);

#endif
