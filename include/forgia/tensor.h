/* Tensors: a named, typed, row-major block of memory on one device.
 *
 *   fg_tensor *w;
 *   uint64_t shape[2] = {1024, 4096};
 *   fg_tensor_create(dev, "blk.0.ffn_up.weight", FG_F32, 2, shape, &w);   // zero-filled
 *   fg_tensor_upload(w, host_values, w->nbytes, NULL);
 *   fg_tensor_grad_alloc(w);                                               // f32, zero-filled
 *   ...
 *   fg_tensor_free(w);
 *
 * The struct is transparent so that kernels and optimizers read its fields directly; change
 * it only through these functions. Ownership is stated per pointer below. A tensor is used
 * by one thread at a time; the data it points to follows the device's rules (device.h).
 * A view of a mapped checkpoint tensor (fg_tensor_view_ckpt, forgia/tensor_ckpt.h) is
 * read-only: fg_tensor_upload refuses it, and so must anything that updates a tensor in place
 * (optimizers check readonly when a parameter is registered). */
#ifndef FORGIA_TENSOR_H
#define FORGIA_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FG_TENSOR_MAX_DIMS 8

typedef struct fg_tensor {
  char *name;                         /* owned copy, NUL-terminated ("" when unnamed) */
  fg_dtype dtype;
  int ndim;                           /* 0 (a scalar) .. FG_TENSOR_MAX_DIMS */
  uint64_t shape[FG_TENSOR_MAX_DIMS]; /* row-major, outermost first; entries past ndim are 0 */
  uint64_t numel;                     /* product of shape (1 for a scalar) */
  uint64_t nbytes;                    /* bytes of data (block types: whole blocks) */
  fg_device *dev;                     /* borrowed: the device outlives its tensors */
  void *data;                         /* memory on dev: owned iff owns_data */
  float *grad;                        /* f32 gradient, numel values on dev, owned; NULL until
                                         fg_tensor_grad_alloc */
  bool owns_data;
  bool readonly;                      /* borrowed from read-only memory (a file mapping) */
  /* What keeps borrowed data alive (a retained file mapping), released by fg_tensor_free. */
  void *keep;
  void (*keep_release)(void *keep);
} fg_tensor;

/* A new zero-filled tensor on dev. Block dtypes (ggml quant types) need the last dimension
 * to be a whole number of blocks. name may be NULL. */
FG_API fg_status fg_tensor_create(fg_device *dev, const char *name, fg_dtype dtype, int ndim, const uint64_t *shape,
                                  fg_tensor **out);
/* A tensor over memory the caller owns on dev (borrowed: it must outlive the tensor). */
FG_API fg_status fg_tensor_wrap(fg_device *dev, const char *name, fg_dtype dtype, int ndim, const uint64_t *shape,
                                void *data, fg_tensor **out);
/* NULL-safe. Frees owned data and the gradient and releases what keeps a view alive. */
FG_API void fg_tensor_free(fg_tensor *t);

/* Host <-> device copies of the whole tensor: bytes must equal t->nbytes. s NULL: synchronous;
 * else queued on s (host memory must then stay valid until s completes; pinned memory
 * makes it asynchronous). */
FG_API fg_status fg_tensor_upload(fg_tensor *t, const void *host, size_t bytes, fg_stream *s);
FG_API fg_status fg_tensor_download(const fg_tensor *t, void *host, size_t bytes, fg_stream *s);

/* Allocates the f32 gradient (zero-filled) if absent; fg_tensor_grad_zero clears it. */
FG_API fg_status fg_tensor_grad_alloc(fg_tensor *t);
FG_API fg_status fg_tensor_grad_zero(fg_tensor *t, fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
