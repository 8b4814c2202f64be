/* The NCCL backend of forgia/comm.h: one rank per MPI process, buffers in device memory of
 * the communicator's CUDA device. Compiled only when NCCL, CUDA and MPI were all found
 * (FORGIA_HAVE_NCCL).
 *
 * MPI bootstraps it: rank 0 makes the NCCL unique id and broadcasts it over an MPI
 * communicator, which also serves the barrier. The all-reduce is NCCL's all-gather into a
 * device scratch followed by a rank-ordered sum with the op layer's axpy (s0 + 1 * s1 is
 * s0 + s1 exactly), never ncclAllReduce, whose ring or tree order changes with the rank
 * count. Every call synchronises the device before and after, so the caller's queued work
 * is complete when NCCL reads a buffer and NCCL's result is complete on return. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"
#include "device/comm_backend.h"
#include "forgia/ops.h"

/* The all-reduce's scratch holds every rank's chunk of at most this many bytes in all. */
#define FG_COMM_NCCL_CHUNK_BYTES ((size_t)64 << 20)

typedef struct nccl_impl {
  fg_device *dev;        /* borrowed */
  fg_comm *mpi;          /* the bootstrap communicator (owned) */
  ncclComm_t comm;
  float *scratch;        /* device: the all-reduce's gathered chunks, then its packed send chunk */
  size_t scratch_floats; /* grows, never shrinks */
} nccl_impl;

static fg_status nccl_fail(ncclResult_t r, const char *what) {
  return fg_fail(FG_ERR_DEVICE, "%s failed: %s (NCCL error %d)", what, ncclGetErrorString(r), (int)r);
}

/* Makes the communicator's device current on this thread (NCCL launches on the current
 * device) and waits for the work already queued on it. */
static fg_status nccl_enter(nccl_impl *m, const char *what) {
  const cudaError_t e = cudaSetDevice(m->dev->index);
  if (e != cudaSuccess) return fg_fail(FG_ERR_DEVICE, "%s: cudaSetDevice(%d) failed: %s", what, m->dev->index, cudaGetErrorString(e));
  return fg_device_sync(m->dev);
}

static fg_status nccl_allgather(fg_comm *c, const float *mine, const uint64_t *counts, const uint64_t *displs,
                                uint64_t total, float *all) {
  (void)total;
  nccl_impl *m = c->impl;
  fg_status st = nccl_enter(m, "fg_comm_allgather_f32");
  if (st) return st;
  /* Counts may differ per rank: one broadcast per rank, grouped into one NCCL launch. */
  ncclResult_t r = ncclGroupStart();
  for (int k = 0; k < c->size && r == ncclSuccess; k++) {
    if (!counts[k]) continue;
    const float *src = k == c->rank ? mine : all + displs[k];
    r = ncclBroadcast(src, all + displs[k], (size_t)counts[k], ncclFloat32, k, m->comm, (cudaStream_t)0);
  }
  const ncclResult_t end = ncclGroupEnd();
  if (r != ncclSuccess) return nccl_fail(r, "ncclBroadcast (all-gather)");
  if (end != ncclSuccess) return nccl_fail(end, "ncclGroupEnd (all-gather)");
  return fg_device_sync(m->dev);
}

/* As the MPI backend: chunks of len floats, each rank's nparts slices packed end to end,
 * gathered so that rank r's part p is row r * nparts + p, then the rows added in order. */
static fg_status nccl_allreduce(fg_comm *c, const float *parts, size_t nparts, size_t n, float *out) {
  nccl_impl *m = c->impl;
  fg_status st = nccl_enter(m, "fg_comm_allreduce_sum_f32");
  if (st || !n) return st;
  if (nparts > SIZE_MAX / sizeof(float) / (size_t)c->size)
    return fg_fail(FG_ERR_OVERFLOW, "fg_comm_allreduce_sum_f32: %d ranks x %zu parts overflow", c->size, nparts);
  const size_t rows = (size_t)c->size * nparts;
  size_t chunk = FG_COMM_NCCL_CHUNK_BYTES / sizeof(float) / rows;
  if (chunk == 0) chunk = 1;
  if (chunk > n) chunk = n;
  const size_t need = (rows + (nparts > 1 ? nparts : 0)) * chunk;
  if (need / chunk != rows + (nparts > 1 ? nparts : 0) || need > SIZE_MAX / sizeof(float))
    return fg_fail(FG_ERR_OVERFLOW, "fg_comm_allreduce_sum_f32: %zu rows of scratch overflow", rows);
  if (need > m->scratch_floats) {
    float *grown = NULL;
    st = fg_device_mem_alloc(m->dev, need * sizeof(float), (void **)&grown);
    if (st) return st;
    fg_device_mem_free(m->dev, m->scratch);
    m->scratch = grown;
    m->scratch_floats = need;
  }
  float *gathered = m->scratch, *send = m->scratch + rows * chunk;
  const fg_op_params p = {.f = {1.0f}};
  for (size_t off = 0; off < n; off += chunk) {
    const size_t len = n - off < chunk ? n - off : chunk;
    const float *src = parts + off;
    if (nparts > 1) {
      for (size_t q = 0; q < nparts && !st; q++)
        st = fg_device_copy(m->dev, send + q * len, parts + q * n + off, len * sizeof(float), FG_COPY_D2D);
      if (st) return st;
      src = send;
    }
    const ncclResult_t r = ncclAllGather(src, gathered, nparts * len, ncclFloat32, m->comm, (cudaStream_t)0);
    if (r != ncclSuccess) return nccl_fail(r, "ncclAllGather (all-reduce)");
    st = fg_device_sync(m->dev);
    /* s0 + 1 * s1 is s0 + s1 exactly: the op layer's axpy adds row after row. */
    if (!st) st = fg_device_copy(m->dev, out + off, gathered, len * sizeof(float), FG_COPY_D2D);
    for (size_t k = 1; k < rows && !st; k++) {
      const fg_op_args a = {.ptr = {out + off, gathered + k * len}, .dtype = {FG_F32, FG_F32}, .n = len};
      st = fg_op_run(m->dev, FG_OP_AXPY, &p, &a, 1, NULL);
    }
    if (st) return st;
  }
  return fg_device_sync(m->dev);
}

static fg_status nccl_broadcast(fg_comm *c, void *buf, size_t bytes, int root) {
  nccl_impl *m = c->impl;
  fg_status st = nccl_enter(m, "fg_comm_broadcast");
  if (st || !bytes) return st;
  const ncclResult_t r = ncclBroadcast(buf, buf, bytes, ncclInt8, root, m->comm, (cudaStream_t)0);
  if (r != ncclSuccess) return nccl_fail(r, "ncclBroadcast");
  return fg_device_sync(m->dev);
}

static fg_status nccl_barrier(fg_comm *c) {
  nccl_impl *m = c->impl;
  fg_status st = nccl_enter(m, "fg_comm_barrier");
  return st ? st : fg_comm_barrier(m->mpi);
}

static void nccl_release(nccl_impl *m) {
  if (m->comm) ncclCommDestroy(m->comm);
  if (m->scratch) fg_device_mem_free(m->dev, m->scratch);
  fg_comm_close(m->mpi);
  free(m);
}

static void nccl_close(fg_comm *c) { nccl_release(c->impl); }

static const fg_comm_backend nccl_backend = {
    .kind = FG_COMM_NCCL,
    .allgather_f32 = nccl_allgather,
    .allreduce_sum_f32 = nccl_allreduce,
    .broadcast = nccl_broadcast,
    .barrier = nccl_barrier,
    .close = nccl_close,
};

fg_status fg_comm_nccl_open(fg_device *dev, fg_comm **out) {
  if (dev->kind != FG_DEVICE_CUDA)
    return fg_fail(FG_ERR_INVALID_ARG, "fg_comm_open_nccl: %s is not a CUDA device", dev->spec);
  nccl_impl *m = calloc(1, sizeof *m);
  if (!m) return fg_fail(FG_ERR_NOMEM, "fg_comm_open_nccl: out of memory");
  m->dev = dev;
  fg_status st = fg_comm_mpi_open(&m->mpi);
  if (st) {
    free(m);
    return st;
  }
  const int rank = m->mpi->rank, size = m->mpi->size;
  /* Every rank takes part in the id broadcast even when rank 0 failed to make one, so
   * nobody waits forever; the status word that follows says whether the id is good. */
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  int ok = 1;
  if (rank == 0) ok = ncclGetUniqueId(&id) == ncclSuccess;
  st = fg_comm_broadcast(m->mpi, &ok, sizeof ok, 0);
  if (!st && !ok) st = fg_fail(FG_ERR_DEVICE, "fg_comm_open_nccl: ncclGetUniqueId failed on rank 0");
  if (!st) st = fg_comm_broadcast(m->mpi, &id, sizeof id, 0);
  if (!st) st = nccl_enter(m, "fg_comm_open_nccl");
  if (!st) {
    const ncclResult_t r = ncclCommInitRank(&m->comm, size, id, rank);
    if (r != ncclSuccess) {
      m->comm = NULL;
      st = nccl_fail(r, "ncclCommInitRank");
    }
  }
  if (!st) st = fg_comm_new(&nccl_backend, rank, size, m, out);
  if (st) nccl_release(m);
  return st;
}
