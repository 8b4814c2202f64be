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

/* c ? a : b on bit patterns, with c 0 or 1: a select the vectorizer takes (a conditional
 * expression on floats counts as control flow to it). */
static inline float fg_cpu_sm_sel(uint32_t c, float a, float b) {
  const uint32_t m = 0u - c;
  return fg_bits_f32((fg_f32_bits(a) & m) | (fg_f32_bits(b) & ~m));
}

/* e_i = fg_exp_f32(x_i - m) for FG_ROW_LANES values, written without branches so the loop
 * vectorizes: every lane runs fg_exp_f32's operations (elem/fmath.h) on a clamped copy of
 * its argument, then the special cases are selected, so each e_i has fg_exp_f32's bits
 * (checked for all 2^32 arguments once; the family case "softmax exp domain" of
 * tests/util/family_cases.h sweeps the range a softmax sees). */
static void fg_cpu_sm_exp_lanes(const float *x, float m, float *e) {
  for (unsigned i = 0; i < FG_ROW_LANES; i++) {
    const float d = x[i] - m;
    const uint32_t nan = d != d, big = d > 88.72283935546875f, small = d < -103.97207708f;
    const float a = fg_cpu_sm_sel(nan | big | small, 0.0f, d);
    int32_t k = 0;
    const float p = fg_exp_f32_reduce(a, &k);
    const float sub = (p * fg_bits_f32((uint32_t)(k + 64 + 127) << 23)) * fg_bits_f32((uint32_t)(-64 + 127) << 23);
    const float top = (p * fg_bits_f32((uint32_t)(k - 1 + 127) << 23)) * 2.0f;
    const float mid = p * fg_bits_f32((uint32_t)(k + 127) << 23);
    float v = fg_cpu_sm_sel(k < -126, sub, fg_cpu_sm_sel(k > 127, top, mid));
    v = fg_cpu_sm_sel(small, 0.0f, v);
    v = fg_cpu_sm_sel(big, fg_bits_f32(0x7f800000u), v);
    e[i] = fg_cpu_sm_sel(nan, fg_bits_f32(0x7fc00000u), v);
  }
}

/* The row grid's sum of e_j = exp(x_j - m), storing e_j in e when e is not NULL. */
static double fg_cpu_sm_sum(const float *x, size_t n, float m, float *e) {
  double s[FG_ROW_LANES] = {0};
  float buf[FG_ROW_LANES];
  size_t j = 0;
  for (; j + FG_ROW_LANES <= n; j += FG_ROW_LANES) {
    float *v = e ? e + j : buf;
    fg_cpu_sm_exp_lanes(x + j, m, v);
    for (unsigned i = 0; i < FG_ROW_LANES; i++) s[i] = s[i] + (double)v[i];
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
    if (c->kind == FG_SOFTMAX_NLL)
      c->nll[r] = fg_sm_nan64();
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
