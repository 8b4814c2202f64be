/* AdamW (torch.optim.AdamW as Fucina writes it; decoupled decay before the step): config
 * fields, the moments, the packing of the adamw ops (elem/op_table.h), FZA frames. */
#include <stddef.h>
#include <string.h>

#include "training/optim_kind.h"

#define C(f) offsetof(fg_optim_config, f)

/* The lenient set of training/optim_kind.h, with AdamW's decay of 0.01. */
static const fg_optim_field FIELDS[] = {FG_OPTIM_LENIENT_FIELDS(1e-3, 0.01)};

static const fg_optim_state_desc STATE[] = {
    {"m", C(state_dtype), FG_OPTIM_STATE_ALWAYS, true},
    {"v", C(second_moment_dtype), FG_OPTIM_STATE_ALWAYS, true},
};

/* f[0] keep = f32(1 - lr*wd) (1 when wd = 0), f[1..6] the moments' scalars, f[7] 0. */
static void adamw_pack(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p) {
  (void)x;
  memset(p, 0, sizeof *p);
  p->f[0] = c->weight_decay != 0.0f ? (float)(1.0 - (double)c->lr * (double)c->weight_decay) : 1.0f;
  fg_optim_pack_adam_moments(c, t, p);
}

static const fg_optim_op_pack PACKS[] = {{"step", FG_OP_ADAMW, FG_OP_ADAMW_MASTER, adamw_pack}};

static const fg_optim_op_pack *adamw_step_pack(const fg_optim_config *c) {
  (void)c;
  return &PACKS[0];
}

const fg_optim_kind_ops fg_optim_kind_adamw = {
    .d = {FG_OPTIM_ADAMW, "adamw", FIELDS, sizeof FIELDS / sizeof FIELDS[0], NULL, 0, false, STATE, 2, PACKS, 1,
          FG_OFRAME_KIND_ADAMW},
    .check = fg_optim_check_moments,
    .step_pack = adamw_step_pack,
};
