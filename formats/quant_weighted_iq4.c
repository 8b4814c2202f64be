/* Weighted encoders of IQ4_NL and IQ4_XS (ggml quantize_iq4_{nl,xs} with quant_weights: the
 * search of quant_iq.c with weights qw * sqrt(sigma2 + x²) in place of x², sigma2 twice the
 * mean square of the super-block: 32 elements for IQ4_NL, 256 for IQ4_XS). */
#include <math.h>
#include <string.h>

#include "formats/quant_weighted_internal.h"
#include "forgia/elem/quant_iq4.h"

/* The table as floats, filled once per call from elem/quant_iq4.h (its accessor rebuilds
 * the table on every call, which the searches would pay per element and trial). */
typedef struct fg_qw_iq4v {
  float v[16];
} fg_qw_iq4v;

static fg_qw_iq4v fg_qw_iq4_table(void) {
  fg_qw_iq4v t;
  for (int i = 0; i < 16; i++) t.v[i] = (float)fg_iq4nl_value(i);
  return t;
}

/* Nearest entry of the non-linear table by bisection, the upper one winning ties; NaN falls
 * through every compare and lands on the last entry, as in ggml's best_index_int8. */
static inline int fg_qw_iq4_index(const float *v, float x) {
  if (x <= v[0]) return 0;
  if (x >= v[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < v[mid]) hi = mid;
    else lo = mid;
  }
  return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

/* Scale of one 32-element sub-block with weights w (0 for an all-zero sub-block): the first
 * guess -max/-127 refined by least squares, then 15 trial inverse scales (ntry 7). */
static float fg_qw_iq4_fit(const float *v, const float *xb, const float *w) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; j++) {
    const float ax = fabsf(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  if (amax < FG_QW_GROUP_MAX_EPS) return 0.0f;
  float d = -max / v[0];
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 32; j++) {
    const float q = v[fg_qw_iq4_index(v, id * xb[j])];
    sumqx += w[j] * q * xb[j];
    sumq2 += w[j] * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  /* The 15 trials' sums do not depend on which are taken: four trials to a vector, each lane
   * in ggml's order (its table entry found by counting the entries at or below, which is the
   * bisection's answer), then taken or not in ggml's order. */
  fg_qvf sx[4], s2[4];
  static const float tries[16] = {-7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 7};
  fg_qvf idv[4];
  for (int g = 0; g < 4; g++) {
    idv[g] = (fg_qv_load(tries + 4 * g) + (float)fg_iq4nl_value(0)) / max;
    sx[g] = s2[g] = (fg_qvf){0, 0, 0, 0};
  }
  for (int j = 0; j < 32; j++) {
    const float wj = w[j], xj = xb[j];
    for (int g = 0; g < 4; g++) {
      const fg_qvf t = idv[g] * xj;
      fg_qvf lo = {v[0], v[0], v[0], v[0]}, hi = {v[1], v[1], v[1], v[1]};
      for (int k = 1; k < 15; k++) {
        const fg_qvi m = t >= v[k];
        const fg_qvf vk = {v[k], v[k], v[k], v[k]}, vk1 = {v[k + 1], v[k + 1], v[k + 1], v[k + 1]};
        lo = FG_QV_SEL(m, vk, lo);
        hi = FG_QV_SEL(m, vk1, hi);
      }
      const fg_qvf q = FG_QV_SEL(t - lo < hi - t, lo, hi);
      const fg_qvf wq = wj * q;
      sx[g] += wq * xj;
      s2[g] += wq * q;
    }
  }
  for (int k = 0; k < 15; k++) {
    sumqx = sx[k / 4][k % 4];
    sumq2 = s2[k / 4][k % 4];
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

static float fg_qw_sigma2(const float *x, int n) {
  float s = 0;
  for (int j = 0; j < n; j++) s += x[j] * x[j];
  s *= 2.f / n;
  return s;
}

static void fg_qw_iq4_weights(const float *xb, const float *qw, float sigma2, float *w) {
  for (int j = 0; j < 32; j++) w[j] = qw[j] * sqrtf(sigma2 + xb[j] * xb[j]);
}

static void fg_qw_pack_iq4(const uint8_t *L, uint8_t *q4, int nsub) {
  for (int i = 0; i < nsub; i++)
    for (int j = 0; j < 16; j++) q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void fg_qwenc_iq4_nl(const float *x, const float *qw, uint8_t *y, int64_t n) {
  const fg_qw_iq4v t = fg_qw_iq4_table();
  float w[32];
  uint8_t L[32];
  for (int64_t ib = 0; ib < n / 32; ib++, x += 32, qw += 32, y += 18) {
    fg_qw_iq4_weights(x, qw, fg_qw_sigma2(x, 32), w);
    const float d = fg_qw_iq4_fit(t.v, x, w);
    fg_bytes_st_le16(y, fg_f32_to_f16(d));
    /* the codes against the final f32 scale, not the stored f16 one */
    const float id = d != 0.0f ? 1 / d : 0;
    for (int j = 0; j < 32; j++) L[j] = (uint8_t)fg_qw_iq4_index(t.v, id * x[j]);
    fg_qw_pack_iq4(L, y + 2, 1);
  }
}

void fg_qwenc_iq4_xs(const float *x, const float *qw, uint8_t *y, int64_t n) {
  const fg_qw_iq4v t = fg_qw_iq4_table();
  float w[32], scales[8];
  uint8_t L[256];
  for (int64_t ibl = 0; ibl < n / 256; ibl++, x += 256, qw += 256, y += 136) {
    const float sigma2 = fg_qw_sigma2(x, 256);
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ib++) {
      fg_qw_iq4_weights(x + 32 * ib, qw + 32 * ib, sigma2, w);
      scales[ib] = fg_qw_iq4_fit(t.v, x + 32 * ib, w);
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
    fg_bytes_st_le16(y, fg_f32_to_f16(d));
    const float id = d != 0.0f ? 1 / d : 0.f;
    for (int ib = 0; ib < 8; ib++) {
      int l = fg_qw_clampi(fg_nearest_int(id * scales[ib]), -32, 31);
      const float dl = d * l;
      const float idl = dl != 0.0f ? 1 / dl : 0.f;
      for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)fg_qw_iq4_index(t.v, idl * x[32 * ib + j]);
      l += 32;
      const uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
      if (ib % 2 == 0) scales_l[ib / 2] = l_l;
      else scales_l[ib / 2] |= (uint8_t)(l_l << 4);
      scales_h |= (uint16_t)(l_h << (2 * ib));
    }
    fg_bytes_st_le16(y + 2, scales_h);
    fg_qw_pack_iq4(L, y + 8, 8);
  }
}
