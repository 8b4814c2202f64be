/* forgia inspect on a training checkpoint directory (forgia/ckpt_dir.h): whether it is
 * committed, the trainer state, the weights' tensors and every optimizer frame. */
#ifndef FORGIA_TOOLS_INSPECT_DIR_H
#define FORGIA_TOOLS_INSPECT_DIR_H

#include <stdbool.h>

#include "inspect.h"

/* True when path is a training checkpoint directory (it holds trainer_state.json,
 * optimizer.fucina or adapters.safetensors; a folder with only model.safetensors is taken
 * for a Hugging Face folder). */
bool fg_cli_is_train_dir(const char *path);

/* Prints the directory (readable, or one JSON object); returns the exit status: 0, or 1
 * after one line on stderr when a file is damaged or the directory is not committed (the
 * report of what is there is printed first in that case). */
int fg_cli_inspect_train_dir(const char *path, const fg_cli_inspect_opts *o);

#endif
