/* The trit calls' front (forgia/es_trits.h): one validation for every backend, then the
 * es_trits kernel family (device/family_table.h). */
#include <stdint.h>

#include "device/backend.h"
#include "device/es_trits_call.h"
#include "device/scratch.h"
#include "forgia/elem/es_trits.h"
#include "forgia/es_trits.h"

static fg_status fg_es_trits_run(fg_device *dev, const char *what, const fg_es_trits_call *c, fg_stream *s) {
  return fg_family_es_trits(dev, c, s, what);
}

/* The genome: a device, 2-byte aligned blocks (the CUDA moves update 16-bit words, which
 * then never reach outside the genome), and whole blocks. */
static fg_status fg_es_trits_check(const char *what, fg_device *dev, const uint8_t *blocks, uint64_t len) {
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (!blocks) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL genome", what);
  if ((uintptr_t)blocks & 1u)
    return fg_fail(FG_ERR_BAD_ALIGNMENT, "%s: the genome at %p is not 2-byte aligned", what, (const void *)blocks);
  if (len == 0 || len % FG_TRIT_BLOCK_ELEMS)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: %llu elements is not a positive multiple of %u", what,
                   (unsigned long long)len, FG_TRIT_BLOCK_ELEMS);
  return FG_OK;
}

fg_status fg_es_trits_flip(fg_device *dev, uint8_t *blocks, uint64_t len, uint64_t stream_seed, uint64_t count,
                           bool mirrored, uint64_t *undo_idx, uint8_t *undo_code, fg_stream *s) {
  const char *what = "fg_es_trits_flip";
  fg_status st = fg_es_trits_check(what, dev, blocks, len);
  if (st) return st;
  if (!undo_idx != !undo_code)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: undo_idx and undo_code must both be given or both NULL", what);
  if (!count) return FG_OK;
  const fg_es_trits_call c = {.kernel = FG_ES_TRITS_FLIP, .mirrored = mirrored ? 1 : 0, .blocks = blocks, .len = len,
                              .seed = stream_seed, .count = count, .log_idx = undo_idx, .log_code = undo_code};
  return fg_es_trits_run(dev, what, &c, s);
}

fg_status fg_es_trits_undo(fg_device *dev, uint8_t *blocks, uint64_t len, const uint64_t *undo_idx,
                           const uint8_t *undo_code, uint64_t n, fg_stream *s) {
  const char *what = "fg_es_trits_undo";
  fg_status st = fg_es_trits_check(what, dev, blocks, len);
  if (st) return st;
  if (!n) return FG_OK;
  if (!undo_idx || !undo_code)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL log with %llu entries", what, (unsigned long long)n);
  const fg_es_trits_call c = {.kernel = FG_ES_TRITS_UNDO, .blocks = blocks, .len = len, .count = n, .idx = undo_idx,
                              .code = undo_code};
  return fg_es_trits_run(dev, what, &c, s);
}

fg_status fg_es_trits_move(fg_device *dev, uint8_t *blocks, uint64_t len, const uint64_t *idx, const int8_t *dir,
                           uint64_t k, fg_stream *s) {
  const char *what = "fg_es_trits_move";
  fg_status st = fg_es_trits_check(what, dev, blocks, len);
  if (st) return st;
  if (!k) return FG_OK;
  if (!idx || !dir)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL indices or directions with %llu moves", what, (unsigned long long)k);
  const fg_es_trits_call c = {.kernel = FG_ES_TRITS_MOVE, .blocks = blocks, .len = len, .count = k, .idx = idx,
                              .dir = dir};
  return fg_es_trits_run(dev, what, &c, s);
}
