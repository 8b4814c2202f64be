/* Muon's part of the optimizer (internal; training/optim_muon.c). A Muon fg_optim keeps its
 * matrix parameters in its own slots (m = the momentum buffer in state_dtype, v = an f32
 * buffer for the update U and then O) and everything else in o->fallback, an ordinary AdamW
 * fg_optim created from c.fallback. */
#ifndef FORGIA_TRAINING_OPTIM_MUON_H
#define FORGIA_TRAINING_OPTIM_MUON_H

#include "training/optim_internal.h"

/* The checks of a Muon config beyond the common ones. */
fg_status fg_muon_config_check(const fg_optim_config *c);
/* The AdamW config of c's fallback. */
fg_optim_config fg_muon_fallback_config(const fg_optim_config *c);
/* Before fg_optim_add registers t in o (Muon): refuses a tensor the fallback holds, routes a
 * parameter of fewer than 2 dims (or any, when to_fallback) to the fallback (*done = true),
 * otherwise makes room for one more Muon slot (workspace, argument arrays). Changes nothing
 * visible on failure. */
fg_status fg_muon_route(fg_optim *o, fg_tensor *t, const char *name, bool to_fallback, bool *done);
/* Fucina's Muon.step: the Muon slots (momentum, Newton-Schulz, update), then the fallback. */
fg_status fg_muon_step(fg_optim *o, fg_stream *s);

#endif
