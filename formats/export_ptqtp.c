/* Export PTQTP run (forgia/export_ptqtp.h): metadata and the planned tensor set declared to
 * the streaming GGUF writer, then one tensor at a time: a kept tensor copied piece by piece,
 * a quantized one decoded to f32 (an expert at a time for a stack), solved, its planes
 * written and freed before the next tensor is read. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/clock.h"
#include "formats/export_ptqtp_internal.h"
#include "forgia/export.h"
#include "forgia/gguf.h"
#include "forgia/quant.h"

static const char *const fg_ptqtp_split_keys[] = {"split.no", "split.count", "split.tensors.count"};

typedef struct cursor {
  const fg_export_ptqtp_plan *p;
  fg_gguf_writer *w;
  uint8_t *ibuf;
  size_t icap;
  fg_export_ptqtp_summary sum;
  uint64_t bytes_done;
} cursor;

static bool source_has_planes(const fg_ckpt *src) {
  for (size_t i = 0; i < fg_ckpt_count(src); i++)
    if (strstr(fg_ckpt_tensor_at(src, i)->name, ".ptqtp")) return true;
  return false;
}

/* The stamps: a file that carries planes says so; tie_scales = 1 only when every plane set
 * in it is tied, so an inherited stamp goes when this run adds free planes, and a tied run
 * does not claim planes of the source it cannot vouch for. */
static fg_status add_metadata(const fg_export_ptqtp_plan *p, fg_gguf_writer *w) {
  const fg_gguf_file *g = fg_ckpt_gguf(p->src);
  fg_status st = fg_gguf_writer_copy_all_kv(w, g, fg_ptqtp_split_keys, 3);
  if (st || p->totals.quantized == 0) return st;
  if ((st = fg_gguf_writer_set_u32(w, FG_PTQTP_VERSION_KEY, FG_PTQTP_FORMAT_VERSION))) return st;
  const bool src_tied = fg_gguf_key_index(g, FG_PTQTP_TIE_KEY) >= 0;
  if (p->opt.solver.tie_scales && (src_tied || !source_has_planes(p->src)))
    return fg_gguf_writer_set_u32(w, FG_PTQTP_TIE_KEY, 1);
  if (!p->opt.solver.tie_scales && src_tied) return fg_gguf_writer_remove_kv(w, FG_PTQTP_TIE_KEY);
  return FG_OK;
}

static fg_status declare_tensors(const fg_export_ptqtp_plan *p, fg_gguf_writer *w) {
  for (size_t i = 0; i < p->n; i++) {
    const fg_export_ptqtp_tensor *t = &p->t[i];
    fg_status st;
    if (t->why != FG_PTQTP_WHY_QUANTIZE) {
      st = fg_gguf_writer_declare_tensor(w, t->name, t->src_dtype, t->ndim, t->ne);
    } else {
      st = FG_OK;
      for (int k = 0; !st && k < p->opt.solver.planes; k++) {
        char name[FG_GGUF_MAX_NAME + 8];
        snprintf(name, sizeof name, "%s.ptqtp%d", t->name, k);
        st = fg_gguf_writer_declare_tensor(w, name, FG_TQ2_0, t->ndim, t->ne);
      }
    }
    if (st) return fg_fail_prefix(st, "%s: ", fg_ckpt_path(p->src));
  }
  return FG_OK;
}

static fg_status grow(cursor *c, uint64_t need) {
  if (need <= c->icap) return FG_OK;
  uint8_t *b = realloc(c->ibuf, (size_t)need);
  if (!b) return fg_fail(FG_ERR_NOMEM, "export: out of memory for a %" PRIu64 "-byte read buffer", need);
  c->ibuf = b;
  c->icap = (size_t)need;
  return FG_OK;
}

/* Bytes [off, off+len) of s into c->ibuf through fg_mapping_copy (a file truncated under
 * the export is a status, not SIGBUS), its pages released afterwards. */
static fg_status read_source(cursor *c, const fg_ckpt_tensor *s, uint64_t off, uint64_t len) {
  fg_status st = grow(c, len);
  if (st) return st;
  const fg_mapping *map = fg_ckpt_file_at(c->p->src, s->file)->map;
  fg_mapping_prefetch(map, s->offset + off, len);
  st = fg_mapping_copy(map, c->ibuf, s->offset + off, len);
  fg_mapping_evict(map, s->offset + off, len);
  if (st)
    return fg_fail_prefix(st, "tensor '%s' (its bytes %" PRIu64 "..%" PRIu64 " of %" PRIu64 "): ", s->name, off,
                          off + len, s->nbytes);
  return FG_OK;
}

static fg_status copy_tensor(cursor *c, const fg_ckpt_tensor *s) {
  for (uint64_t off = 0; off < s->nbytes; off += FG_PTQTP_READ_PIECE) {
    const uint64_t len = s->nbytes - off < FG_PTQTP_READ_PIECE ? s->nbytes - off : FG_PTQTP_READ_PIECE;
    fg_status st = read_source(c, s, off, len);
    if (st || (st = fg_gguf_writer_write_data(c->w, c->ibuf, len))) return st;
    if (c->icap > c->sum.peak_workset_bytes) c->sum.peak_workset_bytes = c->icap;
  }
  return FG_OK;
}

/* Expert e's rows x cols values of s as f32 into f, a piece of whole rows at a time. */
static fg_status decode_expert(cursor *c, const fg_ckpt_tensor *s, const fg_export_ptqtp_tensor *t, uint64_t e,
                               uint64_t src_row, float *f) {
  uint64_t per = FG_PTQTP_READ_PIECE / src_row;
  if (per == 0) per = 1;
  for (uint64_t r = 0; r < t->rows; r += per) {
    const uint64_t m = t->rows - r < per ? t->rows - r : per;
    fg_status st = read_source(c, s, (e * t->rows + r) * src_row, m * src_row);
    if (st) return st;
    st = fg_quant_decode_rows(t->src_dtype, c->ibuf, (size_t)(m * src_row), f + r * t->cols, (int64_t)m,
                              (int64_t)t->cols);
    if (st)
      return fg_fail_prefix(st, "%s: tensor '%s' (expert %" PRIu64 ", row %" PRIu64 "): ", fg_ckpt_path(c->p->src),
                            t->name, e, r);
  }
  return FG_OK;
}

/* Solves every expert (one, for a matrix): plane 0 goes out expert by expert, planes
 * 1..K-1 of the whole stack are held, [plane - 1][expert], and written after. */
static fg_status quantize_tensor(cursor *c, const fg_ckpt_tensor *s, const fg_export_ptqtp_tensor *t,
                                 fg_ptqtp_stats *agg, double *max_rel) {
  const fg_ptqtp_options *o = &c->p->opt.solver;
  const int k = o->planes;
  uint64_t plane_e = 0, src_row = 0;
  fg_status st = fg_ptqtp_plane_bytes(t->rows, t->cols, &plane_e);
  if (!st) st = fg_dtype_nbytes(t->src_dtype, t->cols, &src_row);
  if (st) return st;
  const uint64_t f32 = t->rows * t->cols * sizeof(float), rest_bytes = plane_e * t->experts * (uint64_t)(k - 1);
  /* a copy's larger read piece is not this tensor's to hold */
  free(c->ibuf);
  c->ibuf = NULL;
  c->icap = 0;
  float *f = malloc((size_t)f32);
  uint8_t *pl0 = malloc((size_t)plane_e);
  uint8_t *rest = k > 1 ? malloc((size_t)rest_bytes) : NULL;
  if (!f || !pl0 || (k > 1 && !rest)) {
    free(f);
    free(pl0);
    free(rest);
    return fg_fail(FG_ERR_NOMEM, "tensor '%s': out of memory for its %" PRIu64 " bytes of f32 values and planes",
                   t->name, f32 + plane_e + rest_bytes);
  }
  memset(agg, 0, sizeof *agg);
  *max_rel = 0;
  double rel_sum = 0, iter_sum = 0, zero_sum[3] = {0, 0, 0};
  for (uint64_t e = 0; !st && e < t->experts; e++) {
    st = decode_expert(c, s, t, e, src_row, f);
    if (st) break;
    void *planes[3] = {pl0, NULL, NULL};
    for (int p = 1; p < k; p++) planes[p] = rest + ((uint64_t)(p - 1) * t->experts + e) * plane_e;
    fg_ptqtp_stats ps;
    st = fg_ptqtp_quantize(f, t->rows, t->cols, o, planes, &ps);
    if (st) {
      st = fg_fail_prefix(st, "%s: tensor '%s' (expert %" PRIu64 "): ", fg_ckpt_path(c->p->src), t->name, e);
      break;
    }
    /* the largest simultaneous hold: values, read piece, plane 0, the held planes */
    const uint64_t hold = f32 + c->icap + plane_e + rest_bytes;
    if (hold > c->sum.peak_workset_bytes) c->sum.peak_workset_bytes = hold;
    st = fg_gguf_writer_write_data(c->w, pl0, plane_e);
    rel_sum += ps.rel_frob_err;
    if (ps.rel_frob_err > *max_rel) *max_rel = ps.rel_frob_err;
    iter_sum += ps.mean_iterations;
    for (int p = 0; p < 3; p++) zero_sum[p] += ps.zero_frac[p];
    agg->unconverged_groups += ps.unconverged_groups;
    agg->group_count += ps.group_count;
  }
  free(f);
  free(pl0);
  /* held planes go out after plane 0; the read piece is freed first (it is not needed) */
  free(c->ibuf);
  c->ibuf = NULL;
  c->icap = 0;
  for (int p = 1; !st && p < k; p++) /* one tensor per plane: a write stays within its tensor */
    st = fg_gguf_writer_write_data(c->w, rest + (uint64_t)(p - 1) * t->experts * plane_e, t->experts * plane_e);
  free(rest);
  const double n = (double)t->experts;
  agg->rel_frob_err = rel_sum / n;
  agg->mean_iterations = iter_sum / n;
  for (int p = 0; p < 3; p++) agg->zero_frac[p] = zero_sum[p] / n;
  return st;
}

static fg_status sources_unchanged(const fg_ckpt *src) {
  for (size_t i = 0; i < fg_ckpt_file_count(src); i++) {
    fg_status st = fg_mapping_check(fg_ckpt_file_at(src, i)->map);
    if (st) return fg_fail_prefix(st, "export: source ");
  }
  return FG_OK;
}

static uint64_t peak_rss(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports KiB */
}

static fg_status write_all(cursor *c, fg_export_ptqtp_progress_fn fn, void *user) {
  const fg_export_ptqtp_plan *p = c->p;
  const char *path = fg_ckpt_path(p->src);
  for (size_t i = 0; i < p->n; i++) {
    const fg_export_ptqtp_tensor *t = &p->t[i];
    const fg_ckpt_tensor *s = fg_ckpt_tensor_at(p->src, i);
    const double t0 = fg_clock_seconds();
    fg_ptqtp_stats stats;
    double max_rel = 0;
    const bool quant = t->why == FG_PTQTP_WHY_QUANTIZE;
    fg_status st = quant ? quantize_tensor(c, s, t, &stats, &max_rel) : copy_tensor(c, s);
    if (st) return st;
    if (quant) {
      c->sum.groups += stats.group_count;
      c->sum.unconverged_groups += stats.unconverged_groups;
      if (max_rel > c->sum.max_rel_err) c->sum.max_rel_err = max_rel;
    }
    c->bytes_done += t->dst_bytes;
    const fg_export_ptqtp_progress pr = {i, p->n, t, quant ? &stats : NULL, max_rel, fg_clock_seconds() - t0,
                                         c->bytes_done, p->totals.dst_bytes};
    if (fn && !fn(&pr, user))
      return fg_fail(FG_ERR_STATE, "%s: export cancelled after tensor '%s'", path, t->name);
  }
  return FG_OK;
}

fg_status fg_export_ptqtp_run(const fg_export_ptqtp_plan *p, const char *out_path,
                              fg_export_ptqtp_progress_fn progress, void *user, fg_export_ptqtp_summary *summary) {
  if (!p || !out_path) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_ptqtp_run: NULL argument");
  fg_status st = fg_export_check_output(p->src, out_path);
  if (st) return st;
  cursor c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.sum.totals = p->totals;
  st = fg_gguf_writer_create(&c.w);
  if (!st) st = add_metadata(p, c.w);
  if (!st) st = declare_tensors(p, c.w);
  if (!st) st = fg_gguf_writer_begin(c.w, out_path);
  if (!st) st = write_all(&c, progress, user);
  if (!st) st = sources_unchanged(p->src);
  if (!st) st = fg_gguf_writer_commit(c.w);
  /* after a failure the writer still owns its temporary file; freeing it removes the file */
  fg_gguf_writer_free(c.w);
  free(c.ibuf);
  c.sum.peak_rss_bytes = peak_rss();
  if (!st && summary) *summary = c.sum;
  return st;
}
