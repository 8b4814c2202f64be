/* Export planning: target names, llama.cpp file-type codes, and the per-tensor policy. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "formats/export_internal.h"
#include "formats/export_mixture_internal.h"
#include "forgia/imatrix.h"
#include "forgia/quant.h"
#include "forgia/quant_weighted.h"

/* Targets with their llama_ftype code (llama.cpp's enum llama_ftype in llama.h). Uniform
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

/* A single type, as ggml names it; case-insensitive when exact is false. */
static fg_status parse_single(const char *name, bool exact, fg_export_target *out, bool *found) {
  *found = false;
  for (size_t i = 0; i < FG_EXPORT_NTARGETS; i++) {
    fg_dtype t = fg_export_targets[i].t;
    if ((exact ? strcmp(name, fg_dtype_name(t)) : strcasecmp(name, fg_dtype_name(t))) != 0) continue;
    *found = true;
    if (!fg_quant_can_encode(t))
      return fg_fail(FG_ERR_UNSUPPORTED, "export: this build has no %s encoder", fg_dtype_name(t));
    *out = (fg_export_target){FG_EXPORT_MODE_DTYPE, t, 0};
    return FG_OK;
  }
  return FG_OK;
}

static fg_status unknown_target(const char *name) {
  return fg_fail(FG_ERR_UNSUPPORTED, "export: unknown target '%s' (expected verbatim; a single type: f32, f16, "
                 "bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, tq1_0, tq2_0, iq4_nl, "
                 "iq4_xs, mxfp4, nvfp4, q1_0 or q2_0; or a llama-quantize mixture: Q4_K_M, Q5_K_M, Q6_K, "
                 "Q3_K_M, IQ4_XS, Q8_0, ...)", name);
}

fg_status fg_export_target_parse(const char *name, fg_export_target *out) {
  if (!name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_target_parse: NULL argument");
  if (strcasecmp(name, "verbatim") == 0) {
    *out = (fg_export_target){FG_EXPORT_MODE_VERBATIM, FG_F32, 0};
    return FG_OK;
  }
  bool found;
  fg_status st = parse_single(name, true, out, &found);
  if (found) return st;
  fg_dtype exact;
  if (fg_dtype_from_name(name, &exact) == FG_OK) /* ggml's spelling names a single type, never a mixture */
    return fg_fail(FG_ERR_UNSUPPORTED, "export: %s is not a single-type export target in this build%s%s", name,
                   fg_mix_find(name) ? "; llama-quantize's mixture of that name is " : "",
                   fg_mix_find(name) ? fg_mix_find(name)->name : "");
  const fg_mix_info *mi = fg_mix_find(name);
  if (mi) {
    *out = (fg_export_target){FG_EXPORT_MODE_MIXTURE, mi->dtype, mi->ftype};
    return FG_OK;
  }
  st = parse_single(name, false, out, &found);
  if (found) return st;
  return unknown_target(name);
}

/* llama-quantize also takes the file-type code itself ("15" for Q4_K_M). */
static const fg_mix_info *mix_by_number(const char *name) {
  if (!*name || strlen(name) > 3 || strspn(name, "0123456789") != strlen(name)) return NULL;
  return fg_mix_by_ftype((uint32_t)strtoul(name, NULL, 10));
}

fg_status fg_export_target_parse_as(const char *name, fg_export_spelling how, fg_export_target *out) {
  if (!name || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_target_parse_as: NULL argument");
  if (how != FG_EXPORT_SPELLING_DTYPE && how != FG_EXPORT_SPELLING_LLAMA)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_export_target_parse_as: spelling %d is not one of the enum's", (int)how);
  if (strcasecmp(name, "verbatim") == 0 || (how == FG_EXPORT_SPELLING_LLAMA && strcasecmp(name, "COPY") == 0)) {
    *out = (fg_export_target){FG_EXPORT_MODE_VERBATIM, FG_F32, 0};
    return FG_OK;
  }
  bool found = false;
  fg_status st = FG_OK;
  if (how == FG_EXPORT_SPELLING_DTYPE) {
    st = parse_single(name, false, out, &found);
    if (found) return st;
  }
  const fg_mix_info *mi = fg_mix_find(name);
  if (!mi && how == FG_EXPORT_SPELLING_LLAMA) mi = mix_by_number(name);
  if (mi) {
    *out = (fg_export_target){FG_EXPORT_MODE_MIXTURE, mi->dtype, mi->ftype};
    return FG_OK;
  }
  if (how == FG_EXPORT_SPELLING_LLAMA) {
    fg_export_target single;
    if (parse_single(name, false, &single, &found) == FG_OK && found)
      return fg_fail(FG_ERR_UNSUPPORTED, "export: '%s' is not one of llama-quantize's type names; for the "
                     "single-type export give --dtype %s", name, fg_dtype_name(single.dtype));
  }
  return unknown_target(name);
}

const char *fg_export_mixture_name(uint32_t ftype) {
  const fg_mix_info *mi = fg_mix_by_ftype(ftype);
  return mi ? mi->name : NULL;
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
  case FG_EXPORT_WHY_KEPT: return "llama.cpp keeps it";
  case FG_EXPORT_WHY_RULE: return "mixture rule";
  case FG_EXPORT_WHY_FALLBACK: return "fallback";
  case FG_EXPORT_WHY_OVERRIDE: return "override";
  }
  return "invalid";
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool is_float(fg_dtype t) { return t == FG_F32 || t == FG_F16 || t == FG_BF16; }

/* Checks that GGUF can carry a tensor and fills its GGUF description: ndim 1..4, ne and the
 * row-major shape (a 0-dim scalar becomes ne = {1}). Always true of a GGUF source. A
 * safetensors output (to_st) takes names longer than GGUF's. */
static fg_status gguf_shape(const char *path, const fg_ckpt_tensor *x, bool to_st, fg_export_tensor *t) {
  if (x->name_len == 0 || (!to_st && x->name_len >= FG_GGUF_MAX_NAME) || memchr(x->name, 0, x->name_len))
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

/* What deciding a tensor needs besides the options: the mixture's model and counters, and
 * the compiled --tensor-type patterns. */
typedef struct fg_plan_ctx {
  const char *path;
  const fg_export_options *opt;
  bool mixture;
  fg_mix_model model;
  fg_mix_state state;
  pcre2_code **re;           /* opt->n_tensor_types patterns */
  pcre2_match_data *md;
} fg_plan_ctx;

static bool quant(fg_dtype t) { return fg_dtype_info(t)->is_quant; }

/* ggml_n_dims: dims up to the last one above 1 (a {4096, 1} tensor is 1-D to llama.cpp). */
static int ggml_n_dims(const fg_export_tensor *t) {
  for (int i = 3; i >= 1; i--)
    if (t->ne[i] > 1) return i + 1;
  return 1;
}

/* The first --tensor-type pattern that finds the name, or -1. */
static int pattern_index(const fg_plan_ctx *c, const char *name) {
  for (size_t i = 0; i < c->opt->n_tensor_types; i++)
    if (pcre2_match(c->re[i], (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, c->md, NULL) >= 0) return (int)i;
  return -1;
}

/* Whether the tensor is one the target quantizes; *why says why not. */
static bool eligible(const fg_plan_ctx *c, const fg_export_tensor *t, fg_export_why *why) {
  if (c->mixture) {
    if (ggml_n_dims(t) < 2) *why = FG_EXPORT_WHY_NOT_MATRIX;
    else if (!ends_with(t->name, "weight")) *why = FG_EXPORT_WHY_NOT_WEIGHT;
    else if (!fg_mix_allows(&c->model, t->name, ggml_n_dims(t), !c->opt->leave_output)) *why = FG_EXPORT_WHY_KEPT;
    else return true;
    return false;
  }
  if (t->ndim < 2) *why = FG_EXPORT_WHY_NOT_MATRIX;
  else if (!ends_with(t->name, ".weight")) *why = FG_EXPORT_WHY_NOT_WEIGHT;
  else if (strstr(t->name, "norm")) *why = FG_EXPORT_WHY_NORM;
  else return true;
  return false;
}

/* llama.cpp's choice for an eligible tensor, in its order: the embedding and output
 * overrides, then (for a block default) the first matching pattern, else the mixture's
 * rules, then the row fallback. */
static fg_status choose(fg_plan_ctx *c, fg_export_tensor *t, fg_export_target tg, bool by_experts) {
  const fg_export_options *o = c->opt;
  const fg_mix_cat cat = fg_mix_category(t->name);
  fg_dtype want = tg.dtype;
  t->why = FG_EXPORT_WHY_TARGET;
  if (o->token_embd_type.mode == FG_EXPORT_MODE_DTYPE && cat == FG_MIX_TOKEN_EMBD &&
      !(strcmp(t->name, "per_layer_token_embd.weight") == 0 && pattern_index(c, t->name) >= 0)) {
    t->wanted = t->dst_dtype = o->token_embd_type.dtype;
    t->why = FG_EXPORT_WHY_OVERRIDE;
    return FG_OK;
  }
  if (o->output_type.mode == FG_EXPORT_MODE_DTYPE && cat == FG_MIX_OUTPUT) {
    t->wanted = t->dst_dtype = o->output_type.dtype;
    t->why = FG_EXPORT_WHY_OVERRIDE;
    return FG_OK;
  }
  if (quant(want)) {
    const int k = pattern_index(c, t->name);
    if (k >= 0) {
      want = o->tensor_types[k].dtype;
      t->why = FG_EXPORT_WHY_OVERRIDE;
    } else if (by_experts) {
      t->why = FG_EXPORT_WHY_OVERRIDE;
    } else if (c->mixture && !o->pure) {
      fg_status st = fg_mix_rule_type(&c->state, t->name, cat, t->ne[0], t->ne[2], want, &want, &t->rule);
      if (st) return fg_fail_prefix(st, "%s: ", c->path);
      if (t->rule) t->why = FG_EXPORT_WHY_RULE;
    }
    t->wanted = want;
    fg_dtype fb;
    fg_status st = fg_mix_fallback(t->name, want, t->ne[0], &fb);
    if (st && !c->mixture) { /* a single type with no fallback (q1_0, nvfp4): the tensor keeps its type */
      t->why = FG_EXPORT_WHY_ROW;
      t->dst_dtype = t->src_dtype;
      return FG_OK;
    }
    if (st) return fg_fail_prefix(st, "%s: ", c->path);
    if (fb != want) t->why = FG_EXPORT_WHY_FALLBACK;
    want = fb;
  }
  t->wanted = t->why == FG_EXPORT_WHY_FALLBACK ? t->wanted : want;
  t->dst_dtype = want;
  return FG_OK;
}

/* The tensor's importance-matrix entry, as llama-quantize picks it (see fg_export_options). */
static fg_status find_weights(const fg_plan_ctx *c, fg_export_tensor *t) {
  /* every 2-D matrix of a 3-D or 4-D stack has its slice (llama.cpp's stacks are 3-D) */
  const int64_t experts = (int64_t)(t->ne[2] * t->ne[3]);
  fg_status st = fg_imatrix_weights_for(c->opt->imatrix, t->name, (int64_t)t->ne[0], experts, &t->weights);
  if (st == FG_ERR_NOT_FOUND || (st == FG_ERR_BAD_SHAPE && fg_mix_category(t->name) == FG_MIX_TOKEN_EMBD)) {
    t->weights = NULL;
    return FG_OK;
  }
  if (st) return fg_fail_prefix(st, "%s: importance matrix: ", c->path);
  return FG_OK;
}

/* Decides one tensor. Returns an error only for a refused requantization, an expert type
 * that cannot be decoded, or a mixture rule that cannot place the tensor. */
static fg_status decide(fg_plan_ctx *c, fg_export_tensor *t) {
  const fg_export_options *opt = c->opt;
  const char *path = c->path;
  t->expert = ends_with(t->name, "_exps.weight");
  t->dst_dtype = t->wanted = t->src_dtype;
  t->action = FG_EXPORT_ACTION_COPY;
  fg_export_target tg = opt->dtype;
  const bool by_experts = t->expert && opt->experts.mode == FG_EXPORT_MODE_DTYPE;
  if (t->expert && opt->experts.mode != FG_EXPORT_MODE_UNSET) tg = opt->experts;
  if (tg.mode != FG_EXPORT_MODE_DTYPE && tg.mode != FG_EXPORT_MODE_MIXTURE) {
    t->why = FG_EXPORT_WHY_VERBATIM;
    return FG_OK;
  }
  const fg_dtype src = t->src_dtype;
  if (!eligible(c, t, &t->why)) return FG_OK;
  if (!is_float(src) && !quant(src)) {
    t->why = FG_EXPORT_WHY_SOURCE;
    return FG_OK;
  }
  fg_status st = choose(c, t, tg, by_experts);
  if (st) return st;
  if (t->why == FG_EXPORT_WHY_ROW) return FG_OK;
  const fg_dtype dst = t->dst_dtype;
  if (t->ne[0] % fg_dtype_info(dst)->block_elems != 0) /* an override is taken as given, as llama.cpp does */
    return fg_fail(FG_ERR_BAD_ROW, "%s: tensor '%s': rows of %llu elements are not whole %u-element blocks of "
                   "%s, the type an override gives it", path, t->name, (unsigned long long)t->ne[0],
                   fg_dtype_info(dst)->block_elems, fg_dtype_name(dst));
  if (dst == src) {
    t->why = t->why == FG_EXPORT_WHY_TARGET ? FG_EXPORT_WHY_SAME : t->why;
    t->action = FG_EXPORT_ACTION_COPY;
    return FG_OK;
  }
  const bool quant_src = quant(src), quant_dst = quant(dst);
  if (quant_src && quant_dst && !by_experts && !opt->allow_requantize)
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s' is already %s; %s would requantize it "
                   "(chain requantization compounds the error): export it verbatim, or to f32/f16/bf16, "
                   "use --experts-dtype for *_exps.weight tensors, or allow it (--allow-requantize)", path,
                   t->name, fg_dtype_name(src), fg_dtype_name(dst));
  if (quant_src && !fg_quant_can_decode(src))
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s': this build cannot decode %s, so it cannot be "
                   "transcoded to %s", path, t->name, fg_dtype_name(src), fg_dtype_name(dst));
  t->action = !quant_src ? FG_EXPORT_ACTION_CONVERT : quant_dst ? FG_EXPORT_ACTION_REQUANT : FG_EXPORT_ACTION_DEQUANT;
  t->needs_imatrix = c->mixture && fg_mix_requires_imatrix(t->name, dst, tg.ftype);
  return quant_dst && opt->imatrix ? find_weights(c, t) : FG_OK;
}

/* A mixture's tensor order, as llama-quantize visits and writes them: layer ("blk.N."; -1
 * without one), then name; with --keep-split, source part, then data offset. */
typedef struct fg_order_key {
  int64_t major;             /* layer, or part */
  uint64_t offset;           /* keep_split: data offset */
  const char *name;          /* otherwise: the name */
  size_t idx;
} fg_order_key;

static int cmp_order(const void *a, const void *b) {
  const fg_order_key *x = a, *y = b;
  if (x->major != y->major) return x->major < y->major ? -1 : 1;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  const int c = x->name && y->name ? strcmp(x->name, y->name) : 0;
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static fg_status sort_mixture_order(fg_export_plan *p) {
  fg_order_key *k = malloc(p->n * sizeof *k);
  fg_export_tensor *t = malloc(p->n * sizeof *t);
  if (!k || !t) {
    free(k);
    free(t);
    return fg_fail(FG_ERR_NOMEM, "export: out of memory ordering %zu tensors", p->n);
  }
  for (size_t i = 0; i < p->n; i++) {
    const fg_ckpt_tensor *x = fg_ckpt_tensor_at(p->src, p->t[i].src_index);
    k[i] = p->opt.keep_split ? (fg_order_key){(int64_t)x->file, x->offset, NULL, i}
                             : (fg_order_key){fg_mix_layer_of(p->t[i].name), 0, p->t[i].name, i};
  }
  qsort(k, p->n, sizeof *k, cmp_order);
  for (size_t i = 0; i < p->n; i++) t[i] = p->t[k[i].idx];
  free(p->t);
  free(k);
  p->t = t;
  return FG_OK;
}

static fg_status compile_patterns(fg_plan_ctx *c) {
  const fg_export_options *o = c->opt;
  if (o->n_tensor_types == 0) return FG_OK;
  if (!o->tensor_types) return fg_fail(FG_ERR_INVALID_ARG, "export: %zu tensor-type rules but NULL", o->n_tensor_types);
  if (!(c->re = calloc(o->n_tensor_types, sizeof *c->re)))
    return fg_fail(FG_ERR_NOMEM, "export: out of memory for %zu tensor-type rules", o->n_tensor_types);
  for (size_t i = 0; i < o->n_tensor_types; i++) {
    const fg_export_tensor_rule *r = &o->tensor_types[i];
    if (!r->pattern || !fg_dtype_valid(r->dtype) || (!quant(r->dtype) && !is_float(r->dtype)))
      return fg_fail(FG_ERR_INVALID_ARG, "export: tensor-type rule %zu: expected a pattern and a float or "
                     "block type", i + 1);
    int err;
    PCRE2_SIZE at;
    c->re[i] = pcre2_compile((PCRE2_SPTR)r->pattern, PCRE2_ZERO_TERMINATED, 0, &err, &at, NULL);
    if (!c->re[i]) {
      PCRE2_UCHAR msg[160];
      pcre2_get_error_message(err, msg, sizeof msg);
      return fg_fail(FG_ERR_INVALID_ARG, "export: tensor-type pattern '%s': %s at offset %zu", r->pattern,
                     (const char *)msg, (size_t)at);
    }
  }
  if (!(c->md = pcre2_match_data_create(4, NULL))) return fg_fail(FG_ERR_NOMEM, "export: out of memory (PCRE2)");
  return FG_OK;
}

static void free_patterns(fg_plan_ctx *c) {
  for (size_t i = 0; c->re && i < c->opt->n_tensor_types; i++) pcre2_code_free(c->re[i]);
  free(c->re);
  pcre2_match_data_free(c->md);
}

/* The mixture's model and llama.cpp's counters over every tensor of the source. */
static fg_status mixture_init(fg_plan_ctx *c, const fg_export_plan *p) {
  const fg_gguf_file *g = fg_ckpt_gguf(p->src);
  if (!g)
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: llama-quantize mixture %s needs a GGUF source (its rules read the "
                   "model's GGUF metadata and tensor names): export to GGUF first, or use a single type "
                   "such as %s", c->path, fg_export_mixture_name(c->opt->dtype.ftype),
                   fg_dtype_name(c->opt->dtype.dtype));
  fg_status st = fg_mix_model_from_gguf(g, &c->model);
  if (st) return st;
  fg_mix_state *s = &c->state;
  s->m = &c->model;
  s->ftype = c->opt->dtype.ftype;
  s->has_imatrix = c->opt->imatrix != NULL;
  s->tied = true;
  s->output_set = c->opt->output_type.mode == FG_EXPORT_MODE_DTYPE;
  s->output_type = c->opt->output_type.dtype;
  s->n_ffn = (int)(c->model.n_layer > INT32_MAX ? INT32_MAX : c->model.n_layer);
  for (size_t i = 0; i < p->n; i++) {
    const fg_mix_cat cat = fg_mix_category(p->t[i].name);
    if (cat == FG_MIX_V || cat == FG_MIX_QKV || cat == FG_MIX_KV_B) s->n_attention_wv++;
    if (cat == FG_MIX_OUTPUT) s->tied = false;
  }
  return FG_OK;
}

static fg_status check_target(const fg_export_target *tg, const char *what) {
  if (tg->mode == FG_EXPORT_MODE_MIXTURE) {
    const fg_mix_info *mi = fg_mix_by_ftype(tg->ftype);
    if (!mi || mi->dtype != tg->dtype)
      return fg_fail(FG_ERR_INVALID_ARG, "export: %s: mixture code %u with default type %s is not a "
                     "llama-quantize mixture", what, tg->ftype, fg_dtype_name(tg->dtype));
    return FG_OK;
  }
  if (tg->mode == FG_EXPORT_MODE_DTYPE &&
      (!fg_dtype_valid(tg->dtype) || (!quant(tg->dtype) && !is_float(tg->dtype))))
    return fg_fail(FG_ERR_UNSUPPORTED, "export: %s: %s is not a float or block type", what,
                   fg_dtype_valid(tg->dtype) ? fg_dtype_name(tg->dtype) : "(invalid)");
  return FG_OK;
}

/* A safetensors output holds dense types: every target must be a float type (or none). */
static fg_status st_targets(const fg_export_plan *p) {
  const fg_export_options *o = &p->opt;
  if (o->dtype.mode == FG_EXPORT_MODE_MIXTURE)
    return fg_fail(FG_ERR_UNSUPPORTED, "export: llama-quantize mixture %s writes GGUF; a safetensors output "
                   "holds f32, f16 or bf16", fg_export_mixture_name(o->dtype.ftype));
  if (o->keep_split) return fg_fail(FG_ERR_UNSUPPORTED, "export: --keep-split writes GGUF parts, not safetensors");
  const fg_export_target *const tg[4] = {&o->dtype, &o->experts, &o->output_type, &o->token_embd_type};
  for (int k = 0; k < 4; k++)
    if (tg[k]->mode == FG_EXPORT_MODE_DTYPE && !is_float(tg[k]->dtype))
      return fg_fail(FG_ERR_UNSUPPORTED, "export: %s is a block type; a safetensors output holds f32, f16 or bf16",
                     fg_dtype_valid(tg[k]->dtype) ? fg_dtype_name(tg[k]->dtype) : "(invalid)");
  for (size_t i = 0; i < o->n_tensor_types; i++)
    if (o->tensor_types && fg_dtype_valid(o->tensor_types[i].dtype) && !is_float(o->tensor_types[i].dtype))
      return fg_fail(FG_ERR_UNSUPPORTED, "export: tensor-type rule %zu gives %s, a block type; a safetensors "
                     "output holds f32, f16 or bf16", i + 1, fg_dtype_name(o->tensor_types[i].dtype));
  return FG_OK;
}

static fg_status plan_tensors(fg_export_plan *p) {
  fg_plan_ctx c = {.path = fg_ckpt_path(p->src), .opt = &p->opt};
  const bool to_st = p->opt.format == FG_EXPORT_FORMAT_SAFETENSORS;
  fg_status st = FG_OK;
  if (p->opt.format != FG_EXPORT_FORMAT_GGUF && !to_st)
    return fg_fail(FG_ERR_INVALID_ARG, "export: format %d is not one of fg_export_format's", (int)p->opt.format);
  if (p->opt.shard_bytes && !to_st)
    return fg_fail(FG_ERR_INVALID_ARG, "export: shard_bytes is for a safetensors output; GGUF splits are not written");
  if (to_st) st = st_targets(p);
  /* Every tensor must fit in GGUF before any target is looked at. */
  for (size_t i = 0; !st && i < p->n; i++) {
    st = gguf_shape(c.path, fg_ckpt_tensor_at(p->src, i), to_st, &p->t[i]);
    p->t[i].src_index = i;
  }
  if (!st && p->opt.experts.mode == FG_EXPORT_MODE_MIXTURE)
    st = fg_fail(FG_ERR_INVALID_ARG, "export: the experts target must be a single type, not a mixture");
  if (!st && p->opt.dtype.mode == FG_EXPORT_MODE_DTYPE &&
      (fg_export_file_type(p->opt.dtype.dtype, NULL) != FG_OK || !fg_quant_can_encode(p->opt.dtype.dtype)))
    st = fg_fail(FG_ERR_UNSUPPORTED, "export: %s is not an export target in this build", fg_dtype_name(p->opt.dtype.dtype));
  if (!st && p->opt.experts.mode == FG_EXPORT_MODE_DTYPE && !fg_quant_can_encode(p->opt.experts.dtype))
    st = fg_fail(FG_ERR_UNSUPPORTED, "export: %s is not an export target in this build", fg_dtype_name(p->opt.experts.dtype));
  if (!st) st = check_target(&p->opt.dtype, "target");
  if (!st) st = check_target(&p->opt.output_type, "output tensor type");
  if (!st) st = check_target(&p->opt.token_embd_type, "token embedding type");
  if (!st && (p->opt.output_type.mode == FG_EXPORT_MODE_MIXTURE || p->opt.token_embd_type.mode == FG_EXPORT_MODE_MIXTURE))
    st = fg_fail(FG_ERR_INVALID_ARG, "export: output and token embedding types must be single types");
  if (!st) st = compile_patterns(&c);
  c.mixture = p->mixture = p->opt.dtype.mode == FG_EXPORT_MODE_MIXTURE;
  if (!st && c.mixture) st = mixture_init(&c, p);
  if (!st && p->opt.keep_split && !fg_ckpt_gguf(p->src))
    st = fg_fail(FG_ERR_UNSUPPORTED, "%s: --keep-split keeps a GGUF split's parts; this is not a GGUF source", c.path);
  if (!st && c.mixture) st = sort_mixture_order(p);
  for (size_t i = 0; !st && i < p->n; i++) {
    fg_export_tensor *t = &p->t[i];
    st = decide(&c, t);
    uint64_t numel = 1;
    for (uint32_t d = 0; !st && d < 4; d++) {
      if (t->ne[d] && numel > UINT64_MAX / t->ne[d])
        st = fg_fail(FG_ERR_OVERFLOW, "%s: tensor '%s': element count overflows", c.path, t->name);
      numel *= t->ne[d];
    }
    if (!st) st = fg_dtype_nbytes(t->dst_dtype, numel, &t->dst_bytes);
    if (!st && to_st && quant(t->dst_dtype))
      st = fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s' would stay %s, which safetensors cannot hold (dense types "
                   "only): give a float target (f32, f16 or bf16) to dequantize it", c.path, t->name,
                   fg_dtype_name(t->dst_dtype));
  }
  free_patterns(&c);
  p->opt.tensor_types = NULL;
  p->opt.n_tensor_types = 0;
  return st;
}

fg_status fg_export_plan_create(const fg_ckpt *src, const fg_export_options *opt, fg_export_plan **out) {
  if (!src || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_plan_create: NULL argument");
  *out = NULL;
  static const fg_export_options defaults = {0};
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
  if (p && p->opt.format == FG_EXPORT_FORMAT_SAFETENSORS) return false; /* a GGUF key */
  if (p && p->opt.dtype.mode == FG_EXPORT_MODE_MIXTURE) {
    if (code) *code = p->opt.dtype.ftype;
    return true;
  }
  if (!p || p->opt.dtype.mode != FG_EXPORT_MODE_DTYPE) return false;
  return fg_export_file_type(p->opt.dtype.dtype, code) == FG_OK;
}

size_t fg_export_plan_outputs(const fg_export_plan *p) {
  if (!p) return 0;
  return p->opt.keep_split ? fg_ckpt_file_count(p->src) : 1;
}

fg_status fg_export_plan_output_path(const fg_export_plan *p, const char *out_path, size_t i, char *buf, size_t cap) {
  if (!p || !out_path || !buf || i >= fg_export_plan_outputs(p))
    return fg_fail(FG_ERR_INVALID_ARG, "fg_export_plan_output_path: bad argument (part %zu)", i);
  int n;
  if (!p->opt.keep_split) {
    n = snprintf(buf, cap, "%s", out_path);
  } else {
    size_t len = strlen(out_path);
    if (len >= 5 && strcmp(out_path + len - 5, ".gguf") == 0) len -= 5; /* llama-quantize drops it */
    n = snprintf(buf, cap, "%.*s-%05zu-of-%05zu.gguf", (int)len, out_path, i + 1, fg_export_plan_outputs(p));
  }
  if (n < 0 || (size_t)n >= cap)
    return fg_fail(FG_ERR_RANGE, "export: output path for part %zu does not fit in %zu bytes", i + 1, cap);
  return FG_OK;
}

size_t fg_export_plan_fallbacks(const fg_export_plan *p) {
  size_t n = 0;
  for (size_t i = 0; p && i < p->n; i++) n += p->t[i].why == FG_EXPORT_WHY_FALLBACK;
  return n;
}

fg_status fg_export_plan_ready(const fg_export_plan *p) {
  if (!p) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_plan_ready: NULL plan");
  for (size_t i = 0; i < p->n; i++) {
    const fg_export_tensor *t = &p->t[i];
    if (t->action == FG_EXPORT_ACTION_COPY || t->action == FG_EXPORT_ACTION_DEQUANT) continue;
    if ((t->needs_imatrix || fg_quant_needs_weights(t->dst_dtype)) && !t->weights)
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s': %s in this mixture needs an importance matrix "
                     "(--imatrix FILE)%s, as llama-quantize requires", fg_ckpt_path(p->src), t->name,
                     fg_dtype_name(t->dst_dtype), p->opt.imatrix ? " with an entry for it" : "");
    const fg_dtype d = t->dst_dtype;
    const bool weighted = fg_quant_can_encode_weighted(d) && (t->weights || !fg_quant_needs_weights(d));
    if (!(t->weights ? weighted : fg_quant_can_encode(d) || weighted))
      return fg_fail(FG_ERR_UNSUPPORTED, "%s: tensor '%s': this build has no %s encoder (the plan chose %s for "
                     "it; override it with a tensor-type rule)", fg_ckpt_path(p->src), t->name,
                     fg_dtype_name(t->dst_dtype), fg_dtype_name(t->dst_dtype));
  }
  return FG_OK;
}
