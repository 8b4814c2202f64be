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

/* Checks that GGUF can carry a tensor and fills its GGUF description: ndim 1..4, ne and the
 * row-major shape (a 0-dim scalar becomes ne = {1}). Always true of a GGUF source. */
static fg_status gguf_shape(const char *path, const fg_ckpt_tensor *x, fg_export_tensor *t) {
  if (x->name_len == 0 || x->name_len >= FG_GGUF_MAX_NAME || memchr(x->name, 0, x->name_len))
    return fg_fail(FG_ERR_BAD_STRING, "%s: tensor '%s': name of %zu bytes cannot be a GGUF tensor name "
                   "(expected 1..%u bytes without NUL)", path, x->name, x->name_len, FG_GGUF_MAX_NAME - 1);
  if (fg_dtype_ggml_code(x->dtype) < 0)
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s': dtype %s has no GGUF type", path, x->name,
                   fg_dtype_info(x->dtype)->st_tag);
  if (x->ndim > FG_GGUF_MAX_DIMS)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: tensor '%s': %d dims, GGUF holds at most %d", path, x->name,
                   x->ndim, FG_GGUF_MAX_DIMS);
  t->name = x->name;
  memset(t->shape, 0, sizeof t->shape);
  if (x->ndim == 0) {
    t->ndim = 1;
    t->shape[0] = 1;
  } else {
    t->ndim = x->ndim;
    memcpy(t->shape, x->shape, (size_t)x->ndim * sizeof *x->shape);
  }
  memcpy(t->ne, x->ne, sizeof t->ne);
  t->src_dtype = x->dtype;
  t->src_bytes = x->nbytes;
  return FG_OK;
}

/* Decides one tensor. Returns an error only for a refused requantization or an expert type
 * that cannot be decoded. */
static fg_status decide(const char *path, const fg_export_options *opt, fg_export_tensor *t) {
  t->expert = ends_with(t->name, "_exps.weight");
  t->dst_dtype = t->src_dtype;
  t->action = FG_EXPORT_ACTION_COPY;
  fg_export_target tg = opt->dtype;
  if (t->expert && opt->experts.mode != FG_EXPORT_MODE_UNSET) tg = opt->experts;
  if (tg.mode != FG_EXPORT_MODE_DTYPE) {
    t->why = FG_EXPORT_WHY_VERBATIM;
    return FG_OK;
  }
  const fg_dtype src = t->src_dtype;
  if (t->ndim < 2) {
    t->why = FG_EXPORT_WHY_NOT_MATRIX;
  } else if (!ends_with(t->name, ".weight")) {
    t->why = FG_EXPORT_WHY_NOT_WEIGHT;
  } else if (strstr(t->name, "norm")) {
    t->why = FG_EXPORT_WHY_NORM;
  } else if (src == tg.dtype) {
    t->why = FG_EXPORT_WHY_SAME;
  } else if (!is_float(src) && !fg_dtype_info(src)->is_quant) {
    t->why = FG_EXPORT_WHY_SOURCE;
  } else {
    const bool quant_src = fg_dtype_info(src)->is_quant;
    const bool quant_dst = fg_dtype_info(tg.dtype)->is_quant;
    const bool by_experts = t->expert && opt->experts.mode == FG_EXPORT_MODE_DTYPE;
    if (quant_src && quant_dst && !by_experts)
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s' is already %s; --dtype %s would requantize it "
                     "(chain requantization compounds the error): export it verbatim, or to f32/f16/bf16, "
                     "or use --experts-dtype for *_exps.weight tensors", path, t->name,
                     fg_dtype_name(src), fg_dtype_name(tg.dtype));
    if (t->ne[0] % fg_dtype_info(tg.dtype)->block_elems != 0) {
      t->why = FG_EXPORT_WHY_ROW;
    } else {
      if (quant_src && !fg_quant_can_decode(src))
        return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s': this build cannot decode %s, so it cannot be "
                       "transcoded to %s", path, t->name, fg_dtype_name(src), fg_dtype_name(tg.dtype));
      t->why = FG_EXPORT_WHY_TARGET;
      t->dst_dtype = tg.dtype;
      t->action = !quant_src ? FG_EXPORT_ACTION_CONVERT : quant_dst ? FG_EXPORT_ACTION_REQUANT : FG_EXPORT_ACTION_DEQUANT;
    }
  }
  return FG_OK;
}

static fg_status plan_tensors(fg_export_plan *p) {
  const char *path = fg_ckpt_path(p->src);
  fg_status st = FG_OK;
  /* Every tensor must fit in GGUF before any target is looked at. */
  for (size_t i = 0; !st && i < p->n; i++) st = gguf_shape(path, fg_ckpt_tensor_at(p->src, i), &p->t[i]);
  const fg_export_target *tgs[2] = {&p->opt.dtype, &p->opt.experts};
  for (int k = 0; !st && k < 2; k++) {
    if (tgs[k]->mode == FG_EXPORT_MODE_DTYPE &&
        (fg_export_file_type(tgs[k]->dtype, NULL) != FG_OK || !fg_quant_can_encode(tgs[k]->dtype)))
      st = fg_fail(FG_ERR_UNSUPPORTED, "export: %s is not an export target in this build",
                   fg_dtype_name(tgs[k]->dtype));
  }
  for (size_t i = 0; !st && i < p->n; i++) {
    fg_export_tensor *t = &p->t[i];
    st = decide(path, &p->opt, t);
    uint64_t numel = 1;
    for (uint32_t d = 0; !st && d < 4; d++) {
      if (t->ne[d] && numel > UINT64_MAX / t->ne[d])
        st = fg_fail(FG_ERR_OVERFLOW, "%s: tensor '%s': element count overflows", path, t->name);
      numel *= t->ne[d];
    }
    if (!st) st = fg_dtype_nbytes(t->dst_dtype, numel, &t->dst_bytes);
  }
  return st;
}

fg_status fg_export_plan_create(const fg_ckpt *src, const fg_export_options *opt, fg_export_plan **out) {
  if (!src || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_plan_create: NULL argument");
  *out = NULL;
  static const fg_export_options defaults = {{FG_EXPORT_MODE_UNSET, FG_F32}, {FG_EXPORT_MODE_UNSET, FG_F32}, 0};
  if (!opt) opt = &defaults;
  fg_export_plan *p = calloc(1, sizeof *p);
  if (!p) return fg_fail(FG_ERR_NOMEM, "export: out of memory");
  p->src = src;
  p->opt = *opt;
  if (p->opt.chunk_bytes == 0) p->opt.chunk_bytes = 64ull << 20;
  p->n = fg_ckpt_count(src);
  if (p->n && !(p->t = calloc(p->n, sizeof *p->t))) {
    free(p);
    return fg_fail(FG_ERR_NOMEM, "export: out of memory for a plan of %zu tensors", fg_ckpt_count(src));
  }
  fg_status st = plan_tensors(p);
  if (st) {
    fg_export_plan_free(p);
    return st;
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
