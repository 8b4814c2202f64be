/* Learning-rate factors, in f64 as Fucina computes them. */
#include <math.h>

#include "forgia/lr_schedule.h"

double fg_lr_factor(const fg_lr_schedule *s, uint64_t step) {
  if (!s || (s->kind != FG_LR_WARMUP_COSINE && s->kind != FG_LR_WARMUP_LINEAR)) return 1.0;
  const uint64_t w = s->warmup_steps, total = s->total_steps;
  if (w > 0 && step < w) return (double)(step + 1) / (double)w;
  if (total <= w) return s->min_factor;
  double progress = (double)(step - w) / (double)(total - w);
  if (progress > 1.0) progress = 1.0;
  if (s->kind == FG_LR_WARMUP_LINEAR) return s->min_factor + (1.0 - s->min_factor) * (1.0 - progress);
  return s->min_factor + (1.0 - s->min_factor) * 0.5 * (1.0 + cos(M_PI * progress));
}
