/* The optimizer object shared by training/optim*.c (internal). */
#ifndef FORGIA_TRAINING_OPTIM_INTERNAL_H
#define FORGIA_TRAINING_OPTIM_INTERNAL_H

#include "forgia/ops.h"
#include "forgia/optim.h"
#include "forgia/optim_frame.h"

typedef struct fg_optim_slot {
  fg_tensor *t;    /* borrowed parameter */
  char *name;      /* owned */
  uint64_t step;   /* steps taken (Fucina's per-slot counter) */
  float *master;   /* f32 copy of a 16-bit parameter on the device, owned; NULL for f32 */
  void *m, *v;     /* Adam's moments or SGD's buffer (m), in the state dtypes; NULL if unused */
} fg_optim_slot;

struct fg_optim {
  fg_device *dev;
  fg_optim_config c;
  double base_lr; /* what schedule factors multiply */
  fg_optim_slot *slots;
  size_t n, cap;
  /* Reused per call, so a step allocates nothing on the host in steady state. */
  fg_op_args *args;
  size_t args_cap;
  const void **grads;
  fg_dtype *grad_dtypes;
  size_t *grad_ns;
  size_t grads_cap;
  double *norm; /* one f64 on the device: the squared gradient norm of a clip */
  /* Muon: the embedded AdamW (owned); APOLLO: its own state (training/optim_apollo*.c). */
  fg_optim *fallback;
  struct fg_apollo_state *apollo;
  /* Muon: the Newton-Schulz workspace shared by its slots (training/optim_muon.c). */
  void *muon_work;
  size_t muon_work_bytes;
};

/* Room for count entries in o->args / the gradient arrays. */
fg_status fg_optim_reserve(fg_optim *o, size_t count);
/* Scales o's gradients by Fucina's clip coefficient from a squared norm in device memory. */
fg_status fg_optim_clip_with(fg_optim *o, const double *norm, float max_norm, fg_stream *s);
/* The gradients of the slots that have one, in registration order: into o->grads (with
 * grad_dtypes and grad_ns, for reductions) and as stream 0 of o->args (for ops). Returns
 * their count. */
size_t fg_optim_collect_grads(fg_optim *o);

/* The checks every registration makes of t under name: a non-empty name, f32/f16/bf16, on
 * o's device, writable, not already in o's main list (nor its name, when main_name: the
 * name is one of that list's). Fallback lists check their own names. */
fg_status fg_optim_check_param(const fg_optim *o, const fg_tensor *t, const char *name, bool main_name);

/* Fucina's matrix view of a parameter: rows = dim 0, cols = the product of the rest. */
void fg_optim_slot_dims(const fg_tensor *t, uint64_t *rows, uint64_t *cols);
/* Host copy (malloc'd into *out; NULL when n is 0 or src NULL) of n elements of dtype dt
 * (f32 or bf16) of a state buffer on dev. */
fg_status fg_optim_state_download(fg_device *dev, const void *src, fg_dtype dt, size_t n, uint8_t **out);

/* The name under which o holds t in any of its slot lists (main, Muon's or APOLLO's
 * fallback), or NULL. */
const char *fg_optim_holds(const fg_optim *o, const fg_tensor *t);

/* Optimizer state <-> frames, in two phases so that a set (or Muon with its fallback) can
 * validate every part before committing any:
 *   fill:   o's live state into f (host copies; names borrowed from o, so f must not outlive
 *           o's slots); free with fg_optim_state_clear (also after a failed fill). What
 *           fg_optim_save_state writes.
 *   check:  validates a parsed frame against o (header config, names, dims, dtypes) and
 *           changes nothing.
 *   commit: copies a frame that check accepted into o's state. */
fg_status fg_optim_state_fill(fg_optim *o, fg_oframe *f);
void fg_optim_state_clear(fg_oframe *f);
fg_status fg_optim_state_check(fg_optim *o, const fg_oframe *f);
fg_status fg_optim_state_commit(fg_optim *o, const fg_oframe *f);

#endif
