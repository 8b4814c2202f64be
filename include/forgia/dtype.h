/* Element types: one enum for every type the formats carry.
 *
 * Values 0..42 are ggml's wire codes (GGUF tensor types), so a GGUF type code converts to
 * fg_dtype by a range check. Types that only safetensors carries start at 64. Removed ggml
 * slots (4, 5, 31..33, 36..38) are not valid dtypes. */
#ifndef FORGIA_DTYPE_H
#define FORGIA_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_dtype {
  FG_F32 = 0, FG_F16 = 1, FG_Q4_0 = 2, FG_Q4_1 = 3,
  FG_Q5_0 = 6, FG_Q5_1 = 7, FG_Q8_0 = 8, FG_Q8_1 = 9,
  FG_Q2_K = 10, FG_Q3_K = 11, FG_Q4_K = 12, FG_Q5_K = 13, FG_Q6_K = 14, FG_Q8_K = 15,
  FG_IQ2_XXS = 16, FG_IQ2_XS = 17, FG_IQ3_XXS = 18, FG_IQ1_S = 19, FG_IQ4_NL = 20,
  FG_IQ3_S = 21, FG_IQ2_S = 22, FG_IQ4_XS = 23,
  FG_I8 = 24, FG_I16 = 25, FG_I32 = 26, FG_I64 = 27, FG_F64 = 28,
  FG_IQ1_M = 29, FG_BF16 = 30, FG_TQ1_0 = 34, FG_TQ2_0 = 35,
  FG_MXFP4 = 39, FG_NVFP4 = 40, FG_Q1_0 = 41, FG_Q2_0 = 42,
  FG_GGML_TYPE_COUNT = 43,
  /* safetensors-only element types */
  FG_BOOL = 64, FG_U8, FG_U16, FG_U32, FG_U64, FG_C64,
  FG_F4, FG_F6_E2M3, FG_F6_E3M2,
  FG_F8_E5M2, FG_F8_E4M3, FG_F8_E8M0, FG_F8_E4M3FNUZ, FG_F8_E5M2FNUZ,
  FG_DTYPE_END
} fg_dtype;

typedef struct fg_dtype_traits {
  const char *name;      /* ggml type name ("q4_K") or lower-case safetensors tag ("f8_e4m3") */
  const char *st_tag;    /* safetensors dtype tag ("BF16"), NULL when safetensors has none */
  uint32_t block_elems;  /* elements per block: 1 for scalars, 2 for F4, 4 for F6, 32/64/128/256 for ggml blocks */
  uint32_t block_bytes;  /* bytes per block */
  bool is_float;         /* plain floating point scalar (f64 f32 f16 bf16 and the F8 kinds) */
  bool is_quant;         /* ggml block type (scale + codes) */
} fg_dtype_traits;

/* True for a value naming a dtype (removed ggml slots and gaps are false). */
bool fg_dtype_valid(int v);
/* Traits of a valid dtype; NULL otherwise. */
const fg_dtype_traits *fg_dtype_info(fg_dtype t);
/* Name of a dtype, "invalid" for a value that names none. */
const char *fg_dtype_name(fg_dtype t);

/* Look-ups; FG_ERR_BAD_DTYPE with a message when nothing matches. */
fg_status fg_dtype_from_name(const char *name, fg_dtype *out);     /* ggml names, case-sensitive */
fg_status fg_dtype_from_ggml(uint32_t code, fg_dtype *out);        /* GGUF wire code */
fg_status fg_dtype_from_st_tag(const char *tag, size_t len, fg_dtype *out); /* safetensors tag */
/* GGUF wire code of t, or -1 when GGUF cannot carry it. */
int fg_dtype_ggml_code(fg_dtype t);

/* Bytes of n elements of t. FG_ERR_BAD_ROW when n is not a whole number of blocks,
 * FG_ERR_OVERFLOW when the size does not fit in uint64. */
fg_status fg_dtype_nbytes(fg_dtype t, uint64_t n, uint64_t *out);

/* Element count of a shape with overflow checking (an empty shape is a scalar: 1). */
fg_status fg_shape_numel(const uint64_t *shape, int ndim, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
