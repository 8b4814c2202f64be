/* The table of function pointers each backend (cpu/, cuda/) fills in: memory, streams,
 * events, copies and conversions, and the backend's kernel families (device/family_table.h).
 * It knows nothing of what the kernels compute. Internal. */
#ifndef FORGIA_DEVICE_BACKEND_H
#define FORGIA_DEVICE_BACKEND_H

#include <pthread.h>

#include "device/family_table.h"
#include "forgia/device.h"

typedef struct fg_backend {
  const char *name;
  fg_status (*query)(fg_device *dev, fg_device_info *out);
  fg_status (*alloc)(fg_device *dev, size_t bytes, void **out);
  void (*free)(fg_device *dev, void *ptr);
  fg_status (*memset)(fg_device *dev, void *ptr, int value, size_t bytes);
  fg_status (*copy)(fg_device *dev, void *dst, const void *src, size_t bytes, fg_copy_kind kind, void *stream);
  fg_status (*sync)(fg_device *dev);
  /* Page-lock / unlock host memory from device/hostmem.c (NULL: nothing to do). */
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
  /* One launcher per kernel family, indexed by fg_family_id (FG_FAMILY_SLOTS). */
  const fg_family_fn *families;
} fg_backend;

struct fg_device {
  const fg_backend *be;
  fg_device_kind kind;
  int index;
  char spec[16];
  void *impl; /* backend state */
  fg_stream *stream; /* the device's own stream (fg_device_stream); impl NULL: CUDA's legacy
                        default stream, ordered with every synchronous call */
  /* Held by a call that was given no stream while it uses dev->stream (device/scratch.h
   * fg_stream_begin), so that threads sharing a device never share its scratch. */
  pthread_mutex_t stream_lock;
  void *blas;        /* cuBLAS handle, created on first use under blas_lock (cuda/) */
  pthread_mutex_t blas_lock;
  int gemm_mode; /* fg_gemm_mode that FG_GEMM_DEFAULT means here (0: FAST); atomic access */
};

struct fg_stream {
  fg_device *dev;
  void *impl;
  bool device_owned; /* dev->stream: fg_stream_free leaves it alone */
  /* Scratch memory on dev for work queued on this stream (device/scratch.c): grows, never
   * shrinks, so steady-state calls allocate nothing. */
  void *scratch;
  size_t scratch_bytes;
  /* Two pinned host staging buffers for argument tables copied to the device on this
   * stream; an event per buffer says when its last copy has been consumed. */
  void *stage[2];
  size_t stage_bytes[2];
  void *stage_event[2];
  int stage_next;
};

struct fg_event {
  fg_device *dev;
  void *impl;
  float cpu_ms; /* CPU backend: wall time at record */
};

extern const fg_backend fg_cpu_backend;
extern const fg_family_fn fg_cpu_families[FG_FAMILY_COUNT];
#ifdef FORGIA_HAVE_CUDA
extern const fg_backend fg_cuda_backend;
extern const fg_family_fn fg_cuda_families[FG_FAMILY_COUNT];
/* Devices this process can use; 0 when the count fails for any reason. */
int fg_cuda_count(void);
/* The count for opening a device: no driver or no device is FG_OK with 0; any other failure
 * of the runtime is FG_ERR_DEVICE with its name. */
fg_status fg_cuda_probe(int *count);
fg_status fg_cuda_init_device(fg_device *dev);
#endif

#endif
