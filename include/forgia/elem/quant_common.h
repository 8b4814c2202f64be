/* Shared pieces of the per-block decoders: the fp16 scale load (blocks are packed structs
 * with odd sizes, so no field is aligned; elem/bytes.h has the byte-wise loads). */
#ifndef FORGIA_ELEM_QUANT_COMMON_H
#define FORGIA_ELEM_QUANT_COMMON_H

#include "forgia/elem/bytes.h"
#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"

/* The decoders' block and output never overlap: restrict lets the compiler keep loaded bytes in
 * registers across the stores and vectorise. */
#if defined(__cplusplus) || defined(__CUDACC__)
#define FG_RESTRICT __restrict__
#else
#define FG_RESTRICT restrict
#endif

/* fp16 at p as f32: the bits of fg_f16_to_f32 (checked on all 65536 codes in
 * tests/cpu/test_quant_decode_fields.cpp) in fewer scalar operations, because a decoder converts
 * one scale per block and that chain is the block's critical path. Normals, infinities and
 * NaNs (payload kept) are a shift and an exponent rebias (+112, or +224 for exponent 31), and
 * subnormals m * 2^-24, which is exact. Selects, no branch. */
static inline FG_HD float fg_ld_f16(const uint8_t *p) {
  const uint32_t h = fg_bytes_ld_le16(p), e = h & 0x7c00u;
  const uint32_t big = ((h & 0x7fffu) << 13) + (e == 0x7c00u ? 0x70000000u : 0x38000000u);
  const uint32_t mag = e == 0 ? fg_f32_bits((float)(h & 0x3ffu) * 0x1p-24f) : big;
  return fg_bits_f32(mag | ((h & 0x8000u) << 16));
}

#endif
