/* Decoding for the loader, whose output is written once and read later, if at all. */
#ifndef FORGIA_FORMATS_QUANT_STREAM_H
#define FORGIA_FORMATS_QUANT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fg_quant_decode_row (one row of n elements, the same checks and floats) with the output
 * written around the caches (non-temporal stores, x86-64) whatever its size, for the types
 * whose decoders outrun plain stores to memory (plain stores for the others and elsewhere):
 * for output that nobody reads before it has left the cache anyway. fg_quant_decode_rows
 * does so by itself for output larger than the last-level cache, already in memory. */
fg_status fg_quant_decode_streaming(fg_dtype t, const void *src, size_t src_bytes, float *dst, int64_t n);

/* Whether out_bytes of decoded output are more than the last-level cache holds (its size
 * from the system, else 32 MiB): the size from which fg_quant_decode_rows streams. */
bool fg_quant_stream_worth(uint64_t out_bytes);

#ifdef __cplusplus
}
#endif

#endif
