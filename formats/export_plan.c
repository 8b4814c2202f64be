/* Export planning: target names, llama.cpp file-type codes, and the per-tensor policy. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "formats/export_internal.h"
#include "forgia/quant.h"

/* Targets with their llama_ftype code (reference/gguf-and-quant.md section 4). Uniform
 * K-quant exports report the _S variants, as Fucina's exporter does; q2_K has a plain
 * MOSTLY_Q2_K code, which is also what llama.cpp guesses for a q2_K-majority file. */
static const struct {
  fg_dtype t;
  uint32_t ftype;
} fg_export_targets[] = {
  {FG_F32, 0},     {FG_F16, 1},     {FG_BF16, 32},   {FG_Q8_0, 7},    {FG_Q4_0, 2},
  {FG_Q4_1, 3},    {FG_Q5_0, 8},    {FG_Q5_1, 9},    {FG_Q2_K, 10},   {FG_Q3_K, 11},
  {FG_Q4_K, 14},   {FG_Q5_K, 16},   {FG_Q6_K, 18},   {FG_TQ1_0, 36},  {FG_TQ2_0, 37},
  {FG_IQ4_NL, 25}, {FG_IQ4_XS, 30}, {FG_MXFP4, 38},  {FG_NVFP4, 39},  {FG_Q1_0, 40},
  {FG_Q2_0, 41},
};
#define FG_EXPORT_NTARGETS (sizeof fg_export_targets / sizeof fg_export_targets[0])

fg_status fg_export_file_type(fg_dtype t, uint32_t *code) {
  for (size_t i = 0; i < FG_EXPORT_NTARGETS; i++) {
    if (fg_export_targets[i].t == t) {
      if (code) *code = fg_export_targets[i].ftype;
      return FG_OK;
    }
  }
  return fg_fail(FG_ERR_UNSUPPORTED, "export: %s has no llama.cpp file-type code", fg_dtype_name(t));
}

fg_status fg_export_target_parse(const char *name, fg_export_target *out) {
  if (!name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_target_parse: NULL argument");
  if (strcasecmp(name, "verbatim") == 0) {
    out->mode = FG_EXPORT_MODE_VERBATIM;
    out->dtype = FG_F32;
    return FG_OK;
  }
  for (size_t i = 0; i < FG_EXPORT_NTARGETS; i++) {
    fg_dtype t = fg_export_targets[i].t;
    if (strcasecmp(name, fg_dtype_name(t)) != 0) continue;
    if (!fg_quant_can_encode(t))
      return fg_fail(FG_ERR_UNSUPPORTED, "export: this build has no %s encoder", fg_dtype_name(t));
    out->mode = FG_EXPORT_MODE_DTYPE;
    out->dtype = t;
    return FG_OK;
  }
  return fg_fail(FG_ERR_UNSUPPORTED, "export: unknown target '%s' (expected verbatim, f32, f16, bf16, q8_0, "
                 "q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, tq1_0, tq2_0, iq4_nl, iq4_xs, "
                 "mxfp4, nvfp4, q1_0 or q2_0)", name);
}

const char *fg_export_action_name(fg_export_action a) {
  switch (a) {
  case FG_EXPORT_ACTION_COPY: return "copy";
  case FG_EXPORT_ACTION_CONVERT: return "convert";
  case FG_EXPORT_ACTION_DEQUANT: return "dequantize";
  case FG_EXPORT_ACTION_REQUANT: return "requantize";
  }
  return "invalid";
}

const char *fg_export_why_name(fg_export_why w) {
  switch (w) {
  case FG_EXPORT_WHY_TARGET: return "target";
  case FG_EXPORT_WHY_VERBATIM: return "verbatim";
  case FG_EXPORT_WHY_NOT_MATRIX: return "not a matrix";
  case FG_EXPORT_WHY_NOT_WEIGHT: return "not a .weight";
  case FG_EXPORT_WHY_NORM: return "norm";
  case FG_EXPORT_WHY_SAME: return "already target type";
  case FG_EXPORT_WHY_ROW: return "row not a whole number of blocks";
  case FG_EXPORT_WHY_SOURCE: return "integer/f64 source";
  }
  return "invalid";
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool is_float(fg_dtype t) { return t == FG_F32 || t == FG_F16 || t == FG_BF16; }

/* Decides one tensor. Returns an error only for a refused requantization or an expert type
 * that cannot be decoded. */
static fg_status decide(const char *path, const fg_export_options *opt, const fg_export_src_tensor *s,
                        fg_export_tensor *t) {
  t->expert = ends_with(s->name, "_exps.weight");
  t->dst_dtype = s->dtype;
  t->action = FG_EXPORT_ACTION_COPY;
  fg_export_target tg = opt->dtype;
  if (t->expert && opt->experts.mode != FG_EXPORT_MODE_UNSET) tg = opt->experts;
  if (tg.mode != FG_EXPORT_MODE_DTYPE) {
    t->why = FG_EXPORT_WHY_VERBATIM;
    return FG_OK;
  }
  if (s->ndim < 2) {
    t->why = FG_EXPORT_WHY_NOT_MATRIX;
  } else if (!ends_with(s->name, ".weight")) {
    t->why = FG_EXPORT_WHY_NOT_WEIGHT;
  } else if (strstr(s->name, "norm")) {
    t->why = FG_EXPORT_WHY_NORM;
  } else if (s->dtype == tg.dtype) {
    t->why = FG_EXPORT_WHY_SAME;
  } else if (!is_float(s->dtype) && !fg_dtype_info(s->dtype)->is_quant) {
    t->why = FG_EXPORT_WHY_SOURCE;
  } else {
    const bool quant_src = fg_dtype_info(s->dtype)->is_quant;
    const bool quant_dst = fg_dtype_info(tg.dtype)->is_quant;
    const bool by_experts = t->expert && opt->experts.mode == FG_EXPORT_MODE_DTYPE;
    if (quant_src && quant_dst && !by_experts)
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s' is already %s; --dtype %s would requantize it "
                     "(chain requantization compounds the error): export it verbatim, or to f32/f16/bf16, "
                     "or use --experts-dtype for *_exps.weight tensors", path, s->name,
                     fg_dtype_name(s->dtype), fg_dtype_name(tg.dtype));
    if (s->ne[0] % fg_dtype_info(tg.dtype)->block_elems != 0) {
      t->why = FG_EXPORT_WHY_ROW;
    } else {
      if (quant_src && !fg_quant_can_decode(s->dtype))
        return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s': this build cannot decode %s, so it cannot be "
                       "transcoded to %s", path, s->name, fg_dtype_name(s->dtype), fg_dtype_name(tg.dtype));
      t->why = FG_EXPORT_WHY_TARGET;
      t->dst_dtype = tg.dtype;
      t->action = !quant_src ? FG_EXPORT_ACTION_CONVERT : quant_dst ? FG_EXPORT_ACTION_REQUANT : FG_EXPORT_ACTION_DEQUANT;
    }
  }
  return FG_OK;
}

fg_status fg_export_plan_create(const fg_export_source *src, const fg_export_options *opt,
                                fg_export_plan **out) {
  if (!src || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_plan_create: NULL argument");
  *out = NULL;
  static const fg_export_options defaults = {{FG_EXPORT_MODE_UNSET, FG_F32}, {FG_EXPORT_MODE_UNSET, FG_F32}, 0};
  if (!opt) opt = &defaults;
  const fg_export_target *tgs[2] = {&opt->dtype, &opt->experts};
  for (int k = 0; k < 2; k++) {
    if (tgs[k]->mode == FG_EXPORT_MODE_DTYPE &&
        (fg_export_file_type(tgs[k]->dtype, NULL) != FG_OK || !fg_quant_can_encode(tgs[k]->dtype)))
      return fg_fail(FG_ERR_UNSUPPORTED, "export: %s is not an export target in this build",
                     fg_dtype_name(tgs[k]->dtype));
  }
  fg_export_plan *p = calloc(1, sizeof *p);
  if (!p) return fg_fail(FG_ERR_NOMEM, "export: out of memory");
  p->src = src;
  p->opt = *opt;
  if (p->opt.chunk_bytes == 0) p->opt.chunk_bytes = 64ull << 20;
  p->n = src->n;
  if (p->n && !(p->t = calloc(p->n, sizeof *p->t))) {
    free(p);
    return fg_fail(FG_ERR_NOMEM, "export: out of memory for a plan of %zu tensors", src->n);
  }
  for (size_t i = 0; i < p->n; i++) {
    const fg_export_src_tensor *s = &src->t[i];
    fg_export_tensor *t = &p->t[i];
    t->name = s->name;
    t->ndim = s->ndim;
    memcpy(t->ne, s->ne, sizeof t->ne);
    memcpy(t->shape, s->shape, sizeof t->shape);
    t->src_dtype = s->dtype;
    t->src_bytes = s->nbytes;
    fg_status st = decide(src->path, &p->opt, s, t);
    uint64_t numel = 1;
    for (uint32_t d = 0; !st && d < 4; d++) {
      if (t->ne[d] && numel > UINT64_MAX / t->ne[d])
        st = fg_fail(FG_ERR_OVERFLOW, "%s: tensor '%s': element count overflows", src->path, s->name);
      numel *= t->ne[d];
    }
    if (!st) st = fg_dtype_nbytes(t->dst_dtype, numel, &t->dst_bytes);
    if (st) {
      fg_export_plan_free(p);
      return st;
    }
  }
  *out = p;
  return FG_OK;
}

void fg_export_plan_free(fg_export_plan *p) {
  if (!p) return;
  free(p->t);
  free(p);
}

size_t fg_export_plan_count(const fg_export_plan *p) { return p ? p->n : 0; }

const fg_export_tensor *fg_export_plan_tensor(const fg_export_plan *p, size_t i) {
  return p && i < p->n ? &p->t[i] : NULL;
}

void fg_export_plan_totals(const fg_export_plan *p, uint64_t *src_bytes, uint64_t *dst_bytes) {
  uint64_t a = 0, b = 0;
  for (size_t i = 0; p && i < p->n; i++) {
    a += p->t[i].src_bytes;
    b += p->t[i].dst_bytes;
  }
  if (src_bytes) *src_bytes = a;
  if (dst_bytes) *dst_bytes = b;
}

size_t fg_export_plan_changed(const fg_export_plan *p) {
  size_t n = 0;
  for (size_t i = 0; p && i < p->n; i++) n += p->t[i].dst_dtype != p->t[i].src_dtype;
  return n;
}

bool fg_export_plan_file_type(const fg_export_plan *p, uint32_t *code) {
  if (!p || p->opt.dtype.mode != FG_EXPORT_MODE_DTYPE) return false;
  return fg_export_file_type(p->opt.dtype.dtype, code) == FG_OK;
}
