/* Per-stream scratch memory on the device and pinned staging on the host (internal). */
#ifndef FORGIA_DEVICE_SCRATCH_H
#define FORGIA_DEVICE_SCRATCH_H

#include "device/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* At least bytes of device memory owned by s, valid for work queued on s until the next
 * fg_stream_scratch call on s. Growing waits for s first, since queued work may still
 * read the old block. */
fg_status fg_stream_scratch(fg_stream *s, size_t bytes, void **out);

/* Pinned host memory to fill with an argument table, then copy to the device on s with
 * fg_stream_stage_copy (which also records when the buffer may be reused). Two buffers
 * alternate, so a caller waits only when the copy two calls back has not run yet. */
fg_status fg_stream_stage(fg_stream *s, size_t bytes, void **out);
fg_status fg_stream_stage_copy(fg_stream *s, void *dst_dev, const void *stage, size_t bytes);

/* The stream a call given s runs on: s itself, or, when s is NULL, the device's own stream
 * locked for this thread until fg_stream_end (which also waits for it: a call given no
 * stream is synchronous). Returns the status of that wait, or st if st is an error. */
fg_stream *fg_stream_begin(fg_device *dev, fg_stream *s);
fg_status fg_stream_end(fg_device *dev, fg_stream *s, fg_status st);

/* Frees s's scratch and staging (s's work must be complete). */
void fg_stream_scratch_release(fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
