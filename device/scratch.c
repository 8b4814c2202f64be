/* Grow-only scratch per stream: an op queued on a stream finds its chunk tables and
 * partials here, so steady-state calls allocate nothing (and never wait on an allocator).
 * Argument tables go through pinned staging buffers because a copy from pageable memory
 * may wait for the stream, which would make every queued op a host round trip. */
#include <stdint.h>

#include "device/hostmem.h"
#include "device/scratch.h"
#include "forgia/device.h"

static size_t fg_grow(size_t have, size_t bytes) {
  size_t want = have ? have : 4096;
  while (want < bytes) want = want > SIZE_MAX / 2 ? bytes : want * 2;
  return want;
}

fg_status fg_stream_scratch(fg_stream *s, size_t bytes, void **out) {
  if (bytes <= s->scratch_bytes) {
    *out = s->scratch;
    return FG_OK;
  }
  const size_t want = fg_grow(s->scratch_bytes, bytes);
  fg_device *dev = s->dev;
  if (s->scratch) {
    fg_status st = dev->be->stream_sync(dev, s->impl);
    if (st) return st;
    dev->be->free(dev, s->scratch);
    s->scratch = NULL;
    s->scratch_bytes = 0;
  }
  void *p;
  fg_status st = dev->be->alloc(dev, want, &p);
  if (st) return fg_fail_prefix(st, "scratch for %s: ", dev->spec);
  s->scratch = p;
  s->scratch_bytes = want;
  *out = p;
  return FG_OK;
}

fg_status fg_stream_stage(fg_stream *s, size_t bytes, void **out) {
  fg_device *dev = s->dev;
  const int b = s->stage_next;
  if (s->stage_event[b]) {
    fg_status st = dev->be->event_sync(dev, s->stage_event[b]);
    if (st) return st;
  } else {
    fg_status st = dev->be->event_create(dev, &s->stage_event[b]);
    if (st) return st;
  }
  if (bytes > s->stage_bytes[b]) {
    const size_t want = fg_grow(s->stage_bytes[b], bytes);
    void *p;
    fg_status st = fg_device_pinned_alloc(dev, want, -1, &p);
    if (st) return st;
    fg_device_pinned_free(dev, s->stage[b]);
    s->stage[b] = p;
    s->stage_bytes[b] = want;
  }
  *out = s->stage[b];
  return FG_OK;
}

fg_status fg_stream_stage_copy(fg_stream *s, void *dst_dev, const void *stage, size_t bytes) {
  fg_device *dev = s->dev;
  const int b = s->stage_next;
  fg_status st = dev->be->copy(dev, dst_dev, stage, bytes, FG_COPY_H2D, s->impl);
  if (st) return st;
  s->stage_next = 1 - b;
  return dev->be->event_record(dev, s->stage_event[b], s->impl);
}

fg_stream *fg_stream_begin(fg_device *dev, fg_stream *s) {
  if (s) return s;
  pthread_mutex_lock(&dev->stream_lock);
  return dev->stream;
}

fg_status fg_stream_end(fg_device *dev, fg_stream *s, fg_status st) {
  if (s) return st;
  if (st == FG_OK) st = dev->be->stream_sync(dev, dev->stream->impl);
  pthread_mutex_unlock(&dev->stream_lock);
  return st;
}

void fg_stream_scratch_release(fg_stream *s) {
  fg_device *dev = s->dev;
  if (s->scratch) dev->be->free(dev, s->scratch);
  s->scratch = NULL;
  s->scratch_bytes = 0;
  for (int b = 0; b < 2; b++) {
    fg_device_pinned_free(dev, s->stage[b]);
    if (s->stage_event[b]) dev->be->event_destroy(dev, s->stage_event[b]);
    s->stage[b] = s->stage_event[b] = NULL;
    s->stage_bytes[b] = 0;
  }
}
