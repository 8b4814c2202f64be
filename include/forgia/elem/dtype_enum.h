/* The fg_dtype enum alone, so that elem/ (which includes nothing outside elem/) can switch
 * on element types. forgia/dtype.h adds the traits table and the look-ups.
 *
 * Values 0..42 are ggml's wire codes (GGUF tensor types), so a GGUF type code converts to
 * fg_dtype by a range check. Types that only safetensors carries start at 64. Removed ggml
 * slots (4, 5, 31..33, 36..38) are not valid dtypes. The values are part of the ABI. */
#ifndef FORGIA_ELEM_DTYPE_ENUM_H
#define FORGIA_ELEM_DTYPE_ENUM_H

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
  FG_BOOL = 64, FG_U8 = 65, FG_U16 = 66, FG_U32 = 67, FG_U64 = 68, FG_C64 = 69,
  FG_F4 = 70, FG_F6_E2M3 = 71, FG_F6_E3M2 = 72,
  FG_F8_E5M2 = 73, FG_F8_E4M3 = 74, FG_F8_E8M0 = 75, FG_F8_E4M3FNUZ = 76, FG_F8_E5M2FNUZ = 77,
  FG_DTYPE_END = 78
} fg_dtype;

#endif
