/* CLI helper: LoRA adapters (adapters.safetensors, names layers.<i>.<target>.lora_{a,b})
 * applied to a model's projections without merging, through the runtime's projection hook. */
#ifndef FORGIA_TOOLS_UTIL_ADAPTERS_H
#define FORGIA_TOOLS_UTIL_ADAPTERS_H

#include <stddef.h>

#include "forgia/lm.h"
#include "forgia/lora.h"
#include "util_args.h"

typedef struct fg_cli_adapters {
  fg_lora **by;        /* n_layer x FG_LM_PROJ_COUNT, NULL where no adapter */
  size_t n_layer, count;
  double alpha;
} fg_cli_adapters;

/* path: a checkpoint directory holding adapters.safetensors (and trainer_state.json, whose
 * lora_alpha is the default alpha) or a safetensors file. alpha_text: --alpha, or NULL. Every
 * tensor must be an adapter of one of lm's projections with that projection's shape.
 * FG_CLI_GO, 2 after a usage error, 1 after reporting. */
int fg_cli_adapters_attach(const fg_cli_spec *s, fg_lm *lm, const char *path, const char *alpha_text,
                           fg_cli_adapters *out);
void fg_cli_adapters_free(fg_lm *lm, fg_cli_adapters *a);

#endif
