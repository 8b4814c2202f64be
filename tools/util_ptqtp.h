/* `forgia export --ptqtp[=K]`: the PTQTP mode's flags and its run (forgia/export_ptqtp.h).
 * cmd_export.c hands argv here before its own parser: the flags taken out are
 *   --ptqtp[=K]            the mode, K planes (1..3, default 2)
 *   --ptqtp-planes K       K (implies --ptqtp)
 *   --ptqtp-tie            scales locked to ratio 3 (implies --ptqtp; needs K >= 2)
 *   --ptqtp-include SUB[,SUB]   only names containing one (repeatable; replaces the
 *                               embeddings/output-head rule)
 *   --ptqtp-exclude SUB[,SUB]   never names containing one (repeatable)
 * The mode is exclusive with --dtype, --experts-dtype, --adapters, --alpha and --chunk-mib. */
#ifndef FORGIA_TOOLS_UTIL_PTQTP_H
#define FORGIA_TOOLS_UTIL_PTQTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "forgia/ckpt.h"
#include "util_args.h"

typedef struct fg_ptqtp_cli {
  bool on;
  int planes;        /* 0 until given */
  bool tie;
  char **include, **exclude;   /* owned copies, split at commas */
  size_t n_include, n_exclude;
} fg_ptqtp_cli;

/* Takes the flags above out of argv (argc shrinks; the rest keeps its order). FG_CLI_GO,
 * or 2 after reporting bad usage through spec. */
int fg_ptqtp_cli_take(const fg_cli_spec *spec, int *argc, char **argv, fg_ptqtp_cli *out);
void fg_ptqtp_cli_free(fg_ptqtp_cli *c);
/* The flags' lines of `forgia help export`. */
void fg_ptqtp_cli_usage(FILE *f);
/* The mode after parsing: checks --from-gguf/--out, opens the model, checks the output
 * path, prints the plan (dry) or runs the export with one diagnostics line per quantized
 * tensor and a summary (peak working set, peak RSS). Frees c; returns the exit status. */
int fg_ptqtp_cli_main(const fg_cli_spec *spec, fg_ptqtp_cli *c, const char *from_gguf, const char *from_st,
                      const char *out, bool dry);

#endif
