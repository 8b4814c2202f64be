/* Export merge mode, the run: metadata and every tensor copied as fg_export_run copies them,
 * except the adapted weights, which are read a chunk of rows at a time, merged on the host
 * (fg_lora_merge_host) and written. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/export_merge_internal.h"
#include "forgia/gguf.h"
#include "forgia/elem/op_table.h"
#include "forgia/mapping.h"

static const char *const split_keys[] = {"split.no", "split.count", "split.tensors.count"};

/* Source bytes are copied out of their mapping (a file truncated meanwhile is a status, not
 * SIGBUS) at most this many at a time. */
#define PIECE ((uint64_t)8 << 20)

typedef struct cursor {
  const fg_export_merge *m;
  fg_gguf_writer *w;
  fg_export_progress prog;
  fg_export_progress_fn fn;
  void *user;
  uint8_t *buf;   /* source bytes (a piece, or a chunk of base rows) */
  float *a, *b;   /* an adapter's A, and a chunk of B's rows */
  size_t cap, acap, bcap;
} cursor;

static fg_status report(cursor *c, uint64_t bytes) {
  c->prog.bytes_done += bytes;
  if (c->fn && !c->fn(&c->prog, c->user))
    return fg_fail(FG_ERR_STATE, "%s: export cancelled at tensor '%s'", fg_ckpt_path(c->m->src), c->prog.tensor->name);
  return FG_OK;
}

static fg_status grow(void **p, size_t *cap, uint64_t need) {
  if (need <= *cap) return FG_OK;
  if (need > SIZE_MAX) return fg_fail(FG_ERR_OVERFLOW, "export merge: a %" PRIu64 "-byte buffer", need);
  void *q = realloc(*p, (size_t)need);
  if (!q) return fg_fail(FG_ERR_NOMEM, "export merge: out of memory for a %" PRIu64 "-byte buffer", need);
  *p = q;
  *cap = (size_t)need;
  return FG_OK;
}

/* len bytes at off of a mapping into dst, pages dropped behind the read. */
static fg_status read_at(const fg_mapping *map, void *dst, uint64_t off, uint64_t len, const char *tensor) {
  fg_mapping_prefetch(map, off, len);
  fg_status st = fg_mapping_copy(map, dst, off, len);
  fg_mapping_evict(map, off, len);
  return st ? fg_fail_prefix(st, "tensor '%s': ", tensor) : FG_OK;
}

static fg_status copy_tensor(cursor *c, const fg_ckpt_tensor *s) {
  const fg_mapping *map = fg_ckpt_file_at(c->m->src, s->file)->map;
  fg_status st = grow((void **)&c->buf, &c->cap, s->nbytes < PIECE ? s->nbytes : PIECE);
  for (uint64_t off = 0; !st && off < s->nbytes; off += PIECE) {
    uint64_t k = s->nbytes - off < PIECE ? s->nbytes - off : PIECE;
    if (!(st = read_at(map, c->buf, s->offset + off, k, s->name)) && !(st = fg_gguf_writer_write_data(c->w, c->buf, k)))
      st = report(c, k);
  }
  return st;
}

static fg_status merge_tensor(cursor *c, const fg_ckpt_tensor *s, const merge_item *it) {
  const fg_export_merge *m = c->m;
  const fg_mapping *wmap = fg_ckpt_file_at(m->src, s->file)->map, *amap = fg_st_mapping(m->st);
  const uint64_t out = s->shape[0], in = s->shape[1], r = it->rank, data0 = fg_st_data_start(m->st);
  const uint64_t esz = fg_dtype_info(s->dtype)->block_bytes; /* 4 or 2: scalar types */
  if (out == 0 || in == 0) return FG_OK;
  uint64_t per = m->opt.chunk_bytes / (in * sizeof(float));
  if (per == 0) per = 1;
  if (per > out) per = out;
  fg_status st;
  if ((st = grow((void **)&c->a, &c->acap, r * in * sizeof(float))) ||
      (st = grow((void **)&c->b, &c->bcap, per * r * sizeof(float))) ||
      (st = grow((void **)&c->buf, &c->cap, per * in * esz)) ||
      (st = read_at(amap, c->a, data0 + it->a->begin, it->a->nbytes, it->a->name)))
    return fg_fail_prefix(st, "%s: ", m->path);
  for (uint64_t row = 0; row < out; row += per) {
    const uint64_t k = out - row < per ? out - row : per;
    if ((st = read_at(amap, c->b, data0 + it->b->begin + row * r * sizeof(float), k * r * sizeof(float), it->b->name)))
      return fg_fail_prefix(st, "%s: ", m->path);
    if ((st = read_at(wmap, c->buf, s->offset + row * in * esz, k * in * esz, s->name)))
      return fg_fail_prefix(st, "%s: ", fg_ckpt_path(m->src));
    if ((st = fg_lora_merge_host(s->dtype, c->buf, c->buf, k, in, it->rank, c->a, c->b, it->scale)) ||
        (st = fg_gguf_writer_write_data(c->w, c->buf, k * in * esz)) || (st = report(c, k * in * esz)))
      return st;
  }
  return FG_OK;
}

/* A trained weight in place of the model's: read a chunk at a time, rounded to the model's
 * dtype when the file holds another. */
static fg_status replace_tensor(cursor *c, const fg_ckpt_tensor *s, const merge_item *it) {
  const fg_export_merge *m = c->m;
  const fg_mapping *amap = fg_st_mapping(m->st);
  const uint64_t data0 = fg_st_data_start(m->st), n = s->nbytes / fg_dtype_info(s->dtype)->block_bytes;
  const uint64_t in_sz = fg_dtype_info(it->a->dtype)->block_bytes, out_sz = fg_dtype_info(s->dtype)->block_bytes;
  const uint64_t per = PIECE / 4;
  fg_status st = grow((void **)&c->buf, &c->cap, per * 4);
  if (!st) st = grow((void **)&c->a, &c->acap, per * 4);
  for (uint64_t e0 = 0; !st && e0 < n; e0 += per) {
    const uint64_t k = n - e0 < per ? n - e0 : per;
    st = read_at(amap, c->buf, data0 + it->a->begin + e0 * in_sz, k * in_sz, it->a->name);
    if (st) return fg_fail_prefix(st, "%s: ", m->path);
    const void *outp = c->buf;
    if (it->a->dtype != s->dtype) {
      for (uint64_t i = 0; i < k; i++) fg_op_store(c->a, s->dtype, i, fg_op_load(c->buf, it->a->dtype, i));
      outp = c->a;
    }
    if (!(st = fg_gguf_writer_write_data(c->w, outp, k * out_sz))) st = report(c, k * out_sz);
  }
  return st;
}

/* Sources rewritten in place while read may have handed out mixed bytes: not committed. */
static fg_status sources_unchanged(const fg_export_merge *m) {
  fg_status st = FG_OK;
  for (size_t i = 0; !st && i < fg_ckpt_file_count(m->src); i++) st = fg_mapping_check(fg_ckpt_file_at(m->src, i)->map);
  if (!st) st = fg_mapping_check(fg_st_mapping(m->st));
  return st ? fg_fail_prefix(st, "export merge: source ") : FG_OK;
}

fg_status fg_export_merge_run(const fg_export_merge *m, const char *out_path, fg_export_progress_fn progress,
                              void *user) {
  if (!m || !out_path) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_merge_run: NULL argument");
  fg_status st = fg_export_check_output(m->src, out_path);
  if (st) return st;
  struct stat so, sa; /* by identity, as fg_export_check_output compares the model's files */
  if (stat(out_path, &so) == 0 && stat(m->path, &sa) == 0 && so.st_dev == sa.st_dev && so.st_ino == sa.st_ino)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: the output is the adapters file %s", out_path, m->path);
  const size_t n = fg_ckpt_count(m->src);
  fg_gguf_writer *w = NULL;
  st = fg_gguf_writer_create(&w);
  if (!st) st = fg_gguf_writer_copy_all_kv(w, fg_ckpt_gguf(m->src), split_keys, 3);
  for (size_t i = 0; !st && i < n; i++)
    st = fg_gguf_writer_declare_tensor(w, m->t[i].name, m->t[i].dst_dtype, m->t[i].ndim, m->t[i].ne);
  if (!st) st = fg_gguf_writer_begin(w, out_path);
  cursor c = {.m = m, .w = w, .fn = progress, .user = user};
  c.prog.tensors_total = n;
  for (size_t i = 0; i < n; i++) c.prog.bytes_total += m->t[i].dst_bytes;
  for (size_t i = 0; !st && i < n; i++) {
    c.prog.tensor = &m->t[i];
    const fg_ckpt_tensor *s = fg_ckpt_tensor_at(m->src, i);
    const merge_item *it = m->item_of[i] >= 0 ? &m->items[m->item_of[i]] : NULL;
    st = !it ? copy_tensor(&c, s) : it->b ? merge_tensor(&c, s, it) : replace_tensor(&c, s, it);
    c.prog.tensors_done = i + 1;
    if (!st) st = report(&c, 0);
  }
  if (!st) st = sources_unchanged(m);
  if (!st) st = fg_gguf_writer_commit(w);
  fg_gguf_writer_free(w); /* after a failure this removes the temporary file */
  free(c.buf);
  free(c.a);
  free(c.b);
  return st;
}
