/* Little-endian loads and stores on unaligned bytes: the one set every layer uses (GGUF
 * and safetensors headers, codec blocks, device kernels). It lives in elem/ rather than
 * core/ because device code needs it too and elem/ may include nothing outside itself.
 * Byte-wise, so it is correct on any host byte order and any alignment; compilers turn
 * it into single moves on little-endian targets. */
#ifndef FORGIA_ELEM_BYTES_H
#define FORGIA_ELEM_BYTES_H

#include "forgia/elem/hd.h"

static inline FG_HD uint16_t fg_bytes_ld_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline FG_HD uint32_t fg_bytes_ld_le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline FG_HD uint64_t fg_bytes_ld_le64(const uint8_t *p) {
  return (uint64_t)fg_bytes_ld_le32(p) | ((uint64_t)fg_bytes_ld_le32(p + 4) << 32);
}
static inline FG_HD void fg_bytes_st_le16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline FG_HD void fg_bytes_st_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}
static inline FG_HD void fg_bytes_st_le64(uint8_t *p, uint64_t v) {
  fg_bytes_st_le32(p, (uint32_t)v);
  fg_bytes_st_le32(p + 4, (uint32_t)(v >> 32));
}

#endif
