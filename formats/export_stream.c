/* Export's data path: each tensor in chunks (as many whole rows as fit in chunk_bytes of f32;
 * for a copy, chunk_bytes of bytes, at most 16 MiB), each chunk cut into pieces that one
 * thread takes start to finish in one parallel region: its source bytes copied out of the
 * mapping (a guarded read: a file truncated under the export is a status, not SIGBUS),
 * decoded into the thread's own small f32 buffer, encoded into the chunk's output buffer.
 * The calling thread is one of the workers and also the writer: after each piece it writes
 * whatever prefix of the chunk is complete, so the write(2)s overlap the other threads'
 * encoding and no thread waits for another until the end of the chunk. Only the calling
 * thread writes, so the writer's cancel hook and the progress callback stay on it. Memory:
 * one chunk of output plus a piece of source and of f32 per thread; a chunk's source pages
 * are released early in the next one. The bytes do not depend on the thread count or the
 * chunk size: the row codecs encode rows independently. */
#include <inttypes.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "formats/export_stream.h"
#include "forgia/quant.h"
#include "forgia/quant_weighted.h"

/* f32 bytes of one transcoded piece: the piece's source, its floats and its encoding stay
 * in the core's cache between the three steps. */
#define FG_EXPORT_PIECE_F32 ((uint64_t)256 << 10)
/* Bytes of one copied piece, and at most of one copied chunk: a copy needs no f32, so its
 * chunk stays small (its output buffer and the source pages mapped around it are the
 * export's memory). */
#define FG_EXPORT_PIECE_COPY ((uint64_t)1 << 20)
#define FG_EXPORT_CHUNK_COPY ((uint64_t)16 << 20)

fg_status fg_export_report(fg_export_cursor *c, uint64_t bytes) {
  c->prog.bytes_done += bytes;
  if (c->fn && !c->fn(&c->prog, c->user))
    return fg_fail(FG_ERR_STATE, "%s: export cancelled at tensor '%s'", fg_ckpt_path(c->p->src),
                   c->prog.tensor->name);
  return FG_OK;
}

void fg_export_cursor_free(fg_export_cursor *c) {
  if (c->evict_map) fg_mapping_evict(c->evict_map, c->evict_off, c->evict_len);
  c->evict_map = NULL;
  free(c->obuf);
  free(c->ibuf);
  free(c->fbuf);
  free(c->done);
  c->obuf = c->ibuf = NULL;
  c->fbuf = NULL;
  c->done = NULL;
  c->ocap = c->icap = c->fcap = c->dcap = 0;
}

static fg_status grow(void **buf, size_t *cap, uint64_t need, uint64_t count, const char *what) {
  if (need <= *cap) return FG_OK;
  if (need > SIZE_MAX / count)
    return fg_fail(FG_ERR_OVERFLOW, "export: %d %s buffers of %" PRIu64 " bytes do not fit in memory", (int)count,
                   what, need);
  void *b = realloc(*buf, (size_t)(need * count));
  if (!b)
    return fg_fail(FG_ERR_NOMEM, "export: out of memory for %d %s buffer(s) of %" PRIu64 " bytes", (int)count, what,
                   need);
  *buf = b;
  *cap = (size_t)need;
  return FG_OK;
}

/* The mapping holding a tensor's bytes (offsets are absolute in it). */
static const fg_mapping *map_of(const fg_export_cursor *c, const fg_ckpt_tensor *s) {
  return fg_ckpt_file_at(c->p->src, s->file)->map;
}

/* Copies s's bytes [off, off+len) into dst. The message names the file, the tensor and the
 * offset (fg_mapping_copy's starts with the path: said once). Any thread. */
static fg_status read_source(const fg_export_cursor *c, const fg_ckpt_tensor *s, uint64_t off, uint64_t len,
                             void *dst) {
  const fg_mapping *map = map_of(c, s);
  fg_status st = fg_mapping_copy(map, dst, s->offset + off, len);
  if (!st) return FG_OK;
  /* the file named as the caller named it ("m.safetensors" is mapped as "./m.safetensors") */
  const char *mp = fg_mapping_path(map), *cp = fg_ckpt_path(c->p->src), *m = fg_last_error();
  const char *path = strncmp(mp, "./", 2) == 0 && strcmp(mp + 2, cp) == 0 ? cp : mp;
  size_t n = strlen(mp);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", strncmp(m, mp, n) == 0 && m[n] == ':' && m[n + 1] == ' ' ? m + n + 2 : m);
  return fg_fail(st, "%s: tensor '%s' (its bytes %" PRIu64 "..%" PRIu64 " of %" PRIu64 "): %s", path, s->name, off,
                 off + len, s->nbytes, msg);
}

/* Encodes rows [r, r+k) of t; with importance weights, each expert's rows (ne[1] of them)
 * take that expert's slice, so a run of rows is cut at expert boundaries. */
static fg_status encode_rows(const fg_export_tensor *t, const float *x, uint64_t r, uint64_t k, uint8_t *out,
                             uint64_t dst_row) {
  const uint64_t n = t->ne[0];
  if (!t->weights) /* the grid i-quants encode only through the weighted entry, which also runs without */
    return fg_quant_can_encode(t->dst_dtype)
               ? fg_quant_encode_rows(t->dst_dtype, x, (int64_t)k, (int64_t)n, out, (size_t)(k * dst_row))
               : fg_quant_encode_rows_weighted(t->dst_dtype, x, (int64_t)k, (int64_t)n, NULL, out,
                                               (size_t)(k * dst_row));
  const uint64_t per_expert = t->ne[1];
  for (uint64_t i = 0; i < k;) {
    const uint64_t row = r + i, e = row / per_expert;
    uint64_t m = per_expert - row % per_expert;
    if (m > k - i) m = k - i;
    fg_status st = fg_quant_encode_rows_weighted(t->dst_dtype, x + i * n, (int64_t)m, (int64_t)n,
                                                 t->weights + e * n, out + i * dst_row, (size_t)(m * dst_row));
    if (st) return st;
    i += m;
  }
  return FG_OK;
}

/* One chunk: `count` units (bytes for a copy, rows for a transcode) from unit `first`, in
 * pieces of `step` units. */
typedef struct chunk_job {
  fg_export_cursor *c;
  const fg_ckpt_tensor *s;
  const fg_export_tensor *t; /* NULL: a copy */
  uint64_t first, count, step;
  uint64_t n, src_row, dst_row; /* a transcode's row length and row bytes */
  size_t pieces;
} chunk_job;

/* Output bytes before piece p (p == pieces: the chunk's). */
static uint64_t out_before(const chunk_job *j, size_t p) {
  uint64_t u = (uint64_t)p * j->step;
  if (u > j->count) u = j->count;
  return j->t ? u * j->dst_row : u;
}

/* Piece p on thread tid (its slices of ibuf and fbuf). */
static fg_status do_piece(const chunk_job *j, size_t p, int tid) {
  fg_export_cursor *c = j->c;
  const uint64_t u = (uint64_t)p * j->step, k = j->count - u < j->step ? j->count - u : j->step;
  uint8_t *out = c->obuf + out_before(j, p);
  if (!j->t) return read_source(c, j->s, j->first + u, k, out);
  const fg_export_tensor *t = j->t;
  const uint64_t r = j->first + u;
  uint8_t *src = c->ibuf + (size_t)tid * c->icap;
  fg_status st = read_source(c, j->s, r * j->src_row, k * j->src_row, src);
  if (st) return st;
  /* an f32 target is the decoded rows themselves */
  float *x = t->dst_dtype == FG_F32 ? (float *)(void *)out : c->fbuf + (size_t)tid * (c->fcap / sizeof(float));
  const char *path = fg_ckpt_path(c->p->src);
  st = fg_quant_decode_rows(t->src_dtype, src, (size_t)(k * j->src_row), x, (int64_t)k, (int64_t)j->n);
  if (!st && t->dst_dtype != FG_F32) st = encode_rows(t, x, r, k, out, j->dst_row);
  if (st) return fg_fail_prefix(st, "%s: tensor '%s' (chunk from row %" PRIu64 "): ", path, t->name, r);
  return FG_OK;
}

/* The calling thread's writes: the output up to `written` is in the file. */
typedef struct chunk_writer {
  size_t next;       /* first piece not known to be done */
  uint64_t written;
  fg_status st;
  char msg[1024];
} chunk_writer;

/* The first failure among the workers, carried to the calling thread (messages are
 * thread-local). The lowest failing piece is kept, and only pieces after the lowest failure
 * seen so far are skipped: the lowest failing piece always runs, so the message does not
 * depend on which thread got there first. */
typedef struct chunk_errors {
  _Atomic int64_t first_bad;  /* lowest failed piece; -1: the writer failed */
  fg_status st;
  char msg[1024];
} chunk_errors;

static void keep_error(chunk_errors *e, fg_status s, size_t p) {
#pragma omp critical(fg_export_stream_err)
  if ((int64_t)p < atomic_load(&e->first_bad)) {
    atomic_store(&e->first_bad, (int64_t)p);
    e->st = s;
    snprintf(e->msg, sizeof e->msg, "%s", fg_last_error());
  }
}

/* Writes the complete prefix of the chunk that is not written yet. Calling thread only. */
static void write_ready(const chunk_job *j, chunk_writer *wr, chunk_errors *e) {
  if (wr->st) return;
  while (wr->next < j->pieces && atomic_load_explicit(&j->c->done[wr->next], memory_order_acquire)) wr->next++;
  const uint64_t end = out_before(j, wr->next);
  if (end == wr->written) return;
  fg_status st = j->c->af ? fg_atomic_file_write(j->c->af, j->c->obuf + wr->written, end - wr->written)
                          : fg_gguf_writer_write_data(j->c->w, j->c->obuf + wr->written, end - wr->written);
  if (st) {
    wr->st = st;
    snprintf(wr->msg, sizeof wr->msg, "%s", fg_last_error());
    atomic_store(&e->first_bad, -1); /* nothing more can be written: the others stop */
    return;
  }
  wr->written = end;
}

static fg_status run_chunk(chunk_job *j) {
  fg_export_cursor *c = j->c;
  const fg_mapping *map = map_of(c, j->s);
  const uint64_t unit = j->t ? j->src_row : 1, src_off = j->s->offset + j->first * unit, src_len = j->count * unit;
  fg_status st = grow((void **)&c->done, &c->dcap, j->pieces, 1, "progress");
  if (st) return st;
  for (size_t p = 0; p < j->pieces; p++) atomic_store_explicit(&c->done[p], 0, memory_order_relaxed);
  chunk_writer wr = {0, 0, FG_OK, ""};
  chunk_errors e = {INT64_MAX, FG_OK, ""};
  const int threads = (size_t)c->threads < j->pieces ? c->threads : (int)j->pieces;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    /* The codecs' own parallel loops stay on this thread: each thread of the region is one
     * worker (a region of one thread is not active, and a codec called in it would start a
     * team of its own). The setting lives in this region's task. */
    omp_set_num_threads(1);
    const int tid = omp_get_thread_num();
    /* The paging hints cost a walk over the chunk's pages: the calling thread gives them
     * while the others start on the pieces. */
    if (tid == 0) {
      fg_mapping_prefetch(map, src_off, src_len);
      if (c->evict_map) fg_mapping_evict(c->evict_map, c->evict_off, c->evict_len);
    }
    /* dynamic: pieces are handed out as threads come for them, in order in practice (the
     * written prefix follows them), and a thread that the system preempts leaves its share
     * to the others */
#pragma omp for schedule(dynamic, 1)
    for (int64_t p = 0; p < (int64_t)j->pieces; p++) {
      if (p < atomic_load_explicit(&e.first_bad, memory_order_relaxed)) {
        fg_status ps = do_piece(j, (size_t)p, tid);
        if (ps) keep_error(&e, ps, (size_t)p);
        else atomic_store_explicit(&c->done[p], 1, memory_order_release);
      }
      if (tid == 0) write_ready(j, &wr, &e);
    }
  }
  write_ready(j, &wr, &e); /* what the other threads finished last */
  c->evict_map = map;
  c->evict_off = src_off;
  c->evict_len = src_len;
  if (wr.st) return fg_fail(wr.st, "%s", wr.msg);
  if (e.st) return fg_fail(e.st, "%s", e.msg);
  return FG_OK;
}

static void init_threads(fg_export_cursor *c) {
  if (c->threads < 1) c->threads = c->p->opt.threads;
  if (c->threads < 1) c->threads = omp_get_max_threads();
  if (c->threads < 1) c->threads = 1;
}

/* Per-thread piece buffers, grown to need bytes each; slices start on their own cache line
 * (no false sharing, and any decoder's loads are aligned as in a buffer of its own). */
static fg_status grow_slices(fg_export_cursor *c, uint64_t src_bytes, uint64_t f32_bytes) {
  fg_status st = FG_OK;
  src_bytes = (src_bytes + 63) / 64 * 64;
  f32_bytes = (f32_bytes + 63) / 64 * 64;
  if (src_bytes > c->icap) {
    free(c->ibuf); /* grown by replacing: the old contents are not needed */
    c->ibuf = NULL;
    c->icap = 0;
    st = grow((void **)&c->ibuf, &c->icap, src_bytes, (uint64_t)c->threads, "read");
  }
  if (!st && f32_bytes > c->fcap) {
    free(c->fbuf);
    c->fbuf = NULL;
    c->fcap = 0;
    st = grow((void **)&c->fbuf, &c->fcap, f32_bytes, (uint64_t)c->threads, "f32");
  }
  return st;
}

fg_status fg_export_copy_tensor(fg_export_cursor *c, const fg_ckpt_tensor *s) {
  init_threads(c);
  const uint64_t step = c->p->opt.chunk_bytes < FG_EXPORT_CHUNK_COPY ? c->p->opt.chunk_bytes : FG_EXPORT_CHUNK_COPY;
  for (uint64_t off = 0; off < s->nbytes; off += step) {
    uint64_t len = s->nbytes - off < step ? s->nbytes - off : step;
    chunk_job j = {c, s, NULL, off, len, FG_EXPORT_PIECE_COPY, 0, 0, 0, 0};
    j.pieces = (size_t)((len + j.step - 1) / j.step);
    fg_status st = grow((void **)&c->obuf, &c->ocap, len, 1, "chunk");
    if (st || (st = run_chunk(&j)) || (st = fg_export_report(c, len))) return st;
  }
  return FG_OK;
}

fg_status fg_export_transcode_tensor(fg_export_cursor *c, const fg_ckpt_tensor *s, const fg_export_tensor *t) {
  const char *path = fg_ckpt_path(c->p->src);
  const uint64_t n = t->ne[0];
  const uint64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
  uint64_t src_row = 0, dst_row = 0;
  fg_status st;
  if ((st = fg_dtype_nbytes(t->src_dtype, n, &src_row)) || (st = fg_dtype_nbytes(t->dst_dtype, n, &dst_row)))
    return fg_fail_prefix(st, "%s: tensor '%s': ", path, t->name);
  if (n == 0 || rows == 0) return FG_OK;
  init_threads(c);
  uint64_t per = c->p->opt.chunk_bytes / (n * sizeof(float));
  if (per == 0) per = 1;
  if (per > rows) per = rows;
  uint64_t step = FG_EXPORT_PIECE_F32 / (n * sizeof(float));
  if (step == 0) step = 1;
  if (step > per) step = per;
  if (per * dst_row > SIZE_MAX || step * n > SIZE_MAX / sizeof(float))
    return fg_fail(FG_ERR_OVERFLOW, "%s: tensor '%s': a chunk of %" PRIu64 " rows does not fit in memory",
                   path, t->name, per);
  if ((st = grow((void **)&c->obuf, &c->ocap, per * dst_row, 1, "chunk")) ||
      (st = grow_slices(c, step * src_row, t->dst_dtype == FG_F32 ? 0 : step * n * sizeof(float))))
    return st;
  for (uint64_t r = 0; r < rows; r += per) {
    uint64_t k = rows - r < per ? rows - r : per;
    chunk_job j = {c, s, t, r, k, step, n, src_row, dst_row, (size_t)((k + step - 1) / step)};
    if ((st = run_chunk(&j)) || (st = fg_export_report(c, k * dst_row))) return st;
  }
  return FG_OK;
}
