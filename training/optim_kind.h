/* An optimizer kind as one descriptor (internal; training/optim_kind_<name>.c): the public
 * part (fg_optim_kind_desc: config fields with their defaults, state buffers, op packing,
 * frame kind) and the hooks through which the shared code (training/optim*.c) runs what a
 * kind does differently. Adding an optimizer is its file here, its row in
 * training/optim_kinds.c and its fixed number in fg_optim_kind; a kind with a state frame
 * of a new layout also adds a frame row (formats/optim_frame_kinds.c). */
#ifndef FORGIA_TRAINING_OPTIM_KIND_H
#define FORGIA_TRAINING_OPTIM_KIND_H

#include <stddef.h>

#include "training/optim_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_optim_kind_ops {
  fg_optim_kind_desc d; /* what fg_optim_kind_describe returns */
  /* The checks of c beyond the shared ones (lr, weight_decay, state_dtype); NULL: none. */
  fg_status (*check)(const fg_optim_config *c);
  /* What the kind keeps beside its slot list, made by fg_optim_create; NULL: nothing. */
  fg_status (*create)(fg_optim *o);
  /* Registration ahead of the shared slot list (fg_optim_add: to_fallback false;
   * fg_optim_add_fallback: true): sets *done when it took t. NULL: the shared list only. */
  fg_status (*add)(fg_optim *o, fg_tensor *t, const char *name, bool to_fallback, bool *done);
  /* A step of its own; NULL: the shared multi-tensor step with step_pack's op. */
  fg_status (*step)(fg_optim *o, fg_stream *s);
  /* The entry of d.packs the shared step launches for c. */
  const fg_optim_op_pack *(*step_pack)(const fg_optim_config *c);
  /* Writes c's header config into f (f->kind already d.frame_kind); NULL: none. */
  void (*header)(const fg_optim_config *c, fg_oframe *f);
  /* State through frames of a layout of its own; NULL: the shared slot records. */
  fg_status (*state_fill)(fg_optim *o, fg_oframe *f);
  fg_status (*state_check)(fg_optim *o, const fg_oframe *f);
  fg_status (*state_commit)(fg_optim *o, const fg_oframe *f);
} fg_optim_kind_ops;

/* The config fields SGD, Adam and AdamW share: one lenient set, so that a config written for
 * one of them runs under another, each kind reading its own. They differ only in defaults:
 * lr and weight decay (torch's and Fucina's). */
#define FG_OPTIM_LENIENT_FIELDS(lr0, wd0)                                                               \
  {"lr", FG_OPTIM_FIELD_F32, offsetof(fg_optim_config, lr), lr0, {NULL, NULL}},                         \
      {"weight_decay", FG_OPTIM_FIELD_F32, offsetof(fg_optim_config, weight_decay), wd0, {NULL, NULL}}, \
      {"momentum", FG_OPTIM_FIELD_F32, offsetof(fg_optim_config, momentum), 0.0, {NULL, NULL}},         \
      {"dampening", FG_OPTIM_FIELD_F32, offsetof(fg_optim_config, dampening), 0.0, {NULL, NULL}},       \
      {"nesterov", FG_OPTIM_FIELD_BOOL, offsetof(fg_optim_config, nesterov), 0.0, {NULL, NULL}},        \
      {"beta1", FG_OPTIM_FIELD_F32, offsetof(fg_optim_config, beta1), 0.9, {NULL, NULL}},               \
      {"beta2", FG_OPTIM_FIELD_F32, offsetof(fg_optim_config, beta2), 0.999, {NULL, NULL}},             \
      {"eps", FG_OPTIM_FIELD_F32, offsetof(fg_optim_config, eps), 1e-8, {NULL, NULL}},                  \
      {"state_dtype", FG_OPTIM_FIELD_DTYPE, offsetof(fg_optim_config, state_dtype), FG_F32, {NULL, NULL}}, \
      {"second_moment_dtype", FG_OPTIM_FIELD_DTYPE, offsetof(fg_optim_config, second_moment_dtype), FG_F32, {NULL, NULL}}

/* The row of kind, or NULL for an unknown kind. */
const fg_optim_kind_ops *fg_optim_kind_ops_of(fg_optim_kind kind);

extern const fg_optim_kind_ops fg_optim_kind_sgd, fg_optim_kind_adam, fg_optim_kind_adamw, fg_optim_kind_muon,
    fg_optim_kind_apollo, fg_optim_kind_apollo_mini;

/* Shared by several kinds' checks: betas in [0, 1), eps > 0, an f32 or bf16 second moment. */
fg_status fg_optim_check_moments(const fg_optim_config *c);
/* Adam's and AdamW's common slots f[1..6] (omb1, beta2, omb2, step_size, bc2s, eps) for step t. */
void fg_optim_pack_adam_moments(const fg_optim_config *c, uint64_t t, fg_op_params *p);

/* State buffer b of a kind under c: whether it exists and its dtype (f32 when absent). */
bool fg_optim_state_present(const fg_optim_config *c, const fg_optim_state_desc *b);
fg_dtype fg_optim_state_dtype(const fg_optim_config *c, const fg_optim_state_desc *b);

/* Muon's and APOLLO's ops (their entries of d.packs), called by their steps. */
void fg_muon_pack_momentum(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p);
void fg_muon_pack_apply(const fg_optim_config *c, uint64_t t, float lr_eff, fg_op_params *p);
void fg_apollo_pack_moment(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p);
void fg_apollo_pack_apply(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p);
void fg_apollo_pack_fallback(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p);

#ifdef __cplusplus
}
#endif
#endif
