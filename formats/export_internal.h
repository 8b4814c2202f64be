/* Export internals: a source normalised to one list of tensors, whatever the container. */
#ifndef FORGIA_EXPORT_INTERNAL_H
#define FORGIA_EXPORT_INTERNAL_H

#include "forgia/export.h"
#include "forgia/gguf.h"
#include "forgia/mapping.h"
#include "forgia/safetensors.h"

typedef struct fg_export_src_tensor {
  const char *name;          /* borrowed from the container */
  fg_dtype dtype;
  uint32_t ndim;
  uint64_t ne[4];            /* GGUF order */
  uint64_t shape[4];         /* row-major */
  const uint8_t *data;       /* borrowed; NULL when nbytes is 0 */
  uint64_t nbytes;
  const fg_mapping *map;     /* mapping holding data, for paging hints */
  uint64_t map_off;          /* offset of data in map */
} fg_export_src_tensor;

struct fg_export_source {
  char *path;
  fg_gguf_file *gguf;        /* exactly one of gguf / st is set */
  fg_st_dir *st;
  size_t n;
  fg_export_src_tensor *t;
};

struct fg_export_plan {
  const fg_export_source *src;
  fg_export_options opt;
  size_t n;
  fg_export_tensor *t;       /* parallel to src->t */
};

/* Adds the safetensors source's metadata (config.json, __metadata__) to w. */
fg_status fg_export_st_metadata(const fg_export_source *s, fg_gguf_writer *w);

#endif
