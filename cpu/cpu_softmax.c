/* Softmax, its nll and the nll's gradient on the CPU (forgia/softmax.h): OpenMP over rows,
 * each row computed whole by one thread in the row grid's order of elem/softmax.h, so the
 * bits do not depend on the thread count and equal CUDA's. Three passes per row: the max, the
 * exponentials (kept in the output row, then divided in place) with their lane sums, and the
 * output; nll needs only the first two and writes nothing per column. */
#include "device/backend.h"
#include "forgia/elem/softmax.h"

/* The row's max: a NaN anywhere gives NaN, whatever the order (elem/softmax.h). Written as
 * a NaN flag beside a plain max so the loop vectorizes. */
static float fg_cpu_sm_max(const float *x, size_t n) {
  float m = fg_sm_max_init();
  int nan = 0;
  for (size_t j = 0; j < n; j++) {
    nan |= x[j] != x[j];
    m = x[j] > m ? x[j] : m;
  }
  return nan ? fg_bits_f32(0x7fc00000u) : m;
}

/* The row grid's sum of e_j = exp(x_j - m), storing e_j in e when e is not NULL. */
static double fg_cpu_sm_sum(const float *x, size_t n, float m, float *e) {
  double s[FG_ROW_LANES] = {0};
  size_t j = 0;
  for (; j + FG_ROW_LANES <= n; j += FG_ROW_LANES)
    for (size_t i = 0; i < FG_ROW_LANES; i++) {
      const float v = fg_sm_e(x[j + i], m);
      if (e) e[j + i] = v;
      s[i] = s[i] + (double)v;
    }
  for (size_t i = 0; j + i < n; i++) {
    const float v = fg_sm_e(x[j + i], m);
    if (e) e[j + i] = v;
    s[i] = s[i] + (double)v;
  }
  return fg_row_fold(s);
}

static void fg_cpu_sm_row(const fg_softmax_call *c, size_t r) {
  const size_t n = c->cols;
  const float *x = c->x + r * n;
  float *y = c->y ? c->y + r * n : NULL;
  if (c->kind != FG_SOFTMAX_ROWS && !fg_sm_target_ok(c, r)) {
    if (c->kind == FG_SOFTMAX_NLL) c->nll[r] = fg_sm_nan64();
    else
      for (size_t j = 0; j < n; j++) y[j] = fg_bits_f32(0x7fc00000u);
    return;
  }
  const float m = fg_cpu_sm_max(x, n);
  if (c->kind == FG_SOFTMAX_NLL) {
    const double S = fg_cpu_sm_sum(x, n, m, NULL);
    c->nll[r] = fg_sm_nll(m, S, x[c->targets[r]]);
    return;
  }
  /* y may be x (in place): pass two reads x_j before writing e_j over it. */
  const double S = fg_cpu_sm_sum(x, n, m, y);
  if (c->kind == FG_SOFTMAX_ROWS) {
    for (size_t j = 0; j < n; j++) y[j] = fg_sm_y(y[j], S);
  } else {
    const size_t tg = (size_t)c->targets[r];
    for (size_t j = 0; j < n; j++) y[j] = fg_sm_dx(y[j], S, j == tg, c->scale);
  }
}

fg_status fg_cpu_softmax(fg_device *dev, const fg_softmax_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  const long long rows = (long long)c->rows;
#pragma omp parallel for schedule(static) if (c->rows > 1 && c->rows * c->cols > 32768)
  for (long long r = 0; r < rows; r++) fg_cpu_sm_row(c, (size_t)r);
  return FG_OK;
}
