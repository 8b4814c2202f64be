/* The trit calls of forgia/es_trits.h on the CPU, through elem/es_trits.h. The flips and
 * the undo run in order on one thread (their order is the contract); the moves too, since
 * four elements share each byte and a move is a few instructions. Synchronous like every
 * CPU stream operation. */
#include "device/backend.h"
#include "device/es_trits_call.h"
#include "forgia/elem/es_trits.h"

fg_status fg_cpu_es_trits(fg_device *dev, const struct fg_es_trits_call *c, fg_stream *stream) {
  (void)dev, (void)stream;
  if (c->kernel == FG_ES_TRITS_FLIP) {
    fg_trit_flips(c->blocks, c->len, c->seed, c->count, c->mirrored, c->log_idx, c->log_code);
  } else if (c->kernel == FG_ES_TRITS_UNDO) {
    fg_trit_undo(c->blocks, c->len, c->idx, c->code, c->count);
  } else {
    for (uint64_t j = 0; j < c->count; j++) {
      const uint64_t e = c->idx[j];
      if (e >= c->len) continue;
      uint8_t *b = c->blocks + fg_trit_byte(e);
      *b = fg_trit_moved_byte(*b, e, c->dir[j]);
    }
  }
  return FG_OK;
}
