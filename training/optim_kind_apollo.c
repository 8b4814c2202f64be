/* APOLLO and APOLLO-Mini (Fucina's Apollo): config fields, the low-rank moments, the
 * packing of the apollo ops (elem/op_apollo.h) and the FZP frame header. The state, the
 * step and the frames of its two slot lists are training/optim_apollo*.c. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "training/optim_apollo_internal.h"
#include "training/optim_kind.h"

#define C(f) offsetof(fg_optim_config, f)

/* APOLLO-Mini is APOLLO with rank 1, tensor scaling and scale 128. */
#define APOLLO_FIELDS(rank_def, scale_def, type_def)                                                   \
  {"lr", FG_OPTIM_FIELD_F32, C(lr), 0.01, {NULL, NULL}},                                         \
  {"weight_decay", FG_OPTIM_FIELD_F32, C(weight_decay), 0.0, {NULL, NULL}},                      \
  {"beta1", FG_OPTIM_FIELD_F32, C(beta1), 0.9, {NULL, NULL}},                                    \
  {"beta2", FG_OPTIM_FIELD_F32, C(beta2), 0.999, {NULL, NULL}},                                  \
  {"eps", FG_OPTIM_FIELD_F32, C(eps), 1e-6, {NULL, NULL}},                                       \
  {"scale", FG_OPTIM_FIELD_F32, C(apollo_scale), scale_def, {NULL, NULL}},                           \
  {"rank", FG_OPTIM_FIELD_U64, C(rank), rank_def, {NULL, NULL}},                                     \
  {"update_proj_gap", FG_OPTIM_FIELD_U64, C(update_proj_gap), 200.0, {NULL, NULL}},              \
  {"scale_type", FG_OPTIM_FIELD_ENUM, C(scale_type), type_def, {"channel", "tensor"}},         \
  {"correct_bias", FG_OPTIM_FIELD_BOOL, C(correct_bias), 1.0, {NULL, NULL}},                     \
  {"scale_front", FG_OPTIM_FIELD_BOOL, C(scale_front), 0.0, {NULL, NULL}},                       \
  {"disable_norm_growth_limiter", FG_OPTIM_FIELD_BOOL, C(disable_norm_growth_limiter), 0.0, {NULL, NULL}}, \
  {"seed", FG_OPTIM_FIELD_U64, C(seed), 0.0, {NULL, NULL}}

static const fg_optim_field FIELDS[] = {APOLLO_FIELDS(128.0, 1.0, FG_APOLLO_CHANNEL)};
static const fg_optim_field MINI_FIELDS[] = {APOLLO_FIELDS(1.0, 128.0, FG_APOLLO_TENSOR)};

/* Main slots: rows*rank (tall) or rank*cols (wide) f32 values each; the fallback's are the
 * parameter's size (training/optim_apollo.c). */
static const fg_optim_state_desc STATE[] = {
    {"m", FG_OPTIM_STATE_F32, FG_OPTIM_STATE_ALWAYS, true},
    {"v", FG_OPTIM_STATE_F32, FG_OPTIM_STATE_ALWAYS, true},
};

static fg_status apollo_check(const fg_optim_config *c) {
  fg_status s = fg_optim_check_moments(c);
  if (s) return s;
  const char *k = fg_optim_kind_name(c->kind);
  if (c->rank < 1 || c->update_proj_gap < 1)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: rank %llu / update_proj_gap %llu, expected >= 1", k,
                   (unsigned long long)c->rank, (unsigned long long)c->update_proj_gap);
  if (!(c->apollo_scale > 0.0f) || !isfinite(c->apollo_scale))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: apollo_scale %g, expected finite and > 0", k, c->apollo_scale);
  if (c->scale_type != FG_APOLLO_CHANNEL && c->scale_type != FG_APOLLO_TENSOR)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: unknown scale_type %d", k, (int)c->scale_type);
  return FG_OK;
}

/* f32(lr * sqrt(bc2) / bc1) with bias correction, else lr (t: the post-increment count). */
static float apollo_step_size(const fg_optim_config *c, uint64_t t) {
  if (!c->correct_bias) return c->lr;
  const double bc1 = 1.0 - pow((double)c->beta1, (double)t);
  const double bc2 = 1.0 - pow((double)c->beta2, (double)t);
  return (float)((double)c->lr * sqrt(bc2) / bc1);
}

static float apollo_decay_alpha(const fg_optim_config *c) {
  return c->weight_decay > 0.0f ? (float)(-((double)c->lr * (double)c->weight_decay)) : 0.0f;
}

/* The moment scalars both of APOLLO's moment updates use (f[0..3]): beta1, 1 - beta1,
 * beta2, 1 - beta2, the differences taken in f64 and rounded once, as Fucina does. */
void fg_apollo_pack_moment(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p) {
  (void)t, (void)x;
  memset(p, 0, sizeof *p);
  p->f[0] = c->beta1;
  p->f[1] = (float)(1.0 - (double)c->beta1);
  p->f[2] = c->beta2;
  p->f[3] = (float)(1.0 - (double)c->beta2);
}

/* f[0] back = sqrt(scale) when it is applied after the limiter, else 1; f[1] step_size;
 * f[2] decay alpha. The limiter (dscalar) is the step's device memory. */
void fg_apollo_pack_apply(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p) {
  (void)x;
  memset(p, 0, sizeof *p);
  p->f[0] = !c->scale_front && c->apollo_scale != 1.0f ? sqrtf(c->apollo_scale) : 1.0f;
  p->f[1] = apollo_step_size(c, t);
  p->f[2] = apollo_decay_alpha(c);
}

/* The legacy-HF AdamW of the fallback: the moment scalars, f[4] step_size, f[5] eps, f[6]
 * decay alpha. */
void fg_apollo_pack_fallback(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p) {
  fg_apollo_pack_moment(c, t, x, p);
  p->f[4] = apollo_step_size(c, t);
  p->f[5] = c->eps;
  p->f[6] = apollo_decay_alpha(c);
}

static const fg_optim_op_pack PACKS[] = {
    {"moment", FG_OP_APOLLO_MOMENT, FG_OP_APOLLO_MOMENT, fg_apollo_pack_moment},
    {"apply", FG_OP_APOLLO_APPLY, FG_OP_APOLLO_APPLY_MASTER, fg_apollo_pack_apply},
    {"fallback", FG_OP_APOLLO_HF_ADAMW, FG_OP_APOLLO_HF_ADAMW_MASTER, fg_apollo_pack_fallback},
};

static void apollo_header(const fg_optim_config *c, fg_oframe *f) {
  f->apollo.rank = c->rank;
  f->apollo.update_proj_gap = c->update_proj_gap;
  memcpy(&f->apollo.scale_bits, &c->apollo_scale, 4);
  f->apollo.scale_type = (uint8_t)c->scale_type;
  f->apollo.correct_bias = c->correct_bias;
  f->apollo.scale_front = c->scale_front;
  f->apollo.disable_limiter = c->disable_norm_growth_limiter;
}

/* Every parameter goes through APOLLO's own lists (main or fallback). */
static fg_status apollo_add(fg_optim *o, fg_tensor *t, const char *name, bool to_fallback, bool *done) {
  *done = true;
  return fg_apollo_add(o, t, name, to_fallback);
}

#define APOLLO_OPS(kind_, name_, fields_)                                                               \
  {                                                                                                     \
    .d = {kind_, name_, fields_, sizeof fields_ / sizeof fields_[0], NULL, 0, true, STATE, 2, PACKS, 3, \
          FG_OFRAME_KIND_APOLLO},                                                                       \
    .check = apollo_check, .create = fg_apollo_create, .add = apollo_add, .step = fg_apollo_step,       \
    .header = apollo_header, .state_fill = fg_apollo_state_fill, .state_check = fg_apollo_state_check,  \
    .state_commit = fg_apollo_state_commit,                                                             \
  }

const fg_optim_kind_ops fg_optim_kind_apollo = APOLLO_OPS(FG_OPTIM_APOLLO, "apollo", FIELDS);
const fg_optim_kind_ops fg_optim_kind_apollo_mini = APOLLO_OPS(FG_OPTIM_APOLLO_MINI, "apollo-mini", MINI_FIELDS);
