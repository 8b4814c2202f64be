/* Export PTQTP internals: the plan (forgia/export_ptqtp.h). */
#ifndef FORGIA_EXPORT_PTQTP_INTERNAL_H
#define FORGIA_EXPORT_PTQTP_INTERNAL_H

#include "forgia/export_ptqtp.h"

struct fg_export_ptqtp_plan {
  const fg_ckpt *src;
  fg_export_ptqtp_options opt;
  size_t n;
  fg_export_ptqtp_tensor *t;   /* parallel to the checkpoint's tensors */
  fg_export_ptqtp_totals totals;
};

/* Bytes of the source read piece (whole rows, at least one) copied out of the mapping. */
#define FG_PTQTP_READ_PIECE ((uint64_t)8 << 20)

#endif
