/* APOLLO's kernels on CUDA (cuda/kernels/apollo.cu), queued on the call's stream. */
#include <cuda_runtime_api.h>

#include "device/apollo_call.h"
#include "device/backend.h"

int fg_cuda_launch_apollo(const fg_apollo_call *c, void *stream);
fg_status fg_cuda_apollo(fg_device *dev, const struct fg_apollo_call *c, fg_stream *stream);

fg_status fg_cuda_apollo(fg_device *dev, const struct fg_apollo_call *c, fg_stream *stream) {
  cudaError_t e = cudaSetDevice(dev->index);
  if (e == cudaSuccess) e = (cudaError_t)fg_cuda_launch_apollo(c, stream->impl);
  return e == cudaSuccess ? FG_OK
                          : fg_fail(FG_ERR_DEVICE, "%s: apollo kernel failed: %s", dev->spec, cudaGetErrorString(e));
}
