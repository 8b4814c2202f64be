/* Adam (torch.optim.Adam as Fucina writes it; weight decay coupled into the gradient):
 * config fields, the moments, the packing of the adam ops (elem/op_table.h), FZAD frames. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "training/optim_kind.h"

#define C(f) offsetof(fg_optim_config, f)

/* The lenient set of training/optim_kind.h. */
static const fg_optim_field FIELDS[] = {FG_OPTIM_LENIENT_FIELDS(1e-3, 0.0)};

static const fg_optim_state_desc STATE[] = {
    {"m", C(state_dtype), FG_OPTIM_STATE_ALWAYS, true},
    {"v", C(second_moment_dtype), FG_OPTIM_STATE_ALWAYS, true},
};

void fg_optim_pack_adam_moments(const fg_optim_config *c, uint64_t t, fg_op_params *p) {
  const double bc1 = 1.0 - pow((double)c->beta1, (double)t);
  const double bc2 = 1.0 - pow((double)c->beta2, (double)t);
  p->f[1] = (float)(1.0 - (double)c->beta1);
  p->f[2] = c->beta2;
  p->f[3] = (float)(1.0 - (double)c->beta2);
  p->f[4] = (float)((double)c->lr / bc1);
  p->f[5] = (float)sqrt(bc2);
  p->f[6] = c->eps;
}

/* f[0] 1 (no decoupled decay), f[1..6] the moments' scalars, f[7] wd (coupled). */
static void adam_pack(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p) {
  (void)x;
  memset(p, 0, sizeof *p);
  p->f[0] = 1.0f;
  fg_optim_pack_adam_moments(c, t, p);
  p->f[7] = c->weight_decay;
}

static const fg_optim_op_pack PACKS[] = {{"step", FG_OP_ADAM, FG_OP_ADAM_MASTER, adam_pack}};

static const fg_optim_op_pack *adam_step_pack(const fg_optim_config *c) {
  (void)c;
  return &PACKS[0];
}

const fg_optim_kind_ops fg_optim_kind_adam = {
    .d = {FG_OPTIM_ADAM, "adam", FIELDS, sizeof FIELDS / sizeof FIELDS[0], NULL, 0, false, STATE, 2, PACKS, 1,
          FG_OFRAME_KIND_ADAM},
    .check = fg_optim_check_moments,
    .step_pack = adam_step_pack,
};
