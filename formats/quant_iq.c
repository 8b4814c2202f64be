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

/* Nearest table entry, as ggml's bisection finds it: 0 at or below the first entry, 15 at or
 * above the last (and for NaN), else the bracketing pair v[c] <= x < v[c+1] with the upper
 * one winning ties. Branch-free: c counts the inner entries not above x (!(x < v) so that NaN
 * counts them all, as the bisection's failing compares do), and the pair's values grow by the
 * table steps; the ends fall out of the same compare. *qv receives the entry's value. */
static inline int32_t fg_iq4_index(float x, float *qv) {
  int32_t c = 0, lo = fg_iq4nl_value(0), hi = fg_iq4nl_value(1);
  _Pragma("GCC unroll 14") for (int i = 1; i < 15; i++) { /* the table's values as constants */
    const int32_t ge = -(int32_t)!(x < (float)fg_iq4nl_value(i));
    c -= ge;
    lo += (fg_iq4nl_value(i) - fg_iq4nl_value(i - 1)) & ge;
    hi += (fg_iq4nl_value(i + 1) - fg_iq4nl_value(i)) & ge;
  }
  const int32_t up = -(int32_t)!(x - (float)lo < (float)hi - x);
  *qv = (float)((hi & up) | (lo & ~up));
  return c - up;
}

/* Codes of id * x[j] for one 32-element sub-block. */
static void fg_iq4_codes(const float *x, float id, uint8_t *L) {
  for (int j = 0; j < 32; j++) {
    float q;
    L[j] = (uint8_t)fg_iq4_index(id * x[j], &q);
  }
}

/* The first inverse scale and the 15 trial ones are evaluated together: lane t of each sum
 * runs over j in order, as ggml's loop for that scale does, so every sum keeps ggml's
 * rounding; the choice between them then runs in ggml's order. */
float fg_iq4_fit(const float *xb, const float *weight) {
  float amax = 0, max = 0;
  {
    uint32_t m = 0;
    for (int j = 0; j < 32; j++) {
      const uint32_t u = fg_f32_bits(xb[j]) & 0x7fffffffu;
      m = u > m ? u : m;
    }
    amax = fg_bits_f32(m);
    int first = 32;
    for (int j = 0; j < 32; j++) {
      const int k = (fg_f32_bits(xb[j]) & 0x7fffffffu) == m ? j : 32;
      first = k < first ? k : first;
    }
    if (m != 0) max = xb[first]; /* first of largest magnitude, as the strict > scan */
  }
  if (amax < FG_GROUP_MAX_EPS) return 0.0f;
  const float v0 = (float)fg_iq4nl_value(0);
  float d = -max / v0;
  float id[16], sumqx[16], sumq2[16];
  id[0] = 1 / d;
  for (int t = 1; t < 16; t++) id[t] = (float)(t - 8 + fg_iq4nl_value(0)) / max;
  /* four trials per vector: the table search of fg_iq4_index lane by lane */
  fg_qvf idv[4], sqx[4], sq2[4];
  for (int g = 0; g < 4; g++) {
    idv[g] = fg_qv_load(id + 4 * g);
    sqx[g] = sq2[g] = (fg_qvf){0, 0, 0, 0};
  }
  for (int j = 0; j < 32; j++) {
    const float xj = xb[j], w = weight[j];
    _Pragma("GCC unroll 4") for (int g = 0; g < 4; g++) {
      const fg_qvf v = idv[g] * xj;
      fg_qvi lo = (fg_qvi){0, 0, 0, 0} + fg_iq4nl_value(0), hi = (fg_qvi){0, 0, 0, 0} + fg_iq4nl_value(1);
      _Pragma("GCC unroll 14") for (int i = 1; i < 15; i++) {
        const fg_qvi ge = ~(v < (fg_qvf){0, 0, 0, 0} + (float)fg_iq4nl_value(i));
        lo += (fg_iq4nl_value(i) - fg_iq4nl_value(i - 1)) & ge;
        hi += (fg_iq4nl_value(i + 1) - fg_iq4nl_value(i)) & ge;
      }
      const fg_qvf lof = __builtin_convertvector(lo, fg_qvf), hif = __builtin_convertvector(hi, fg_qvf);
      const fg_qvf q = FG_QV_SEL(~(v - lof < hif - v), hif, lof);
      sqx[g] += w * q * xj;
      sq2[g] += w * q * q;
    }
  }
  for (int g = 0; g < 4; g++)
    for (int k = 0; k < 4; k++) {
      sumqx[4 * g + k] = sqx[g][k];
      sumq2[4 * g + k] = sq2[g][k];
    }
  d = sumq2[0] > 0 ? sumqx[0] / sumq2[0] : 0.f;
  float best = d * sumqx[0];
  for (int t = 1; t < 16; t++) {
    if (sumq2[t] > 0 && sumqx[t] * sumqx[t] > best * sumq2[t]) {
      d = sumqx[t] / sumq2[t];
      best = d * sumqx[t];
    }
  }
  return d;
}

static void fg_pack_iq4(const uint8_t *L, uint8_t *q4, int nsub) {
  for (int i = 0; i < nsub; i++)
    for (int j = 0; j < 16; j++) q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void fg_iq4_nl_store(const float *x, float d, uint8_t *y) {
  uint8_t L[32];
  fg_bytes_st_le16(y, fg_f32_to_f16(d));
  /* the codes are redone against the final scale (f32, not the stored fp16) */
  const float id = d != 0.0f ? 1 / d : 0;
  fg_iq4_codes(x, id, L);
  fg_pack_iq4(L, y + 2, 1);
}

void fg_iq4_xs_store(const float *x, const float *scales, uint8_t *y) {
  uint8_t L[256];
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < 8; ib++) {
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
    int l = fg_clampi(fg_nearest_int(id * scales[ib]), -32, 31);
    const float dl = d * l;
    const float idl = dl != 0.0f ? 1 / dl : 0.f;
    fg_iq4_codes(x + 32 * ib, idl, L + 32 * ib);
    l += 32;
    const uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
    if (ib % 2 == 0) scales_l[ib / 2] = l_l;
    else scales_l[ib / 2] |= (uint8_t)(l_l << 4);
    scales_h |= (uint16_t)(l_h << (2 * ib));
  }
  fg_bytes_st_le16(y + 2, scales_h);
  fg_pack_iq4(L, y + 8, 8);
}

/* weights x²: ggml's search without a matrix */
static void fg_iq4_sq(const float *x, float *w) {
  for (int j = 0; j < 32; j++) w[j] = x[j] * x[j];
}

void fg_qenc_iq4_nl(const float *restrict x, uint8_t *restrict y) {
  float w[32];
  fg_iq4_sq(x, w);
  fg_iq4_nl_store(x, fg_iq4_fit(x, w), y);
}

void fg_qenc_iq4_xs(const float *restrict x, uint8_t *restrict y) {
  float w[32], scales[8];
  for (int ib = 0; ib < 8; ib++) {
    fg_iq4_sq(x + 32 * ib, w);
    scales[ib] = fg_iq4_fit(x + 32 * ib, w);
  }
  fg_iq4_xs_store(x, scales, y);
}
