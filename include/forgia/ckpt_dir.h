/* Training checkpoint directories, Fucina's layout (src/training_checkpoint.zig):
 *
 *   DIR/model.safetensors      the model's state dict (forgia/state_dict.h), or
 *   DIR/adapters.safetensors   the adapters' (LoRA) state dict
 *   DIR/optimizer.fucina       the optimizer's saved state: bytes this module does not read
 *   DIR/trainer_state.json     the trainer state (forgia/trainer_state.h), the commit sentinel
 *
 *   fg_ckpt_dir_save("run/ckpt", FG_CKPT_DIR_MODEL, entries, n, opt_bytes, opt_len, &state);
 *   fg_ckpt_dir *d;
 *   if (fg_ckpt_dir_open("run/ckpt", &d)) { ... fg_last_error() says why, e.g. incomplete }
 *   fg_ckpt_dir_load_weights(d, FG_CKPT_DIR_MODEL, dests, n, NULL, NULL);
 *   fg_ckpt_dir_close(d);
 *
 * Saving is crash-consistent: everything is checked and the trainer state's text made
 * first (a refused call leaves the directory as it was); then the directory is created
 * (with its parents) and the payload files are written whole under staged names
 * (".model.safetensors.next", ".optimizer.fucina.next"), each through the atomic writer
 * (temporary file, fsync, rename), while the previous checkpoint stays committed: a full
 * disk, an I/O error or a cancellation up to here leaves it as it was. Then
 * trainer_state.json is deleted (and the deletion made durable), the staged files are
 * renamed into place, a payload the call does not write (the other weights file,
 * optimizer.fucina when no bytes are given) is removed, so a committed directory holds
 * exactly what its last save wrote, and trainer_state.json is written the same way, last.
 * A process killed at any point leaves either the previous committed checkpoint (killed
 * before the deletion) or the new one (after the last rename) or a directory without
 * trainer_state.json, which opening refuses; a staged file a killed save left is replaced
 * by the next save.
 *
 * Thread safety: no shared state; an opened directory is immutable and may be read from
 * many threads. Two saves into one directory at once are not supported. */
#ifndef FORGIA_CKPT_DIR_H
#define FORGIA_CKPT_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/ckpt.h"
#include "forgia/state_dict.h"
#include "forgia/status.h"
#include "forgia/trainer_state.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_CKPT_DIR_MODEL_FILE "model.safetensors"
#define FG_CKPT_DIR_ADAPTERS_FILE "adapters.safetensors"
#define FG_CKPT_DIR_OPTIMIZER_FILE "optimizer.fucina"

/* Which weights file; as a mask in fg_ckpt_dir_info.weights. */
typedef enum fg_ckpt_dir_weights {
  FG_CKPT_DIR_MODEL = 1,
  FG_CKPT_DIR_ADAPTERS = 2,
} fg_ckpt_dir_weights;

/* Saves one checkpoint (above). entries go to the file `which` names. optimizer NULL: no
 * optimizer.fucina (ES training has none); otherwise its optimizer_len bytes, unread. */
FG_API fg_status fg_ckpt_dir_save(const char *dir, fg_ckpt_dir_weights which, const fg_state_dict_entry *entries,
                                  size_t n, const void *optimizer, size_t optimizer_len,
                                  const fg_trainer_state *state);

/* What a directory holds, without reading the payloads; succeeds for an incomplete one. */
typedef struct fg_ckpt_dir_info {
  bool committed;            /* trainer_state.json exists */
  unsigned weights;          /* FG_CKPT_DIR_MODEL | FG_CKPT_DIR_ADAPTERS of the files present */
  bool has_optimizer;
} fg_ckpt_dir_info;
/* FG_ERR_NOT_FOUND when dir does not exist, FG_ERR_INVALID_ARG when it is not a directory. */
FG_API fg_status fg_ckpt_dir_inspect(const char *dir, fg_ckpt_dir_info *out);

typedef struct fg_ckpt_dir fg_ckpt_dir;

/* Opens a committed checkpoint: reads and parses trainer_state.json and reads
 * optimizer.fucina when present. No trainer_state.json is FG_ERR_STATE, the message saying
 * that the checkpoint is incomplete (a save did not finish); a missing dir
 * FG_ERR_NOT_FOUND; a bad trainer state its parser's status. */
FG_API fg_status fg_ckpt_dir_open(const char *dir, fg_ckpt_dir **out);
FG_API void fg_ckpt_dir_close(fg_ckpt_dir *d); /* NULL-safe */

FG_API const char *fg_ckpt_dir_path(const fg_ckpt_dir *d);
FG_API const fg_trainer_state *fg_ckpt_dir_trainer_state(const fg_ckpt_dir *d);
/* FG_CKPT_DIR_MODEL | FG_CKPT_DIR_ADAPTERS of the weights files present at open. */
FG_API unsigned fg_ckpt_dir_weights_present(const fg_ckpt_dir *d);
/* DIR/model.safetensors or DIR/adapters.safetensors (borrowed), NULL when absent. */
FG_API const char *fg_ckpt_dir_weights_path(const fg_ckpt_dir *d, fg_ckpt_dir_weights which);
/* The weights file as a checkpoint (forgia/ckpt.h); FG_ERR_NOT_FOUND when absent. */
FG_API fg_status fg_ckpt_dir_open_weights(const fg_ckpt_dir *d, fg_ckpt_dir_weights which, fg_ckpt **out);
/* The weights file loaded into destinations (fg_state_dict_load_file). */
FG_API fg_status fg_ckpt_dir_load_weights(const fg_ckpt_dir *d, fg_ckpt_dir_weights which,
                                          const fg_state_dict_dest *dests, size_t n,
                                          const fg_state_dict_load_opts *opts, bool *loaded);
/* optimizer.fucina's bytes, read at open (borrowed until close; NULL when empty);
 * FG_ERR_NOT_FOUND when the checkpoint has none. */
FG_API fg_status fg_ckpt_dir_optimizer(const fg_ckpt_dir *d, const uint8_t **bytes, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
