/* One entry point for the per-block decoders: fg_dequant_block(t, block, y) decodes one block
 * of type t (block_elems floats to y) and returns false for a type without a decoder here.
 * The CPU row loops (formats/quant.c) and the CUDA decode kernels both call it. Scalar types
 * (f32, f16, bf16) count as one-element blocks. */
#ifndef FORGIA_ELEM_QUANT_DECODE_H
#define FORGIA_ELEM_QUANT_DECODE_H

#include <stdbool.h>

#include "forgia/elem/dtype_enum.h"
#include "forgia/elem/quant_fp4.h"
#include "forgia/elem/quant_iq.h"
#include "forgia/elem/quant_iq4.h"
#include "forgia/elem/quant_k.h"
#include "forgia/elem/quant_simple.h"
#include "forgia/elem/quant_ternary.h"

static inline FG_HD bool fg_dequant_block(fg_dtype t, const uint8_t *b, float *y) {
  switch (t) {
    case FG_F32: y[0] = fg_bits_f32(fg_bytes_ld_le32(b)); return true;
    case FG_F16: y[0] = fg_ld_f16(b); return true;
    case FG_BF16: y[0] = fg_bf16_to_f32(fg_bytes_ld_le16(b)); return true;
    case FG_Q4_0: fg_dequant_q4_0(b, y); return true;
    case FG_Q4_1: fg_dequant_q4_1(b, y); return true;
    case FG_Q5_0: fg_dequant_q5_0(b, y); return true;
    case FG_Q5_1: fg_dequant_q5_1(b, y); return true;
    case FG_Q8_0: fg_dequant_q8_0(b, y); return true;
    case FG_Q8_1: fg_dequant_q8_1(b, y); return true;
    case FG_Q2_K: fg_dequant_q2_K(b, y); return true;
    case FG_Q3_K: fg_dequant_q3_K(b, y); return true;
    case FG_Q4_K: fg_dequant_q4_K(b, y); return true;
    case FG_Q5_K: fg_dequant_q5_K(b, y); return true;
    case FG_Q6_K: fg_dequant_q6_K(b, y); return true;
    case FG_Q8_K: fg_dequant_q8_K(b, y); return true;
    case FG_TQ1_0: fg_dequant_tq1_0(b, y); return true;
    case FG_TQ2_0: fg_dequant_tq2_0(b, y); return true;
    case FG_IQ2_XXS: fg_dequant_iq2_xxs(b, y); return true;
    case FG_IQ2_XS: fg_dequant_iq2_xs(b, y); return true;
    case FG_IQ2_S: fg_dequant_iq2_s(b, y); return true;
    case FG_IQ3_XXS: fg_dequant_iq3_xxs(b, y); return true;
    case FG_IQ3_S: fg_dequant_iq3_s(b, y); return true;
    case FG_IQ1_S: fg_dequant_iq1_s(b, y); return true;
    case FG_IQ1_M: fg_dequant_iq1_m(b, y); return true;
    case FG_IQ4_NL: fg_dequant_iq4_nl(b, y); return true;
    case FG_IQ4_XS: fg_dequant_iq4_xs(b, y); return true;
    case FG_MXFP4: fg_dequant_mxfp4(b, y); return true;
    case FG_NVFP4: fg_dequant_nvfp4(b, y); return true;
    case FG_Q1_0: fg_dequant_q1_0(b, y); return true;
    case FG_Q2_0: fg_dequant_q2_0(b, y); return true;
    default: return false;
  }
}

#endif
