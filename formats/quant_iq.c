/* Encoders of IQ4_NL and IQ4_XS (ggml quantize_iq4_{nl,xs} with no importance matrix, the path
 * ggml_quantize_chunk and llama-quantize take: the importance-matrix search run without a
 * matrix, weights x², 15 trial scales either side of the max). For IQ4_XS that is also
 * quantize_row_iq4_xs_ref; ggml's quantize_row_iq4_nl_ref instead passes ntry = -1 (one scale,
 * no search) and gives other bytes: forgia follows the GGUF-writing path (see
 * tests/data/golden/README.md). Codes index the non-linear table of elem/quant_iq4.h. */
#include <math.h>

#include "formats/quant_internal.h"
#include "forgia/elem/quant_iq4.h"

#define FG_GROUP_MAX_EPS 1e-15f
#define FG_IQ4_NTRY 7

/* Nearest table entry by bisection; on a tie between neighbours the upper one wins. */
static int fg_best_index_iq4(float x) {
  if (x <= fg_iq4nl_value(0)) return 0;
  if (x >= fg_iq4nl_value(15)) return 15;
  int ml = 0, mu = 15;
  while (mu - ml > 1) {
    int mav = (ml + mu) / 2;
    if (x < fg_iq4nl_value(mav)) mu = mav;
    else ml = mav;
  }
  return x - fg_iq4nl_value(mu - 1) < fg_iq4nl_value(mu) - x ? mu - 1 : mu;
}

static inline int fg_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Fits one 32-element sub-block: returns its scale (0 for an all-zero block). */
static float fg_iq4_fit(const float *xb, uint8_t *Lb) {
  float weight[32], amax = 0, max = 0;
  for (int j = 0; j < 32; j++) weight[j] = xb[j] * xb[j];
  for (int j = 0; j < 32; j++) {
    float ax = fabsf(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  if (amax < FG_GROUP_MAX_EPS) return 0.0f;
  const float v0 = (float)fg_iq4nl_value(0);
  float d = -max / v0;
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 32; j++) {
    int l = fg_best_index_iq4(id * xb[j]);
    Lb[j] = (uint8_t)l;
    float q = (float)fg_iq4nl_value(l);
    float w = weight[j];
    sumqx += w * q * xb[j];
    sumq2 += w * q * q;
  }
  d = sumqx / sumq2;
  float best = d * sumqx;
  for (int itry = -FG_IQ4_NTRY; itry <= FG_IQ4_NTRY; itry++) {
    id = (float)(itry + fg_iq4nl_value(0)) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; j++) {
      int l = fg_best_index_iq4(id * xb[j]);
      float q = (float)fg_iq4nl_value(l);
      float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

static void fg_pack_iq4(const uint8_t *L, uint8_t *q4, int nsub) {
  for (int i = 0; i < nsub; i++)
    for (int j = 0; j < 16; j++) q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void fg_qenc_iq4_nl(const float *x, uint8_t *y) {
  uint8_t L[32];
  const float d = fg_iq4_fit(x, L);
  fg_st_le16(y, fg_f32_to_f16(d));
  /* the codes are redone against the final scale (f32, not the stored fp16) */
  const float id = d != 0.0f ? 1 / d : 0;
  for (int j = 0; j < 32; j++) L[j] = (uint8_t)fg_best_index_iq4(id * x[j]);
  fg_pack_iq4(L, y + 2, 1);
}

void fg_qenc_iq4_xs(const float *x, uint8_t *y) {
  uint8_t L[256];
  float scales[8], max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < 8; ib++) {
    scales[ib] = fg_iq4_fit(x + 32 * ib, L + 32 * ib);
    const float a = fabsf(scales[ib]);
    if (a > amax_scale) {
      amax_scale = a;
      max_scale = scales[ib];
    }
  }
  uint8_t *scales_l = y + 4;
  uint16_t scales_h = 0;
  memset(scales_l, 0, 4);
  const float d = -max_scale / 32;
  fg_st_le16(y, fg_f32_to_f16(d));
  const float id = d != 0.0f ? 1 / d : 0.f;
  for (int ib = 0; ib < 8; ib++) {
    int l = fg_clampi(fg_nearest_int(id * scales[ib]), -32, 31);
    const float dl = d * l;
    const float idl = dl != 0.0f ? 1 / dl : 0.f;
    for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)fg_best_index_iq4(idl * x[32 * ib + j]);
    l += 32;
    const uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
    if (ib % 2 == 0) scales_l[ib / 2] = l_l;
    else scales_l[ib / 2] |= (uint8_t)(l_l << 4);
    scales_h |= (uint16_t)(l_h << (2 * ib));
  }
  fg_st_le16(y + 2, scales_h);
  fg_pack_iq4(L, y + 8, 8);
}
