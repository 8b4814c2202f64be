/* Export internals: the plan over an opened checkpoint (forgia/ckpt.h). */
#ifndef FORGIA_EXPORT_INTERNAL_H
#define FORGIA_EXPORT_INTERNAL_H

#include "forgia/ckpt.h"
#include "forgia/export.h"
#include "forgia/gguf.h"
#include "forgia/safetensors.h"

struct fg_export_plan {
  const fg_ckpt *src;
  fg_export_options opt;     /* tensor_types is not kept (borrowed for creation only) */
  size_t n;
  fg_export_tensor *t;       /* in output order; t[i].src_index is the checkpoint's index */
  bool mixture;              /* opt.dtype is a llama-quantize mixture */
};

/* FG_OK unless a source file changed (size or time) while it was read. */
fg_status fg_export_sources_unchanged(const fg_export_plan *p);
/* fg_export_run for FG_EXPORT_FORMAT_SAFETENSORS (formats/export_st_out.c). */
fg_status fg_export_run_safetensors(const fg_export_plan *p, const char *out_path, fg_export_progress_fn progress,
                                    void *user);

/* Adds the safetensors checkpoint's metadata (config.json, __metadata__) to w. */
fg_status fg_export_st_metadata(const fg_ckpt *s, fg_gguf_writer *w);

#endif
