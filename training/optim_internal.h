/* The optimizer object shared by training/optim*.c (internal). */
#ifndef FORGIA_TRAINING_OPTIM_INTERNAL_H
#define FORGIA_TRAINING_OPTIM_INTERNAL_H

#include "forgia/ops.h"
#include "forgia/optim.h"

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
};

/* Room for count entries in o->args / the gradient arrays. */
fg_status fg_optim_reserve(fg_optim *o, size_t count);
/* Scales o's gradients by Fucina's clip coefficient from a squared norm in device memory. */
fg_status fg_optim_clip_with(fg_optim *o, const double *norm, float max_norm, fg_stream *s);
/* The gradients of the slots that have one, in registration order: into o->grads (with
 * grad_dtypes and grad_ns, for reductions) and as stream 0 of o->args (for ops). Returns
 * their count. */
size_t fg_optim_collect_grads(fg_optim *o);

#endif
