/* The trit calls of forgia/es_trits.h on CUDA (cuda/kernels/es_trits.cu), queued on the
 * call's stream. */
#include <cuda_runtime_api.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "device/es_trits_call.h"

fg_status fg_cuda_es_trits(fg_device *dev, const struct fg_es_trits_call *c, fg_stream *stream);

fg_status fg_cuda_es_trits(fg_device *dev, const struct fg_es_trits_call *c, fg_stream *stream) {
  cudaError_t e = cudaSetDevice(dev->index);
  if (e == cudaSuccess) e = (cudaError_t)fg_cuda_launch_es_trits(c, stream->impl);
  return e == cudaSuccess ? FG_OK
                          : fg_fail(FG_ERR_DEVICE, "%s: es_trits kernel failed: %s", dev->spec, cudaGetErrorString(e));
}
