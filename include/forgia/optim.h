/* Optimizers with device-resident state: SGD, Adam and AdamW, each a faithful port of torch.optim's
 * single-tensor step as Fucina writes it (its src/optim.zig), so a trajectory is Fucina's bit for
 * bit and torch's within a few f32 ulps; Muon (forgia/muon.h: Newton-Schulz over the GEMM) and
 * APOLLO / APOLLO-Mini (forgia/apollo.h: a regenerated random projection), each with its AdamW
 * fallback, which are Fucina's bits with the exact GEMM (fg_device_set_gemm_mode) and differ only
 * by GEMM rounding with the fast one.
 *
 *   fg_optim_config c = fg_optim_defaults(FG_OPTIM_ADAMW);
 *   c.lr = 3e-4f;
 *   fg_optim *opt;
 *   fg_optim_create(dev, &c, &opt);
 *   fg_optim_add(opt, w, "blk.0.attn_q.weight");       // w: f32/f16/bf16 tensor on dev
 *   for (...) {
 *     fg_tensor_grad_zero(...) / fg_optim_zero_grad(opt, s);
 *     ... backward writes w->grad (f32) ...
 *     fg_optim_clip_grad_norm(opt, 1.0f, NULL, s);      // the norm never leaves the device
 *     fg_optim_step(opt, s);
 *   }
 *   fg_optim_free(opt);
 *
 * Parameters are borrowed (they must outlive the optimizer); the state (moments, momentum
 * buffers, the f32 master copy of each 16-bit parameter) is owned and lives on the
 * parameters' device. A 16-bit parameter is stepped through its master, which is widened
 * from the parameter when it is added: set its values before adding it. A parameter whose
 * gradient is NULL (never allocated) is skipped and its step count does not advance.
 *
 * One step is one op-layer launch per group of parameters with the same dtype layout and
 * step count (multi-tensor apply), never one per tensor; every update is an elem/ op, so CPU
 * and CUDA give the same bits. Scalars (bias corrections, step sizes, the decay factor) are
 * computed in f64 and rounded once to f32, as Fucina does.
 *
 * Calls with s NULL are synchronous; otherwise queued on s (the state and the parameters must
 * not be touched until s completes). An optimizer is used by one thread at a time. */
#ifndef FORGIA_OPTIM_H
#define FORGIA_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/ops.h"
#include "forgia/optim_frame.h"
#include "forgia/status.h"
#include "forgia/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fixed numbers (pinned by a test): a new kind takes the next number, none is renumbered. */
typedef enum fg_optim_kind {
  FG_OPTIM_SGD = 0,
  FG_OPTIM_ADAM = 1,
  FG_OPTIM_ADAMW = 2,
  FG_OPTIM_MUON = 3,       /* Newton-Schulz orthogonalised momentum, AdamW for the rest */
  FG_OPTIM_APOLLO = 4,     /* low-rank random projection of Adam's moments */
  FG_OPTIM_APOLLO_MINI = 5 /* APOLLO with rank 1, tensor scaling, scale 128 */
} fg_optim_kind;

/* Muon's learning-rate scale: spectral = lr * sqrt(max(1, rows/cols)); match_rms_adamw =
 * (lr * 0.2) * sqrt(max(rows, cols)). Values are Fucina's wire bytes. */
typedef enum fg_muon_scale { FG_MUON_SPECTRAL = 0, FG_MUON_MATCH_RMS_ADAMW = 1 } fg_muon_scale;
/* APOLLO's gradient scaling factor: one per channel or one for the tensor (wire bytes). */
typedef enum fg_apollo_scale_type { FG_APOLLO_CHANNEL = 0, FG_APOLLO_TENSOR = 1 } fg_apollo_scale_type;

/* The AdamW embedded in Muon for the parameters Muon must not orthogonalise. */
typedef struct fg_optim_fallback_config {
  float lr, beta1, beta2, eps, weight_decay;
  fg_dtype state_dtype, second_moment_dtype;
} fg_optim_fallback_config;

/* Fucina's config structs in one (f32 fields, as Fucina keeps them). The hyperparameters
 * that several kinds share come first; a kind's own fields sit in a union of per-kind
 * structs, padded to a fixed FG_OPTIM_CONFIG_KIND_BYTES, so that adding an optimizer adds a
 * struct to the union and never changes sizeof(fg_optim_config) (FG_OPTIM_CONFIG_SIZE,
 * asserted below and pinned by a test): code built against one release keeps working with
 * the next. Fields a kind does not read are ignored; only the kind's own struct of the union
 * is meaningful (fg_optim_defaults zeroes the rest). fg_optim_kind_describe(kind)->fields
 * lists the fields each kind reads. */
#define FG_OPTIM_CONFIG_KIND_BYTES 128
#define FG_OPTIM_CONFIG_SIZE 176
typedef struct fg_optim_config {
  fg_optim_kind kind;
  float lr;
  float weight_decay;         /* SGD, Adam: coupled (g + wd*p); AdamW: decoupled, before the step */
  float momentum, dampening;  /* SGD: momentum 0 keeps no buffer */
  bool nesterov;              /* SGD: needs momentum > 0 and dampening == 0 */
  float beta1, beta2, eps;    /* Adam, AdamW */
  fg_dtype state_dtype;       /* FG_F32 or FG_BF16: SGD's buffer, Adam's m, Muon's momentum */
  fg_dtype second_moment_dtype; /* FG_F32 or FG_BF16: Adam's v */
  union {
    struct { /* Muon (momentum and nesterov above; state_dtype is the momentum buffer's) */
      uint32_t ns_steps;
      fg_muon_scale muon_scale;
      fg_optim_fallback_config fallback;
    };
    struct { /* APOLLO and APOLLO-Mini (lr, betas, eps, weight_decay above; state always f32) */
      uint64_t rank, update_proj_gap;
      float apollo_scale;
      fg_apollo_scale_type scale_type;
      bool correct_bias, scale_front, disable_norm_growth_limiter;
      uint64_t seed;
    };
    uint8_t kind_reserved[FG_OPTIM_CONFIG_KIND_BYTES]; /* the union's fixed size */
  };
} fg_optim_config;

#ifdef __cplusplus
static_assert(sizeof(fg_optim_config) == FG_OPTIM_CONFIG_SIZE, "fg_optim_config changed size");
#else
_Static_assert(sizeof(fg_optim_config) == FG_OPTIM_CONFIG_SIZE, "fg_optim_config changed size");
#endif

/* Fucina's defaults: SGD lr 1e-3, no momentum, no decay; Adam lr 1e-3, betas 0.9/0.999,
 * eps 1e-8, no decay; AdamW the same with weight_decay 0.01; Muon lr 0.02, momentum 0.95,
 * nesterov, 5 steps, no decay, spectral, fallback AdamW lr 3e-4, betas 0.9/0.95, eps 1e-10,
 * no decay; APOLLO lr 0.01, betas 0.9/0.999, eps 1e-6, no decay, rank 128, gap 200, scale 1,
 * channel, bias correction and limiter on, seed 0; APOLLO-Mini the same with rank 1, tensor
 * scaling and scale 128; f32 state. Every kind starts from lr 1e-3, betas 0.9/0.999, eps
 * 1e-8 and f32 state, then takes its own defaults (fg_optim_kind_describe). */
FG_API fg_optim_config fg_optim_defaults(fg_optim_kind kind);
/* "sgd", "adam", "adamw", "muon", "apollo", "apollo-mini"; NULL for an unknown kind. */
FG_API const char *fg_optim_kind_name(fg_optim_kind kind);

/* ---- Descriptors: what each kind is, as data (training/optim_kind_<name>.c). The CLI's
 * config reader, `forgia inspect` and the tests read these instead of lists of their own. */

typedef enum fg_optim_field_type {
  FG_OPTIM_FIELD_F32 = 0,   /* float */
  FG_OPTIM_FIELD_BOOL = 1,  /* bool */
  FG_OPTIM_FIELD_DTYPE = 2, /* fg_dtype: f32 or bf16 */
  FG_OPTIM_FIELD_U32 = 3,   /* uint32_t */
  FG_OPTIM_FIELD_U64 = 4,   /* uint64_t */
  FG_OPTIM_FIELD_ENUM = 5,  /* a C enum (int-sized) with values 0..1 named by names[] */
} fg_optim_field_type;

/* One config field a kind reads. */
typedef struct fg_optim_field {
  const char *name;         /* its CONFIG.json key */
  fg_optim_field_type type;
  size_t offset;            /* in fg_optim_config (in fg_optim_fallback_config for fallback_fields) */
  double def;               /* its default (a dtype or an enum: the value; a bool: 0 or 1) */
  const char *names[2];     /* ENUM: the names of 0 and 1 */
} fg_optim_field;

/* One state buffer a parameter keeps (besides the f32 master of a 16-bit parameter). */
typedef struct fg_optim_state_desc {
  const char *name;         /* "m", "v", "momentum_buffer" ... */
  size_t dtype_field;       /* offset of the fg_dtype in fg_optim_config that gives its dtype, or
                               FG_OPTIM_STATE_F32: always f32 */
  size_t present_field;     /* offset of a float in fg_optim_config: the buffer exists only when it
                               is nonzero (SGD's momentum); FG_OPTIM_STATE_ALWAYS: always */
  bool in_frame;            /* saved in the state frame (Muon's update buffer is not) */
} fg_optim_state_desc;
#define FG_OPTIM_STATE_F32 ((size_t)-1)
#define FG_OPTIM_STATE_ALWAYS ((size_t)-1)

/* The packing of one op-table op's parameter block (forgia/ops.h, elem/op_table.h) from a
 * config: t is the step count after the step (1 on the first), x the op's per-launch scalar
 * where it has one (Muon's apply: lr_eff), else unused. Every slot the op reads is written,
 * the others zeroed; a device pointer (dscalar) is the caller's. */
typedef struct fg_optim_op_pack {
  const char *role;         /* "step", "momentum", "apply", "moment", "fallback" */
  fg_op_kind op, op_master; /* for an f32 parameter / a 16-bit one stepped through its master
                               (op_master == op when the op has no master form) */
  void (*pack)(const fg_optim_config *c, uint64_t t, float x, fg_op_params *p);
} fg_optim_op_pack;

typedef struct fg_optim_kind_desc {
  fg_optim_kind kind;
  const char *name;                   /* fg_optim_kind_name */
  const fg_optim_field *fields;       /* the fields it reads, with their defaults */
  size_t n_fields;
  const fg_optim_field *fallback_fields; /* the embedded AdamW's ("fallback" in CONFIG.json), or NULL */
  size_t n_fallback_fields;
  bool has_fallback;                  /* takes fg_optim_add_fallback ("fallback_params") */
  const fg_optim_state_desc *state;   /* per parameter (main slots) */
  size_t n_state;
  const fg_optim_op_pack *packs;      /* the ops it launches */
  size_t n_packs;
  fg_oframe_kind frame_kind;          /* its state frame (fg_optim_frame_describe: magics, layout) */
} fg_optim_kind_desc;

/* The descriptor of kind, or NULL for an unknown kind. Kinds are numbered from 0 without
 * gaps: describe(k) for k = 0, 1, ... until NULL lists them all. */
FG_API const fg_optim_kind_desc *fg_optim_kind_describe(fg_optim_kind kind);

typedef struct fg_optim fg_optim;

/* The checks fg_optim_create makes of c, alone (FG_ERR_INVALID_ARG with the reason). */
FG_API fg_status fg_optim_config_check(const fg_optim_config *c);
/* Validates c (unknown kind, non-finite or negative lr, betas outside [0,1), eps <= 0, a bf16
 * or f32 state dtype, torch's nesterov rule) and creates an empty optimizer on dev. */
FG_API fg_status fg_optim_create(fg_device *dev, const fg_optim_config *c, fg_optim **out);
FG_API void fg_optim_free(fg_optim *o); /* NULL-safe */

/* Registers t (f32, f16 or bf16, on the optimizer's device, writable) under name (copied; NULL
 * gives "param<i>", i its index in the registration order). Adding a tensor twice or a name
 * twice is an error that changes nothing. */
FG_API fg_status fg_optim_add(fg_optim *o, fg_tensor *t, const char *name);
/* Muon and APOLLO: registers t with the optimizer's fallback (Muon's embedded AdamW,
 * APOLLO's AdamW), as Fucina's addFallbackParam; parameters that cannot take the main rule
 * (Muon: fewer than 2 dims; APOLLO: not 2 dims) go there from fg_optim_add as well. The
 * fallback's names are a name space of their own. Other kinds: FG_ERR_INVALID_ARG. */
FG_API fg_status fg_optim_add_fallback(fg_optim *o, fg_tensor *t, const char *name);
FG_API size_t fg_optim_count(const fg_optim *o);
FG_API const char *fg_optim_name_at(const fg_optim *o, size_t i); /* NULL past the end */
FG_API uint64_t fg_optim_step_count_at(const fg_optim *o, size_t i); /* steps taken by parameter i */

/* The learning rate used by the next step (schedules set it per step). */
/* The kind o was created with (FG_OPTIM_SGD for NULL). */
FG_API fg_optim_kind fg_optim_kind_of(const fg_optim *o);
FG_API float fg_optim_lr(const fg_optim *o);
FG_API fg_status fg_optim_set_lr(fg_optim *o, float lr);
/* A schedule's factor (forgia/lr_schedule.h): lr = f32(base * factor), base = the lr the
 * optimizer was created with (or last given to fg_optim_set_lr), widened to f64. Muon's
 * embedded AdamW gets the same factor over its own base (fallback.lr); fg_optim_set_lr and
 * fg_optim_lr concern the main lr only. (Fucina attaches each lr to a schedule by hand; a
 * torch scheduler scales every group, which is what a user of one optimizer expects.) */
FG_API fg_status fg_optim_apply_lr_factor(fg_optim *o, double factor);

/* One step over every parameter that has a gradient. A gradient of the wrong size cannot
 * happen (fg_tensor owns it); a parameter on another device is refused at fg_optim_add. */
FG_API fg_status fg_optim_step(fg_optim *o, fg_stream *s);
/* Zeroes every allocated gradient (torch's zero_grad(set_to_none=False)). */
FG_API fg_status fg_optim_zero_grad(fg_optim *o, fg_stream *s);
/* Sum over parameters, in registration order, of the sum of squares of each gradient on
 * Fucina's grid (forgia/reduce.h), into one f64 in device memory out. */
FG_API fg_status fg_optim_grad_squared_norm(fg_optim *o, double *out, fg_stream *s);
/* Every gradient times factor. */
FG_API fg_status fg_optim_scale_gradients(fg_optim *o, float factor, fg_stream *s);
/* Fucina's clipGradNorm: total = f32(sqrt(squared norm)), coef = max_norm / (total + 1e-6),
 * gradients scaled by coef when coef < 1. The norm stays on the device; total_out (host,
 * may be NULL) receives the pre-clip total through an explicit copy, which waits for s. */
FG_API fg_status fg_optim_clip_grad_norm(fg_optim *o, float max_norm, float *total_out, fg_stream *s);

/* The state as Fucina's saveState writes it (forgia/optim_frame.h): AdamW FZA3/4/5, Adam
 * FZAD/FZD4/FZD5, SGD FZS3/4/5, Muon FZM3/4/5 followed by its AdamW's frame, APOLLO FZP3/5
 * (its state is always f32: state_dtype does not apply), the version by Fucina's rule (v5
 * when a parameter is 16-bit, else v4 when a state buffer is bf16, else v3); slots named as
 * registered. *out is malloc'd (free()). */
FG_API fg_status fg_optim_save_state(fg_optim *o, uint8_t **out, size_t *out_len);
/* Loads such a frame (Fucina's or ours): records matched by name (any order), the header
 * config and every slot's dims and state dtypes checked with Fucina's errors; nothing
 * changes unless the whole frame is valid. A 16-bit parameter without a stored master gets
 * its master re-widened from its values. */
FG_API fg_status fg_optim_load_state(fg_optim *o, const uint8_t *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
