/* Param groups: a set of optimizers behind one surface (Fucina's OptimizerSet).
 *
 *   fg_optimset *set;
 *   fg_optimset_create(&set);
 *   fg_optimset_add(set, trunk);      // e.g. AdamW with decay
 *   fg_optimset_add(set, norms);      // AdamW without decay
 *   fg_optimset_clip_grad_norm(set, 1.0f, NULL, s);  // one GLOBAL norm over every member
 *   fg_optimset_step(set, s);
 *
 * Members are borrowed (they must outlive the set) and live on one device. A parameter
 * registered in two members would be stepped twice: fg_optimset_add refuses it. The
 * global squared norm is Fucina's: each member sums its own parameters' squared norms in
 * registration order, then the members' totals are summed in member order, on the device. */
#ifndef FORGIA_OPTIMSET_H
#define FORGIA_OPTIMSET_H

#include "forgia/api.h"
#include "forgia/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_optimset fg_optimset;

FG_API fg_status fg_optimset_create(fg_optimset **out);
FG_API void fg_optimset_free(fg_optimset *set); /* NULL-safe; the members stay the caller's */
/* Appends m; refused (set unchanged) when m is already a member, is on another device than
 * the first member, or shares a parameter with a member. */
FG_API fg_status fg_optimset_add(fg_optimset *set, fg_optim *m);
FG_API size_t fg_optimset_count(const fg_optimset *set);
FG_API fg_optim *fg_optimset_member(const fg_optimset *set, size_t i); /* NULL past the end */

/* The optimizer calls, over every member in order. */
FG_API fg_status fg_optimset_step(fg_optimset *set, fg_stream *s);
FG_API fg_status fg_optimset_zero_grad(fg_optimset *set, fg_stream *s);
FG_API fg_status fg_optimset_scale_gradients(fg_optimset *set, float factor, fg_stream *s);
FG_API fg_status fg_optimset_apply_lr_factor(fg_optimset *set, double factor);
/* The global squared gradient norm into one f64 in device memory out. */
FG_API fg_status fg_optimset_grad_squared_norm(fg_optimset *set, double *out, fg_stream *s);
/* torch's clip_grad_norm_(all parameters) with Fucina's formula (optim.h); total_out as there. */
FG_API fg_status fg_optimset_clip_grad_norm(fg_optimset *set, float max_norm, float *total_out, fg_stream *s);

/* Fucina's OptimizerSet.saveState: FZO3, the member count, then each member's own frame
 * (fg_optim_save_state's bytes) in member order. *out is malloc'd (free()). */
FG_API fg_status fg_optimset_save_state(fg_optimset *set, uint8_t **out, size_t *out_len);
/* Loads such bytes: the member count must be the set's (FG_ERR_FRAME_SHAPE_MISMATCH) and
 * member i's frame must load into member i (its kind, header config and slots, with
 * fg_optim_load_state's errors, prefixed by the member index). Every member frame is
 * checked before any member's state changes, so a failed load changes no byte of any
 * member (Fucina's is transactional only per member). */
FG_API fg_status fg_optimset_load_state(fg_optimset *set, const uint8_t *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
