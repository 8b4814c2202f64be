// The row grid of forgia/elem/rmsnorm.h on a CUDA warp: every lane holds its lane sum; the
// shuffles fold lane j + h into lane j for h = 16, 8, 4, 2, 1, the order the CPU loops repeat.
// Shared by the row families (rmsnorm, softmax) so the fold is written once.
#ifndef FORGIA_CUDA_ROW_GRID_CUH
#define FORGIA_CUDA_ROW_GRID_CUH

#include "forgia/elem/rmsnorm.h"

// Returns the folded sum in every lane.
static __device__ __forceinline__ double fg_row_warp_sum(double s) {
  for (unsigned h = FG_ROW_LANES / 2; h >= 1; h /= 2) {
    const double o = __shfl_down_sync(0xffffffffu, s, h);
    if ((threadIdx.x & 31u) < h) s = s + o;
  }
  return __shfl_sync(0xffffffffu, s, 0);
}

#endif
