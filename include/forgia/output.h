/* Where a program may write: the checks every forgia command makes before any work, so
 * that a mistyped output path fails at once and no output can replace, or be written
 * into, a file the same run reads.
 *
 *   const char *inputs[] = {config, params, grads};
 *   if (fg_output_check("out.safetensors", inputs, 3)) { ... fg_last_error() says why }
 *   ...
 *   fg_output_write("state.bin", bytes, len);   // temporary file, fsync, rename
 *
 * Inputs are compared by identity (st_dev, st_ino) after resolving symbolic links, so a
 * link, a hard link, "./x", "a/../x" or a bind mount of an input is that input. An input
 * that is a directory (a Hugging Face folder, a checkpoint directory) protects everything
 * inside it. NULL entries of inputs are skipped. Inputs that do not exist protect nothing.
 *
 * Thread safety: no shared state. */
#ifndef FORGIA_OUTPUT_H
#define FORGIA_OUTPUT_H

#include <stddef.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a file may be written at out_path, without creating anything:
 *   - out_path names a file: absent, a regular file (replaced atomically, its mode kept) or
 *     a symbolic link to one. A device (such as /dev/null), FIFO, socket, directory or
 *     dangling link is FG_ERR_INVALID_ARG.
 *   - Its directory exists, is a directory and is writable (FG_ERR_IO otherwise).
 *   - It is none of the inputs and lies inside none of the input directories
 *     (FG_ERR_INVALID_ARG, the message naming out_path and the input). */
FG_API fg_status fg_output_check(const char *out_path, const char *const *inputs, size_t n_inputs);

/* Whether a directory of outputs (a training checkpoint directory) may be written at dir:
 * absent (it will be created with its parents) or a directory (FG_ERR_INVALID_ARG for a
 * regular file, device, FIFO or socket); not an input, not inside an input directory, and
 * holding no input (FG_ERR_INVALID_ARG, naming both). Whether an existing checkpoint there
 * may be replaced is the caller's policy (fg_ckpt_dir_inspect says whether one is). */
FG_API fg_status fg_output_check_dir(const char *dir, const char *const *inputs, size_t n_inputs);

/* Writes len bytes as the whole file at path: a temporary file beside it, written, fsynced
 * and renamed over path, then the directory fsynced; a reader sees the old file or the new
 * one, never a prefix. What path may be is fg_output_check's first two points. On failure
 * (or cancellation through forgia/cancel.h) path is untouched and no temporary file stays. */
FG_API fg_status fg_output_write(const char *path, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
