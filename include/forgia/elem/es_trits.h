/* The trit operations of ternary ES genomes (Fucina's src/es.zig; docs/design.md, Training),
 * shared by the CPU loops and the CUDA kernels of forgia/es_trits.h.
 *
 * A genome is packed TQ2_0: blocks of 66 bytes, qs[64] then the f16 scale d, 256 elements
 * each. Element e lives in block e / 256, byte ((e >> 7) & 1) * 32 + (e & 31) of it, bits
 * 2 * ((e >> 5) & 3) and up; its 2-bit code q is value + 1, so 0, 1 and 2 are -1, 0 and +1
 * and 3 is invalid. Nothing here reads or writes d.
 *
 * Flip i of a stream with seed Q over a genome of len elements touches element
 * at(Q, 2i) mod len and moves it by +1 when at(Q, 2i + 1) is odd, else by -1 (the other way
 * for the mirrored member of an antithetic pair), clamped to the rails. */
#ifndef FORGIA_ELEM_ES_TRITS_H
#define FORGIA_ELEM_ES_TRITS_H

#include <stdint.h>

#include "forgia/elem/hd.h"
#include "forgia/elem/rng.h"

#define FG_TRIT_BLOCK_ELEMS 256u
#define FG_TRIT_BLOCK_BYTES 66u

/* Byte offset of element e's code from the start of the genome, and its bit shift. */
static inline FG_HD uint64_t fg_trit_byte(uint64_t e) {
  return (e >> 8) * FG_TRIT_BLOCK_BYTES + ((e >> 7) & 1u) * 32u + (e & 31u);
}
static inline FG_HD unsigned fg_trit_shift(uint64_t e) { return 2u * (unsigned)((e >> 5) & 3u); }

static inline FG_HD uint8_t fg_trit_get(const uint8_t *blocks, uint64_t e) {
  return (uint8_t)((blocks[fg_trit_byte(e)] >> fg_trit_shift(e)) & 3u);
}
/* byte with the code at shift replaced (code masked to its two bits). */
static inline FG_HD uint8_t fg_trit_with(uint8_t byte, unsigned shift, uint8_t code) {
  return (uint8_t)((byte & ~(3u << shift)) | ((code & 3u) << shift));
}
static inline FG_HD void fg_trit_set(uint8_t *blocks, uint64_t e, uint8_t code) {
  uint8_t *b = blocks + fg_trit_byte(e);
  *b = fg_trit_with(*b, fg_trit_shift(e), code);
}

/* One clamped step: clamp((code - 1) + delta, -1, 1) + 1, for delta +1 or -1. */
static inline FG_HD uint8_t fg_trit_move(uint8_t code, int delta) {
  int w = (int)code - 1 + delta;
  if (w < -1) w = -1;
  if (w > 1) w = 1;
  return (uint8_t)(w + 1);
}

/* The byte holding element e after a move of it in direction dir (> 0: up, else down). */
static inline FG_HD uint8_t fg_trit_moved_byte(uint8_t byte, uint64_t e, int8_t dir) {
  const unsigned sh = fg_trit_shift(e);
  return fg_trit_with(byte, sh, fg_trit_move((uint8_t)((byte >> sh) & 3u), dir > 0 ? 1 : -1));
}

/* Whether a qs byte holds code 3 in any of its four lanes (both bits of a pair set). */
static inline FG_HD int fg_trit_byte_invalid(uint8_t b) { return (b & (b >> 1) & 0x55u) != 0; }

/* Flip i of stream seed: its element and its delta (+1 / -1), negated when mirrored. */
static inline FG_HD uint64_t fg_trit_flip_index(uint64_t seed, uint64_t i, uint64_t len) {
  return fg_rng_at(seed, 2u * i) % len;
}
static inline FG_HD int fg_trit_flip_delta(uint64_t seed, uint64_t i, int mirrored) {
  const int d = (fg_rng_at(seed, 2u * i + 1u) & 1u) ? 1 : -1;
  return mirrored ? -d : d;
}

/* Flips 0..count-1 applied in order, each reading the code the previous ones left (so
 * flips on one element compound). With a log, entry i records (element, code before flip
 * i); undo_idx and undo_code are both NULL or both count long. */
static inline FG_HD void fg_trit_flips(uint8_t *blocks, uint64_t len, uint64_t seed, uint64_t count, int mirrored,
                                       uint64_t *undo_idx, uint8_t *undo_code) {
  for (uint64_t i = 0; i < count; i++) {
    const uint64_t e = fg_trit_flip_index(seed, i, len);
    const uint8_t old = fg_trit_get(blocks, e);
    if (undo_idx) {
      undo_idx[i] = e;
      undo_code[i] = old;
    }
    fg_trit_set(blocks, e, fg_trit_move(old, fg_trit_flip_delta(seed, i, mirrored)));
  }
}

/* The log replayed from its last entry to its first, which unwinds colliding flips through
 * their intermediate codes back to the genome before the flips. Entries whose element is
 * not below len are skipped (never written out of bounds). */
static inline FG_HD void fg_trit_undo(uint8_t *blocks, uint64_t len, const uint64_t *undo_idx,
                                      const uint8_t *undo_code, uint64_t n) {
  for (uint64_t i = n; i-- > 0;)
    if (undo_idx[i] < len) fg_trit_set(blocks, undo_idx[i], undo_code[i]);
}

#endif
