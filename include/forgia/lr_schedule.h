/* Learning-rate schedules: pure factor functions of the 0-based step, so a resumed run just
 * re-applies them (the learning rate is deliberately not part of optimizer state).
 *
 *   fg_lr_schedule sch = {FG_LR_WARMUP_COSINE, 1000, 100, 0.1};
 *   fg_optim_apply_lr_factor(opt, fg_lr_factor(&sch, step));    // lr = f32(base * factor)
 *
 * FG_LR_WARMUP_COSINE is Fucina's warmupCosineFactor: (step + 1) / warmup during the
 * warmup, then min + (1 - min) * 0.5 * (1 + cos(pi * progress)), progress = (step - warmup) /
 * (total - warmup) capped at 1 (min when total <= warmup). FG_LR_WARMUP_LINEAR has the same
 * warmup, then decays linearly: min + (1 - min) * (1 - progress). FG_LR_CONSTANT is 1. */
#ifndef FORGIA_LR_SCHEDULE_H
#define FORGIA_LR_SCHEDULE_H

#include <stdint.h>

#include "forgia/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_lr_kind { FG_LR_CONSTANT = 0, FG_LR_WARMUP_COSINE = 1, FG_LR_WARMUP_LINEAR = 2 } fg_lr_kind;

typedef struct fg_lr_schedule {
  fg_lr_kind kind;
  uint64_t total_steps, warmup_steps;
  double min_factor;
} fg_lr_schedule;

/* The factor at a 0-based step; 1 for FG_LR_CONSTANT or an unknown kind. */
FG_API double fg_lr_factor(const fg_lr_schedule *s, uint64_t step);

#ifdef __cplusplus
}
#endif
#endif
