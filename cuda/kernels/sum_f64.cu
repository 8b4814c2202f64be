// A serial sum of a few doubles in device memory (totals of totals): one thread, in order,
// so the bits are the CPU loop's and nothing leaves the device.
#include <cuda_runtime.h>

#include "cuda/kernels.h"
#include "device/backend.h"
#include "device/reduce_call.h"

__global__ void fg_sum_f64_kernel(const double *__restrict__ x, size_t n, double *__restrict__ out) {
  double t = 0.0;
  for (size_t i = 0; i < n; i++) t = __dadd_rn(t, x[i]);
  *out = t;
}

extern "C" fg_status fg_cuda_sum_f64(fg_device *dev, const fg_sum_f64_call *c, fg_stream *stream) {
  fg_status s = fg_cuda_use(dev, "sum_f64");
  if (s) return s;
  fg_sum_f64_kernel<<<1, 1, 0, (cudaStream_t)stream->impl>>>(c->x, c->n, c->out);
  return fg_cuda_launch_status(dev, "sum_f64", (int)cudaGetLastError());
}
