/* `forgia export --tensor-type PATTERN=TYPE` (repeatable) and `--tensor-type-file FILE` (one
 * PATTERN=TYPE per line, blank lines skipped), as llama-quantize takes them: the pattern
 * is lower-cased, TYPE is a ggml type name in any case. cmd_export.c hands argv here before
 * its own parser. */
#ifndef FORGIA_TOOLS_UTIL_TENSOR_TYPES_H
#define FORGIA_TOOLS_UTIL_TENSOR_TYPES_H

#include <stddef.h>

#include "forgia/export.h"
#include "util_args.h"

typedef struct fg_tensor_types_cli {
  fg_export_tensor_rule *rules; /* patterns owned */
  size_t n;
} fg_tensor_types_cli;

/* Takes the flags out of argv (argc shrinks; the rest keeps its order). FG_CLI_GO, or 2
 * after reporting bad usage through spec (nothing to free then). */
int fg_tensor_types_cli_take(const fg_cli_spec *spec, int *argc, char **argv, fg_tensor_types_cli *out);
void fg_tensor_types_cli_free(fg_tensor_types_cli *c);

/* A ggml type name in any case ("Q8_0", "q4_k"); false when none. */
bool fg_cli_ggml_type(const char *name, fg_dtype *out);

#endif
