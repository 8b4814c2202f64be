/* GGUF writer, second half: serialising in ggml's layout, to memory, to a file in one pass
 * or streamed tensor by tensor. Files are written under a temporary name beside the
 * destination and renamed into place only once every byte is out. */
#define _GNU_SOURCE
#include "formats/gguf_writer_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Header: magic, version, counts, KVs, tensor infos, zero padding to the alignment (always,
 * even without tensors, as ggml does). */
static fg_status header_size(const fg_gguf_writer *w, uint64_t *unpadded, uint64_t *padded) {
  uint64_t n = 24;
  for (uint64_t i = 0; i < w->n_kv; i++) n += w->kvs[i].wire_len;
  for (uint64_t i = 0; i < w->n_tensors; i++) n += 8 + w->tensors[i].name_len + 4 + 8 * w->tensors[i].ndim + 4 + 8;
  *unpadded = n;
  *padded = fg_gguf_pad(n, w->alignment);
  if (*padded > SIZE_MAX) return fg_fail(FG_ERR_NOMEM, "GGUF writer: header of %" PRIu64 " bytes", *padded);
  return FG_OK;
}

/* Fills buf (padded bytes, zeroed by the caller) with the header. */
static void header_fill(const fg_gguf_writer *w, uint8_t *buf) {
  uint8_t *p = buf;
  memcpy(p, "GGUF", 4);
  fg_bytes_st_le32(p + 4, w->version);
  fg_bytes_st_le64(p + 8, w->n_tensors);
  fg_bytes_st_le64(p + 16, w->n_kv);
  p += 24;
  for (uint64_t i = 0; i < w->n_kv; i++) {
    memcpy(p, w->kvs[i].wire, (size_t)w->kvs[i].wire_len);
    p += w->kvs[i].wire_len;
  }
  uint64_t offset = 0;
  for (uint64_t i = 0; i < w->n_tensors; i++) {
    const fg_gguf_wtensor *t = &w->tensors[i];
    fg_bytes_st_le64(p, t->name_len);
    memcpy(p + 8, t->name, t->name_len);
    p += 8 + t->name_len;
    fg_bytes_st_le32(p, t->ndim);
    p += 4;
    for (uint32_t d = 0; d < t->ndim; d++, p += 8) fg_bytes_st_le64(p, t->ne[d]);
    fg_bytes_st_le32(p, (uint32_t)fg_dtype_ggml_code(t->dtype));
    fg_bytes_st_le64(p + 4, offset);
    p += 12;
    offset += fg_gguf_pad(t->nbytes, w->alignment);
  }
}

static fg_status data_size(const fg_gguf_writer *w, uint64_t *total) {
  uint64_t n = 0;
  for (uint64_t i = 0; i < w->n_tensors; i++) {
    uint64_t p = fg_gguf_pad(w->tensors[i].nbytes, w->alignment);
    if (p < w->tensors[i].nbytes || n + p < n) return fg_fail(FG_ERR_OVERFLOW, "GGUF writer: data section size overflows");
    n += p;
  }
  *total = n;
  return FG_OK;
}

static fg_status need_all_data(const fg_gguf_writer *w) {
  for (uint64_t i = 0; i < w->n_tensors; i++)
    if (!w->tensors[i].has_data)
      return fg_fail(FG_ERR_STATE, "GGUF writer: tensor '%s' was declared without data; stream it with fg_gguf_writer_begin",
                     w->tensors[i].name);
  return FG_OK;
}

fg_status fg_gguf_writer_finish_mem(fg_gguf_writer *w, void **out, size_t *len) {
  if (!w || !out || !len) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_finish_mem: NULL argument");
  if (fg_atomic_file_open(&w->out)) return fg_fail(FG_ERR_STATE, "fg_gguf_writer_finish_mem: a streaming write is in progress");
  uint64_t hu = 0, hp = 0, dn = 0;
  fg_status s;
  if ((s = need_all_data(w)) || (s = header_size(w, &hu, &hp)) || (s = data_size(w, &dn))) return s;
  if (dn > SIZE_MAX - hp) return fg_fail(FG_ERR_NOMEM, "GGUF writer: output too large for memory");
  uint8_t *buf = calloc(1, (size_t)(hp + dn) ? (size_t)(hp + dn) : 1);
  if (!buf) return fg_fail(FG_ERR_NOMEM, "GGUF writer: no memory for %" PRIu64 " output bytes", hp + dn);
  header_fill(w, buf);
  uint8_t *p = buf + hp;
  for (uint64_t i = 0; i < w->n_tensors; i++) {
    const fg_gguf_wtensor *t = &w->tensors[i];
    if (t->nbytes) memcpy(p, t->data, (size_t)t->nbytes);
    p += fg_gguf_pad(t->nbytes, w->alignment);
  }
  *out = buf;
  *len = (size_t)(hp + dn);
  return FG_OK;
}

/* ---- files ---- */

/* Ends a stream without a file: the temporary file is removed. */
static void stream_abort(fg_gguf_writer *w) { fg_atomic_file_abort(&w->out); }

static fg_status fail_abort(fg_gguf_writer *w, fg_status s) {
  stream_abort(w);
  return s;
}

/* Moves past zero-byte tensors, which have neither data nor padding. */
static void skip_empty(fg_gguf_writer *w) {
  while (w->cur < w->n_tensors && w->tensors[w->cur].nbytes == 0) w->cur++;
}

fg_status fg_gguf_writer_begin(fg_gguf_writer *w, const char *path) {
  if (!w || !path) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_begin: NULL argument");
  if (fg_atomic_file_open(&w->out))
    return fg_fail(FG_ERR_STATE, "%s: a streaming write to %s is in progress", path, w->out.path);
  uint64_t hu = 0, hp = 0, dn = 0;
  fg_status s;
  if ((s = header_size(w, &hu, &hp)) || (s = data_size(w, &dn))) return s;
  uint8_t *hdr = calloc(1, (size_t)hp);
  if (!hdr) return fg_fail(FG_ERR_NOMEM, "%s: out of memory for a %" PRIu64 "-byte header", path, hp);
  header_fill(w, hdr);
  s = fg_atomic_file_begin(&w->out, path);
  if (!s) s = fg_atomic_file_write(&w->out, hdr, hp);
  free(hdr);
  if (s) return fail_abort(w, s);
  w->cur = 0;
  w->cur_done = 0;
  skip_empty(w);
  return FG_OK;
}

const char *fg_gguf_writer_next_tensor(const fg_gguf_writer *w) {
  if (!w || !fg_atomic_file_open(&w->out) || w->cur >= w->n_tensors) return NULL;
  return w->tensors[w->cur].name;
}

fg_status fg_gguf_writer_write_data(fg_gguf_writer *w, const void *data, uint64_t len) {
  if (!w) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_write_data: NULL writer");
  if (!fg_atomic_file_open(&w->out))
    return fg_fail(FG_ERR_STATE, "fg_gguf_writer_write_data: no streaming write in progress");
  if (!len) return FG_OK;
  if (!data) return fail_abort(w, fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_write_data: NULL data"));
  if (w->cur >= w->n_tensors)
    return fail_abort(w, fg_fail(FG_ERR_RANGE, "%s: %" PRIu64 " bytes written after the last tensor", w->out.path, len));
  const fg_gguf_wtensor *t = &w->tensors[w->cur];
  if (len > t->nbytes - w->cur_done)
    return fail_abort(w, fg_fail(FG_ERR_RANGE, "%s: tensor '%s': %" PRIu64 " bytes given, only %" PRIu64 " of its %" PRIu64 " remain",
                                 w->out.path, t->name, len, t->nbytes - w->cur_done, t->nbytes));
  fg_status s = fg_atomic_file_write(&w->out, data, len);
  if (s) return fail_abort(w, s);
  w->cur_done += len;
  if (w->cur_done == t->nbytes) {
    if ((s = fg_atomic_file_write_zeros(&w->out, fg_gguf_pad(t->nbytes, w->alignment) - t->nbytes)))
      return fail_abort(w, s);
    w->cur++;
    w->cur_done = 0;
    skip_empty(w);
  }
  return FG_OK;
}

fg_status fg_gguf_writer_commit(fg_gguf_writer *w) {
  if (!w) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_commit: NULL writer");
  if (!fg_atomic_file_open(&w->out)) return fg_fail(FG_ERR_STATE, "fg_gguf_writer_commit: no streaming write in progress");
  if (w->cur < w->n_tensors) {
    const fg_gguf_wtensor *t = &w->tensors[w->cur];
    return fail_abort(w, fg_fail(FG_ERR_STATE, "%s: tensor '%s' has %" PRIu64 " of its %" PRIu64 " bytes (%" PRIu64 " tensors missing data)",
                                 w->out.path, t->name, w->cur_done, t->nbytes, w->n_tensors - w->cur));
  }
  return fg_atomic_file_commit(&w->out); /* aborts (removes the temporary file) on failure */
}

fg_status fg_gguf_writer_finish(fg_gguf_writer *w, const char *path) {
  if (!w || !path) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_writer_finish: NULL argument");
  if (fg_atomic_file_open(&w->out)) return fg_fail(FG_ERR_STATE, "fg_gguf_writer_finish: a streaming write is in progress");
  fg_status s = need_all_data(w);
  if (s || (s = fg_gguf_writer_begin(w, path))) return s;
  for (uint64_t i = 0; i < w->n_tensors; i++) {
    const fg_gguf_wtensor *t = &w->tensors[i];
    if (t->nbytes && (s = fg_gguf_writer_write_data(w, t->data, t->nbytes))) return s;
  }
  return fg_gguf_writer_commit(w);
}

void fg_gguf_writer_free(fg_gguf_writer *w) {
  if (!w) return;
  stream_abort(w);
  for (uint64_t i = 0; i < w->n_kv; i++) free(w->kvs[i].wire);
  free(w->kvs);
  free(w->tensors);
  fg_name_table_free(&w->kv_index);
  fg_name_table_free(&w->tensor_index);
  free(w);
}
