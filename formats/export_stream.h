/* Export's data path (formats/export_stream.c): a tensor's bytes copied or transcoded chunk
 * by chunk into the GGUF writer, every thread reading, decoding and encoding pieces of the
 * chunk while the calling thread also writes what is done. */
#ifndef FORGIA_EXPORT_STREAM_H
#define FORGIA_EXPORT_STREAM_H

#include <stdatomic.h>

#include "formats/export_internal.h"

/* Zero-initialised apart from p, w (or af), fn, user and prog; the caller points w at the tensor's
 * output file before each tensor and frees the buffers with fg_export_cursor_free, while
 * the source is still open. */
typedef struct fg_export_cursor {
  const fg_export_plan *p;
  fg_gguf_writer *w;
  struct fg_atomic_file *af; /* when set, the bytes go here instead of w (safetensors) */
  fg_export_progress prog;
  fg_export_progress_fn fn;
  void *user;
  int threads;               /* OpenMP's thread count, read at the first tensor */
  uint8_t *obuf;             /* one chunk's output bytes */
  uint8_t *ibuf;             /* per thread: one piece of source bytes */
  float *fbuf;               /* per thread: one piece decoded to f32 */
  atomic_uchar *done;        /* per piece of the chunk: its output is complete in obuf */
  size_t ocap, icap, fcap, dcap; /* icap and fcap per thread */
  const fg_mapping *evict_map; /* the last chunk's source pages, released during the next */
  uint64_t evict_off, evict_len;
} fg_export_cursor;

/* Adds bytes to the progress and calls the callback: FG_ERR_STATE when it cancels. */
fg_status fg_export_report(fg_export_cursor *c, uint64_t bytes);
/* Writes s's bytes unchanged. */
fg_status fg_export_copy_tensor(fg_export_cursor *c, const fg_ckpt_tensor *s);
/* Writes s decoded to f32 and encoded as t->dst_dtype (the decoded rows for f32). */
fg_status fg_export_transcode_tensor(fg_export_cursor *c, const fg_ckpt_tensor *s, const fg_export_tensor *t);
void fg_export_cursor_free(fg_export_cursor *c);

#endif
