/* forgia optim's CONFIG.json, parsed strictly (internal to the CLI). */
#ifndef FORGIA_TOOLS_UTIL_OPTIM_CONFIG_H
#define FORGIA_TOOLS_UTIL_OPTIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "forgia/lr_schedule.h"
#include "forgia/optim.h"

/* One parameter to register: the tensor of P and the slot name (NULL: param<i>). */
typedef struct optim_cli_param {
  char *tensor, *name;
} optim_cli_param;

typedef struct optim_cli_member {
  fg_optim_config c;
  optim_cli_param *params;
  size_t nparams;
  optim_cli_param *fallback_params; /* Muon, APOLLO: fg_optim_add_fallback, after params */
  size_t nfallback;
  bool all_params; /* neither "params" nor "fallback_params": every tensor of P, in file
                      order, under its own name */
} optim_cli_member;

typedef struct optim_cli_config {
  optim_cli_member *m;
  size_t n;
  bool is_set;          /* {"set": ...}: the state is a set's (FZO3), else member 0's frame */
  float clip;           /* 0: no clipping */
  bool has_schedule;
  fg_lr_schedule schedule;
} optim_cli_config;

/* Parses the JSON text; on failure returns false with a message in why. */
bool optim_cli_config_parse(const char *text, optim_cli_config *out, char *why, size_t why_len);
void optim_cli_config_free(optim_cli_config *c);

#endif
