/* forgia's numerics flags reach a consumer: an elem/ function compiled in the consumer's
 * program gives the library's bits. `numerics` checks that numerics_probe.c was compiled
 * without contraction and that its inline Q4_1 decoder matches fg_quant_decode_row bit for
 * bit; `numerics --contracted` is the control, run on a probe built with -ffp-contract=fast
 * appended, and checks that the probe then does fuse (so the first check can fail). */
#include <forgia/forgia.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

float probe_muladd(float a, float b, float c);
void probe_decode_q4_1(const uint8_t *blocks, size_t nblocks, float *y);

static int have_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); /* x86-64-v3 */
#elif defined(__aarch64__)
  return 1;
#else
  return 0;
#endif
}

int main(int argc, char **argv) {
  int contracted = argc > 1 && strcmp(argv[1], "--contracted") == 0;
  if (!have_fma()) {
    printf("numerics: skipped (no fused multiply-add on this CPU, so contraction cannot change bits)\n");
    return 0;
  }
  /* a * a = 1 + 2^-11 + 2^-24 exactly; rounded to f32 it is 1 + 2^-11 (a tie, to even), so
   * a * a + c is 0 when the product is rounded first and 2^-24 when the operation is fused. */
  volatile float a = 1.0f + 0x1p-12f, c = -(1.0f + 0x1p-11f);
  float got = probe_muladd(a, a, c);
  if (contracted) {
    if (got != 0x1p-24f) {
      printf("numerics control: a probe built with -ffp-contract=fast gave %a, expected the fused %a\n", got, 0x1p-24f);
      return 1;
    }
    printf("numerics control: -ffp-contract=fast fuses (%a), so the check is live\n", got);
    return 0;
  }
  if (got != 0.0f) {
    printf("numerics: a * b + c was contracted (%a): forgia's -ffp-contract=off did not reach the consumer\n", got);
    return 1;
  }
  /* Q4_1 blocks with scales and minima of many magnitudes: the consumer's inline decoder
   * against the library's. */
  enum { NB = 64 };
  uint8_t blocks[NB * 20];
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < sizeof blocks; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    blocks[i] = (uint8_t)(x >> 56);
  }
  for (int b = 0; b < NB; b++) {
    blocks[20 * b + 1] &= 0xbb; /* d and m: the top and bottom f16 exponent bits cleared, so finite */
    blocks[20 * b + 3] &= 0xbb;
  }
  float mine[NB * 32], lib[NB * 32];
  probe_decode_q4_1(blocks, NB, mine);
  if (fg_quant_decode_row(FG_Q4_1, blocks, sizeof blocks, lib, NB * 32) != FG_OK) {
    printf("numerics: fg_quant_decode_row: %s\n", fg_last_error());
    return 1;
  }
  if (memcmp(mine, lib, sizeof lib) != 0) {
    printf("numerics: the consumer's elem/ Q4_1 decoder differs from libforgia's\n");
    return 1;
  }
  printf("numerics ok: no contraction in the consumer; elem/ decode == libforgia bit for bit\n");
  return 0;
}
