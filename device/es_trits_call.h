/* One validated trit call (forgia/es_trits.h), as device/es_trits.c hands it to a backend's
 * es_trits slot. Internal. */
#ifndef FORGIA_DEVICE_ES_TRITS_CALL_H
#define FORGIA_DEVICE_ES_TRITS_CALL_H

#include <stdint.h>

enum { FG_ES_TRITS_FLIP = 0, FG_ES_TRITS_UNDO = 1, FG_ES_TRITS_MOVE = 2 };

typedef struct fg_es_trits_call {
  int kernel;
  int mirrored;         /* FLIP */
  uint8_t *blocks;
  uint64_t len;         /* elements */
  uint64_t seed, count; /* FLIP: the stream and its flips; UNDO: entries; MOVE: moves */
  uint64_t *log_idx;    /* FLIP: the log written (NULL: none) */
  uint8_t *log_code;
  const uint64_t *idx;  /* UNDO: the log's elements; MOVE: the elements moved */
  const uint8_t *code;  /* UNDO: the log's codes */
  const int8_t *dir;    /* MOVE */
} fg_es_trits_call;

#endif
