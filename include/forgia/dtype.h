/* Element types: one enum for every type the formats carry.
 * The enum itself (ggml wire codes 0..42, safetensors-only types from 64) is in
 * elem/dtype_enum.h.
 *
 * Thread safety: the traits table is constant; every function may be called from any
 * thread. */
#ifndef FORGIA_DTYPE_H
#define FORGIA_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/elem/dtype_enum.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fg_dtype_traits {
  const char *name;      /* ggml type name ("q4_K") or lower-case safetensors tag ("f8_e4m3") */
  const char *st_tag;    /* safetensors dtype tag ("BF16"), NULL when safetensors has none */
  uint32_t block_elems;  /* elements per block: 1 for scalars, 2 for F4, 4 for F6, 32/64/128/256 for ggml blocks */
  uint32_t block_bytes;  /* bytes per block */
  bool is_float;         /* plain floating point scalar (f64 f32 f16 bf16 and the F8 kinds) */
  bool is_quant;         /* ggml block type (scale + codes) */
} fg_dtype_traits;

/* True for a value naming a dtype (removed ggml slots and gaps are false). */
FG_API bool fg_dtype_valid(int v);
/* Traits of a valid dtype; NULL otherwise. */
FG_API const fg_dtype_traits *fg_dtype_info(fg_dtype t);
/* Name of a dtype, "invalid" for a value that names none. */
FG_API const char *fg_dtype_name(fg_dtype t);

/* Look-ups; FG_ERR_BAD_DTYPE with a message when nothing matches. */
FG_API fg_status fg_dtype_from_name(const char *name, fg_dtype *out);     /* ggml names, case-sensitive */
FG_API fg_status fg_dtype_from_ggml(uint32_t code, fg_dtype *out);        /* GGUF wire code */
FG_API fg_status fg_dtype_from_st_tag(const char *tag, size_t len, fg_dtype *out); /* safetensors tag */
/* GGUF wire code of t, or -1 when GGUF cannot carry it. */
FG_API int fg_dtype_ggml_code(fg_dtype t);

/* Bytes of n elements of t. FG_ERR_BAD_ROW when n is not a whole number of blocks,
 * FG_ERR_OVERFLOW when the size does not fit in uint64. */
FG_API fg_status fg_dtype_nbytes(fg_dtype t, uint64_t n, uint64_t *out);

/* Element count of a shape with overflow checking (an empty shape is a scalar: 1). */
FG_API fg_status fg_shape_numel(const uint64_t *shape, int ndim, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
