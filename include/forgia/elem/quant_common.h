/* Shared pieces of the per-block decoders: little-endian loads from unaligned bytes (blocks
 * are packed structs with odd sizes, so no field is aligned) and the fp16 scale load. */
#ifndef FORGIA_ELEM_QUANT_COMMON_H
#define FORGIA_ELEM_QUANT_COMMON_H

#include "forgia/elem/half.h"
#include "forgia/elem/hd.h"

static inline FG_HD uint16_t fg_ld_le16(const uint8_t *p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}
static inline FG_HD uint32_t fg_ld_le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline FG_HD float fg_ld_f16(const uint8_t *p) {
  return fg_f16_to_f32(fg_ld_le16(p));
}

#endif
