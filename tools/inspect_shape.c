#include "inspect_shape.h"

#include "util_json.h"

void fg_cli_print_shape(FILE *f, const uint64_t *shape, int ndim, bool ne) {
  fputc('[', f);
  for (int d = 0; d < ndim; d++)
    fprintf(f, d ? ", %llu" : "%llu", (unsigned long long)shape[ne ? ndim - 1 - d : d]);
  fputc(']', f);
}

cJSON *fg_cli_shape_json(const uint64_t *shape, int ndim, bool ne) {
  cJSON *a = cJSON_CreateArray();
  for (int d = 0; a && d < ndim; d++) cJSON_AddItemToArray(a, fg_cli_json_u64(shape[ne ? ndim - 1 - d : d]));
  return a;
}

const char *fg_cli_shape_label(bool ne) {
  return ne ? "ne: innermost first, GGUF/llama.cpp order"
            : "shape: outermost first, safetensors/numpy order; --ne for GGUF's";
}
