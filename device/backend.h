/* The table of function pointers each backend (cpu/, cuda/) fills in. Internal. */
#ifndef FORGIA_DEVICE_BACKEND_H
#define FORGIA_DEVICE_BACKEND_H

#include "forgia/device.h"
#include "forgia/elem/reduce.h"

typedef struct fg_backend {
  const char *name;
  fg_status (*query)(fg_device *dev, fg_device_info *out);
  fg_status (*alloc)(fg_device *dev, size_t bytes, void **out);
  void (*free)(fg_device *dev, void *ptr);
  fg_status (*memset)(fg_device *dev, void *ptr, int value, size_t bytes);
  fg_status (*copy)(fg_device *dev, void *dst, const void *src, size_t bytes, fg_copy_kind kind, void *stream);
  fg_status (*sync)(fg_device *dev);
  /* Page-lock / unlock host memory from host/hostmem.c (NULL: nothing to do). */
  fg_status (*host_register)(fg_device *dev, void *ptr, size_t bytes);
  void (*host_unregister)(fg_device *dev, void *ptr);
  void (*close)(fg_device *dev); /* release backend state (NULL: none) */
  fg_status (*stream_create)(fg_device *dev, void **out);
  void (*stream_destroy)(fg_device *dev, void *stream);
  fg_status (*stream_sync)(fg_device *dev, void *stream);
  fg_status (*event_create)(fg_device *dev, void **out);
  void (*event_destroy)(fg_device *dev, void *event);
  fg_status (*event_record)(fg_device *dev, void *event, void *stream);
  fg_status (*event_sync)(fg_device *dev, void *event);
  fg_status (*event_query)(fg_device *dev, void *event, bool *done);
  fg_status (*stream_wait)(fg_device *dev, void *stream, void *event);
  fg_status (*event_elapsed)(fg_device *dev, void *start, void *end, float *ms);
  /* Work: n elements; stream may be NULL (default stream, synchronous on return). */
  fg_status (*convert)(fg_device *dev, void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n, void *stream);
  /* Per-chunk partials of elem/reduce.h into host memory out[nchunks]. */
  fg_status (*reduce_chunks)(fg_device *dev, const float *x, size_t n, fg_sum2 *out);
} fg_backend;

struct fg_device {
  const fg_backend *be;
  fg_device_kind kind;
  int index;
  char spec[16];
  void *impl; /* backend state */
};

struct fg_stream {
  fg_device *dev;
  void *impl;
};

struct fg_event {
  fg_device *dev;
  void *impl;
  float cpu_ms; /* CPU backend: wall time at record */
};

extern const fg_backend fg_cpu_backend;
#ifdef FORGIA_HAVE_CUDA
extern const fg_backend fg_cuda_backend;
int fg_cuda_count(void);
fg_status fg_cuda_init_device(fg_device *dev);
#endif

#endif
