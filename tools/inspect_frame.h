/* forgia inspect: one optimizer frame or trainer state, readable or as a cJSON value. */
#ifndef FORGIA_TOOLS_INSPECT_FRAME_H
#define FORGIA_TOOLS_INSPECT_FRAME_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "forgia/optim_frame.h"
#include "forgia/trainer_state.h"

/* {kind, magic, version, config, step, slots, fallback, embedded | members | tensors}. */
cJSON *fg_cli_frame_json(const fg_oframe *f);
/* The frame's lines indented by ind spaces; lists cut at 64 entries unless full. */
void fg_cli_frame_print(const fg_oframe *f, int ind, bool full);

/* {"format": "fucina.training_checkpoint", every set field} (doubles in Fucina's text). */
cJSON *fg_cli_trainer_state_json(const fg_trainer_state *s);
/* One "  name value" line per set field. */
void fg_cli_trainer_state_print(const fg_trainer_state *s);

#endif
