/* APOLLO's state inside an fg_optim (training/optim_apollo*.c; internal). The main slots
 * (2-D parameters on the low-rank path) are the optimizer's own slots, their m and v the
 * low-rank moments (len_c f32 each); the legacy-HF AdamW fallback is a slot list of its own
 * (its own name space). Everything numeric lives on the optimizer's device. */
#ifndef FORGIA_TRAINING_OPTIM_APOLLO_INTERNAL_H
#define FORGIA_TRAINING_OPTIM_APOLLO_INTERNAL_H

#include "training/optim_internal.h"

typedef struct fg_apollo_main {
  uint64_t seed;       /* the slot seed: cfg.seed + (index + 1), or the loaded one */
  uint64_t proj_chunk; /* step / gap of the projection in proj; UINT64_MAX: regenerate */
  size_t rows, cols, len_c;
  bool tall;           /* rows >= cols: R = G P^T (rows x rank), else P^T G (rank x cols) */
  float *proj;         /* [rank, cols] (tall) or [rows, rank] (wide), device */
  float *scaling;      /* one factor per channel (1 with tensor scaling), device */
  float *prev_norm;    /* one f32 on the device: the limiter's memory, -1 = none yet */
} fg_apollo_main;

struct fg_apollo_state {
  fg_apollo_main *mains; /* parallel to fg_optim.slots */
  size_t mains_cap;
  fg_optim_slot *fb;     /* the fallback's slots: m and v f32, n each */
  size_t nfb, fb_cap;
  float *r, *u;          /* device scratch: R (largest len_c) and U (largest numel) */
  size_t r_cap, u_cap;
  double *scalars;       /* device: [0] the sum of squares of U, [1] the limiter */
};

fg_status fg_apollo_create(fg_optim *o);
void fg_apollo_free(fg_optim *o);
/* fg_optim_add (fallback false: 2-D parameters take the low-rank path, the rest the
 * fallback) and fg_optim_add_fallback (true). */
fg_status fg_apollo_add(fg_optim *o, fg_tensor *t, const char *name, bool fallback);
fg_status fg_apollo_step(fg_optim *o, fg_stream *s);
/* fg_optim_state_fill / check / commit for APOLLO (training/optim_apollo_state.c). */
fg_status fg_apollo_state_fill(fg_optim *o, fg_oframe *f);
fg_status fg_apollo_state_check(fg_optim *o, const fg_oframe *f);
fg_status fg_apollo_state_commit(fg_optim *o, const fg_oframe *f);

#endif
