#include "forgia/dtype.h"

#include <string.h>

#define T(id, nm, tag, be, bb, fl, q) [id] = {nm, tag, be, bb, fl, q}
static const fg_dtype_traits fg_traits[FG_DTYPE_END] = {
  T(FG_F32, "f32", "F32", 1, 4, true, false),
  T(FG_F16, "f16", "F16", 1, 2, true, false),
  T(FG_Q4_0, "q4_0", NULL, 32, 18, false, true),
  T(FG_Q4_1, "q4_1", NULL, 32, 20, false, true),
  T(FG_Q5_0, "q5_0", NULL, 32, 22, false, true),
  T(FG_Q5_1, "q5_1", NULL, 32, 24, false, true),
  T(FG_Q8_0, "q8_0", NULL, 32, 34, false, true),
  T(FG_Q8_1, "q8_1", NULL, 32, 36, false, true),
  T(FG_Q2_K, "q2_K", NULL, 256, 84, false, true),
  T(FG_Q3_K, "q3_K", NULL, 256, 110, false, true),
  T(FG_Q4_K, "q4_K", NULL, 256, 144, false, true),
  T(FG_Q5_K, "q5_K", NULL, 256, 176, false, true),
  T(FG_Q6_K, "q6_K", NULL, 256, 210, false, true),
  T(FG_Q8_K, "q8_K", NULL, 256, 292, false, true),
  T(FG_IQ2_XXS, "iq2_xxs", NULL, 256, 66, false, true),
  T(FG_IQ2_XS, "iq2_xs", NULL, 256, 74, false, true),
  T(FG_IQ3_XXS, "iq3_xxs", NULL, 256, 98, false, true),
  T(FG_IQ1_S, "iq1_s", NULL, 256, 50, false, true),
  T(FG_IQ4_NL, "iq4_nl", NULL, 32, 18, false, true),
  T(FG_IQ3_S, "iq3_s", NULL, 256, 110, false, true),
  T(FG_IQ2_S, "iq2_s", NULL, 256, 82, false, true),
  T(FG_IQ4_XS, "iq4_xs", NULL, 256, 136, false, true),
  T(FG_I8, "i8", "I8", 1, 1, false, false),
  T(FG_I16, "i16", "I16", 1, 2, false, false),
  T(FG_I32, "i32", "I32", 1, 4, false, false),
  T(FG_I64, "i64", "I64", 1, 8, false, false),
  T(FG_F64, "f64", "F64", 1, 8, true, false),
  T(FG_IQ1_M, "iq1_m", NULL, 256, 56, false, true),
  T(FG_BF16, "bf16", "BF16", 1, 2, true, false),
  T(FG_TQ1_0, "tq1_0", NULL, 256, 54, false, true),
  T(FG_TQ2_0, "tq2_0", NULL, 256, 66, false, true),
  T(FG_MXFP4, "mxfp4", NULL, 32, 17, false, true),
  T(FG_NVFP4, "nvfp4", NULL, 64, 36, false, true),
  T(FG_Q1_0, "q1_0", NULL, 128, 18, false, true),
  T(FG_Q2_0, "q2_0", NULL, 64, 18, false, true),
  T(FG_BOOL, "bool", "BOOL", 1, 1, false, false),
  T(FG_U8, "u8", "U8", 1, 1, false, false),
  T(FG_U16, "u16", "U16", 1, 2, false, false),
  T(FG_U32, "u32", "U32", 1, 4, false, false),
  T(FG_U64, "u64", "U64", 1, 8, false, false),
  T(FG_C64, "c64", "C64", 1, 8, false, false),
  T(FG_F4, "f4", "F4", 2, 1, false, false),
  T(FG_F6_E2M3, "f6_e2m3", "F6_E2M3", 4, 3, false, false),
  T(FG_F6_E3M2, "f6_e3m2", "F6_E3M2", 4, 3, false, false),
  T(FG_F8_E5M2, "f8_e5m2", "F8_E5M2", 1, 1, true, false),
  T(FG_F8_E4M3, "f8_e4m3", "F8_E4M3", 1, 1, true, false),
  T(FG_F8_E8M0, "f8_e8m0", "F8_E8M0", 1, 1, true, false),
  T(FG_F8_E4M3FNUZ, "f8_e4m3fnuz", "F8_E4M3FNUZ", 1, 1, true, false),
  T(FG_F8_E5M2FNUZ, "f8_e5m2fnuz", "F8_E5M2FNUZ", 1, 1, true, false),
};
#undef T

bool fg_dtype_valid(int v) {
  return v >= 0 && v < FG_DTYPE_END && fg_traits[v].name != NULL;
}

const fg_dtype_traits *fg_dtype_info(fg_dtype t) {
  return fg_dtype_valid((int)t) ? &fg_traits[t] : NULL;
}

const char *fg_dtype_name(fg_dtype t) {
  return fg_dtype_valid((int)t) ? fg_traits[t].name : "invalid";
}

fg_status fg_dtype_from_name(const char *name, fg_dtype *out) {
  if (!name) return fg_fail(FG_ERR_INVALID_ARG, "dtype name is NULL");
  for (int i = 0; i < FG_DTYPE_END; i++) {
    if (fg_traits[i].name && strcmp(fg_traits[i].name, name) == 0) {
      *out = (fg_dtype)i;
      return FG_OK;
    }
  }
  return fg_fail(FG_ERR_BAD_DTYPE, "unknown dtype name '%s'", name);
}

fg_status fg_dtype_from_ggml(uint32_t code, fg_dtype *out) {
  if (code >= FG_GGML_TYPE_COUNT || !fg_traits[code].name)
    return fg_fail(FG_ERR_BAD_DTYPE, "unknown or removed ggml type code %u", code);
  *out = (fg_dtype)code;
  return FG_OK;
}

int fg_dtype_ggml_code(fg_dtype t) {
  return ((int)t >= 0 && t < FG_GGML_TYPE_COUNT && fg_traits[t].name) ? (int)t : -1;
}

fg_status fg_dtype_from_st_tag(const char *tag, size_t len, fg_dtype *out) {
  for (int i = 0; i < FG_DTYPE_END; i++) {
    const char *s = fg_traits[i].st_tag;
    if (s && strlen(s) == len && memcmp(s, tag, len) == 0) {
      *out = (fg_dtype)i;
      return FG_OK;
    }
  }
  return fg_fail(FG_ERR_BAD_DTYPE, "unknown safetensors dtype '%.*s'", (int)(len > 64 ? 64 : len), tag);
}

fg_status fg_dtype_nbytes(fg_dtype t, uint64_t n, uint64_t *out) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  if (!tr) return fg_fail(FG_ERR_BAD_DTYPE, "invalid dtype %d", (int)t);
  if (n % tr->block_elems != 0)
    return fg_fail(FG_ERR_BAD_ROW, "%llu elements of %s are not a whole number of %u-element blocks",
                   (unsigned long long)n, tr->name, tr->block_elems);
  uint64_t blocks = n / tr->block_elems;
  if (blocks != 0 && tr->block_bytes > UINT64_MAX / blocks)
    return fg_fail(FG_ERR_OVERFLOW, "byte size of %llu elements of %s overflows", (unsigned long long)n, tr->name);
  *out = blocks * tr->block_bytes;
  return FG_OK;
}

fg_status fg_shape_numel(const uint64_t *shape, int ndim, uint64_t *out) {
  uint64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] != 0 && n > UINT64_MAX / shape[i])
      return fg_fail(FG_ERR_OVERFLOW, "shape product overflows at dim %d", i);
    n *= shape[i];
  }
  *out = n;
  return FG_OK;
}
