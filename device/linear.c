/* The linear layer's fronts (forgia/linear.h), fg_linear and its input gradient: one
 * validation for every backend, the mode a call resolves to, then the linear or linear_bwd
 * kernel family (device/family_table.h). */
#include <stdint.h>

#include "device/backend.h"
#include "device/overlap.h"
#include "forgia/elem/linear.h"
#include "forgia/linear.h"

/* f32, f16, bf16, or a block type elem/quant_decode.h decodes: asking the decoder (on a zero
 * block) keeps that header the only list of decodable types. */
static bool fg_linear_decodable(fg_dtype t) {
  const fg_dtype_traits *tr = fg_dtype_info(t);
  if (!tr) return false;
  if (t == FG_F32 || t == FG_F16 || t == FG_BF16) return true;
  if (!tr->is_quant || tr->block_elems > FG_LINEAR_MAX_BLOCK || tr->block_bytes > 512) return false;
  uint8_t zero[512] = {0};
  float y[FG_LINEAR_MAX_BLOCK];
  return fg_dequant_block(t, zero, y);
}

/* The mode a call runs in (DEFAULT resolved through the device), or an error. */
static fg_status fg_linear_mode(fg_device *dev, fg_gemm_mode *mode, const char *what) {
  if (!dev) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL device", what);
  if (*mode != FG_GEMM_DEFAULT && *mode != FG_GEMM_FAST && *mode != FG_GEMM_EXACT && *mode != FG_GEMM_FAST_TF32)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: unknown mode %d", what, (int)*mode);
  if (*mode == FG_GEMM_DEFAULT) {
    *mode = (fg_gemm_mode)__atomic_load_n(&dev->gemm_mode, __ATOMIC_RELAXED);
    if (*mode == FG_GEMM_DEFAULT) *mode = FG_GEMM_FAST;
  }
  return FG_OK;
}

/* The checks both directions share: the mode, W's dtype and row length, sizes that fit the
 * address space, the stream's device. *tr and *row_bytes describe W's rows. */
static fg_status fg_linear_geometry(fg_device *dev, fg_gemm_mode *mode, fg_dtype w_type, size_t n_tok, size_t n_in,
                                    size_t n_out, const fg_stream *s, const char *what, const fg_dtype_traits **tr,
                                    size_t *row_bytes) {
  fg_status st = fg_linear_mode(dev, mode, what);
  if (st) return st;
  if (!fg_linear_decodable(w_type))
    return fg_fail(FG_ERR_TYPE, "%s: w has dtype %s, expected f32, f16, bf16 or a ggml block type with a decoder", what,
                   fg_dtype_valid((int)w_type) ? fg_dtype_name(w_type) : "(invalid)");
  *tr = fg_dtype_info(w_type);
  if (n_in % (*tr)->block_elems)
    return fg_fail(FG_ERR_BAD_ROW, "%s: n_in %zu is not a whole number of %u-element %s blocks", what, n_in,
                   (*tr)->block_elems, (*tr)->name);
  *row_bytes = n_in / (*tr)->block_elems * (*tr)->block_bytes;
  if ((n_in && n_tok > SIZE_MAX / 4 / n_in) || (n_out && n_tok > SIZE_MAX / 4 / n_out) ||
      (*row_bytes && n_out > SIZE_MAX / *row_bytes) || n_in > SIZE_MAX / 4)
    return fg_fail(FG_ERR_OVERFLOW, "%s: %zu tokens x %zu inputs x %zu outputs overflow the address space", what, n_tok,
                   n_in, n_out);
  if (s && s->dev != dev)
    return fg_fail(FG_ERR_INVALID_ARG, "%s: the stream belongs to %s, not %s", what, s->dev->spec, dev->spec);
  return FG_OK;
}

fg_status fg_linear(fg_device *dev, fg_gemm_mode mode, const float *x, size_t n_tok, size_t n_in, const void *w,
                    fg_dtype w_type, size_t n_out, float *y, bool accumulate, fg_stream *s) {
  const char *what = "fg_linear";
  const fg_dtype_traits *tr = NULL;
  size_t row_bytes = 0;
  fg_status st = fg_linear_geometry(dev, &mode, w_type, n_tok, n_in, n_out, s, what, &tr, &row_bytes);
  if (st) return st;
  if (n_tok == 0 || n_out == 0) return FG_OK;
  if (!x || !w || !y) return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !x ? "x" : !w ? "w" : "y");
  const size_t yb = n_tok * n_out * 4;
  if (fg_bytes_overlap(y, yb, x, n_tok * n_in * 4)) return fg_fail(FG_ERR_INVALID_ARG, "%s: y overlaps x", what);
  if (fg_bytes_overlap(y, yb, w, n_out * row_bytes)) return fg_fail(FG_ERR_INVALID_ARG, "%s: y overlaps w", what);
  const fg_linear_call c = {.mode = (int)mode, .x = x, .n_tok = n_tok, .n_in = n_in, .n_out = n_out, .w = w,
                            .w_type = w_type, .block_elems = tr->block_elems, .block_bytes = tr->block_bytes,
                            .row_bytes = row_bytes, .y = y, .accumulate = accumulate};
  return fg_family_linear(dev, &c, s, what);
}

fg_status fg_linear_backward_x(fg_device *dev, fg_gemm_mode mode, const float *dy, size_t n_tok, size_t n_out,
                               const void *w, fg_dtype w_type, size_t n_in, float *dx, bool accumulate,
                               fg_stream *s) {
  const char *what = "fg_linear_backward_x";
  const fg_dtype_traits *tr = NULL;
  size_t row_bytes = 0;
  fg_status st = fg_linear_geometry(dev, &mode, w_type, n_tok, n_in, n_out, s, what, &tr, &row_bytes);
  if (st) return st;
  /* dx is the output here: empty when n_tok or n_in is 0; n_out == 0 sums nothing (+0). */
  if (n_tok == 0 || n_in == 0) return FG_OK;
  if (!dx || (n_out && (!dy || !w)))
    return fg_fail(FG_ERR_INVALID_ARG, "%s: NULL %s", what, !dx ? "dx" : !dy ? "dy" : "w");
  const size_t xb = n_tok * n_in * 4;
  if (fg_bytes_overlap(dx, xb, dy, n_tok * n_out * 4)) return fg_fail(FG_ERR_INVALID_ARG, "%s: dx overlaps dy", what);
  if (fg_bytes_overlap(dx, xb, w, n_out * row_bytes)) return fg_fail(FG_ERR_INVALID_ARG, "%s: dx overlaps w", what);
  const fg_linear_bwd_call c = {.mode = (int)mode, .dy = dy, .n_tok = n_tok, .n_out = n_out, .n_in = n_in, .w = w,
                                .w_type = w_type, .block_elems = tr->block_elems, .block_bytes = tr->block_bytes,
                                .row_bytes = row_bytes, .dx = dx, .accumulate = accumulate};
  return fg_family_linear_bwd(dev, &c, s, what);
}
