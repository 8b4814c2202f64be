/* Checkpoint tensors as fg_tensor: zero-copy views on the CPU, converted copies anywhere. */
#include <stdlib.h>
#include <string.h>

#include "forgia/mapping.h"
#include "forgia/tensor_ckpt.h"

static fg_status fg_ckpt_shape_fits(const fg_ckpt_tensor *t) {
  if (t->ndim > FG_TENSOR_MAX_DIMS)
    return fg_fail(FG_ERR_BAD_SHAPE, "tensor '%s': %d dimensions, fg_tensor holds at most %d", t->name, t->ndim,
                   FG_TENSOR_MAX_DIMS);
  return FG_OK;
}

static void fg_release_mapping(void *m) { fg_mapping_release(m); }

fg_status fg_tensor_view_ckpt(fg_device *dev, const fg_ckpt *c, const fg_ckpt_tensor *t, fg_tensor **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_tensor_view_ckpt: NULL out");
  *out = NULL;
  if (!dev || !c || !t) return fg_fail(FG_ERR_INVALID_ARG, "fg_tensor_view_ckpt: NULL argument");
  if (fg_device_kind_of(dev) != FG_DEVICE_CPU)
    return fg_fail(FG_ERR_UNSUPPORTED, "tensor '%s': a view of a file mapping lives on the CPU, not %s "
                   "(fg_tensor_load_ckpt copies it there)", t->name, fg_device_spec(dev));
  fg_status s = fg_ckpt_shape_fits(t);
  if (s) return s;
  fg_tensor *v;
  s = fg_tensor_wrap(dev, t->name, t->dtype, t->ndim, t->shape, (void *)t->data, &v);
  if (s) return s;
  v->readonly = true;
  v->keep = fg_ckpt_retain_mapping(c, t->file);
  v->keep_release = fg_release_mapping;
  *out = v;
  return FG_OK;
}

fg_status fg_tensor_load_ckpt(fg_device *dev, const fg_ckpt *c, const fg_ckpt_tensor *t, fg_dtype dtype,
                              fg_tensor **out) {
  if (!out) return fg_fail(FG_ERR_INVALID_ARG, "fg_tensor_load_ckpt: NULL out");
  *out = NULL;
  if (!dev || !c || !t) return fg_fail(FG_ERR_INVALID_ARG, "fg_tensor_load_ckpt: NULL argument");
  fg_status s = fg_ckpt_shape_fits(t);
  if (s) return s;
  const fg_ckpt_file *f = fg_ckpt_file_at(c, t->file);
  if (!f) return fg_fail(FG_ERR_INVALID_ARG, "tensor '%s': file %zu is not in the checkpoint", t->name, t->file);
  fg_tensor *dst = NULL;
  s = fg_tensor_create(dev, t->name, dtype, t->ndim, t->shape, &dst);
  if (s) return s;
  /* The stored bytes go to a host buffer through the guarded copy, then to the device
   * (and through fg_convert when the dtype changes). */
  void *host = t->nbytes ? malloc(t->nbytes) : NULL;
  if (t->nbytes && !host) s = fg_fail(FG_ERR_NOMEM, "tensor '%s': cannot stage %llu bytes", t->name,
                                      (unsigned long long)t->nbytes);
  if (s == FG_OK && t->nbytes) s = fg_mapping_copy(f->map, host, t->offset, t->nbytes);
  if (s == FG_OK && t->numel) {
    if (dtype == t->dtype) {
      s = fg_tensor_upload(dst, host, t->nbytes, NULL);
    } else if (fg_device_kind_of(dev) == FG_DEVICE_CPU) {
      s = fg_convert(dev, dst->data, dtype, host, t->dtype, t->numel, NULL);
    } else {
      void *raw = NULL;
      s = fg_device_mem_alloc(dev, t->nbytes, &raw);
      if (s == FG_OK) s = fg_device_copy(dev, raw, host, t->nbytes, FG_COPY_H2D);
      if (s == FG_OK) s = fg_convert(dev, dst->data, dtype, raw, t->dtype, t->numel, NULL);
      fg_device_mem_free(dev, raw);
    }
  }
  free(host);
  if (s) {
    fg_tensor_free(dst);
    return fg_fail_prefix(s, "loading '%s' from %s: ", t->name, fg_ckpt_path(c));
  }
  *out = dst;
  return FG_OK;
}
