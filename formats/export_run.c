/* Export execution: metadata into the writer, then each tensor streamed in chunks of rows,
 * so that the working set is one chunk of f32 plus its encoding, whatever the model size. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/export_internal.h"
#include "forgia/imatrix.h"
#include "forgia/quant.h"
#include "forgia/quant_weighted.h"

/* The output is one file: split bookkeeping of a split source would make loaders look for
 * parts that do not exist. */
static const char *const fg_export_split_keys[] = {"split.no", "split.count", "split.tensors.count"};

static bool any_block_output(const fg_export_plan *p) {
  for (size_t i = 0; i < p->n; i++)
    if (fg_dtype_info(p->t[i].dst_dtype)->is_quant) return true;
  return false;
}

/* A mixture writes what llama-quantize writes: the source's keys, then the quantization
 * version and the file type moved to the end. */
static const char *const fg_export_mixture_skip[] = {
  "split.no", "split.count", "split.tensors.count", "general.quantization_version", "general.file_type",
  "quantize.imatrix.file", "quantize.imatrix.dataset", "quantize.imatrix.entries_count",
  "quantize.imatrix.chunks_count"};

/* llama-quantize's record of the importance matrix: strings cut at 127 bytes, counts UINT32. */
static fg_status imatrix_keys(const fg_export_plan *p, fg_gguf_writer *w) {
  const fg_imatrix *m = p->opt.imatrix;
  const char *label = p->opt.imatrix_label ? p->opt.imatrix_label : "imatrix";
  fg_status st = fg_gguf_writer_set_str(w, "quantize.imatrix.file", label, strlen(label) > 127 ? 127 : strlen(label));
  if (!st && fg_imatrix_dataset_count(m)) {
    const char *d = fg_imatrix_dataset(m, 0);
    st = fg_gguf_writer_set_str(w, "quantize.imatrix.dataset", d, strlen(d) > 127 ? 127 : strlen(d));
  }
  if (!st) st = fg_gguf_writer_set_u32(w, "quantize.imatrix.entries_count", (uint32_t)fg_imatrix_count(m));
  const int64_t chunks = fg_imatrix_chunk_count(m);
  if (!st && chunks > 0) st = fg_gguf_writer_set_u32(w, "quantize.imatrix.chunks_count", (uint32_t)chunks);
  return st;
}

static fg_status add_metadata(const fg_export_plan *p, fg_gguf_writer *w) {
  const fg_gguf_file *g = fg_ckpt_gguf(p->src);
  fg_status st;
  uint32_t ftype;
  const bool set_ftype = fg_export_plan_file_type(p, &ftype);
  if (g && p->mixture) {
    /* the keys written below move to the end, as gguf_set_val does (remove, then append) */
    const char *skip[9];
    size_t n_skip = 0;
    for (size_t i = 0; i < 5; i++) skip[n_skip++] = fg_export_mixture_skip[i];
    if (p->opt.imatrix) {
      skip[n_skip++] = fg_export_mixture_skip[5];
      if (fg_imatrix_dataset_count(p->opt.imatrix)) skip[n_skip++] = fg_export_mixture_skip[6];
      skip[n_skip++] = fg_export_mixture_skip[7];
      if (fg_imatrix_chunk_count(p->opt.imatrix) > 0) skip[n_skip++] = fg_export_mixture_skip[8];
    }
    if ((st = fg_gguf_writer_copy_all_kv(w, g, skip, n_skip)) ||
        (st = fg_gguf_writer_set_u32(w, "general.quantization_version", 2)) ||
        (st = fg_gguf_writer_set_u32(w, "general.file_type", ftype)))
      return st;
    return p->opt.imatrix ? imatrix_keys(p, w) : FG_OK;
  }
  if (g) {
    if ((st = fg_gguf_writer_copy_all_kv(w, g, fg_export_split_keys, 3))) return st;
    /* set_u32 replaces in place, so a present key keeps its position (and gets UINT32). */
    if (set_ftype && (st = fg_gguf_writer_set_u32(w, "general.file_type", ftype))) return st;
    if (any_block_output(p) && fg_gguf_key_index(g, "general.quantization_version") < 0 &&
        (st = fg_gguf_writer_set_u32(w, "general.quantization_version", 2)))
      return st;
    return FG_OK;
  }
  if (set_ftype && (st = fg_gguf_writer_set_u32(w, "general.file_type", ftype))) return st;
  if (any_block_output(p) && (st = fg_gguf_writer_set_u32(w, "general.quantization_version", 2))) return st;
  return fg_export_st_metadata(p->src, w);
}

typedef struct fg_export_cursor {
  const fg_export_plan *p;
  fg_gguf_writer *w;
  fg_export_progress prog;
  fg_export_progress_fn fn;
  void *user;
  float *fbuf;               /* chunk_bytes of f32, allocated on first use */
  uint8_t *obuf;             /* the chunk encoded */
  uint8_t *ibuf;             /* source bytes copied out of the mapping (FG_EXPORT_READ_PIECE) */
  size_t fcap, ocap, icap;
} fg_export_cursor;

static fg_status report(fg_export_cursor *c, uint64_t bytes) {
  c->prog.bytes_done += bytes;
  if (c->fn && !c->fn(&c->prog, c->user))
    return fg_fail(FG_ERR_STATE, "%s: export cancelled at tensor '%s'", fg_ckpt_path(c->p->src),
                   c->prog.tensor->name);
  return FG_OK;
}

static fg_status grow(void **buf, size_t *cap, size_t need, const char *what) {
  if (need <= *cap) return FG_OK;
  void *b = realloc(*buf, need);
  if (!b) return fg_fail(FG_ERR_NOMEM, "export: out of memory for a %zu-byte %s buffer", need, what);
  *buf = b;
  *cap = need;
  return FG_OK;
}

/* The mapping holding a tensor's bytes (offsets are absolute in it). */
static const fg_mapping *map_of(const fg_export_cursor *c, const fg_ckpt_tensor *s) {
  return fg_ckpt_file_at(c->p->src, s->file)->map;
}

/* Source bytes are read out of the mapping with fg_mapping_copy, at most this many at a
 * time (whole rows when decoding, at least one): a source file truncated under the export
 * is then a status naming it, instead of SIGBUS in a decoder or EFAULT in write(2). */
#define FG_EXPORT_READ_PIECE ((uint64_t)8 << 20)

/* Copies t's bytes [off, off+len) into c->ibuf. The message names the file, the tensor
 * and the offset (fg_mapping_copy's starts with the path: said once). */
static fg_status read_source(fg_export_cursor *c, const fg_ckpt_tensor *s, uint64_t off, uint64_t len) {
  fg_status st = grow((void **)&c->ibuf, &c->icap, (size_t)len, "read");
  if (st) return st;
  const fg_mapping *map = map_of(c, s);
  fg_mapping_prefetch(map, s->offset + off, len);
  st = fg_mapping_copy(map, c->ibuf, s->offset + off, len);
  fg_mapping_evict(map, s->offset + off, len);
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

/* Bytes unchanged: copied out of the mapping piece by piece and written. */
static fg_status copy_tensor(fg_export_cursor *c, const fg_ckpt_tensor *s) {
  const uint64_t step = c->p->opt.chunk_bytes;
  for (uint64_t off = 0; off < s->nbytes; off += step) {
    uint64_t len = s->nbytes - off < step ? s->nbytes - off : step;
    fg_status st = FG_OK;
    for (uint64_t done = 0; done < len && !st; done += FG_EXPORT_READ_PIECE) {
      uint64_t k = len - done < FG_EXPORT_READ_PIECE ? len - done : FG_EXPORT_READ_PIECE;
      if (!(st = read_source(c, s, off + done, k))) st = fg_gguf_writer_write_data(c->w, c->ibuf, k);
    }
    if (st || (st = report(c, len))) return st;
  }
  return FG_OK;
}

/* Decodes rows [r, r+k) of s into c->fbuf, reading the source a piece of whole rows at a
 * time. */
static fg_status decode_rows(fg_export_cursor *c, const fg_ckpt_tensor *s, const fg_export_tensor *t, uint64_t r,
                             uint64_t k, uint64_t n, uint64_t src_row) {
  uint64_t per = FG_EXPORT_READ_PIECE / src_row;
  if (per == 0) per = 1;
  for (uint64_t i = 0; i < k; i += per) {
    uint64_t m = k - i < per ? k - i : per;
    fg_status st = read_source(c, s, (r + i) * src_row, m * src_row);
    if (st) return st;
    st = fg_quant_decode_rows(t->src_dtype, c->ibuf, (size_t)(m * src_row), c->fbuf + i * n, (int64_t)m, (int64_t)n);
    if (st) return fg_fail_prefix(st, "%s: tensor '%s' (chunk from row %" PRIu64 "): ", fg_ckpt_path(c->p->src),
                                  t->name, r + i);
  }
  return FG_OK;
}

/* Encodes rows [r, r+k) of t; with importance weights, each expert's rows (ne[1] of them)
 * take that expert's slice, so a chunk is cut at expert boundaries. */
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

/* Decode a run of rows to f32, encode to the target, write; the chunk is as many whole rows
 * as fit in chunk_bytes of f32 (at least one). */
static fg_status transcode_tensor(fg_export_cursor *c, const fg_ckpt_tensor *s, const fg_export_tensor *t) {
  const char *path = fg_ckpt_path(c->p->src);
  const uint64_t n = t->ne[0];
  const uint64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
  uint64_t src_row = 0, dst_row = 0;
  fg_status st;
  if ((st = fg_dtype_nbytes(t->src_dtype, n, &src_row)) || (st = fg_dtype_nbytes(t->dst_dtype, n, &dst_row)))
    return fg_fail_prefix(st, "%s: tensor '%s': ", path, t->name);
  if (n == 0 || rows == 0) return FG_OK;
  uint64_t per = c->p->opt.chunk_bytes / (n * sizeof(float));
  if (per == 0) per = 1;
  if (per > rows) per = rows;
  if (per * n > SIZE_MAX / sizeof(float) || per * dst_row > SIZE_MAX)
    return fg_fail(FG_ERR_OVERFLOW, "%s: tensor '%s': a chunk of %" PRIu64 " rows does not fit in memory",
                   path, t->name, per);
  if ((st = grow((void **)&c->fbuf, &c->fcap, (size_t)(per * n * sizeof(float)), "f32")) ||
      (t->dst_dtype != FG_F32 && (st = grow((void **)&c->obuf, &c->ocap, (size_t)(per * dst_row), "encode"))))
    return st;
  for (uint64_t r = 0; r < rows; r += per) {
    uint64_t k = rows - r < per ? rows - r : per;
    if ((st = decode_rows(c, s, t, r, k, n, src_row))) return st;
    const void *outp = c->fbuf; /* an f32 target is the decoded chunk itself */
    if (t->dst_dtype != FG_F32) {
      if ((st = encode_rows(t, c->fbuf, r, k, c->obuf, dst_row)))
        return fg_fail_prefix(st, "%s: tensor '%s' (chunk from row %" PRIu64 "): ", path, t->name, r);
      outp = c->obuf;
    }
    if ((st = fg_gguf_writer_write_data(c->w, outp, k * dst_row)) || (st = report(c, k * dst_row))) return st;
  }
  return FG_OK;
}

/* A source file modified in place while it was read (its size or modification time
 * changed) may have handed out a mix of old and new bytes: the output is not committed. */
static fg_status sources_unchanged(const fg_export_plan *p) {
  for (size_t i = 0; i < fg_ckpt_file_count(p->src); i++) {
    fg_status st = fg_mapping_check(fg_ckpt_file_at(p->src, i)->map);
    if (st) return fg_fail_prefix(st, "export: source ");
  }
  return FG_OK;
}

/* The source part a tensor comes from: its output file with keep_split, else 0. */
static size_t part_of(const fg_export_plan *p, const fg_export_tensor *t) {
  return p->opt.keep_split ? fg_ckpt_tensor_at(p->src, t->src_index)->file : 0;
}

/* One output file's writer: metadata (all of it in the first; with keep_split every part's
 * split keys last, as llama-quantize appends them), its tensors, and its temporary file. */
static fg_status open_part(const fg_export_plan *p, size_t part, size_t nparts, const char *path,
                           fg_gguf_writer **out) {
  fg_gguf_writer *w = NULL;
  fg_status st = fg_gguf_writer_create(&w);
  if (!st && part == 0) st = add_metadata(p, w);
  if (!st && nparts > 1) {
    if (!(st = fg_gguf_writer_set_u16(w, "split.no", (uint16_t)part)) &&
        !(st = fg_gguf_writer_set_u16(w, "split.count", (uint16_t)nparts)))
      st = fg_gguf_writer_set_i32(w, "split.tensors.count", (int32_t)p->n);
  }
  for (size_t i = 0; !st && i < p->n; i++) {
    const fg_export_tensor *t = &p->t[i];
    if (part_of(p, t) != part) continue;
    st = fg_gguf_writer_declare_tensor(w, t->name, t->dst_dtype, t->ndim, t->ne);
    if (st) st = fg_fail_prefix(st, "%s: ", fg_ckpt_path(p->src));
  }
  if (!st) st = fg_gguf_writer_begin(w, path);
  if (st) {
    fg_gguf_writer_free(w);
    return st;
  }
  *out = w;
  return FG_OK;
}

fg_status fg_export_run(const fg_export_plan *p, const char *out_path,
                        fg_export_progress_fn progress, void *user) {
  if (!p || !out_path) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_run: NULL argument");
  const size_t nparts = fg_export_plan_outputs(p);
  if (nparts > UINT16_MAX)
    return fg_fail(FG_ERR_RANGE, "export: %zu output parts, GGUF's split.count holds at most 65535", nparts);
  char **paths = calloc(nparts, sizeof *paths);
  fg_gguf_writer **ws = calloc(nparts, sizeof *ws);
  fg_status st = paths && ws ? FG_OK : fg_fail(FG_ERR_NOMEM, "export: out of memory for %zu parts", nparts);
  const size_t cap = strlen(out_path) + 32;
  for (size_t i = 0; !st && i < nparts; i++) {
    if (!(paths[i] = malloc(cap))) st = fg_fail(FG_ERR_NOMEM, "export: out of memory");
    if (!st) st = fg_export_plan_output_path(p, out_path, i, paths[i], cap);
    if (!st) st = fg_export_check_output(p->src, paths[i]);
  }
  if (!st) st = fg_export_plan_ready(p);
  for (size_t i = 0; !st && i < nparts; i++) st = open_part(p, i, nparts, paths[i], &ws[i]);
  fg_export_cursor c = {.p = p, .w = nparts ? ws[0] : NULL, .fn = progress, .user = user};
  c.prog.tensors_total = p->n;
  fg_export_plan_totals(p, NULL, &c.prog.bytes_total);
  for (size_t i = 0; !st && i < p->n; i++) {
    const fg_export_tensor *t = &p->t[i];
    c.prog.tensor = t;
    c.w = ws[part_of(p, t)];
    const fg_ckpt_tensor *s = fg_ckpt_tensor_at(p->src, t->src_index);
    st = t->action == FG_EXPORT_ACTION_COPY ? copy_tensor(&c, s) : transcode_tensor(&c, s, t);
    c.prog.tensors_done = i + 1;
    if (!st) st = report(&c, 0);
  }
  if (!st) st = sources_unchanged(p);
  /* every part is written before any is committed, so a failure leaves no new part behind */
  for (size_t i = 0; !st && i < nparts; i++) st = fg_gguf_writer_commit(ws[i]);
  /* After a failure a writer still owns its temporary file; freeing it removes the file. */
  for (size_t i = 0; ws && i < nparts; i++) fg_gguf_writer_free(ws[i]);
  for (size_t i = 0; paths && i < nparts; i++) free(paths[i]);
  free(paths);
  free(ws);
  free(c.fbuf);
  free(c.obuf);
  free(c.ibuf);
  return st;
}
