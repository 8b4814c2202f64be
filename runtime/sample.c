/* Sampling (forgia/sample.h) on the host: the logits of one row are small next to the model,
 * and drawing on the host from forgia's counter-based stream makes a seed reproduce a run on
 * any device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forgia/elem/rng.h"
#include "forgia/sample.h"

void fg_sample_params_init(fg_sample_params *p) {
  if (!p) return;
  p->temp = 0.8f;
  p->top_k = 40;
  p->top_p = 0.95f;
  p->min_p = 0.05f;
  p->seed = 0;
}

typedef struct fg_cand {
  double p;
  int32_t id;
} fg_cand;

/* More likely first; equal probabilities by lower id. */
static int fg_cand_cmp(const void *a, const void *b) {
  const fg_cand *x = a, *y = b;
  if (x->p != y->p) return x->p > y->p ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

/* Is x ranked after y (less likely, or as likely with a higher id)? */
static int fg_cand_after(const fg_cand *x, const fg_cand *y) { return fg_cand_cmp(x, y) > 0; }

/* A min-heap of the k best candidates seen: the root is the worst kept. */
static void fg_heap_down(fg_cand *h, size_t k, size_t i) {
  for (;;) {
    size_t w = i, l = 2 * i + 1, r = l + 1;
    if (l < k && fg_cand_after(&h[l], &h[w])) w = l;
    if (r < k && fg_cand_after(&h[r], &h[w])) w = r;
    if (w == i) return;
    fg_cand t = h[i];
    h[i] = h[w];
    h[w] = t;
    i = w;
  }
}

fg_status fg_sample(const fg_sample_params *p, const float *logits, size_t n, uint64_t step, int32_t *out) {
  const char *what = "fg_sample";
  if (!p || !logits || !out) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL argument", what);
  if (!n || n > (size_t)INT32_MAX) return fg_fail(FG_ERR_INVALID_ARG, "%s: %zu logits, expected 1..2^31-1", what, n);
  if (!isfinite(p->temp) || p->temp < 0.0f)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: temperature %g, expected a finite value >= 0", what, (double)p->temp);
  if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: top-p %g, expected a value in (0, 1]", what, (double)p->top_p);
  if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: min-p %g, expected a value in [0, 1]", what, (double)p->min_p);
  size_t best = n;
  for (size_t i = 0; i < n; i++) {
    const float v = logits[i];
    if (isnan(v) || v == INFINITY)
      return fg_fail(FG_ERR_INVALID_ARG, "%s: logit %zu is %s", what, i, isnan(v) ? "NaN" : "+inf");
    if (v != -INFINITY && (best == n || v > logits[best])) best = i;
  }
  if (best == n) return fg_fail(FG_ERR_INVALID_ARG, "%s: every logit is -inf", what);
  if (p->temp == 0.0f) {
    *out = (int32_t)best;
    return FG_OK;
  }
  const double inv_t = 1.0 / (double)p->temp, m = (double)logits[best] * inv_t;
  /* Candidates above min-p (relative to the most likely, whose weight is 1) and, with top-k,
   * only the k best of them, kept in a heap while scanning. */
  const size_t k = p->top_k && p->top_k < n ? p->top_k : n;
  fg_cand *c = malloc(k * sizeof *c);
  if (!c) return fg_fail(FG_ERR_NOMEM, "%s: out of memory", what);
  size_t nc = 0;
  double total = 0.0;
  for (size_t i = 0; i < n; i++) {
    if (logits[i] == -INFINITY) continue;
    const double w = exp((double)logits[i] * inv_t - m);
    total += w;
    if (w < (double)p->min_p) continue;
    const fg_cand x = {w, (int32_t)i};
    if (nc < k) {
      c[nc++] = x;
      if (nc == k)
        for (size_t j = k / 2; j-- > 0;) fg_heap_down(c, k, j);
    } else if (fg_cand_after(&c[0], &x)) {
      c[0] = x;
      fg_heap_down(c, k, 0);
    }
  }
  qsort(c, nc, sizeof *c, fg_cand_cmp);
  /* top-p over the softmax of every token: the smallest prefix whose mass reaches p. */
  size_t keep = nc;
  if (p->top_p < 1.0f) {
    double cum = 0.0;
    for (size_t j = 0; j < nc; j++) {
      cum += c[j].p / total;
      if (cum >= (double)p->top_p) {
        keep = j + 1;
        break;
      }
    }
  }
  double kept = 0.0;
  for (size_t j = 0; j < keep; j++) kept += c[j].p;
  const double u = fg_rng_unit53(fg_rng_at(p->seed, step)) * kept;
  double cum = 0.0;
  int32_t pick = c[keep - 1].id;
  for (size_t j = 0; j < keep; j++) {
    cum += c[j].p;
    if (u < cum) {
      pick = c[j].id;
      break;
    }
  }
  free(c);
  *out = pick;
  return FG_OK;
}
