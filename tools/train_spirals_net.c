/* The two-spirals data and forward pieces (train_spirals_net.h). */
#include "train_spirals_net.h"

#include <math.h>
#include <string.h>

#include "forgia/gemm.h"
#include "forgia/ops.h"
#include "forgia/rng.h"

#define PI 3.14159265358979323846

fg_status spirals_make_data(uint64_t seed, float xy[2 * SPIRALS_POINTS], int32_t labels[SPIRALS_POINTS]) {
  float noise[2 * SPIRALS_POINTS];
  const fg_rng_spec r = {.kind = FG_RNG_GAUSS, .seed = fg_rng_at(seed, 0), .scale = 0.02f};
  fg_status s = fg_rng_fill_host(&r, noise, 2 * SPIRALS_POINTS);
  if (s) return s;
  for (int i = 0; i < SPIRALS_POINTS_PER_CLASS; i++) {
    const double t = 0.1 + 0.9 * i / (SPIRALS_POINTS_PER_CLASS - 1);
    for (int c = 0; c < 2; c++) {
      const int row = 2 * i + c;
      const double a = 3.0 * PI * t + c * PI;
      xy[2 * row] = (float)(t * cos(a)) + noise[2 * row];
      xy[2 * row + 1] = (float)(t * sin(a)) + noise[2 * row + 1];
      labels[row] = c;
    }
  }
  return FG_OK;
}

fg_status spirals_linear(fg_device *dev, fg_stream *s, const float *in, size_t in_f, const float *w, const float *b,
                         const float *ones, float *out, size_t out_f, bool relu) {
  fg_status st = fg_gemm(dev, FG_GEMM_EXACT, false, true, SPIRALS_POINTS, out_f, in_f, 1.0f, in, FG_F32, in_f, w,
                         FG_F32, in_f, 0.0f, out, out_f, s);
  if (!st)
    st = fg_gemm(dev, FG_GEMM_EXACT, false, false, SPIRALS_POINTS, out_f, 1, 1.0f, ones, FG_F32, 1, b, FG_F32, out_f,
                 1.0f, out, out_f, s);
  if (!st && relu) {
    fg_op_args a;
    memset(&a, 0, sizeof a);
    a.ptr[0] = out;
    a.ptr[1] = out;
    a.dtype[0] = a.dtype[1] = FG_F32;
    a.n = SPIRALS_POINTS * out_f;
    fg_op_params p;
    memset(&p, 0, sizeof p);
    st = fg_op_run(dev, FG_OP_RELU, &p, &a, 1, s);
  }
  return st;
}

void spirals_loss(const float logits[2 * SPIRALS_POINTS], const int32_t labels[SPIRALS_POINTS], double *loss,
                  uint32_t *correct, float *dlogits) {
  double sum = 0;
  uint32_t ok = 0;
  for (int i = 0; i < SPIRALS_POINTS; i++) {
    const float l0 = logits[2 * i], l1 = logits[2 * i + 1];
    const float mx = l0 > l1 ? l0 : l1;
    const float e0 = expf(l0 - mx), e1 = expf(l1 - mx), se = e0 + e1;
    const int y = labels[i];
    sum += (double)logf(se) - (double)((y ? l1 : l0) - mx);
    ok += (l1 > l0 ? 1 : 0) == y;
    if (dlogits) {
      dlogits[2 * i] = (e0 / se - (y == 0 ? 1.0f : 0.0f)) / (float)SPIRALS_POINTS;
      dlogits[2 * i + 1] = (e1 / se - (y == 1 ? 1.0f : 0.0f)) / (float)SPIRALS_POINTS;
    }
  }
  *loss = sum / SPIRALS_POINTS;
  *correct = ok;
}
