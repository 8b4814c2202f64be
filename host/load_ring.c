/* The staging ring: pinned host buffers on the NUMA node nearest the device, one event per
 * buffer (recorded after the last copy out of it, so the buffer is reused only once the
 * device has read it) and the copy stream those copies run on. */
#include <stdlib.h>
#include <unistd.h>

#include "host/load_internal.h"

fg_status fg_load_ring_create(fg_device *dev, uint32_t count, size_t bytes, fg_load_ring **out) {
  if (!dev || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_load_ring_create: NULL argument");
  if (count < 1 || count > FG_LOAD_RING_MAX_COUNT)
    return fg_fail(FG_ERR_INVALID_ARG, "staging ring: %u buffers, expected 1..%u", count, FG_LOAD_RING_MAX_COUNT);
  if (bytes < FG_LOAD_RING_MIN_BYTES || bytes > FG_LOAD_RING_MAX_BYTES)
    return fg_fail(FG_ERR_INVALID_ARG, "staging ring: buffers of %zu bytes, expected %zu..%zu", bytes,
                   FG_LOAD_RING_MIN_BYTES, FG_LOAD_RING_MAX_BYTES);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  bytes = (bytes + page - 1) / page * page;
  fg_device_info info;
  fg_status s = fg_device_query(dev, &info);
  if (s) return s;
  fg_load_ring *r = calloc(1, sizeof *r);
  if (!r) return fg_fail(FG_ERR_NOMEM, "staging ring: out of memory");
  r->dev = dev;
  r->bytes = bytes;
  r->numa_node = info.kind == FG_DEVICE_CUDA ? info.numa_node : -1;
  r->buf = calloc(count, sizeof *r->buf);
  r->ev = calloc(count, sizeof *r->ev);
  if (!r->buf || !r->ev) {
    fg_load_ring_free(r);
    return fg_fail(FG_ERR_NOMEM, "staging ring: out of memory");
  }
  /* count grows with each buffer made, so that a failure frees exactly what exists. */
  for (uint32_t i = 0; i < count; i++) {
    if ((s = fg_device_pinned_alloc(dev, bytes, r->numa_node, &r->buf[i])) ||
        (s = fg_event_create(dev, &r->ev[i]))) {
      r->count = i + 1;
      fg_load_ring_free(r);
      return fg_fail_prefix(s, "staging ring: buffer %u of %u (%zu bytes, NUMA node %d): ", i, count, bytes,
                            info.numa_node);
    }
    r->count = i + 1;
  }
  if ((s = fg_stream_create(dev, &r->stream))) {
    fg_load_ring_free(r);
    return fg_fail_prefix(s, "staging ring: copy stream: ");
  }
  *out = r;
  return FG_OK;
}

void fg_load_ring_free(fg_load_ring *r) {
  if (!r) return;
  /* Nothing may still be copying out of a buffer that is about to be unpinned. */
  if (r->stream) (void)fg_stream_sync(r->stream);
  for (uint32_t i = 0; i < r->count; i++) {
    if (r->ev && r->ev[i]) fg_event_free(r->ev[i]);
    if (r->buf && r->buf[i]) fg_device_pinned_free(r->dev, r->buf[i]);
  }
  fg_stream_free(r->stream);
  free(r->buf);
  free(r->ev);
  free(r);
}
