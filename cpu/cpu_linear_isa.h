/* The linear layer's CPU kernels for one instruction set (internal): cpu/cpu_linear.c
 * includes this file once per set, with
 *   FG_LIN_SFX   the name suffix (generic, avx2)
 *   FG_LIN_ATTR  the function attribute that selects the set (empty for the baseline)
 *   FG_LIN_VT    the compiler vector type of FG_LIN_VW floats
 *   FG_LIN_MR    tokens per exact micro-kernel call, FG_LIN_NV its vectors of outputs
 *   FG_LIN_DECODE_HOOK(t, p, nb, out)   optional: a set's own row decoder, true when it had one
 * The exact kernels keep one accumulator per (token, output) lane and step it with
 * FG_GEMM_EXACT_STEP_LANES in input order, so their bits are the scalar loop's for any vector
 * width; only the fast dot product reorders its sum. */

#define FG_LIN_CAT_(a, b) a##_##b
#define FG_LIN_CAT(a, b) FG_LIN_CAT_(a, b)
#define FG_LIN_FN(name) FG_LIN_CAT(name, FG_LIN_SFX)
#define FG_LIN_VW ((int)(sizeof(FG_LIN_VT) / sizeof(float)))

/* Blocks [0, nb) of one row (p at the first) into out. The hot types call their decoder
 * directly so that it inlines and vectorises here; every value is fg_dequant_block's. */
FG_LIN_ATTR static bool FG_LIN_FN(fg_lin_decode)(fg_dtype t, const uint8_t *restrict p, size_t nb, unsigned be,
                                                 unsigned bb, float *restrict out) {
#ifdef FG_LIN_DECODE_HOOK
  if (FG_LIN_DECODE_HOOK(t, p, nb, out)) return true;
#endif
#define FG_LIN_EACH(FN)                                                           \
  for (size_t b = 0; b < nb; b++) FN(p + b * (size_t)bb, out + b * (size_t)be); \
  return true
  switch (t) {
    case FG_F32:
      for (size_t i = 0; i < nb; i++) out[i] = fg_bits_f32(fg_bytes_ld_le32(p + 4 * i));
      return true;
    case FG_F16:
      for (size_t i = 0; i < nb; i++) out[i] = fg_ld_f16(p + 2 * i);
      return true;
    case FG_BF16:
      for (size_t i = 0; i < nb; i++) out[i] = fg_bf16_to_f32(fg_bytes_ld_le16(p + 2 * i));
      return true;
    case FG_Q4_0: FG_LIN_EACH(fg_dequant_q4_0);
    case FG_Q4_1: FG_LIN_EACH(fg_dequant_q4_1);
    case FG_Q5_0: FG_LIN_EACH(fg_dequant_q5_0);
    case FG_Q5_1: FG_LIN_EACH(fg_dequant_q5_1);
    case FG_Q8_0: FG_LIN_EACH(fg_dequant_q8_0);
    case FG_Q2_K: FG_LIN_EACH(fg_dequant_q2_K);
    case FG_Q3_K: FG_LIN_EACH(fg_dequant_q3_K);
    case FG_Q4_K: FG_LIN_EACH(fg_dequant_q4_K);
    case FG_Q5_K: FG_LIN_EACH(fg_dequant_q5_K);
    case FG_Q6_K: FG_LIN_EACH(fg_dequant_q6_K);
    default: {
      bool ok = true;
      for (size_t b = 0; b < nb; b++) ok &= fg_dequant_block(t, p + b * (size_t)bb, out + b * (size_t)be);
      return ok;
    }
  }
#undef FG_LIN_EACH
}

/* MR tokens x NV vectors of outputs over kc inputs: acc[t][o] steps with x[t][p] * w[p][o]
 * for p in order (w is the panel, ldw floats a step; x rows ldx apart; acc rows ldacc apart).
 * first starts the accumulators at +0 instead of loading them. */
#define FG_LIN_UKERNEL(NAME, MR, NV)                                                                                \
  FG_LIN_ATTR static void NAME(size_t kc, const float *restrict w, size_t ldw, const float *restrict x, size_t ldx, \
                               float *restrict acc, size_t ldacc, int first) {                                    \
    const FG_LIN_VT zero = {0};                                                                                    \
    FG_LIN_VT r[MR][NV];                                                                                           \
    for (int i = 0; i < MR; i++)                                                                                   \
      for (int v = 0; v < NV; v++) {                                                                               \
        FG_LIN_VT l;                                                                                               \
        memcpy(&l, acc + (size_t)i * ldacc + (size_t)v * FG_LIN_VW, sizeof l);                                     \
        r[i][v] = first ? zero : l;                                                                                \
      }                                                                                                            \
    for (size_t p = 0; p < kc; p++) {                                                                              \
      float a[MR];                                                                                                 \
      for (int i = 0; i < MR; i++) a[i] = x[(size_t)i * ldx + p];                                                  \
      /* One vector of the panel at a time: a whole row copied to the stack first was not   */                     \
      /* kept in registers by GCC (the accumulators spilled with it).                       */                     \
      for (int v = 0; v < NV; v++) {                                                                               \
        FG_LIN_VT b;                                                                                               \
        memcpy(&b, w + p * ldw + (size_t)v * FG_LIN_VW, sizeof b);                                                 \
        for (int i = 0; i < MR; i++) r[i][v] = FG_GEMM_EXACT_STEP_LANES(r[i][v], a[i], b);                         \
      }                                                                                                            \
    }                                                                                                              \
    for (int i = 0; i < MR; i++)                                                                                   \
      for (int v = 0; v < NV; v++)                                                                                 \
        memcpy(acc + (size_t)i * ldacc + (size_t)v * FG_LIN_VW, &r[i][v], sizeof(FG_LIN_VT));                      \
  }

/* Many tokens: MR x (NV vectors); one token: the whole FG_LIN_OT-output tile, so that a lone
 * token still has FG_LIN_OT / VW independent add chains. */
FG_LIN_UKERNEL(FG_LIN_FN(fg_lin_uk_many), FG_LIN_MR, FG_LIN_NV)
FG_LIN_UKERNEL(FG_LIN_FN(fg_lin_uk_one), 1, FG_LIN_OT / (int)(sizeof(FG_LIN_VT) / sizeof(float)))

/* One k chunk of an exact tile: tokens [0, nt) of x (at the chunk's first input) against the
 * panel (kc x FG_LIN_OT), accumulators acc (nt x FG_LIN_OT). */
FG_LIN_ATTR static void FG_LIN_FN(fg_lin_exact_chunk)(size_t nt, size_t kc, const float *panel, const float *x,
                                                      size_t ldx, float *acc, int first) {
  const size_t group = (size_t)FG_LIN_NV * FG_LIN_VW;
  size_t t = 0;
  for (; t + FG_LIN_MR <= nt; t += FG_LIN_MR)
    for (size_t g = 0; g < FG_LIN_OT; g += group)
      FG_LIN_FN(fg_lin_uk_many)(kc, panel + g, FG_LIN_OT, x + t * ldx, ldx, acc + t * FG_LIN_OT + g, FG_LIN_OT, first);
  for (; t < nt; t++)
    FG_LIN_FN(fg_lin_uk_one)(kc, panel, FG_LIN_OT, x + t * ldx, ldx, acc + t * FG_LIN_OT, FG_LIN_OT, first);
}

/* The fast mode's dot product of n floats: FG_LIN_DOT_ACC vector accumulators, then their
 * lanes, then the tail. */
#define FG_LIN_DOT_ACC 4
FG_LIN_ATTR static float FG_LIN_FN(fg_lin_dot)(const float *restrict a, const float *restrict b, size_t n) {
  FG_LIN_VT s[FG_LIN_DOT_ACC];
  for (int j = 0; j < FG_LIN_DOT_ACC; j++) s[j] = (FG_LIN_VT){0};
  const size_t step = (size_t)FG_LIN_DOT_ACC * FG_LIN_VW;
  size_t i = 0;
  for (; i + step <= n; i += step)
    for (int j = 0; j < FG_LIN_DOT_ACC; j++) {
      FG_LIN_VT va, vb;
      memcpy(&va, a + i + (size_t)j * FG_LIN_VW, sizeof va);
      memcpy(&vb, b + i + (size_t)j * FG_LIN_VW, sizeof vb);
      s[j] += va * vb;
    }
  for (int j = 1; j < FG_LIN_DOT_ACC; j++) s[0] += s[j];
  float r = 0.0f;
  for (int l = 0; l < FG_LIN_VW; l++) r += s[0][l];
  for (; i < n; i++) r += a[i] * b[i];
  return r;
}

#undef FG_LIN_UKERNEL
#undef FG_LIN_DOT_ACC
#undef FG_LIN_VW
#undef FG_LIN_FN
#undef FG_LIN_CAT
#undef FG_LIN_CAT_
