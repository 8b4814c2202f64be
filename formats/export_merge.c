/* Export merge mode (forgia/export_merge.h): LoRA adapters folded into a GGUF model's dense
 * weights while it is streamed to a new file, one chunk of rows at a time. */
#define _POSIX_C_SOURCE 200809L
#include "forgia/export_merge.h"

#include "formats/export_merge_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forgia/ckpt_dir.h"
#include "forgia/elem/gemm_exact.h"
#include "forgia/elem/op_lora.h"
#include "forgia/elem/op_table.h"
#include "forgia/gguf.h"
#include "forgia/mapping.h"
#include "forgia/safetensors.h"

/* ---- the host merge ----------------------------------------------------------------------- */

fg_status fg_lora_merge_host(fg_dtype dtype, const void *base, void *out, uint64_t nrows, uint64_t in, uint32_t rank,
                             const float *a, const float *b, float scale) {
  if ((!base || !out || !a || !b) && nrows && in)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_merge_host: NULL argument");
  if (dtype != FG_F32 && dtype != FG_F16 && dtype != FG_BF16)
    return fg_fail(fg_dtype_info(dtype)->is_quant ? FG_ERR_QUANTIZED_BASE : FG_ERR_TYPE,
                   "lora merge: a %s base; expected f32, f16 or bf16", fg_dtype_name(dtype));
  if (rank == 0) return fg_fail(FG_ERR_INVALID_ARG, "lora merge: rank 0");
  if (in > SIZE_MAX / sizeof(float)) return fg_fail(FG_ERR_OVERFLOW, "lora merge: rows of %" PRIu64, in);
  fg_status st = FG_OK;
#pragma omp parallel
  {
    /* one accumulator row per thread: every output keeps its own sum in ascending r, and the
     * loop over i vectorises */
    float *acc = malloc((size_t)(in ? in : 1) * sizeof(float));
    if (!acc) {
#pragma omp critical
      st = fg_fail(FG_ERR_NOMEM, "lora merge: out of memory for a row of %" PRIu64, in);
    }
#pragma omp for schedule(static)
    for (int64_t o = 0; o < (int64_t)nrows; o++) {
      if (!acc) continue;
      const float *br = b + (size_t)o * rank;
      for (uint64_t i = 0; i < in; i++) acc[i] = 0.0f;
      for (uint32_t r = 0; r < rank; r++) {
        const float *ar = a + (size_t)r * in;
        const float w = br[r];
        for (uint64_t i = 0; i < in; i++) acc[i] = fg_gemm_exact_step(acc[i], w, ar[i]);
      }
      const size_t row = (size_t)o * in;
      for (uint64_t i = 0; i < in; i++)
        fg_op_store(out, dtype, row + i, fg_lora_add_elem(fg_op_load(base, dtype, row + i), scale, acc[i]));
    }
    free(acc);
  }
  return st;
}

/* ---- opening: the adapters checked against the model ---------------------------------- */

static const char *const targets[] = {"q", "k", "v", "o", "gate", "up", "down"};
static const char *const bases[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
#define NTARGETS 7

void fg_export_merge_free(fg_export_merge *m) {
  if (!m) return;
  fg_st_close(m->st);
  fg_export_plan_free(m->plan);
  free(m->path);
  free(m->items);
  free(m->item_of);
  free(m->t);
  free(m);
}

size_t fg_export_merge_count(const fg_export_merge *m) { return m ? m->nitems : 0; }

const char *fg_export_merge_base(const fg_export_merge *m, size_t i, uint32_t *rank) {
  if (!m || i >= m->nitems) return NULL;
  if (rank) *rank = m->items[i].rank;
  return fg_ckpt_tensor_at(m->src, m->items[i].base)->name;
}

const char *fg_export_merge_path(const fg_export_merge *m) { return m ? m->path : NULL; }

/* A directory means its adapters.safetensors (model.safetensors in weights mode). */
static fg_status resolve_path(const char *given, bool weights, char **out) {
  struct stat sb;
  if (stat(given, &sb) != 0) return fg_fail(FG_ERR_IO, "%s: %s", given, strerror(errno));
  const char *leaf = weights ? FG_CKPT_DIR_MODEL_FILE : FG_CKPT_DIR_ADAPTERS_FILE;
  size_t n = strlen(given) + sizeof FG_CKPT_DIR_ADAPTERS_FILE + 2;
  char *p = malloc(n);
  if (!p) return fg_fail(FG_ERR_NOMEM, "export merge: out of memory");
  if (S_ISDIR(sb.st_mode))
    snprintf(p, n, "%s%s%s", given, given[0] && given[strlen(given) - 1] == '/' ? "" : "/", leaf);
  else
    snprintf(p, n, "%s", given);
  *out = p;
  return FG_OK;
}

/* "layers.<i>.<target>.lora_<half>" -> layer, target index, half ('a' or 'b'). A decimal
 * without leading zeros, so two spellings cannot name one base. */
static bool parse_name(const fg_st_tensor *t, uint64_t *layer, int *target, char *half) {
  const char *s = t->name;
  if (strlen(s) != t->name_len || strncmp(s, "layers.", 7) != 0) return false;
  s += 7;
  if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9')) return false;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  if (*s++ != '.') return false;
  const char *dot = strrchr(s, '.');
  if (!dot || (strcmp(dot, ".lora_a") != 0 && strcmp(dot, ".lora_b") != 0)) return false;
  for (int k = 0; k < NTARGETS; k++) {
    if ((size_t)(dot - s) == strlen(targets[k]) && strncmp(s, targets[k], (size_t)(dot - s)) == 0) {
      *layer = v;
      *target = k;
      *half = dot[6];
      return true;
    }
  }
  return false;
}

static fg_status check_item(fg_export_merge *m, const fg_st_tensor *a, uint64_t layer, int target) {
  const char *path = m->path;
  char other[160], base[96];
  snprintf(other, sizeof other, "%.*s.lora_b", (int)(a->name_len - 7), a->name);
  const fg_st_tensor *b = fg_st_find(m->st, other);
  if (!b) return fg_fail(FG_ERR_NOT_FOUND, "%s: adapter '%s' has no '%s'", path, a->name, other);
  const fg_st_tensor *half[2] = {a, b};
  for (int h = 0; h < 2; h++) {
    if (half[h]->dtype != FG_F32)
      return fg_fail(FG_ERR_TYPE, "%s: adapter tensor '%s' is %s, expected f32", path, half[h]->name,
                     fg_dtype_name(half[h]->dtype));
    if (half[h]->ndim != 2)
      return fg_fail(FG_ERR_BAD_SHAPE, "%s: adapter tensor '%s' has %d dims, expected 2", path, half[h]->name,
                     half[h]->ndim);
  }
  snprintf(base, sizeof base, "blk.%" PRIu64 ".%s.weight", layer, bases[target]);
  const fg_ckpt_tensor *w = fg_ckpt_find(m->src, base);
  if (!w)
    return fg_fail(FG_ERR_NOT_FOUND, "%s: adapter '%s' merges into '%s', which %s does not have", path, a->name, base,
                   fg_ckpt_path(m->src));
  if (fg_dtype_info(w->dtype)->is_quant)
    return fg_fail(FG_ERR_QUANTIZED_BASE,
                   "%s: cannot merge '%s' into '%s': the base is %s, a quantized base (dequantize, merge and quantize "
                   "again compounds the error); merge into an f32/f16/bf16 model, then quantize the result with "
                   "--dtype in a second run",
                   fg_ckpt_path(m->src), a->name, base, fg_dtype_name(w->dtype));
  if (w->dtype != FG_F32 && w->dtype != FG_F16 && w->dtype != FG_BF16)
    return fg_fail(FG_ERR_TYPE, "%s: base '%s' is %s, expected f32, f16 or bf16", fg_ckpt_path(m->src), base,
                   fg_dtype_name(w->dtype));
  if (w->ndim != 2)
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: base '%s' has %d dims, expected a matrix", fg_ckpt_path(m->src), base,
                   w->ndim);
  const uint64_t out = w->shape[0], in = w->shape[1], r = a->shape[0];
  if (r == 0 || r > UINT32_MAX || a->shape[1] != in || b->shape[0] != out || b->shape[1] != r)
    return fg_fail(FG_ERR_BAD_SHAPE,
                   "%s: adapter '%s' [%" PRIu64 ", %" PRIu64 "] and '%s' [%" PRIu64 ", %" PRIu64
                   "] do not fit base '%s' [out %" PRIu64 ", in %" PRIu64 "] (expected A [r, in], B [out, r])",
                   path, a->name, a->shape[0], a->shape[1], b->name, b->shape[0], b->shape[1], base, out, in);
  const size_t idx = (size_t)(w - fg_ckpt_tensor_at(m->src, 0));
  merge_item *it = &m->items[m->nitems++];
  it->base = idx;
  it->a = a;
  it->b = b;
  it->rank = (uint32_t)r;
  it->scale = m->opt.alpha / (float)r; /* Fucina's scale: f32(alpha) / f32(rank) */
  m->item_of[idx] = (long)(it - m->items);
  return FG_OK;
}

/* Weights mode: tensor t replaces the model's tensor of the same name. */
static fg_status check_weight(fg_export_merge *m, const fg_st_tensor *t) {
  const char *path = m->path, *model = fg_ckpt_path(m->src);
  uint64_t layer;
  int target;
  char half;
  if (parse_name(t, &layer, &target, &half))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: '%s' is a LoRA adapter tensor; adapters merge with --adapters and --alpha",
                   path, t->name);
  const fg_ckpt_tensor *w = fg_ckpt_find(m->src, t->name);
  if (!w) return fg_fail(FG_ERR_NOT_FOUND, "%s: weight '%s' is not a tensor of %s", path, t->name, model);
  if (t->dtype != FG_F32 && t->dtype != FG_F16 && t->dtype != FG_BF16)
    return fg_fail(FG_ERR_TYPE, "%s: weight '%s' is %s, expected f32, f16 or bf16", path, t->name,
                   fg_dtype_name(t->dtype));
  if (fg_dtype_info(w->dtype)->is_quant)
    return fg_fail(FG_ERR_QUANTIZED_BASE, "%s: '%s' is %s there; trained weights replace f32, f16 or bf16 tensors "
                   "(export the trained model, then quantize it in a second run)", model, t->name,
                   fg_dtype_name(w->dtype));
  if (w->dtype != FG_F32 && w->dtype != FG_F16 && w->dtype != FG_BF16)
    return fg_fail(FG_ERR_TYPE, "%s: '%s' is %s, expected f32, f16 or bf16", model, t->name, fg_dtype_name(w->dtype));
  bool same = (int)t->ndim == (int)w->ndim;
  for (int d = 0; same && d < w->ndim; d++) same = t->shape[d] == w->shape[d];
  if (!same) {
    char a[96] = "", b[96] = "";
    for (int d = 0, o = 0; d < (int)t->ndim && o < 80; d++)
      o += snprintf(a + o, sizeof a - (size_t)o, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
    for (int d = 0, o = 0; d < w->ndim && o < 80; d++)
      o += snprintf(b + o, sizeof b - (size_t)o, "%s%" PRIu64, d ? ", " : "", w->shape[d]);
    return fg_fail(FG_ERR_BAD_SHAPE, "%s: weight '%s' has shape [%s], the model's [%s]", path, t->name, a, b);
  }
  const size_t idx = (size_t)(w - fg_ckpt_tensor_at(m->src, 0));
  merge_item *it = &m->items[m->nitems++];
  *it = (merge_item){.base = idx, .a = t};
  m->item_of[idx] = (long)(it - m->items);
  return FG_OK;
}

static fg_status scan(fg_export_merge *m) {
  const size_t n = fg_st_count(m->st);
  if (m->opt.weights) {
    for (size_t i = 0; i < n; i++) {
      fg_status st = check_weight(m, fg_st_tensor_at(m->st, i));
      if (st) return st;
    }
    if (m->nitems == 0) return fg_fail(FG_ERR_NOT_FOUND, "%s: no weights to put in place (an empty file)", m->path);
    return FG_OK;
  }
  for (size_t i = 0; i < n; i++) {
    const fg_st_tensor *t = fg_st_tensor_at(m->st, i);
    uint64_t layer;
    int target;
    char half;
    if (!parse_name(t, &layer, &target, &half))
      return fg_fail(FG_ERR_INVALID_ARG,
                     "%s: unknown adapter tensor '%s' (expected layers.<i>.<q|k|v|o|gate|up|down>.lora_<a|b>)", m->path,
                     t->name);
    if (half == 'b') {
      char other[160];
      snprintf(other, sizeof other, "%.*s.lora_a", (int)(t->name_len - 7), t->name);
      if (!fg_st_find(m->st, other))
        return fg_fail(FG_ERR_NOT_FOUND, "%s: adapter '%s' has no '%s'", m->path, t->name, other);
      continue;
    }
    fg_status st = check_item(m, t, layer, target);
    if (st) return st;
  }
  if (m->nitems == 0) return fg_fail(FG_ERR_NOT_FOUND, "%s: no adapters to merge (an empty adapter set)", m->path);
  return FG_OK;
}

fg_status fg_export_merge_create(const fg_ckpt *src, const fg_export_merge_options *o, fg_export_merge **out) {
  if (!src || !o || !o->adapters || !out) return fg_fail(FG_ERR_INVALID_ARG, "fg_export_merge_create: NULL argument");
  *out = NULL;
  if (!fg_ckpt_gguf(src))
    return fg_fail(FG_ERR_UNSUPPORTED, "%s: adapters merge into a GGUF model; this is %s", fg_ckpt_path(src),
                   fg_ckpt_format_name(fg_ckpt_format_of(src)));
  if (!o->weights && !isfinite(o->alpha)) return fg_fail(FG_ERR_NONFINITE, "export merge: alpha %g is not finite", (double)o->alpha);
  fg_export_merge *m = calloc(1, sizeof *m);
  if (!m) return fg_fail(FG_ERR_NOMEM, "export merge: out of memory");
  m->src = src;
  m->opt = *o;
  m->opt.adapters = NULL; /* not kept: the caller's string */
  if (!m->opt.chunk_bytes) m->opt.chunk_bytes = (uint64_t)64 << 20;
  const size_t nt = fg_ckpt_count(src);
  fg_export_options vo = {0};
  fg_status st = resolve_path(o->adapters, o->weights, &m->path);
  if (!st) st = fg_st_open(m->path, FG_MAP_MMAP, &m->st);
  if (!st) {
    const size_t na = fg_st_count(m->st);
    m->items = calloc(na ? na : 1, sizeof *m->items);
    m->item_of = malloc((nt ? nt : 1) * sizeof *m->item_of);
    m->t = malloc((nt ? nt : 1) * sizeof *m->t);
    if (!m->items || !m->item_of || !m->t) st = fg_fail(FG_ERR_NOMEM, "export merge: out of memory");
    for (size_t i = 0; !st && i < nt; i++) m->item_of[i] = -1;
  }
  if (!st) st = fg_export_plan_create(src, &vo, &m->plan);
  if (!st) st = scan(m);
  if (st) {
    fg_export_merge_free(m);
    return st;
  }
  for (size_t i = 0; i < nt; i++) {
    m->t[i] = *fg_export_plan_tensor(m->plan, i);
    if (m->item_of[i] >= 0) {
      m->t[i].action = FG_EXPORT_ACTION_CONVERT;
      m->t[i].why = FG_EXPORT_WHY_TARGET;
    }
  }
  *out = m;
  return FG_OK;
}
