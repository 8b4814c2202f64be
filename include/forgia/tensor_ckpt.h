/* Tensors from an opened checkpoint (include/forgia/ckpt.h).
 *
 *   const fg_ckpt_tensor *ct = fg_ckpt_find(ck, "output_norm.weight");
 *   fg_tensor *w;
 *   fg_tensor_load_ckpt(gpu, ck, ct, FG_F32, &w);     // copy onto any device, converted
 *   fg_tensor *v;
 *   fg_tensor_view_ckpt(cpu, ck, ct, &v);             // zero copy, read-only, CPU only
 *
 * Both outlive the checkpoint: a view keeps its file's mapping alive until fg_tensor_free. */
#ifndef FORGIA_TENSOR_CKPT_H
#define FORGIA_TENSOR_CKPT_H

#include "forgia/api.h"
#include "forgia/ckpt.h"
#include "forgia/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A read-only tensor over the mapped bytes of t, in t's dtype and shape. dev must be a CPU
 * device (GPU memory cannot alias a file mapping: use fg_tensor_load_ckpt). Reading a view
 * of a file that another program truncates raises SIGBUS, as any mapped read does. */
FG_API fg_status fg_tensor_view_ckpt(fg_device *dev, const fg_ckpt *c, const fg_ckpt_tensor *t, fg_tensor **out);

/* A new tensor on dev holding t in dtype: t's own dtype (a copy), or f32 from f16, bf16 or
 * any block type elem/ decodes, or f16/bf16 from f32 (fg_convert's pairs). The bytes are
 * read through the mapping's guarded copy, so a truncated file is an FG_ERR_IO, not a crash. */
FG_API fg_status fg_tensor_load_ckpt(fg_device *dev, const fg_ckpt *c, const fg_ckpt_tensor *t, fg_dtype dtype,
                                     fg_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
