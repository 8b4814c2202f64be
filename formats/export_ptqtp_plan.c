/* Export PTQTP planning (forgia/export_ptqtp.h): which tensors become plane sets, their
 * output bytes and working sets. Pure: the run declares the output from this plan alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/export_ptqtp_internal.h"
#include "forgia/gguf.h"

fg_export_ptqtp_options fg_export_ptqtp_options_default(void) {
  fg_export_ptqtp_options o;
  memset(&o, 0, sizeof o);
  o.solver = fg_ptqtp_options_default();
  return o;
}

const char *fg_export_ptqtp_why_name(fg_export_ptqtp_why w) {
  switch (w) {
  case FG_PTQTP_WHY_QUANTIZE: return "quantize";
  case FG_PTQTP_WHY_SHAPE: return "not a matrix or _exps stack";
  case FG_PTQTP_WHY_NOT_WEIGHT: return "not a .weight";
  case FG_PTQTP_WHY_NORM: return "norm";
  case FG_PTQTP_WHY_ROW: return "ne[0] not a multiple of 256";
  case FG_PTQTP_WHY_SOURCE: return "source type";
  case FG_PTQTP_WHY_DEFAULT: return "embeddings/output head stay";
  case FG_PTQTP_WHY_NOT_INCLUDED: return "not included";
  case FG_PTQTP_WHY_EXCLUDED: return "excluded";
  }
  return "invalid";
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool matches_any(const char *name, const char *const *subs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (subs[i] && strstr(name, subs[i])) return true;
  return false;
}

/* The types the reference's decoder takes, ternary excluded (already planes). */
static bool decodable_source(fg_dtype t) {
  switch (t) {
  case FG_F32: case FG_F16: case FG_BF16: case FG_Q4_0: case FG_Q4_1: case FG_Q5_0: case FG_Q5_1:
  case FG_Q8_0: case FG_Q4_K: case FG_Q5_K: case FG_Q6_K:
    return true;
  default:
    return false;
  }
}

static fg_export_ptqtp_why decide(const fg_ckpt_tensor *x, const fg_export_ptqtp_options *o) {
  if (!(x->ndim == 2 || (x->ndim == 3 && strstr(x->name, "_exps"))) || x->numel == 0) return FG_PTQTP_WHY_SHAPE;
  if (!ends_with(x->name, ".weight")) return FG_PTQTP_WHY_NOT_WEIGHT;
  if (strstr(x->name, "norm")) return FG_PTQTP_WHY_NORM;
  if (x->ne[0] == 0 || x->ne[0] % FG_PTQTP_GROUP != 0) return FG_PTQTP_WHY_ROW;
  if (!decodable_source(x->dtype)) return FG_PTQTP_WHY_SOURCE;
  if (o->n_include) {
    if (!matches_any(x->name, o->include, o->n_include)) return FG_PTQTP_WHY_NOT_INCLUDED;
  } else if (strstr(x->name, "token_embd") || strcmp(x->name, "output.weight") == 0) {
    return FG_PTQTP_WHY_DEFAULT;
  }
  if (matches_any(x->name, o->exclude, o->n_exclude)) return FG_PTQTP_WHY_EXCLUDED;
  return FG_PTQTP_WHY_QUANTIZE;
}

/* Source bytes of one read piece: whole rows, at least one, at most the expert's rows. */
static uint64_t piece_bytes(uint64_t rows, uint64_t src_row) {
  uint64_t per = FG_PTQTP_READ_PIECE / src_row;
  if (per == 0) per = 1;
  if (per > rows) per = rows;
  return per * src_row;
}

static fg_status plan_one(const char *path, const fg_ckpt_tensor *x, const fg_export_ptqtp_options *o,
                          fg_export_ptqtp_tensor *t) {
  t->name = x->name;
  t->ndim = x->ndim;
  memcpy(t->ne, x->ne, sizeof t->ne);
  t->src_dtype = x->dtype;
  t->src_bytes = t->dst_bytes = x->nbytes;
  t->experts = 1;
  t->why = decide(x, o);
  if (t->why != FG_PTQTP_WHY_QUANTIZE) return FG_OK;
  const int k = o->solver.planes;
  if (strlen(x->name) + strlen(".ptqtp0") >= FG_GGUF_MAX_NAME)
    return fg_fail(FG_ERR_BAD_STRING, "%s: tensor '%s': its plane names ('%s.ptqtp0') would pass GGUF's %u-byte "
                   "limit (keep it with --ptqtp-exclude)", path, x->name, x->name, FG_GGUF_MAX_NAME - 1);
  t->cols = x->ne[0];
  t->rows = x->ne[1];
  t->experts = x->ndim == 3 ? x->ne[2] : 1;
  uint64_t plane_e = 0, src_row = 0;
  fg_status st = fg_ptqtp_plane_bytes(t->rows, t->cols, &plane_e);
  if (!st) st = fg_dtype_nbytes(x->dtype, t->cols, &src_row);
  if (st) return fg_fail_prefix(st, "%s: tensor '%s': ", path, x->name);
  if (plane_e > UINT64_MAX / 3 / t->experts)
    return fg_fail(FG_ERR_OVERFLOW, "%s: tensor '%s': plane bytes overflow", path, x->name);
  t->dst_bytes = plane_e * t->experts * (uint64_t)k;
  const uint64_t f32 = t->rows * t->cols * sizeof(float), piece = piece_bytes(t->rows, src_row);
  if (x->ndim == 3) {
    /* one expert's values and plane 0, the stack's planes 1..K-1 */
    t->workset_bytes = f32 + piece + plane_e + plane_e * t->experts * (uint64_t)(k - 1);
  } else {
    t->workset_bytes = f32 + piece + plane_e * (uint64_t)k;
  }
  return FG_OK;
}

static fg_status plan_all(fg_export_ptqtp_plan *p) {
  const char *path = fg_ckpt_path(p->src);
  fg_export_ptqtp_totals *tt = &p->totals;
  tt->tensors = p->n;
  for (size_t i = 0; i < p->n; i++) {
    const fg_ckpt_tensor *x = fg_ckpt_tensor_at(p->src, i);
    fg_export_ptqtp_tensor *t = &p->t[i];
    fg_status st = plan_one(path, x, &p->opt, t);
    if (st) return st;
    tt->src_bytes += t->src_bytes;
    tt->dst_bytes += t->dst_bytes;
    if (t->why != FG_PTQTP_WHY_QUANTIZE) {
      tt->kept++;
      tt->kept_stacks += t->ndim == 3 && strstr(t->name, "_exps") != NULL;
      continue;
    }
    tt->quantized++;
    tt->stacks += t->ndim == 3;
    tt->plane_tensors += (size_t)p->opt.solver.planes;
    tt->quant_src_bytes += t->src_bytes;
    tt->quant_dst_bytes += t->dst_bytes;
    if (t->workset_bytes > tt->peak_workset_bytes) tt->peak_workset_bytes = t->workset_bytes;
    /* a plane name that is already a tensor would make two tensors of one name */
    for (int k = 0; k < p->opt.solver.planes; k++) {
      char name[FG_GGUF_MAX_NAME + 8];
      snprintf(name, sizeof name, "%s.ptqtp%d", t->name, k);
      if (fg_ckpt_find(p->src, name))
        return fg_fail(FG_ERR_DUPLICATE, "%s: tensor '%s' would become '%s', which the model already holds",
                       path, t->name, name);
    }
  }
  return FG_OK;
}

fg_status fg_export_ptqtp_plan_create(const fg_ckpt *src, const fg_export_ptqtp_options *opt,
                                      fg_export_ptqtp_plan **out) {
  if (!src || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_ptqtp_plan_create: NULL argument");
  *out = NULL;
  const fg_export_ptqtp_options defaults = fg_export_ptqtp_options_default();
  if (!opt) opt = &defaults;
  fg_status st = fg_ptqtp_options_check(&opt->solver);
  if (st) return st;
  if ((opt->n_include && !opt->include) || (opt->n_exclude && !opt->exclude))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_export_ptqtp_plan_create: a filter count without its list");
  if (fg_ckpt_format_of(src) != FG_CKPT_GGUF)
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: PTQTP export reads GGUF models (its name policy is GGUF's); "
                   "export the safetensors checkpoint to GGUF first", fg_ckpt_path(src));
  fg_export_ptqtp_plan *p = calloc(1, sizeof *p);
  if (!p) return fg_fail(FG_ERR_NOMEM, "export: out of memory");
  p->src = src;
  p->opt = *opt;
  p->n = fg_ckpt_count(src);
  if (p->n && !(p->t = calloc(p->n, sizeof *p->t))) {
    free(p);
    return fg_fail(FG_ERR_NOMEM, "export: out of memory for a plan of %zu tensors", fg_ckpt_count(src));
  }
  if ((st = plan_all(p))) {
    fg_export_ptqtp_plan_free(p);
    return st;
  }
  *out = p;
  return FG_OK;
}

void fg_export_ptqtp_plan_free(fg_export_ptqtp_plan *p) {
  if (!p) return;
  free(p->t);
  free(p);
}

size_t fg_export_ptqtp_plan_count(const fg_export_ptqtp_plan *p) { return p ? p->n : 0; }

const fg_export_ptqtp_tensor *fg_export_ptqtp_plan_tensor(const fg_export_ptqtp_plan *p, size_t i) {
  return p && i < p->n ? &p->t[i] : NULL;
}

int fg_export_ptqtp_plan_planes(const fg_export_ptqtp_plan *p) { return p ? p->opt.solver.planes : 0; }

void fg_export_ptqtp_plan_totals(const fg_export_ptqtp_plan *p, fg_export_ptqtp_totals *t) {
  if (!t) return;
  if (!p) {
    memset(t, 0, sizeof *t);
    return;
  }
  *t = p->totals;
}
