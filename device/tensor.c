/* fg_tensor: shape checks, ownership and host <-> device copies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"
#include "forgia/ops.h"
#include "forgia/tensor.h"

static fg_status fg_tensor_new(fg_device *dev, const char *name, fg_dtype dtype, int ndim, const uint64_t *shape,
                               fg_tensor **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "tensor: NULL out");
  *out = NULL;
  const char *nm = name ? name : "";
  if (!dev || (ndim > 0 && !shape)) return fg_fail(FG_ERR_INVALID_ARG, "tensor '%s': NULL device or shape", nm);
  if (ndim < 0 || ndim > FG_TENSOR_MAX_DIMS)
    return fg_fail(FG_ERR_BAD_SHAPE, "tensor '%s': %d dimensions, expected 0..%d", nm, ndim, FG_TENSOR_MAX_DIMS);
  const fg_dtype_traits *tr = fg_dtype_info(dtype);
  if (!tr) return fg_fail(FG_ERR_BAD_DTYPE, "tensor '%s': unknown dtype %d", nm, (int)dtype);
  uint64_t numel = 1, nbytes;
  fg_status s = fg_shape_numel(shape, ndim, &numel);
  if (s) return fg_fail_prefix(s, "tensor '%s': ", nm);
  if (tr->block_elems > 1 && (ndim == 0 || shape[ndim - 1] % tr->block_elems))
    return fg_fail(FG_ERR_BAD_SHAPE, "tensor '%s': the last dimension (%llu) is not a whole number of %u-element %s blocks",
                   nm, ndim ? (unsigned long long)shape[ndim - 1] : 1ull, tr->block_elems, tr->name);
  s = fg_dtype_nbytes(dtype, numel, &nbytes);
  if (s) return fg_fail_prefix(s, "tensor '%s': ", nm);
  if (nbytes > SIZE_MAX) return fg_fail(FG_ERR_OVERFLOW, "tensor '%s': %llu bytes do not fit in memory", nm, (unsigned long long)nbytes);
  fg_tensor *t = calloc(1, sizeof *t);
  char *copy = strdup(nm);
  if (!t || !copy) {
    free(t);
    free(copy);
    return fg_fail(FG_ERR_NOMEM, "tensor '%s': out of memory", nm);
  }
  t->name = copy;
  t->dtype = dtype;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
  t->numel = numel;
  t->nbytes = nbytes;
  t->dev = dev;
  *out = t;
  return FG_OK;
}

fg_status fg_tensor_create(fg_device *dev, const char *name, fg_dtype dtype, int ndim, const uint64_t *shape,
                           fg_tensor **out) {
  fg_tensor *t;
  fg_status s = fg_tensor_new(dev, name, dtype, ndim, shape, &t);
  if (s) return s;
  if (t->nbytes) {
    s = fg_device_mem_alloc(dev, t->nbytes, &t->data);
    if (s == FG_OK) s = fg_device_memset(dev, t->data, 0, t->nbytes);
    if (s) {
      *out = NULL;
      fg_device_mem_free(dev, t->data);
      free(t->name);
      free(t);
      return fg_fail_prefix(s, "tensor '%s': ", name ? name : "");
    }
  }
  t->owns_data = true;
  *out = t;
  return FG_OK;
}

fg_status fg_tensor_wrap(fg_device *dev, const char *name, fg_dtype dtype, int ndim, const uint64_t *shape, void *data,
                         fg_tensor **out) {
  fg_tensor *t;
  fg_status s = fg_tensor_new(dev, name, dtype, ndim, shape, &t);
  if (s) return s;
  if (t->nbytes && !data) {
    const unsigned long long nb = t->nbytes;
    *out = NULL;
    free(t->name);
    free(t);
    return fg_fail(FG_ERR_INVALID_ARG, "tensor '%s': NULL data for %llu bytes", name ? name : "", nb);
  }
  t->data = data;
  *out = t;
  return FG_OK;
}

void fg_tensor_free(fg_tensor *t) {
  if (!t) return;
  if (t->owns_data) fg_device_mem_free(t->dev, t->data);
  fg_device_mem_free(t->dev, t->grad);
  if (t->keep_release) t->keep_release(t->keep);
  free(t->name);
  free(t);
}

static fg_status fg_tensor_check_copy(const fg_tensor *t, const void *host, size_t bytes, fg_stream *s,
                                      const char *what) {
  if (!t || (bytes && !host)) return fg_fail(FG_ERR_INVALID_ARG, "fg_tensor_%s: NULL argument", what);
  if (bytes != t->nbytes)
    return fg_fail(FG_ERR_INVALID_ARG, "tensor '%s': %s of %zu bytes, the tensor holds %llu", t->name, what, bytes,
                   (unsigned long long)t->nbytes);
  if (s && s->dev != t->dev)
    return fg_fail(FG_ERR_INVALID_ARG, "tensor '%s': the stream belongs to %s, the tensor to %s", t->name,
                   s->dev->spec, t->dev->spec);
  return FG_OK;
}

fg_status fg_tensor_upload(fg_tensor *t, const void *host, size_t bytes, fg_stream *s) {
  fg_status st = fg_tensor_check_copy(t, host, bytes, s, "upload");
  if (st || !bytes) return st;
  if (t->readonly) return fg_fail(FG_ERR_STATE, "tensor '%s': read-only (a view of a file mapping)", t->name);
  return s ? fg_device_copy_async(t->dev, t->data, host, bytes, FG_COPY_H2D, s)
           : fg_device_copy(t->dev, t->data, host, bytes, FG_COPY_H2D);
}

fg_status fg_tensor_download(const fg_tensor *t, void *host, size_t bytes, fg_stream *s) {
  fg_status st = fg_tensor_check_copy(t, host, bytes, s, "download");
  if (st || !bytes) return st;
  return s ? fg_device_copy_async(t->dev, host, t->data, bytes, FG_COPY_D2H, s)
           : fg_device_copy(t->dev, host, t->data, bytes, FG_COPY_D2H);
}

fg_status fg_tensor_grad_alloc(fg_tensor *t) {
  if (!t) return fg_fail(FG_ERR_INVALID_ARG, "fg_tensor_grad_alloc: NULL tensor");
  if (t->grad) return FG_OK;
  if (t->numel > SIZE_MAX / sizeof(float))
    return fg_fail(FG_ERR_OVERFLOW, "tensor '%s': a gradient of %llu values does not fit in memory", t->name,
                   (unsigned long long)t->numel);
  const size_t bytes = (size_t)t->numel * sizeof(float);
  void *g = NULL;
  fg_status s = fg_device_mem_alloc(t->dev, bytes, &g);
  if (s == FG_OK) s = fg_device_memset(t->dev, g, 0, bytes);
  if (s) {
    fg_device_mem_free(t->dev, g);
    return fg_fail_prefix(s, "tensor '%s' gradient: ", t->name);
  }
  t->grad = g;
  return FG_OK;
}

fg_status fg_tensor_grad_zero(fg_tensor *t, fg_stream *s) {
  if (!t) return fg_fail(FG_ERR_INVALID_ARG, "fg_tensor_grad_zero: NULL tensor");
  if (!t->grad) return fg_fail(FG_ERR_STATE, "tensor '%s': no gradient (fg_tensor_grad_alloc first)", t->name);
  if (!t->numel) return FG_OK;
  fg_op_params p = {{0.0f}, {0.0}, {0}, NULL, NULL};
  fg_op_args a = {{t->grad, NULL, NULL, NULL}, {FG_F32, FG_F32, FG_F32, FG_F32}, (size_t)t->numel, 0, 0};
  return fg_op_run(t->dev, FG_OP_FILL, &p, &a, 1, s);
}
