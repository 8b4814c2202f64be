/* Shared pieces of the per-block decoders: the fp16 scale load (blocks are packed structs
 * with odd sizes, so no field is aligned; elem/bytes.h has the byte-wise loads). */
#ifndef FORGIA_ELEM_QUANT_COMMON_H
#define FORGIA_ELEM_QUANT_COMMON_H

#include "forgia/elem/bytes.h"
#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"

static inline FG_HD float fg_ld_f16(const uint8_t *p) {
  return fg_f16_to_f32(fg_ld_le16(p));
}

#endif
