/* Sparse trit moves on a packed TQ2_0 genome in device memory (the ternary slots of
 * forgia/es.h run on these; docs/design.md, Training). blocks is
 * len / 256 blocks of 66 bytes (qs[64], then the f16 scale d, which is never touched) on
 * dev, 2-byte aligned like the block type; len is a positive multiple of 256. Every code
 * the calls read must be 0, 1 or 2 (fg_es_add_ternary checks a genome once).
 *
 * The arithmetic is elem/es_trits.h's on every backend, so CPU and CUDA leave the same
 * bytes. s NULL runs synchronously on the device's own stream; otherwise the call is queued
 * on s and every pointer must stay valid until s completes. */
#ifndef FORGIA_ES_TRITS_H
#define FORGIA_ES_TRITS_H

#include <stdbool.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Applies flips 0..count-1 of the stream stream_seed in order, each on the code the ones
 * before it left (collisions compound); mirrored negates every delta (the odd member of an
 * antithetic pair). With a log, undo_idx[i] and undo_code[i] (count entries each, device
 * memory) receive flip i's element and the code it had before flip i; both NULL: no log
 * (a replica). The flips run one after another on one thread, since their order matters. */
FG_API fg_status fg_es_trits_flip(fg_device *dev, uint8_t *blocks, uint64_t len, uint64_t stream_seed, uint64_t count,
                                  bool mirrored, uint64_t *undo_idx, uint8_t *undo_code, fg_stream *s);
/* Replays n log entries from the last to the first: the genome returns, bitwise, to what it
 * was before the flips that wrote them. An entry whose element is not below len is skipped. */
FG_API fg_status fg_es_trits_undo(fg_device *dev, uint8_t *blocks, uint64_t len, const uint64_t *undo_idx,
                                  const uint8_t *undo_code, uint64_t n, fg_stream *s);
/* Moves element idx[j] one step in direction dir[j] (+1 or -1; clamped at the rails) for
 * j < k, all at once. The k elements must be distinct (moves on one element would depend on
 * their order); an element not below len is skipped. idx and dir are device memory. */
FG_API fg_status fg_es_trits_move(fg_device *dev, uint8_t *blocks, uint64_t len, const uint64_t *idx, const int8_t *dir,
                                  uint64_t k, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
