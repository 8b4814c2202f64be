/* Folding an adapter into its base: B A through the GEMM, then the op layer's LoRA add,
 * which widens the base, adds scale * (B A) and rounds once to the stored dtype. */
#include <string.h>

#include "forgia/dtype.h"
#include "forgia/lora.h"
#include "training/lora_internal.h"

static fg_status check_merge(const fg_lora *l, const fg_tensor *w, const char *what) {
  if (!l || !w) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_%s: NULL argument", what);
  if (fg_dtype_info(w->dtype)->is_quant)
    return fg_fail(FG_ERR_QUANTIZED_BASE,
                   "lora %s: base '%s' is %s, a quantized base: merge into an f32/f16/bf16 base, then quantize the "
                   "result",
                   what, w->name, fg_dtype_name(w->dtype));
  if (w->dtype != FG_F32 && w->dtype != FG_F16 && w->dtype != FG_BF16)
    return fg_fail(FG_ERR_TYPE, "lora %s: base '%s' is %s, expected f32, f16 or bf16", what, w->name,
                   fg_dtype_name(w->dtype));
  return fg_lora_check_base(l, w, what);
}

/* out = base + scale * (B A), out of out's dtype. */
static fg_status merge(const fg_lora *l, const fg_tensor *w, void *out, fg_stream *s) {
  fg_lora_work wk = {.dev = l->dev};
  float *ba = NULL;
  fg_status st = fg_lora_scratch(&wk, 0, w->numel, &ba);
  if (!st)
    st = fg_gemm(l->dev, l->gemm, false, false, l->out, l->in, l->rank, 1.0f, l->b->data, FG_F32, l->rank,
                 l->a->data, FG_F32, l->in, 0.0f, ba, l->in, s);
  if (!st) st = fg_lora_add_op(l->dev, l->scale, out, w->dtype, w->data, w->dtype, ba, w->numel, s);
  return fg_lora_work_end(&wk, s, st);
}

fg_status fg_lora_merge_into(const fg_lora *l, fg_tensor *w, fg_stream *s) {
  fg_status st = check_merge(l, w, "merge_into");
  if (st) return st;
  if (w->dtype != FG_F32)
    return fg_fail(FG_ERR_TYPE, "lora merge_into: base '%s' is %s; an in-place merge needs f32 (fg_lora_merge_copy "
                   "returns a new 16-bit tensor)", w->name, fg_dtype_name(w->dtype));
  if (w->readonly)
    return fg_fail(FG_ERR_STATE, "lora merge_into: base '%s' is a read-only view (a file mapping)", w->name);
  return merge(l, w, w->data, s);
}

fg_status fg_lora_merge_copy(const fg_lora *l, const fg_tensor *w, const char *name, fg_tensor **out, fg_stream *s) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_lora_merge_copy: NULL argument");
  *out = NULL;
  fg_status st = check_merge(l, w, "merge_new");
  if (st) return st;
  fg_tensor *t = NULL;
  if ((st = fg_tensor_create(l->dev, name ? name : w->name, w->dtype, 2, w->shape, &t))) return st;
  if ((st = merge(l, w, t->data, s))) {
    fg_tensor_free(t);
    return st;
  }
  *out = t;
  return FG_OK;
}
