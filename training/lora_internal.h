/* LoRA internals shared by training/lora*.c. */
#ifndef FORGIA_TRAINING_LORA_INTERNAL_H
#define FORGIA_TRAINING_LORA_INTERNAL_H

#include "forgia/lora.h"

/* Device scratch of one call, freed (after the stream drains) by fg_lora_work_end. */
#define FG_LORA_SCRATCH 6
typedef struct fg_lora_work {
  fg_device *dev;
  void *buf[FG_LORA_SCRATCH];
} fg_lora_work;

fg_status fg_lora_scratch(fg_lora_work *w, size_t slot, uint64_t count, float **out);
fg_status fg_lora_work_end(fg_lora_work *w, fg_stream *s, fg_status st);

/* w on the adapter's device with shape [out, in]; what names the calling operation. */
fg_status fg_lora_check_base(const fg_lora *l, const fg_tensor *w, const char *what);

/* out = base + scale * t over n elements (FG_OP_LORA_ADD; out may alias base). */
fg_status fg_lora_add_op(fg_device *dev, float scale, void *out, fg_dtype out_dt, const void *base, fg_dtype base_dt,
                         const float *t, uint64_t n, fg_stream *s);

#endif
