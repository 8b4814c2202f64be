/* CUDA backend: the runtime API behind the backend table. */
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_gemm.h"
#include "cuda/kernels.h"
#include "forgia/topology.h"
#include "device/backend.h"

#define CU_FAIL(call, what)                                                                                  \
  fg_fail(FG_ERR_DEVICE, "%s: %s failed: %s", dev ? dev->spec : "cuda", what, cudaGetErrorString(call))

/* A machine without a driver or without a device has no CUDA device; any other failure of
 * the count is a broken runtime, which fg_cuda_probe reports rather than hiding it as "no GPU". */
static bool cu_absent(cudaError_t e) { return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver; }

static cudaError_t cu_count(int *n) {
  *n = 0;
  cudaError_t e = cudaGetDeviceCount(n);
  if (e != cudaSuccess) {
    cudaGetLastError(); /* clear the sticky error */
    *n = 0;
  }
  return e;
}

int fg_cuda_count(void) {
  int n;
  return cu_count(&n) == cudaSuccess ? n : 0;
}

fg_status fg_cuda_probe(int *count) {
  cudaError_t e = cu_count(count);
  if (e == cudaSuccess || cu_absent(e)) return FG_OK;
  return fg_fail(FG_ERR_DEVICE, "cuda: cudaGetDeviceCount failed: %s (%s)", cudaGetErrorName(e),
                 cudaGetErrorString(e));
}

static fg_status cu_set(fg_device *dev) {
  cudaError_t e = cudaSetDevice(dev->index);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaSetDevice");
}

fg_status fg_cuda_init_device(fg_device *dev) {
  fg_status s = cu_set(dev);
  if (s) return s;
  cudaError_t e = cudaFree(0); /* creates the primary context now, not inside a timed region */
  if (e != cudaSuccess) return CU_FAIL(e, "context creation");
  /* The device's own stream is the legacy default stream: queued work is then ordered with
   * every synchronous runtime call, as device.h promises. */
  dev->stream->impl = (void *)cudaStreamLegacy;
  return FG_OK;
}

static fg_status cu_query(fg_device *dev, fg_device_info *out) {
  struct cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, dev->index);
  if (e != cudaSuccess) return CU_FAIL(e, "cudaGetDeviceProperties");
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->cc_major = p.major;
  out->cc_minor = p.minor;
  out->multiprocessors = p.multiProcessorCount;
  out->total_mem = p.totalGlobalMem;
  size_t fr = 0, tot = 0;
  if (cu_set(dev) == FG_OK && cudaMemGetInfo(&fr, &tot) == cudaSuccess) out->free_mem = fr;
  snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  out->numa_node = fg_topology_node_of_pci(out->pci_bus_id);
  out->numa_cores = fg_topology_node_cores(out->numa_node);
  return FG_OK;
}

static fg_status cu_alloc(fg_device *dev, size_t bytes, void **out) {
  fg_status s = cu_set(dev);
  if (s) return s;
  cudaError_t e = cudaMalloc(out, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return fg_fail(e == cudaErrorMemoryAllocation ? FG_ERR_DEVICE_NOMEM : FG_ERR_DEVICE,
                   "%s: cannot allocate %zu bytes: %s", dev->spec, bytes, cudaGetErrorString(e));
  }
  return FG_OK;
}

static void cu_free(fg_device *dev, void *ptr) {
  if (cu_set(dev) == FG_OK) cudaFree(ptr);
}

static fg_status cu_memset(fg_device *dev, void *ptr, int value, size_t bytes) {
  fg_status s = cu_set(dev);
  if (s) return s;
  cudaError_t e = cudaMemset(ptr, value, bytes);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaMemset");
}

static const enum cudaMemcpyKind cu_kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                               cudaMemcpyDeviceToDevice};

static fg_status cu_copy(fg_device *dev, void *dst, const void *src, size_t bytes, fg_copy_kind kind, void *stream) {
  fg_status s = cu_set(dev);
  if (s) return s;
  cudaError_t e = stream ? cudaMemcpyAsync(dst, src, bytes, cu_kinds[kind], (cudaStream_t)stream)
                         : cudaMemcpy(dst, src, bytes, cu_kinds[kind]);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaMemcpy");
}

static fg_status cu_sync(fg_device *dev) {
  fg_status s = cu_set(dev);
  if (s) return s;
  cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaDeviceSynchronize");
}

static fg_status cu_host_register(fg_device *dev, void *ptr, size_t bytes) {
  cudaError_t e = cudaHostRegister(ptr, bytes ? bytes : 1, cudaHostRegisterPortable);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaHostRegister");
}

static void cu_host_unregister(fg_device *dev, void *ptr) {
  (void)dev;
  cudaHostUnregister(ptr);
}

static fg_status cu_stream_create(fg_device *dev, void **out) {
  fg_status s = cu_set(dev);
  if (s) return s;
  cudaStream_t st;
  cudaError_t e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  if (e != cudaSuccess) return CU_FAIL(e, "cudaStreamCreate");
  *out = st;
  return FG_OK;
}

static void cu_stream_destroy(fg_device *dev, void *st) {
  (void)dev;
  cudaStreamDestroy((cudaStream_t)st);
}

static fg_status cu_stream_sync(fg_device *dev, void *st) {
  cudaError_t e = cudaStreamSynchronize((cudaStream_t)st);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaStreamSynchronize");
}

static fg_status cu_event_create(fg_device *dev, void **out) {
  fg_status s = cu_set(dev);
  if (s) return s;
  cudaEvent_t ev;
  cudaError_t e = cudaEventCreate(&ev);
  if (e != cudaSuccess) return CU_FAIL(e, "cudaEventCreate");
  *out = ev;
  return FG_OK;
}

static void cu_event_destroy(fg_device *dev, void *ev) {
  (void)dev;
  cudaEventDestroy((cudaEvent_t)ev);
}

static fg_status cu_event_record(fg_device *dev, void *ev, void *st) {
  cudaError_t e = cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)st);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaEventRecord");
}

static fg_status cu_event_sync(fg_device *dev, void *ev) {
  cudaError_t e = cudaEventSynchronize((cudaEvent_t)ev);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaEventSynchronize");
}

static fg_status cu_event_query(fg_device *dev, void *ev, bool *done) {
  cudaError_t e = cudaEventQuery((cudaEvent_t)ev);
  if (e == cudaErrorNotReady) {
    *done = false;
    return FG_OK;
  }
  *done = true;
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaEventQuery");
}

static fg_status cu_stream_wait(fg_device *dev, void *st, void *ev) {
  cudaError_t e = cudaStreamWaitEvent((cudaStream_t)st, (cudaEvent_t)ev, 0);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaStreamWaitEvent");
}

static fg_status cu_event_elapsed(fg_device *dev, void *a, void *b, float *ms) {
  cudaError_t e = cudaEventElapsedTime(ms, (cudaEvent_t)a, (cudaEvent_t)b);
  return e == cudaSuccess ? FG_OK : CU_FAIL(e, "cudaEventElapsedTime");
}

static fg_status cu_convert(fg_device *dev, void *dst, fg_dtype dt, const void *src, fg_dtype st, size_t n,
                            void *stream) {
  fg_status s = cu_set(dev);
  if (s) return s;
  int e = fg_dtype_info(st)->is_quant ? fg_cuda_launch_dequant((float *)dst, src, st, n, stream)
                                      : fg_cuda_launch_convert(dst, dt, src, st, n, stream);
  if (e < 0) return fg_fail(FG_ERR_UNSUPPORTED, "%s: convert %s -> %s unsupported", dev->spec, fg_dtype_name(st), fg_dtype_name(dt));
  if (e) return CU_FAIL((cudaError_t)e, "convert kernel");
  if (!stream) return cu_sync(dev);
  return FG_OK;
}

fg_status fg_cuda_use(fg_device *dev, const char *family) {
  cudaError_t e = cudaSetDevice(dev->index);
  return e == cudaSuccess ? FG_OK
                          : fg_fail(FG_ERR_DEVICE, "%s: %s: cudaSetDevice failed: %s", dev->spec, family, cudaGetErrorString(e));
}

fg_status fg_cuda_launch_status(fg_device *dev, const char *family, int err) {
  return err == 0 ? FG_OK
                  : fg_fail(FG_ERR_DEVICE, "%s: %s kernel failed: %s", dev->spec, family,
                            cudaGetErrorString((cudaError_t)err));
}

FG_FAMILY_SLOTS(fg_cuda)

/* Backend state created on first use (the cuBLAS handle). */
static void cu_close(fg_device *dev) { fg_cuda_blas_release(dev); }


const fg_backend fg_cuda_backend = {
  .name = "cuda",
  .query = cu_query,
  .alloc = cu_alloc,
  .free = cu_free,
  .memset = cu_memset,
  .copy = cu_copy,
  .sync = cu_sync,
  .host_register = cu_host_register,
  .host_unregister = cu_host_unregister,
  .stream_create = cu_stream_create,
  .stream_destroy = cu_stream_destroy,
  .stream_sync = cu_stream_sync,
  .event_create = cu_event_create,
  .event_destroy = cu_event_destroy,
  .event_record = cu_event_record,
  .event_sync = cu_event_sync,
  .event_query = cu_event_query,
  .stream_wait = cu_stream_wait,
  .event_elapsed = cu_event_elapsed,
  .convert = cu_convert,
  .close = cu_close,
  .families = fg_cuda_families,
};
