/* The training part of `forgia demo`: AdamW trains the spirals MLP (train_spirals.h) on the
 * given device with a checkpoint at half way; a fresh process resumes from it and must end
 * with the same bytes as the uninterrupted run; the model is exported to safetensors and
 * GGUF, and `forgia inspect` reads both and the checkpoint directory. */
#ifndef FORGIA_TOOLS_TRAIN_DEMO_H
#define FORGIA_TOOLS_TRAIN_DEMO_H

#include "forgia/forgia.h"

#define DEMO_TRAIN_STEPS 200

/* Works under dir (created when missing), prints each step; 0 when every check passed, 1
 * after a one-line report of the first that failed. */
int fg_cli_demo_train(fg_device *dev, const char *dir);

#endif
