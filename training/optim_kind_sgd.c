/* SGD (torch.optim.SGD as Fucina writes it): config fields, the momentum buffer, the packing
 * of the sgd ops (elem/op_table.h) and the FZS frame header. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "training/optim_kind.h"

#define C(f) offsetof(fg_optim_config, f)

/* The lenient set of training/optim_kind.h; SGD reads lr, weight_decay, momentum, dampening,
 * nesterov and state_dtype. */
static const fg_optim_field FIELDS[] = {FG_OPTIM_LENIENT_FIELDS(1e-3, 0.0)};

/* Momentum 0 keeps no buffer (Fucina allocates none either). */
static const fg_optim_state_desc STATE[] = {{"momentum_buffer", C(state_dtype), C(momentum), true}};

static fg_status sgd_check(const fg_optim_config *c) {
  if (!isfinite(c->momentum) || c->momentum < 0.0f || !isfinite(c->dampening))
    return fg_fail(FG_ERR_INVALID_ARG, "sgd: momentum %g / dampening %g, expected finite, momentum >= 0", c->momentum,
                   c->dampening);
  if (c->nesterov && (c->momentum <= 0.0f || c->dampening != 0.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "sgd: nesterov needs momentum > 0 and dampening 0 (got %g and %g)", c->momentum,
                   c->dampening);
  return FG_OK;
}

/* f[0] lr, f[1] wd, f[2] momentum, f[3] f32(1 - dampening); u[0] bit 0 nesterov, bit 1 the
 * first step (the buffer starts as the gradient). */
static void sgd_pack(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p) {
  (void)x;
  memset(p, 0, sizeof *p);
  p->f[0] = c->lr;
  p->f[1] = c->weight_decay;
  p->f[2] = c->momentum;
  p->f[3] = (float)(1.0 - (double)c->dampening);
  p->u[0] = (c->nesterov ? 1u : 0u) | (t == 1 ? 2u : 0u);
}

static const fg_optim_op_pack PACKS[] = {
    {"step", FG_OP_SGD, FG_OP_SGD_MASTER, sgd_pack},
    {"momentum step", FG_OP_SGD_MOMENTUM, FG_OP_SGD_MOMENTUM_MASTER, sgd_pack},
};

static const fg_optim_op_pack *sgd_step_pack(const fg_optim_config *c) { return &PACKS[c->momentum != 0.0f]; }

static void sgd_header(const fg_optim_config *c, fg_oframe *f) {
  memcpy(&f->sgd.momentum_bits, &c->momentum, 4);
  memcpy(&f->sgd.dampening_bits, &c->dampening, 4);
  f->sgd.nesterov = c->nesterov;
}

const fg_optim_kind_ops fg_optim_kind_sgd = {
    .d = {FG_OPTIM_SGD, "sgd", FIELDS, sizeof FIELDS / sizeof FIELDS[0], NULL, 0, false, STATE, 1, PACKS, 2,
          FG_OFRAME_KIND_SGD},
    .check = sgd_check,
    .step_pack = sgd_step_pack,
    .header = sgd_header,
};
