/* forgia inspect: a tensor shape in either order. inspect's shapes are row-major, outermost
 * dimension first (safetensors, numpy, torch); GGUF's ne, as llama.cpp prints it, is the
 * same list reversed (innermost first): [262144, 640] there is ne 640, 262144. */
#ifndef FORGIA_TOOLS_INSPECT_SHAPE_H
#define FORGIA_TOOLS_INSPECT_SHAPE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* "[a, b]", shape[0..ndim) as given, or reversed when ne. */
void fg_cli_print_shape(FILE *f, const uint64_t *shape, int ndim, bool ne);
/* The same as a JSON array of exact integers. */
cJSON *fg_cli_shape_json(const uint64_t *shape, int ndim, bool ne);
/* The words that label a list of shapes in readable output. */
const char *fg_cli_shape_label(bool ne);

#endif
