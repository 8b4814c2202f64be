/* The CPU backend's GEMM (cpu/cpu_gemm.c), for the backend table. Internal. */
#ifndef FORGIA_CPU_GEMM_H
#define FORGIA_CPU_GEMM_H

#include "device/backend.h"
#include "device/gemm_call.h"

fg_status fg_cpu_gemm(fg_device *dev, const struct fg_gemm_call *g, fg_stream *stream);

#endif
