#include <stdint.h>
#include <string.h>

#include "cpu/cpu_ops.h"
#include "forgia/elem/half.h"
#include "forgia/elem/quant_decode.h"

/* Below this size the thread start-up costs more than the copy. */
#define FG_CPU_PAR_BYTES (1u << 20)

void fg_cpu_memcpy(void *dst, const void *src, size_t bytes) {
  if (bytes < 4 * FG_CPU_PAR_BYTES) {
    memcpy(dst, src, bytes);
    return;
  }
  const size_t piece = FG_CPU_PAR_BYTES;
  const long n = (long)((bytes + piece - 1) / piece);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) {
    size_t off = (size_t)i * piece, len = bytes - off < piece ? bytes - off : piece;
    memcpy((uint8_t *)dst + off, (const uint8_t *)src + off, len);
  }
}

#define FG_CVT_LOOP(DT, ST, EXPR)                                        \
  do {                                                                   \
    DT *d = (DT *)dst;                                                   \
    const ST *s = (const ST *)src;                                       \
    _Pragma("omp parallel for schedule(static) if (n > (1u << 16))")    \
    for (size_t i = 0; i < n; i++) d[i] = EXPR;                          \
  } while (0)

fg_status fg_cpu_convert(void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n) {
  if (st == FG_F32 && dt == FG_F32) {
    fg_cpu_memcpy(dst, src, n * 4);
  } else if (st == FG_F32 && dt == FG_BF16) {
    FG_CVT_LOOP(uint16_t, float, fg_f32_to_bf16(s[i]));
  } else if (st == FG_F32 && dt == FG_F16) {
    FG_CVT_LOOP(uint16_t, float, fg_f32_to_f16(s[i]));
  } else if (st == FG_BF16 && dt == FG_F32) {
    FG_CVT_LOOP(float, uint16_t, fg_bf16_to_f32(s[i]));
  } else if (st == FG_F16 && dt == FG_F32) {
    FG_CVT_LOOP(float, uint16_t, fg_f16_to_f32(s[i]));
  } else if (dt == FG_F32 && fg_dtype_info(st) && fg_dtype_info(st)->is_quant) {
    /* Dequantize: one block per iteration, the same elem/ decoder the CUDA kernel calls. */
    const fg_dtype_traits *tr = fg_dtype_info(st);
    const long nb = (long)(n / tr->block_elems);
    int ok = 1;
#pragma omp parallel for schedule(static) reduction(& : ok) if (nb > 64)
    for (long b = 0; b < nb; b++)
      ok &= fg_dequant_block(st, (const uint8_t *)src + (size_t)b * tr->block_bytes, (float *)dst + (size_t)b * tr->block_elems);
    if (!ok) return fg_fail(FG_ERR_UNSUPPORTED, "cpu convert: no decoder for %s", tr->name);
  } else {
    return fg_fail(FG_ERR_UNSUPPORTED, "cpu convert: %s -> %s is not supported", fg_dtype_name(st),
                   fg_dtype_name(dt));
  }
  return FG_OK;
}
