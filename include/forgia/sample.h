/* Token sampling from a row of logits on the host: temperature, top-k, top-p and min-p
 * filters, and a draw from forgia's random stream (forgia/rng.h's counter-based generator),
 * so a seed reproduces a run on any device. Temperature 0 is greedy (the first maximum). */
#ifndef FORGIA_SAMPLE_H
#define FORGIA_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_sample_params {
  float temp;      /* 0: greedy; else > 0 */
  size_t top_k;    /* 0: off */
  float top_p;     /* 1: off; in (0, 1] */
  float min_p;     /* 0: off; in [0, 1] */
  uint64_t seed;
} fg_sample_params;

/* Defaults: temp 0.8, top_k 40, top_p 0.95, min_p 0.05, seed 0 (llama.cpp's defaults). */
FG_API void fg_sample_params_init(fg_sample_params *p);

/* Draw number `step` of the run (each step its own counter, so a run can resume) from the
 * n logits (host memory). Order: temperature scales the logits, softmax in f64, top-k keeps the
 * k most likely (ties by lower id), top-p the smallest prefix reaching p, min-p those at
 * least min_p times the most likely; then the inverse CDF of the kept at a uniform f64 from
 * the stream. Non-finite logits other than -inf fail with FG_ERR_INVALID_ARG. */
FG_API fg_status fg_sample(const fg_sample_params *p, const float *logits, size_t n, uint64_t step, int32_t *out);

#ifdef __cplusplus
}
#endif
#endif
