/* GGUF from a non-seekable input: a buffered reader over a descriptor, a walk of the header
 * that holds its bytes (and only its bytes) in memory, the KVs handed to the mapping parser,
 * the tensor directory checked here by the parser's rules, then the data section walked front
 * to back. Every byte comes from read(2); nothing seeks. */
#include "forgia/gguf_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf_internal.h"

#define FG_STREAM_INBUF ((size_t)64 << 10)

struct fg_gguf_stream {
  char *name;
  int fd;
  uint8_t *in;              /* input buffer: bytes [head, tail) are read but not consumed */
  size_t head, tail;
  uint64_t pos;             /* stream offset of the next byte consumed */
  size_t chunk_bytes;
  uint64_t max_header;
  uint8_t *hdr;             /* the header while it is walked; then owned by meta's mapping */
  size_t hdr_len, hdr_cap;
  fg_gguf_file *meta;
  uint32_t version, alignment;
  fg_gguf_tensor *tensors;
  uint64_t n_tensors;
  fg_name_table index;
  uint64_t data_offset;
  bool read_done;
};

/* ---- buffered input ---------------------------------------------------------------------- */

/* Refills the input buffer; *got is 0 at the end of the input. */
static fg_status refill(fg_gguf_stream *s, size_t *got) {
  s->head = s->tail = 0;
  for (;;) {
    ssize_t n = read(s->fd, s->in, FG_STREAM_INBUF);
    if (n >= 0) {
      s->tail = (size_t)n;
      *got = (size_t)n;
      return FG_OK;
    }
    if (errno != EINTR)
      return fg_fail(FG_ERR_IO, "%s: read at offset %" PRIu64 ": %s", s->name, s->pos, strerror(errno));
  }
}

static fg_status truncated(const fg_gguf_stream *s, const char *what, uint64_t start, uint64_t total) {
  return fg_fail(FG_ERR_TRUNCATED, "%s: the input ends at offset %" PRIu64 " inside %s (%" PRIu64
                 " bytes from offset %" PRIu64 ", %" PRIu64 " missing)",
                 s->name, s->pos, what, total, start, start + total - s->pos);
}

/* Consumes exactly n bytes into dst (NULL: dropped). what names the structure for the
 * message when the input ends first. */
static fg_status take(fg_gguf_stream *s, void *dst, uint64_t n, const char *what) {
  uint8_t *d = dst;
  const uint64_t start = s->pos, total = n;
  while (n) {
    if (s->head == s->tail) {
      size_t got = 0;
      fg_status st = refill(s, &got);
      if (st) return st;
      if (!got) return truncated(s, what, start, total);
    }
    size_t k = s->tail - s->head < n ? s->tail - s->head : (size_t)n;
    if (d) {
      memcpy(d, s->in + s->head, k);
      d += k;
    }
    s->head += k;
    s->pos += k;
    n -= k;
  }
  return FG_OK;
}

/* ---- the header, held in s->hdr ---------------------------------------------------------- */

/* Header bytes are taken this many at a time, so that memory grows with the bytes that
 * arrive rather than with a length the header claims. */
#define FG_STREAM_PULL_STEP ((uint64_t)1 << 20)

/* Appends the next n header bytes to s->hdr; *at gets their index there. */
static fg_status pull(fg_gguf_stream *s, uint64_t n, const char *what, size_t *at) {
  if (n > s->max_header - s->hdr_len)
    return fg_fail(FG_ERR_RANGE, "%s: %s at offset %" PRIu64 " (%" PRIu64 " bytes) takes the header past its limit of %" PRIu64
                   " bytes", s->name, what, s->pos, n, s->max_header);
  const size_t first = s->hdr_len;
  const uint64_t start = s->pos;
  for (uint64_t left = n; left;) {
    size_t step = (size_t)(left < FG_STREAM_PULL_STEP ? left : FG_STREAM_PULL_STEP);
    if (s->hdr_len + step > s->hdr_cap) {
      size_t cap = s->hdr_cap ? s->hdr_cap : 4096;
      while (cap < s->hdr_len + step) cap *= 2;
      uint8_t *p = realloc(s->hdr, cap);
      if (!p) return fg_fail(FG_ERR_NOMEM, "%s: no memory for a %zu-byte header", s->name, cap);
      s->hdr = p;
      s->hdr_cap = cap;
    }
    fg_status st = take(s, s->hdr + s->hdr_len, step, what);
    if (st == FG_ERR_TRUNCATED) return truncated(s, what, start, n);
    if (st) return st;
    s->hdr_len += step;
    left -= step;
  }
  if (at) *at = first;
  return FG_OK;
}

static fg_status pull_u32(fg_gguf_stream *s, const char *what, uint32_t *v) {
  size_t at = 0;
  fg_status st = pull(s, 4, what, &at);
  if (!st) *v = fg_bytes_ld_le32(s->hdr + at);
  return st;
}

static fg_status pull_u64(fg_gguf_stream *s, const char *what, uint64_t *v) {
  size_t at = 0;
  fg_status st = pull(s, 8, what, &at);
  if (!st) *v = fg_bytes_ld_le64(s->hdr + at);
  return st;
}

/* A length-prefixed string; *at gets the index of its bytes in s->hdr. */
static fg_status pull_str(fg_gguf_stream *s, const char *what, uint64_t *len, size_t *at) {
  uint64_t off = s->pos;
  fg_status st = pull_u64(s, what, len);
  if (st) return st;
  if (*len > FG_GGUF_MAX_STRING)
    return fg_fail(FG_ERR_BAD_STRING, "%s: %s at offset %" PRIu64 ": length %" PRIu64 " exceeds the 1 GiB limit", s->name,
                   what, off, *len);
  return pull(s, *len, what, at);
}

/* One KV, walked only as far as its wire layout: the parser judges the values. */
static fg_status walk_kv(fg_gguf_stream *s, uint64_t i) {
  char what[128];
  uint64_t len, off;
  size_t at = 0;
  snprintf(what, sizeof what, "the key of KV %" PRIu64, i);
  fg_status st = pull_str(s, what, &len, &at);
  if (st) return st;
  uint32_t type;
  snprintf(what, sizeof what, "the value of KV %" PRIu64, i);
  off = s->pos;
  if ((st = pull_u32(s, what, &type))) return st;
  if (type >= FG_GGUF_TYPE_COUNT)
    return fg_fail(FG_ERR_BAD_VALUE_TYPE, "%s: KV %" PRIu64 " at offset %" PRIu64 ": value type %u, expected 0..12",
                   s->name, i, off, type);
  if (type == FG_GGUF_STRING) return pull_str(s, what, &len, &at);
  if (type != FG_GGUF_ARRAY) return pull(s, fg_gguf_type_size((fg_gguf_type)type), what, NULL);
  uint32_t et;
  uint64_t count;
  off = s->pos;
  if ((st = pull_u32(s, what, &et)) || (st = pull_u64(s, what, &count))) return st;
  if (et >= FG_GGUF_TYPE_COUNT || et == FG_GGUF_ARRAY)
    return fg_fail(FG_ERR_BAD_VALUE_TYPE, "%s: KV %" PRIu64 " at offset %" PRIu64 ": array element type %u, expected 0..12 but 9",
                   s->name, i, off, et);
  if (count > FG_GGUF_MAX_ARRAY)
    return fg_fail(FG_ERR_RANGE, "%s: KV %" PRIu64 " at offset %" PRIu64 ": array of %" PRIu64 " elements, more than 2^30",
                   s->name, i, off, count);
  if (et != FG_GGUF_STRING) return pull(s, count * fg_gguf_type_size((fg_gguf_type)et), what, NULL);
  for (uint64_t j = 0; j < count; j++)
    if ((st = pull_str(s, what, &len, &at))) return st;
  return FG_OK;
}

/* One tensor info, checked by the rules of the mapping parser (gguf.h). */
static fg_status walk_tensor(fg_gguf_stream *s, uint64_t i, fg_gguf_tensor *t) {
  char what[128];
  uint64_t start = s->pos, len;
  size_t at = 0;
  snprintf(what, sizeof what, "the name of tensor %" PRIu64, i);
  uint64_t name_len;
  fg_status st = pull_u64(s, what, &name_len);
  if (st) return st;
  if (name_len >= FG_GGUF_MAX_NAME)
    return fg_fail(FG_ERR_BAD_STRING, "%s: tensor %" PRIu64 " at offset %" PRIu64 ": name length %" PRIu64
                   ", expected at most %u bytes", s->name, i, start, name_len, FG_GGUF_MAX_NAME - 1);
  if ((st = pull(s, name_len, what, &at))) return st;
  if (memchr(s->hdr + at, 0, (size_t)name_len))
    return fg_fail(FG_ERR_BAD_STRING, "%s: tensor %" PRIu64 " at offset %" PRIu64 ": name contains a NUL byte", s->name, i,
                   start);
  memcpy(t->name, s->hdr + at, (size_t)name_len);
  t->name[name_len] = '\0';
  t->name_len = (uint32_t)name_len;
  snprintf(what, sizeof what, "the info of tensor '%s'", t->name);
  uint32_t ndim, code;
  if ((st = pull_u32(s, what, &ndim))) return st;
  if (ndim > FG_GGUF_MAX_DIMS)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor '%s' at offset %" PRIu64 ": n_dims %u, expected 0..4", s->name, t->name,
                   s->pos - 4, ndim);
  t->ndim = (int)ndim;
  for (int d = 0; d < 4; d++) t->ne[d] = 1;
  for (uint32_t d = 0; d < ndim; d++)
    if ((st = pull_u64(s, what, &t->ne[d]))) return st;
  if ((st = pull_u32(s, what, &code))) return st;
  if (code >= FG_GGML_TYPE_COUNT || fg_dtype_ggml_code((fg_dtype)code) < 0)
    return fg_fail(FG_ERR_BAD_DTYPE, "%s: tensor '%s' at offset %" PRIu64 ": type code %u is unknown or removed", s->name,
                   t->name, s->pos - 4, code);
  t->dtype = (fg_dtype)code;
  if ((st = pull_u64(s, what, &t->offset))) return st;
  char ctx[1200];
  snprintf(ctx, sizeof ctx, "%.1000s: tensor '%s'", s->name, t->name);
  if ((st = fg_gguf_tensor_nbytes(ctx, t->dtype, ndim ? ndim : 1u, t->ne, &len))) return st;
  t->nbytes = len;
  for (int d = 0; d < 4; d++) t->shape[d] = d < t->ndim ? t->ne[t->ndim - 1 - d] : 0;
  t->part = 0;
  t->data = NULL;
  return FG_OK;
}

static fg_name tensor_name_at(const void *ctx, uint64_t i) {
  const fg_gguf_tensor *t = &((const fg_gguf_stream *)ctx)->tensors[i];
  return (fg_name){t->name, t->name_len};
}

/* Names unique, offsets the running padded total (as the mapping parser requires). */
static fg_status check_directory(fg_gguf_stream *s) {
  fg_status st = fg_name_table_reset(&s->index, s->n_tensors);
  if (st) return st;
  uint64_t run = 0;
  for (uint64_t i = 0; i < s->n_tensors; i++) {
    const fg_gguf_tensor *t = &s->tensors[i];
    int64_t dup;
    if ((st = fg_name_table_insert(&s->index, t->name, t->name_len, i, tensor_name_at, s, &dup))) return st;
    if (dup >= 0) return fg_fail(FG_ERR_DUPLICATE, "%s: tensor '%s' duplicates tensor %" PRId64, s->name, t->name, dup);
    if (t->offset != run)
      return fg_fail(FG_ERR_BAD_OFFSET, "%s: tensor '%s': offset %" PRIu64 ", expected %" PRIu64 " (running total padded to %u)",
                     s->name, t->name, t->offset, run, s->alignment);
    uint64_t padded = fg_gguf_pad(t->nbytes, s->alignment);
    if (padded < t->nbytes || run + padded < run || s->data_offset + run + padded < s->data_offset)
      return fg_fail(FG_ERR_BAD_OFFSET, "%s: tensor '%s': data offsets overflow", s->name, t->name);
    run += padded;
  }
  return FG_OK;
}

static fg_status read_header(fg_gguf_stream *s) {
  size_t at = 0;
  fg_status st = pull(s, 4, "the GGUF magic", &at);
  if (st) return st;
  if (memcmp(s->hdr, "GGUF", 4) != 0)
    return fg_fail(FG_ERR_BAD_MAGIC, "%s: magic is %02x %02x %02x %02x, expected \"GGUF\"", s->name, s->hdr[0], s->hdr[1],
                   s->hdr[2], s->hdr[3]);
  uint64_t n_kv;
  if ((st = pull_u32(s, "the version", &s->version))) return st;
  if ((s->version & 0xFFFFu) == 0)
    return fg_fail(FG_ERR_BAD_VERSION, "%s: version 0x%08x: a big-endian (byte-swapped) file, expected little-endian version 2 or 3",
                   s->name, s->version);
  if (s->version != 2 && s->version != 3)
    return fg_fail(FG_ERR_BAD_VERSION, "%s: version %u%s, expected 2 or 3", s->name, s->version,
                   s->version == 1 ? " (GGUFv1 is no longer supported)" : "");
  if ((st = pull_u64(s, "the tensor count", &s->n_tensors)) || (st = pull_u64(s, "the KV count", &n_kv))) return st;
  /* The counts must fit the header limit before anything is allocated for them. */
  uint64_t room = s->max_header - s->hdr_len;
  if (n_kv > room / FG_GGUF_MIN_KV_BYTES || s->n_tensors > room / FG_GGUF_MIN_TENSOR_BYTES ||
      n_kv * FG_GGUF_MIN_KV_BYTES + s->n_tensors * FG_GGUF_MIN_TENSOR_BYTES > room)
    return fg_fail(FG_ERR_RANGE, "%s: header announces %" PRIu64 " KVs and %" PRIu64 " tensors, more than a header of at most %" PRIu64
                   " bytes can hold", s->name, n_kv, s->n_tensors, s->max_header);
  for (uint64_t i = 0; i < n_kv; i++)
    if ((st = walk_kv(s, i))) return st;
  const size_t kv_end = s->hdr_len;
  if (s->n_tensors && !(s->tensors = calloc((size_t)s->n_tensors, sizeof *s->tensors)))
    return fg_fail(FG_ERR_NOMEM, "%s: no memory for %" PRIu64 " tensors", s->name, s->n_tensors);
  for (uint64_t i = 0; i < s->n_tensors; i++)
    if ((st = walk_tensor(s, i, &s->tensors[i]))) return st;
  const uint64_t header_end = s->pos;

  /* The KVs go through the mapping parser, told there are no tensors (the directory was
   * read above and its data is not in memory). The mapping then owns the header bytes. */
  uint64_t zero = 0;
  memcpy(s->hdr + 8, &zero, 8);
  fg_mapping *m;
  if ((st = fg_mapping_adopt(s->hdr, kv_end, s->name, &m))) return st;
  s->hdr = NULL;
  st = fg_gguf_open_mapping(m, &s->meta);
  fg_mapping_release(m);
  if (st) return st;
  s->alignment = fg_gguf_alignment(s->meta);
  s->data_offset = fg_gguf_pad(header_end, s->alignment);
  return check_directory(s);
}

fg_status fg_gguf_stream_open_fd(int fd, const char *name, const fg_gguf_stream_options *o, fg_gguf_stream **out) {
  if (fd < 0 || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_stream_open_fd: bad descriptor or NULL argument");
  fg_gguf_stream *s = calloc(1, sizeof *s);
  if (!s) return fg_fail(FG_ERR_NOMEM, "gguf stream: out of memory");
  s->fd = fd;
  s->chunk_bytes = o && o->chunk_bytes ? o->chunk_bytes : FG_GGUF_STREAM_DEFAULT_CHUNK;
  s->max_header = o && o->max_header_bytes ? o->max_header_bytes : FG_GGUF_STREAM_DEFAULT_MAX_HEADER;
  s->name = strdup(name ? name : "<stream>");
  s->in = malloc(FG_STREAM_INBUF);
  fg_status st = (!s->name || !s->in) ? fg_fail(FG_ERR_NOMEM, "gguf stream: out of memory") : read_header(s);
  if (st) {
    fg_gguf_stream_close(s);
    return st;
  }
  *out = s;
  return FG_OK;
}

void fg_gguf_stream_close(fg_gguf_stream *s) {
  if (!s) return;
  fg_gguf_close(s->meta);
  fg_name_table_free(&s->index);
  free(s->tensors);
  free(s->hdr);
  free(s->in);
  free(s->name);
  free(s);
}

const fg_gguf_file *fg_gguf_stream_metadata(const fg_gguf_stream *s) { return s ? s->meta : NULL; }
uint32_t fg_gguf_stream_version(const fg_gguf_stream *s) { return s ? s->version : 0; }
uint32_t fg_gguf_stream_alignment(const fg_gguf_stream *s) { return s ? s->alignment : 0; }
size_t fg_gguf_stream_tensor_count(const fg_gguf_stream *s) { return s ? (size_t)s->n_tensors : 0; }
const fg_gguf_tensor *fg_gguf_stream_tensor_at(const fg_gguf_stream *s, size_t i) {
  return s && i < s->n_tensors ? &s->tensors[i] : NULL;
}
uint64_t fg_gguf_stream_data_offset(const fg_gguf_stream *s) { return s ? s->data_offset : 0; }
uint64_t fg_gguf_stream_position(const fg_gguf_stream *s) { return s ? s->pos : 0; }

/* ---- the data section --------------------------------------------------------------------- */

/* Reads through n bytes in pieces of the chunk buffer's size. */
static fg_status skip(fg_gguf_stream *s, uint8_t *buf, uint64_t n, const char *what) {
  while (n) {
    size_t k = n < s->chunk_bytes ? (size_t)n : s->chunk_bytes;
    fg_status st = take(s, buf, k, what);
    if (st) return st;
    n -= k;
  }
  return FG_OK;
}

fg_status fg_gguf_stream_read(fg_gguf_stream *s, fg_gguf_stream_want_fn want, fg_gguf_stream_chunk_fn chunk,
                              void *user) {
  if (!s || !chunk) return fg_fail(FG_ERR_INVALID_ARG, "fg_gguf_stream_read: NULL argument");
  if (s->read_done) return fg_fail(FG_ERR_STATE, "%s: the stream's tensors were already read", s->name);
  s->read_done = true;
  bool *sel = calloc(s->n_tensors ? (size_t)s->n_tensors : 1, sizeof *sel);
  uint8_t *buf = malloc(s->chunk_bytes);
  fg_status st = (!sel || !buf) ? fg_fail(FG_ERR_NOMEM, "%s: no memory for a %zu-byte chunk", s->name, s->chunk_bytes)
                                : FG_OK;
  uint64_t last = 0; /* one past the last wanted tensor */
  for (uint64_t i = 0; i < s->n_tensors && !st; i++) {
    sel[i] = !want || want(&s->tensors[i], user);
    if (sel[i]) last = i + 1;
  }
  char what[128];
  for (uint64_t i = 0; i < last && !st; i++) {
    const fg_gguf_tensor *t = &s->tensors[i];
    const uint64_t begin = s->data_offset + t->offset;
    snprintf(what, sizeof what, "the padding before tensor '%s'", t->name);
    if ((st = skip(s, buf, begin - s->pos, what))) break;
    snprintf(what, sizeof what, "tensor '%s'", t->name);
    if (!sel[i]) {
      st = skip(s, buf, t->nbytes, what);
      continue;
    }
    uint64_t off = 0;
    do {
      size_t k = t->nbytes - off < s->chunk_bytes ? (size_t)(t->nbytes - off) : s->chunk_bytes;
      if ((st = take(s, buf, k, what))) break;
      if ((st = chunk(t, off, buf, k, user))) {
        st = fg_fail_prefix(st, "%s: tensor '%s' at offset %" PRIu64 ": ", s->name, t->name, begin + off);
        break;
      }
      off += k;
    } while (off < t->nbytes);
  }
  free(buf);
  free(sel);
  return st;
}
