/* CLI helper: open a checkpoint of either container format behind one handle. */
#ifndef FORGIA_TOOLS_UTIL_CKPT_H
#define FORGIA_TOOLS_UTIL_CKPT_H

#include "forgia/gguf.h"
#include "forgia/safetensors.h"

typedef enum fg_cli_format { FG_CLI_GGUF = 1, FG_CLI_SAFETENSORS = 2 } fg_cli_format;

typedef struct fg_cli_ckpt {
  fg_cli_format format;
  fg_gguf_file *gguf;    /* GGUF file, or the merged view of a split */
  fg_st_dir *st;         /* safetensors file, index or Hugging Face folder */
} fg_cli_ckpt;

/* A folder is a safetensors checkpoint; a file starting with "GGUF" (or named *.gguf) is
 * GGUF (part 1 of a split opens every part); anything else is read as safetensors. Files
 * are memory-mapped, so only the header pages are read. */
fg_status fg_cli_ckpt_open(const char *path, fg_cli_ckpt *out);
void fg_cli_ckpt_close(fg_cli_ckpt *c);

/* Prints "forgia CMD: MESSAGE" on one line, naming path when the message does not. */
void fg_cli_report(const char *cmd, const char *path);

#endif
