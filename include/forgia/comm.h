/* Communicators: the few collectives that distributed ES and data-parallel training need,
 * behind one table with three backends.
 *
 *   fg_comm *c;
 *   fg_comm_open(FG_COMM_AUTO, &c);          // MPI when launched by mpirun, else one process
 *   float all[N];                            // every rank's rewards, in rank order
 *   fg_comm_allgather_f32(c, mine, counts, all);
 *   fg_comm_allreduce_sum_f32(c, grads, n);  // the same bits for any rank count
 *   fg_comm_close(c);
 *
 * Backends: FG_COMM_SINGLE (one process; every collective is a copy), FG_COMM_MPI (built
 * when MPI is found at build time; fg_comm_open initialises MPI if nobody did, and
 * fg_comm_close finalises it only then), FG_COMM_NCCL (built when NCCL is present; buffers
 * in device memory of the communicator's device). FG_COMM_AUTO picks MPI when the process
 * was started by an MPI launcher with more than one rank, else SINGLE.
 *
 * Determinism: all-reduce sums the ranks' buffers element by element in rank order 0, 1,
 * ..., size-1 (((b0 + b1) + b2) + ...), in f32, on every rank; never a tree or ring whose
 * order depends on the rank count. Data-parallel gradients whose per-rank shares are each
 * summed in a fixed order therefore give the same bits for any rank count that divides the
 * batch when each rank's share is a contiguous run of the batch's fixed summation order.
 *
 * A communicator is used by one thread at a time; every rank must make the same calls in
 * the same order (collectives). */
#ifndef FORGIA_COMM_H
#define FORGIA_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "forgia/api.h"
#include "forgia/device.h"
#include "forgia/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fg_comm_kind {
  FG_COMM_AUTO = 0,
  FG_COMM_SINGLE = 1,
  FG_COMM_MPI = 2,
  FG_COMM_NCCL = 3,
} fg_comm_kind;

typedef struct fg_comm fg_comm;

/* "auto", "single", "mpi", "nccl"; NULL for an unknown kind. */
FG_API const char *fg_comm_kind_name(fg_comm_kind k);
/* Whether this build has the backend (SINGLE always; AUTO always). */
FG_API bool fg_comm_available(fg_comm_kind k);

/* FG_ERR_UNSUPPORTED for a backend this build lacks. NCCL needs a CUDA device (dev): it
 * bootstraps its unique id over MPI. */
FG_API fg_status fg_comm_open(fg_comm_kind kind, fg_comm **out);
FG_API fg_status fg_comm_open_nccl(fg_device *dev, fg_comm **out);
FG_API void fg_comm_close(fg_comm *c); /* NULL-safe */

FG_API fg_comm_kind fg_comm_kind_of(const fg_comm *c);
FG_API int fg_comm_rank(const fg_comm *c);
FG_API int fg_comm_size(const fg_comm *c);

/* The contiguous share of n items that rank r of size ranks owns: the first n % size ranks
 * take one more (n = 5, size 3: [0,2), [2,4), [4,5)). */
FG_API void fg_comm_share(uint64_t n, int rank, int size, uint64_t *first, uint64_t *count);

/* Every rank's counts[rank] values from mine, concatenated in rank order into all (counts has
 * size entries, the same on every rank). */
FG_API fg_status fg_comm_allgather_f32(fg_comm *c, const float *mine, const uint64_t *counts, float *all);
/* buf (n floats) becomes the sum over ranks in rank order, on every rank. */
FG_API fg_status fg_comm_allreduce_sum_f32(fg_comm *c, float *buf, size_t n);
/* root's bytes into every rank's buf. */
FG_API fg_status fg_comm_broadcast(fg_comm *c, void *buf, size_t bytes, int root);
FG_API fg_status fg_comm_barrier(fg_comm *c);

#ifdef __cplusplus
}
#endif
#endif
