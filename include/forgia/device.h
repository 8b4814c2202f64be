/* Devices: the CPU and CUDA GPUs behind one API.
 *
 * A device is opened by string: "cpu", "cuda" (= "cuda:0"), "cuda:N" or "auto". "auto"
 * reads FORGIA_DEVICE when set, else picks GPU 0 when one is present, else the CPU, and
 * says which on stderr once per process. Each backend implements one table of function
 * pointers (device/backend.h); everything here dispatches through it.
 *
 * Memory returned by fg_device_mem_alloc lives on the device (host memory for the CPU);
 * copies name their direction. Streams order work on one device; the CPU backend runs
 * every stream operation synchronously, so its events are complete when recorded.
 *
 * Thread safety: one fg_device may be used from several threads at once (each call selects
 * the device on the calling thread; the backends keep no mutable per-device state); close it
 * only when no thread uses it and its memory, streams and events are freed. fg_device_sync
 * waits for the work of every thread on that device. A stream or an event is used by one
 * thread at a time: work queued on one stream from two threads runs in no defined order.
 * Calls that take a stream and are given NULL run synchronously on the device's own stream
 * (fg_device_stream), taking turns on it, so any number of threads may make them. */
#ifndef FORGIA_DEVICE_H
#define FORGIA_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/dtype.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_device_kind { FG_DEVICE_CPU = 0, FG_DEVICE_CUDA = 1 } fg_device_kind;

typedef enum fg_copy_kind {
  FG_COPY_H2D = 0,  /* host memory -> device memory */
  FG_COPY_D2H = 1,  /* device memory -> host memory */
  FG_COPY_D2D = 2,  /* device memory -> device memory (same device) */
} fg_copy_kind;

typedef struct fg_device fg_device;
typedef struct fg_stream fg_stream;
typedef struct fg_event fg_event;

typedef struct fg_device_info {
  fg_device_kind kind;
  int index;               /* CUDA ordinal; 0 for the CPU */
  char name[256];          /* "NVIDIA H200" or the CPU model */
  uint64_t total_mem;      /* bytes: device memory, or host RAM for the CPU */
  uint64_t free_mem;
  int cc_major, cc_minor;  /* compute capability (0 for the CPU) */
  int multiprocessors;     /* SMs, or logical cores for the CPU */
  int numa_node;           /* nearest NUMA node (hwloc), -1 when unknown */
  int numa_cores;          /* physical cores on that node (all cores for the CPU) */
  char pci_bus_id[32];     /* "0000:3b:00.0"; empty for the CPU */
} fg_device_info;

/* Number of CUDA devices usable by this process (0 in a CPU-only build or without a GPU). */
FG_API int fg_cuda_device_count(void);
/* True when this build contains the CUDA backend. */
FG_API bool fg_build_has_cuda(void);

/* Opens "cpu", "cuda", "cuda:N" or "auto" (FORGIA_DEVICE when set, else cuda:0 when a GPU
 * is usable, else cpu; fg_device_spec says which, nothing is printed). A CUDA spec on a machine without a driver or a
 * device (or in a CPU-only build) is FG_ERR_NO_DEVICE; a CUDA runtime that is present but
 * fails is FG_ERR_DEVICE, naming the failing call. */
FG_API fg_status fg_device_open(const char *spec, fg_device **out);
FG_API void fg_device_close(fg_device *dev); /* NULL-safe; the caller freed its allocations */
FG_API fg_status fg_device_query(const fg_device *dev, fg_device_info *out);
FG_API fg_device_kind fg_device_kind_of(const fg_device *dev);
FG_API const char *fg_device_spec(const fg_device *dev); /* "cpu" or "cuda:N" */

/* Memory. Allocations are at least 256-byte aligned. fg_device_mem_free is NULL-safe. */
FG_API fg_status fg_device_mem_alloc(fg_device *dev, size_t bytes, void **out);
FG_API void fg_device_mem_free(fg_device *dev, void *ptr);
FG_API fg_status fg_device_memset(fg_device *dev, void *ptr, int value, size_t bytes);
FG_API fg_status fg_device_copy(fg_device *dev, void *dst, const void *src, size_t bytes, fg_copy_kind kind);
FG_API fg_status fg_device_sync(fg_device *dev);

/* Pinned (page-locked) host memory, for fast asynchronous transfers. On the CPU backend
 * this is ordinary aligned host memory. numa_node >= 0 binds the pages to that node. */
FG_API fg_status fg_device_pinned_alloc(fg_device *dev, size_t bytes, int numa_node, void **out);
FG_API void fg_device_pinned_free(fg_device *dev, void *ptr);

/* Streams and events. */
FG_API fg_status fg_stream_create(fg_device *dev, fg_stream **out);
/* The device's own stream, owned by the device (fg_stream_free ignores it): work queued on
 * it is ordered with the device's synchronous calls (on CUDA it is the legacy default
 * stream). Calls that take a stream and get NULL run synchronously on it. */
FG_API fg_stream *fg_device_stream(fg_device *dev);
FG_API void fg_stream_free(fg_stream *s);
FG_API fg_status fg_stream_sync(fg_stream *s);
FG_API fg_status fg_device_copy_async(fg_device *dev, void *dst, const void *src, size_t bytes, fg_copy_kind kind,
                               fg_stream *s);
FG_API fg_status fg_event_create(fg_device *dev, fg_event **out);
FG_API void fg_event_free(fg_event *e);
FG_API fg_status fg_event_record(fg_event *e, fg_stream *s);
FG_API fg_status fg_event_sync(fg_event *e);
/* FG_OK when complete; *done says whether the work before the record has finished. */
FG_API fg_status fg_event_query(fg_event *e, bool *done);
FG_API fg_status fg_stream_wait_event(fg_stream *s, fg_event *e);
/* Milliseconds between two recorded, completed events. */
FG_API fg_status fg_event_elapsed_ms(fg_event *start, fg_event *end, float *ms);

/* Conversion of n elements in device memory (s may be NULL: synchronous).
 * Pairs: f32 -> f16/bf16/f32; f16/bf16/f32 -> f32; and every ggml block type that
 * elem/quant_decode.h decodes -> f32 (dequantization; n a whole number of blocks, else
 * FG_ERR_BAD_ROW). The same bits on every backend: both call the elem/ functions. */
FG_API fg_status fg_convert(fg_device *dev, void *dst, fg_dtype dst_type, const void *src, fg_dtype src_type, size_t n,
                     fg_stream *s);

#ifdef __cplusplus
}
#endif
#endif
