/* Compiled with the consumer's own optimisation flags (-O2, and -march=x86-64-v3 on x86-64,
 * so FMA instructions are available) plus whatever forgia's usage requirements add. GCC's
 * default in GNU mode is -ffp-contract=fast, which turns a * b + c into one fused
 * multiply-add: only forgia's -ffp-contract=off keeps this file rounding as the library does. */
#include <stddef.h>
#include <stdint.h>

#include <forgia/elem/quant_simple.h>

float probe_muladd(float a, float b, float c);
void probe_decode_q4_1(const uint8_t *blocks, size_t nblocks, float *y);

/* The a * b + c pattern of the elem/ decoders (Q4_1: q * d + m), with arguments this file
 * cannot see, so nothing is folded at compile time. */
float probe_muladd(float a, float b, float c) { return a * b + c; }

/* The inline elem/ decoder, instantiated here under the consumer's flags. */
void probe_decode_q4_1(const uint8_t *blocks, size_t nblocks, float *y) {
  for (size_t i = 0; i < nblocks; i++) fg_dequant_q4_1(blocks + 20 * i, y + 32 * i);
}
