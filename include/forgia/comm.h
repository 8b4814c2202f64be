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
 * when MPI is found at build time, cmake -DFORGIA_MPI=AUTO|ON|OFF; fg_comm_open initialises
 * MPI if nobody did, and then the last fg_comm_close finalises it, after which MPI cannot
 * start again in this process: keep one communicator open for the run; each communicator
 * is a duplicate of MPI_COMM_WORLD, so it never matches the caller's own messages),
 * FG_COMM_NCCL (built when NCCL, CUDA and MPI are present, -DFORGIA_NCCL; one rank per MPI
 * process on its own GPU; buffers in device memory of the communicator's device; every call
 * waits for the device's queued work first and returns with the result complete).
 * FG_COMM_AUTO picks MPI when the process was started by an MPI launcher with more than one
 * rank (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE or MV2_COMM_WORLD_SIZE above 1), else
 * SINGLE; under such a launcher without an MPI build it is FG_ERR_UNSUPPORTED rather than
 * every rank running the whole job alone.
 *
 * Determinism: all-reduce sums the ranks' buffers element by element in rank order 0, 1,
 * ..., size-1 (((b0 + b1) + b2) + ...), in f32, on every rank; never a tree or ring whose
 * order depends on the rank count or the library. For data-parallel gradients that are the
 * same bits for any rank count, fix the summation's grain instead of the rank count: cut
 * the batch into G groups, give each rank a contiguous run of G / size groups, keep each
 * group's gradient in its own buffer and reduce them with fg_comm_allreduce_parts_f32,
 * which adds every group in group order (((g0 + g1) + g2) + ...): one process summing its
 * G groups in order gets the same bits, for every rank count that divides G. (Summing a
 * rank's groups first and then the ranks would depend on where the ranks' runs start.)
 *
 * A communicator is used by one thread at a time; every rank must make the same calls in
 * the same order with the same counts (collectives). A failed call on one rank can leave the
 * others waiting: fg_es_step_comm agrees on errors before it moves on. */
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
 * size entries, the same on every rank). mine may be this rank's place in all (in place);
 * otherwise it must not overlap all. */
FG_API fg_status fg_comm_allgather_f32(fg_comm *c, const float *mine, const uint64_t *counts, float *all);
/* buf (n floats) becomes the sum over ranks in rank order, on every rank: the backends
 * gather the ranks' buffers (in chunks of a few MiB) and add them in order, starting from
 * rank 0's value rather than from 0, so a one-rank sum is the buffer bit for bit (-0.0 and
 * NaN payloads included). */
FG_API fg_status fg_comm_allreduce_sum_f32(fg_comm *c, float *buf, size_t n);
/* This rank's nparts buffers of n floats, laid end to end in parts (nparts >= 1, the same on
 * every rank), summed with every other rank's into out (n floats, on every rank) in rank
 * order and, within a rank, part order: (((p0 + p1) + p2) + ...). out must not overlap parts
 * unless nparts is 1 and out == parts. */
FG_API fg_status fg_comm_allreduce_parts_f32(fg_comm *c, const float *parts, size_t nparts, size_t n, float *out);
/* root's bytes into every rank's buf. FG_ERR_RANGE for a root outside [0, size). */
FG_API fg_status fg_comm_broadcast(fg_comm *c, void *buf, size_t bytes, int root);
FG_API fg_status fg_comm_barrier(fg_comm *c);

#ifdef __cplusplus
}
#endif
#endif
