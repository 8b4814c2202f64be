/* GGUF metadata value types and the tensor size rule, shared by reader and writer. */
#include "formats/gguf_internal.h"

#include <inttypes.h>

static const char *const type_names[FG_GGUF_TYPE_COUNT] = {
  "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
  "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
};
static const uint8_t type_sizes[FG_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *fg_gguf_type_name(fg_gguf_type t) {
  return (unsigned)t < FG_GGUF_TYPE_COUNT ? type_names[t] : "invalid";
}

size_t fg_gguf_type_size(fg_gguf_type t) { return (unsigned)t < FG_GGUF_TYPE_COUNT ? type_sizes[t] : 0; }

int64_t fg_gguf_scalar_int(uint32_t type, const uint8_t *p) {
  switch (type) {
    case FG_GGUF_UINT8: return p[0];
    case FG_GGUF_INT8: return (int8_t)p[0];
    case FG_GGUF_UINT16: return fg_bytes_ld_le16(p);
    case FG_GGUF_INT16: return (int16_t)fg_bytes_ld_le16(p);
    case FG_GGUF_UINT32: return fg_bytes_ld_le32(p);
    case FG_GGUF_INT32: return (int32_t)fg_bytes_ld_le32(p);
    /* a UINT64 >= 2^63 wraps: callers check fg_gguf_scalar_sign */
    case FG_GGUF_UINT64: case FG_GGUF_INT64: return (int64_t)fg_bytes_ld_le64(p);
    default: return 0;
  }
}

uint64_t fg_gguf_scalar_u64(uint32_t type, const uint8_t *p) {
  return type == FG_GGUF_UINT64 ? fg_bytes_ld_le64(p) : (uint64_t)fg_gguf_scalar_int(type, p);
}

int fg_gguf_scalar_sign(uint32_t type, const uint8_t *p) {
  if (type == FG_GGUF_UINT64) return (fg_bytes_ld_le64(p) >> 63) ? 1 : 0;
  return fg_gguf_scalar_int(type, p) < 0 ? -1 : 0;
}

double fg_gguf_scalar_float(uint32_t type, const uint8_t *p) {
  if (type == FG_GGUF_UINT64) return (double)fg_bytes_ld_le64(p);
  if (fg_gguf_type_is_int(type)) return (double)fg_gguf_scalar_int(type, p);
  if (type == FG_GGUF_FLOAT32) {
    uint32_t b = fg_bytes_ld_le32(p);
    float v;
    memcpy(&v, &b, 4);
    return v;
  }
  uint64_t b = fg_bytes_ld_le64(p);
  double v;
  memcpy(&v, &b, 8);
  return v;
}

fg_status fg_gguf_tensor_nbytes(const char *what, fg_dtype dtype, uint32_t ndim, const uint64_t *ne, uint64_t *nbytes) {
  const fg_dtype_traits *tr = fg_dtype_info(dtype);
  if (!tr || fg_dtype_ggml_code(dtype) < 0)
    return fg_fail(FG_ERR_BAD_DTYPE, "%s: dtype %d has no GGUF type code", what, (int)dtype);
  if (ndim < 1 || ndim > FG_GGUF_MAX_DIMS)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: %u dimensions, expected 1..4", what, ndim);
  uint64_t numel = 1;
  int zero = 0;
  for (uint32_t d = 0; d < ndim; d++) {
    if (ne[d] > (uint64_t)INT64_MAX)
      return fg_fail(FG_ERR_BAD_SHAPE, "%s: ne[%u] = %" PRId64 " is negative", what, d, (int64_t)ne[d]);
    if (ne[d] == 0) zero = 1;
  }
  /* ggml skips the overflow check for empty tensors: their size is 0 whatever the dims. */
  if (zero) {
    if (ne[0] % tr->block_elems)
      return fg_fail(FG_ERR_BAD_SHAPE, "%s: ne[0] = %" PRIu64 " is not a multiple of the %s block size %u", what,
                     ne[0], tr->name, tr->block_elems);
    *nbytes = 0;
    return FG_OK;
  }
  for (uint32_t d = 0; d < ndim; d++) {
    if (numel > (uint64_t)INT64_MAX / ne[d])
      return fg_fail(FG_ERR_BAD_SHAPE, "%s: element count overflows int64 at ne[%u] = %" PRIu64, what, d, ne[d]);
    numel *= ne[d];
  }
  if (ne[0] % tr->block_elems)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: ne[0] = %" PRIu64 " is not a multiple of the %s block size %u", what,
                   ne[0], tr->name, tr->block_elems);
  uint64_t blocks = numel / tr->block_elems;
  if (blocks > (uint64_t)INT64_MAX / tr->block_bytes)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: byte size of %" PRIu64 " %s elements overflows int64", what, numel, tr->name);
  *nbytes = blocks * tr->block_bytes;
  return FG_OK;
}
