/* The optimizer kinds, by their fixed numbers (training/optim_kind.h), and the helpers the
 * descriptors share. */
#include <string.h>

#include "training/optim_kind.h"

static const fg_optim_kind_ops *const KINDS[] = {
    [FG_OPTIM_SGD] = &fg_optim_kind_sgd,         [FG_OPTIM_ADAM] = &fg_optim_kind_adam,
    [FG_OPTIM_ADAMW] = &fg_optim_kind_adamw,     [FG_OPTIM_MUON] = &fg_optim_kind_muon,
    [FG_OPTIM_APOLLO] = &fg_optim_kind_apollo,   [FG_OPTIM_APOLLO_MINI] = &fg_optim_kind_apollo_mini,
};

const fg_optim_kind_ops *fg_optim_kind_ops_of(fg_optim_kind kind) {
  return (unsigned)kind < sizeof KINDS / sizeof KINDS[0] ? KINDS[kind] : NULL;
}

const fg_optim_kind_desc *fg_optim_kind_describe(fg_optim_kind kind) {
  const fg_optim_kind_ops *k = fg_optim_kind_ops_of(kind);
  return k ? &k->d : NULL;
}

bool fg_optim_state_present(const fg_optim_config *c, const fg_optim_state_desc *b) {
  if (b->present_field == FG_OPTIM_STATE_ALWAYS) return true;
  float v;
  memcpy(&v, (const char *)c + b->present_field, sizeof v);
  return v != 0.0f;
}

fg_dtype fg_optim_state_dtype(const fg_optim_config *c, const fg_optim_state_desc *b) {
  if (!fg_optim_state_present(c, b) || b->dtype_field == FG_OPTIM_STATE_F32) return FG_F32;
  fg_dtype d;
  memcpy(&d, (const char *)c + b->dtype_field, sizeof d);
  return d;
}
