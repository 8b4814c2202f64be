/* Row decoders of IQ1_S and IQ1_M on the host, from the grid as floats. The block decoders of
 * forgia/elem/quant_iq.h convert each grid byte (-1, 0, +1) to float per value, as ggml's
 * to_float does; here the 2048 x 8 grid values are floats once per process (64 KiB, built on
 * first use), so 8 values are two vector loads, adds and multiplies. The operations per value
 * are the same, dl * ((float)g + delta) with the same float g, so the floats are the block
 * decoders' bit for bit (the decode goldens check both). Measured on one core into 1 MiB of
 * output: IQ1_S 3x the block decoder, which is level with ggml. */
#include <pthread.h>

#include "formats/quant_internal.h"
#include "forgia/elem/quant_iq.h"

static float fg_iq1_gridf[2048][8];
static pthread_once_t fg_iq1_once = PTHREAD_ONCE_INIT;

static void fg_iq1_build(void) {
  for (unsigned i = 0; i < 2048; i++)
    for (int k = 0; k < 8; k++) fg_iq1_gridf[i][k] = (float)(int8_t)fg_iq_byte64(fg_iq1s_grid(i), k);
}

static inline void fg_iq1_put8f(float dl, float delta, unsigned idx, float *restrict y) {
  const float *v = fg_iq1_gridf[idx & 2047u];
  for (int k = 0; k < 8; k++) y[k] = dl * (v[k] + delta);
}

void fg_dec_rows_iq1_s(const uint8_t *restrict b, float *restrict y, int64_t nb) {
  pthread_once(&fg_iq1_once, fg_iq1_build);
  for (int64_t i = 0; i < nb; i++, b += 50, y += 256) {
    const float d = fg_ld_f16(b);
    const uint8_t *qs = b + 2;
    for (int g = 0; g < 8; g++) {
      const unsigned h = fg_bytes_ld_le16(b + 34 + 2 * g);
      const float dl = d * (float)(2 * (int)((h >> 12) & 7u) + 1);
      const float delta = fg_bits_f32(fg_f32_bits(FG_IQ1_DELTA) ^ ((h & 0x8000u) << 16));
      for (int l = 0; l < 4; l++)
        fg_iq1_put8f(dl, delta, qs[4 * g + l] | (((h >> (3 * l)) & 7u) << 8), y + 32 * g + 8 * l);
    }
  }
}

void fg_dec_rows_iq1_m(const uint8_t *restrict b, float *restrict y, int64_t nb) {
  pthread_once(&fg_iq1_once, fg_iq1_build);
  for (int64_t i = 0; i < nb; i++, b += 56, y += 256) {
    unsigned sc[4];
    const float d = fg_iq1m_d(b, sc);
    for (int g = 0; g < 8; g++) {
      float dl1, dl2, delta;
      fg_iq1m_group(sc, d, g, &dl1, &dl2);
      for (int l = 0; l < 4; l++) {
        const unsigned idx = fg_iq1m_entry(b, g, l, &delta);
        fg_iq1_put8f(l < 2 ? dl1 : dl2, delta, idx, y + 32 * g + 8 * l);
      }
    }
  }
}
