/* Muon (Fucina's optim.Muon): config fields (its own and its embedded AdamW's), the momentum
 * and update buffers, the packing of the muon ops (elem/op_muon.h) and the FZM frame header.
 * The step and the routing of parameters are training/optim_muon.c. */
#include <stddef.h>
#include <string.h>

#include "training/optim_kind.h"
#include "training/optim_muon.h"

#define C(f) offsetof(fg_optim_config, f)
#define FB(f) offsetof(fg_optim_fallback_config, f)

static const fg_optim_field FIELDS[] = {
    {"lr", FG_OPTIM_FIELD_F32, C(lr), 0.02, {NULL, NULL}},
    {"weight_decay", FG_OPTIM_FIELD_F32, C(weight_decay), 0.0, {NULL, NULL}},
    {"momentum", FG_OPTIM_FIELD_F32, C(momentum), 0.95, {NULL, NULL}},
    {"nesterov", FG_OPTIM_FIELD_BOOL, C(nesterov), 1.0, {NULL, NULL}},
    {"state_dtype", FG_OPTIM_FIELD_DTYPE, C(state_dtype), FG_F32, {NULL, NULL}},
    {"ns_steps", FG_OPTIM_FIELD_U32, C(ns_steps), 5.0, {NULL, NULL}},
    {"scale", FG_OPTIM_FIELD_ENUM, C(muon_scale), FG_MUON_SPECTRAL, {"spectral", "match_rms_adamw"}},
};

/* The AdamW for the parameters Muon must not orthogonalise ("fallback" in CONFIG.json). */
static const fg_optim_field FALLBACK_FIELDS[] = {
    {"lr", FG_OPTIM_FIELD_F32, FB(lr), 3e-4, {NULL, NULL}},
    {"beta1", FG_OPTIM_FIELD_F32, FB(beta1), 0.9, {NULL, NULL}},
    {"beta2", FG_OPTIM_FIELD_F32, FB(beta2), 0.95, {NULL, NULL}},
    {"eps", FG_OPTIM_FIELD_F32, FB(eps), 1e-10, {NULL, NULL}},
    {"weight_decay", FG_OPTIM_FIELD_F32, FB(weight_decay), 0.0, {NULL, NULL}},
    {"state_dtype", FG_OPTIM_FIELD_DTYPE, FB(state_dtype), FG_F32, {NULL, NULL}},
    {"second_moment_dtype", FG_OPTIM_FIELD_DTYPE, FB(second_moment_dtype), FG_F32, {NULL, NULL}},
};

/* The update buffer (U, then O) is f32 work memory, not state: no frame carries it. */
static const fg_optim_state_desc STATE[] = {
    {"momentum", C(state_dtype), FG_OPTIM_STATE_ALWAYS, true},
    {"update", FG_OPTIM_STATE_F32, FG_OPTIM_STATE_ALWAYS, false},
};

fg_optim_config fg_muon_fallback_config(const fg_optim_config *c) {
  fg_optim_config f = fg_optim_defaults(FG_OPTIM_ADAMW);
  f.lr = c->fallback.lr;
  f.beta1 = c->fallback.beta1;
  f.beta2 = c->fallback.beta2;
  f.eps = c->fallback.eps;
  f.weight_decay = c->fallback.weight_decay;
  f.state_dtype = c->fallback.state_dtype;
  f.second_moment_dtype = c->fallback.second_moment_dtype;
  return f;
}

fg_status fg_muon_config_check(const fg_optim_config *c) {
  if (c->ns_steps < 1) return fg_fail(FG_ERR_INVALID_ARG, "muon: ns_steps %u, expected >= 1", c->ns_steps);
  if (!(c->momentum >= 0.0f && c->momentum < 1.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "muon: momentum %g, expected in [0, 1)", c->momentum);
  if (c->muon_scale != FG_MUON_SPECTRAL && c->muon_scale != FG_MUON_MATCH_RMS_ADAMW)
    return fg_fail(FG_ERR_INVALID_ARG, "muon: scale %d, expected spectral (0) or match_rms_adamw (1)", (int)c->muon_scale);
  const fg_optim_config f = fg_muon_fallback_config(c);
  fg_status s = fg_optim_config_check(&f);
  return s ? fg_fail_prefix(s, "muon fallback: ") : FG_OK;
}

/* f[0] beta, f[1] w = 1 - beta (in f32), u[0] nesterov. */
void fg_muon_pack_momentum(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p) {
  (void)t, (void)x;
  memset(p, 0, sizeof *p);
  p->f[0] = c->momentum;
  p->f[1] = 1.0f - c->momentum;
  p->u[0] = c->nesterov ? 1u : 0u;
}

/* f[0] keep = f32(1 - lr*wd) from the base lr (1 when wd = 0), f[1] lr_eff. */
void fg_muon_pack_apply(const fg_optim_config *c, uint64_t t, float lr_eff, fg_op_params *p) {
  (void)t;
  memset(p, 0, sizeof *p);
  p->f[0] = c->weight_decay != 0.0f ? (float)(1.0 - (double)c->lr * (double)c->weight_decay) : 1.0f;
  p->f[1] = lr_eff;
}

static const fg_optim_op_pack PACKS[] = {
    {"momentum", FG_OP_MUON_MOMENTUM, FG_OP_MUON_MOMENTUM, fg_muon_pack_momentum},
    {"apply", FG_OP_MUON_APPLY, FG_OP_MUON_APPLY_MASTER, fg_muon_pack_apply},
};

/* The embedded AdamW, made from c.fallback. */
static fg_status muon_create(fg_optim *o) {
  const fg_optim_config f = fg_muon_fallback_config(&o->c);
  return fg_optim_create(o->dev, &f, &o->fallback);
}

static void muon_header(const fg_optim_config *c, fg_oframe *f) {
  f->muon.scale = (uint8_t)c->muon_scale;
  f->muon.nesterov = c->nesterov;
  f->muon.ns_steps = c->ns_steps;
}

const fg_optim_kind_ops fg_optim_kind_muon = {
    .d = {FG_OPTIM_MUON, "muon", FIELDS, sizeof FIELDS / sizeof FIELDS[0], FALLBACK_FIELDS,
          sizeof FALLBACK_FIELDS / sizeof FALLBACK_FIELDS[0], true, STATE, 2, PACKS, 2, FG_OFRAME_KIND_MUON},
    .check = fg_muon_config_check,
    .create = muon_create,
    .add = fg_muon_route,
    .step = fg_muon_step,
    .header = muon_header,
};
