/* Export merge internals shared by formats/export_merge*.c. */
#ifndef FORGIA_FORMATS_EXPORT_MERGE_INTERNAL_H
#define FORGIA_FORMATS_EXPORT_MERGE_INTERNAL_H

#include "forgia/export_merge.h"
#include "forgia/safetensors.h"

typedef struct merge_item {
  size_t base;             /* index of the base in the checkpoint */
  const fg_st_tensor *a, *b;
  uint32_t rank;
  float scale;
} merge_item;

struct fg_export_merge {
  const fg_ckpt *src;
  fg_export_merge_options opt;
  char *path;              /* the adapters file */
  fg_st_file *st;
  merge_item *items;
  size_t nitems;
  long *item_of;           /* per checkpoint tensor: its item, or -1 */
  fg_export_plan *plan;    /* verbatim: names, ne and types of the output */
  fg_export_tensor *t;     /* the plan's rows, merged ones marked CONVERT */
};

#endif
