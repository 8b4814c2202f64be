/* The identity checks behind forgia/output.h, shared with export's own output check
 * (formats/export_output.c), which names its inputs "of this export". Internal. */
#ifndef FORGIA_CORE_OUTPUT_IDENTITY_H
#define FORGIA_CORE_OUTPUT_IDENTITY_H

#include "forgia/status.h"

/* out_path (canonical: absolute, symbolic links resolved) against one input: refused
 * (FG_ERR_INVALID_ARG) when out_path is input, by identity, or, input being a directory,
 * lies inside it. whose ends the message: "an input of <whose>". An input that does not
 * exist protects nothing. */
fg_status fg_output_vs_input(const char *given, const char *canonical, const char *input, const char *whose);

/* *out (malloc'd): the absolute path of path with every symbolic link resolved, for a path
 * that may not exist yet: its deepest existing ancestor resolved, the rest appended. */
fg_status fg_output_canonical(const char *path, char **out);

#endif
