/* forgia inspect: the options every view takes, and the views of files that are not a model
 * checkpoint (inspect_files.c sniffs which one a file is). */
#ifndef FORGIA_TOOLS_INSPECT_H
#define FORGIA_TOOLS_INSPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/gguf.h"

typedef struct fg_cli_inspect_opts {
  bool json; /* one JSON object instead of the readable report */
  bool full; /* every list in full */
  bool ne;   /* shapes of weights also (JSON) or instead (readable) in GGUF ne order,
                innermost first, as llama.cpp prints them */
} fg_cli_inspect_opts;

/* Sniffs a regular file by its first bytes and shows it when it is an optimizer frame, a
 * trainer_state.json, another JSON text or an imatrix; reports what it looks like when it is
 * none of these nor a model. Returns the exit status (0, or 1 after one line on stderr), or
 * -1 when the file is for the checkpoint reader (GGUF, safetensors, a *.index.json, a file
 * named *.safetensors, a path that is no regular file). */
int fg_cli_inspect_file(const char *path, const fg_cli_inspect_opts *o);

/* The views, each given the whole file (bytes[len], NUL after it) and the exit status. */
int fg_cli_inspect_frame_file(const char *path, const unsigned char *bytes, size_t len, const fg_cli_inspect_opts *o);
int fg_cli_inspect_json_file(const char *path, const char *text, size_t len, const fg_cli_inspect_opts *o);
/* An imatrix by its path (legacy .dat or GGUF; fg_imatrix_open reads it). */
int fg_cli_inspect_imatrix(const char *path, const fg_cli_inspect_opts *o);
/* Whether a GGUF file is an imatrix (imatrix.* keys, or general.type "imatrix"). */
bool fg_cli_gguf_is_imatrix(const fg_gguf_file *f);

#endif
