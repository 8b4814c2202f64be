/* Export execution: metadata into the writer, then each tensor streamed in chunks of rows
 * (formats/export_stream.c), so that the working set is one chunk of output plus a piece
 * per thread, whatever the model size. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/export_stream.h"
#include "forgia/imatrix.h"

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

/* A source file modified in place while it was read (its size or modification time
 * changed) may have handed out a mix of old and new bytes: the output is not committed. */
fg_status fg_export_sources_unchanged(const fg_export_plan *p) {
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
  if (p->opt.format == FG_EXPORT_FORMAT_SAFETENSORS) return fg_export_run_safetensors(p, out_path, progress, user);
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
    st = t->action == FG_EXPORT_ACTION_COPY ? fg_export_copy_tensor(&c, s) : fg_export_transcode_tensor(&c, s, t);
    c.prog.tensors_done = i + 1;
    if (!st) st = fg_export_report(&c, 0);
  }
  if (!st) st = fg_export_sources_unchanged(p);
  /* every part is written before any is committed, so a failure leaves no new part behind */
  for (size_t i = 0; !st && i < nparts; i++) st = fg_gguf_writer_commit(ws[i]);
  /* After a failure a writer still owns its temporary file; freeing it removes the file. */
  for (size_t i = 0; ws && i < nparts; i++) fg_gguf_writer_free(ws[i]);
  for (size_t i = 0; paths && i < nparts; i++) free(paths[i]);
  free(paths);
  free(ws);
  fg_export_cursor_free(&c);
  return st;
}
