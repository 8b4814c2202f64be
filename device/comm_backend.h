/* The table each communicator backend fills in (device/comm.c, comm_mpi.c, comm_nccl.c).
 * Internal. device/comm.c validates every call before it reaches a backend, so the slots
 * see non-NULL buffers, counts that add up, and a root inside the communicator. */
#ifndef FORGIA_DEVICE_COMM_BACKEND_H
#define FORGIA_DEVICE_COMM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/comm.h"

typedef struct fg_comm_backend {
  fg_comm_kind kind;
  /* counts[r] values of rank r land at all + displs[r]; total = sum of counts. */
  fg_status (*allgather_f32)(fg_comm *c, const float *mine, const uint64_t *counts, const uint64_t *displs,
                             uint64_t total, float *all);
  /* out = ((q0 + q1) + q2) + ... in f32 over every rank's nparts buffers of n floats (parts
   * laid end to end), rank by rank, part by part; out overlaps parts only when nparts == 1
   * and out == parts (in place). */
  fg_status (*allreduce_sum_f32)(fg_comm *c, const float *parts, size_t nparts, size_t n, float *out);
  fg_status (*broadcast)(fg_comm *c, void *buf, size_t bytes, int root);
  fg_status (*barrier)(fg_comm *c);
  void (*close)(fg_comm *c); /* frees impl (NULL: nothing to free) */
} fg_comm_backend;

struct fg_comm {
  const fg_comm_backend *be;
  int rank, size;
  void *impl; /* backend state */
};

/* The all-reduce's sum, shared by the backends that gather every rank's buffers first:
 * out[i] = ((rows[0][i] + rows[1][i]) + ...) over nrows rows of n floats laid end to end
 * in order; out does not overlap rows. */
void fg_comm_sum_ranks(float *out, const float *rows, size_t nrows, size_t n);

/* A communicator with backend be, rank and size, impl attached (fails only for memory). */
fg_status fg_comm_new(const fg_comm_backend *be, int rank, int size, void *impl, fg_comm **out);

#ifdef FORGIA_HAVE_MPI
/* device/comm_mpi.c: a duplicate of MPI_COMM_WORLD, initialising MPI when nobody has. */
fg_status fg_comm_mpi_open(fg_comm **out);
#endif
#ifdef FORGIA_HAVE_NCCL
/* device/comm_nccl.c: one rank per MPI process on dev (a CUDA device). */
fg_status fg_comm_nccl_open(fg_device *dev, fg_comm **out);
#endif

#endif
