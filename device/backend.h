/* The table of function pointers each backend (cpu/, cuda/) fills in. Internal. */
#ifndef FORGIA_DEVICE_BACKEND_H
#define FORGIA_DEVICE_BACKEND_H

#include <pthread.h>

#include "forgia/device.h"
#include "forgia/elem/op_params.h"
#include "forgia/elem/reduce.h"

struct fg_gemm_call;   /* device/gemm_call.h */
struct fg_reduce_call; /* device/reduce_call.h */
struct fg_apollo_call; /* device/apollo_call.h */
struct fg_es_trits_call; /* device/es_trits_call.h */

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
  /* The op layer (device/op.c validated the call). list: count entries in host memory;
   * stream: never NULL here (the device's default stream when the caller passed none). */
  fg_status (*op_run)(fg_device *dev, int op, const fg_op_params *p, const fg_op_args *list, size_t count,
                      fg_stream *stream);
  /* Reductions of elem/reduce.h (device/reduce.c validated the call), results left in
   * device memory; stream never NULL (NULL slot: not implemented). */
  fg_status (*reduce)(fg_device *dev, const struct fg_reduce_call *r, fg_stream *stream);
  /* *out = ((0 + x[0]) + x[1]) + ... over n doubles in device memory, in order. */
  fg_status (*sum_f64)(fg_device *dev, const double *x, size_t n, double *out, fg_stream *stream);
  /* GEMM, fast and exact modes (NULL: not implemented). */
  fg_status (*gemm)(fg_device *dev, const struct fg_gemm_call *g, fg_stream *stream);
  /* APOLLO's kernels of forgia/apollo.h (device/apollo.c validated the call; NULL: none). */
  fg_status (*apollo)(fg_device *dev, const struct fg_apollo_call *c, fg_stream *stream);
  /* The trit calls of forgia/es_trits.h (device/es_trits.c validated the call; NULL: none). */
  fg_status (*es_trits)(fg_device *dev, const struct fg_es_trits_call *c, fg_stream *stream);
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
#ifdef FORGIA_HAVE_CUDA
extern const fg_backend fg_cuda_backend;
int fg_cuda_count(void);
fg_status fg_cuda_init_device(fg_device *dev);
#endif

#endif
